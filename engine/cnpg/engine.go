package cnpg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// Name is the engine's name.
const Name model.Engine = "cnpg"

// StatusPort is the instance manager's status port, and StatusPath what
// it serves the instance's status on (pkg/management/url/url.go).
const (
	StatusPort = 8000
	StatusPath = "/pg/status"
)

// Engine reads CloudNativePG instances.
type Engine struct{}

var (
	_ engine.Engine  = Engine{}
	_ engine.Judged  = Engine{}
	_ engine.Viewed  = Engine{}
	_ engine.Decoder = Engine{}
)

// New returns the engine.
func New() engine.Engine { return Engine{} }

// Name implements engine.Engine.
func (Engine) Name() model.Engine { return Name }

// Members implements engine.Engine: hactl sends the instances nothing;
// their operator carries out every change (see the classifier's rules).
func (Engine) Members(engine.ProbeOptions) engine.MemberOps { return noOps{} }

// Probe implements engine.Engine: every instance on its own, in
// parallel, each bounded by o.Timeout and ctx.
func (Engine) Probe(ctx context.Context, targets []engine.Target, o engine.ProbeOptions) []model.EngineFacts {
	if o.Unasked != nil {
		return engine.UnaskedFacts(targets, o)
	}
	o = o.WithDefaults()
	return engine.ProbeEach(ctx, targets, o, func(ctx context.Context, t engine.Target, start time.Time) model.EngineFacts {
		f := ask(ctx, t, o)
		f.ProbedAt, f.Took = start, time.Since(start)
		return f
	})
}

// ask reads one instance's status document.
func ask(ctx context.Context, t engine.Target, o engine.ProbeOptions) model.EngineFacts {
	port := t.Port
	if port == 0 {
		port = StatusPort
	}
	var code int
	var body []byte
	var err error
	switch {
	case o.ProxyGet != nil:
		scheme := "http"
		if t.TLS {
			scheme = "https"
		}
		code, body, err = o.ProxyGet(ctx, t.Namespace, t.Pod, scheme, port, StatusPath)
	case o.Dial != nil:
		code, body, err = dialGet(ctx, t, o, port)
	default:
		return model.EngineFacts{Failure: model.ProbeFailureOther, Err: t.Member + ": no way to reach the instance configured"}
	}
	if err != nil {
		return failed(ctx, t, err)
	}
	return decode(t.Member, code, body)
}

// failed is the facts of a request that got no answer from the
// instance: refused by the API server (the caller may not get
// pods/proxy), or the instance could not be reached.
func failed(ctx context.Context, t engine.Target, err error) model.EngineFacts {
	var pe *engine.ProxyError
	switch {
	case errors.As(err, &pe) && (pe.Code == 401 || pe.Code == 403):
		return model.EngineFacts{Failure: model.ProbeFailureCredentials,
			Err: fmt.Sprintf("the API server refused to proxy to %s's instance manager (HTTP %d: %s): grant get on pods/proxy", t.Member, pe.Code, snippet([]byte(pe.Message)))}
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return model.EngineFacts{Failure: model.ProbeFailureTimeout, Err: fmt.Sprintf("%s: GET %s: no answer in time", t.Member, StatusPath)}
	}
	return model.EngineFacts{Failure: model.ProbeFailureOther, Err: fmt.Sprintf("%s: GET %s: %s", t.Member, StatusPath, snippet([]byte(err.Error())))}
}

// snippet is at most 200 bytes of b, for messages.
func snippet(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// noOps refuses every member operation: CloudNativePG's operator carries
// them out.
type noOps struct{}

var errNoOps = errors.New("CloudNativePG's operator carries out changes to its instances: hactl sends them nothing")

func (noOps) RemoveMember(context.Context, engine.Target, string) error { return errNoOps }
func (noOps) AddLearner(context.Context, engine.Target, []string) (model.Peer, error) {
	return model.Peer{}, errNoOps
}
func (noOps) PromoteLearner(context.Context, engine.Target, string) error { return errNoOps }
func (noOps) MoveLeader(context.Context, engine.Target, string) error     { return errNoOps }
