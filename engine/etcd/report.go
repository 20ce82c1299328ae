package etcd

import (
	"context"
	"encoding/json"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hactl-dev/hactl/engine"
)

var _ engine.Reporter = Engine{}

// Report implements engine.Reporter: the member's list of members (as
// it knows it, answered locally) and its endpoint status, as
// `etcdctl member list -w json` and `etcdctl endpoint status -w json`
// print them, each within o.Timeout.
func (Engine) Report(ctx context.Context, t engine.Target, o engine.ProbeOptions) []engine.ReportFile {
	o = o.WithDefaults()
	c, err := Open(ctx, t, o)
	if err != nil {
		return []engine.ReportFile{{Name: "member-list.json", Err: err}, {Name: "endpoint-status.json", Err: err}}
	}
	defer c.Close()
	file := func(name string, read func(context.Context) (any, error)) engine.ReportFile {
		cctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		v, err := read(cctx)
		if err != nil {
			return engine.ReportFile{Name: name, Err: classify(err)}
		}
		b, err := json.MarshalIndent(v, "", "  ")
		return engine.ReportFile{Name: name, Data: append(b, '\n'), Err: err}
	}
	return []engine.ReportFile{
		file("member-list.json", func(ctx context.Context) (any, error) {
			actx, err := c.authed(ctx)
			if err != nil {
				return nil, err
			}
			return c.cli.MemberList(actx, clientv3.WithSerializable())
		}),
		file("endpoint-status.json", func(ctx context.Context) (any, error) { return c.status(ctx) }),
	}
}
