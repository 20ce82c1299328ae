package patroni

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/hactl-dev/hactl/engine"
)

var _ engine.Reporter = Engine{}

// reportPaths are the REST endpoints a report reads from each member,
// what `patronictl list`, `history` and `show-config` print from, plus
// the member's own status.
var reportPaths = []struct{ path, file string }{
	{"/patroni", "patroni.json"},
	{"/cluster", "cluster.json"},
	{"/history", "history.json"},
	{"/config", "config.json"},
}

// Report implements engine.Reporter: GET /patroni, /cluster, /history
// and /config of the member, each within o.Timeout, indented when the
// answer is JSON.
func (Engine) Report(ctx context.Context, t engine.Target, o engine.ProbeOptions) []engine.ReportFile {
	o = o.WithDefaults()
	c, err := newClient(ctx, t, o)
	var out []engine.ReportFile
	if err != nil {
		for _, p := range reportPaths {
			out = append(out, engine.ReportFile{Name: p.file, Err: err})
		}
		return out
	}
	defer c.close()
	for _, p := range reportPaths {
		cctx, cancel := context.WithTimeout(ctx, o.Timeout)
		a, err := c.request(cctx, http.MethodGet, p.path, nil, nil, nil)
		cancel()
		f := engine.ReportFile{Name: p.file}
		switch {
		case err != nil:
			f.Err = err
		case a.code != http.StatusOK:
			f.Err = fmt.Errorf("GET %s answered HTTP %d: %s", p.path, a.code, engine.Printable(string(bytes.TrimSpace(a.body))))
		default:
			var buf bytes.Buffer
			if json.Indent(&buf, a.body, "", "  ") == nil {
				f.Data = append(buf.Bytes(), '\n')
			} else {
				f.Data = a.body
			}
		}
		out = append(out, f)
	}
	return out
}
