package patroni

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// Engine is the Patroni implementation of engine.Engine.
type Engine struct{}

var _ engine.Engine = Engine{}

// New returns the Patroni engine.
func New() engine.Engine { return Engine{} }

// Name implements engine.Engine.
func (Engine) Name() model.Engine { return Name }

// Name is Patroni's engine name: the value of the hactl.dev/engine label
// on its clusters.
const Name model.Engine = "patroni"

// Probe implements engine.Engine: every target on its own, in parallel,
// each bounded by o.Timeout (dial included) and ctx.
func (Engine) Probe(ctx context.Context, targets []engine.Target, o engine.ProbeOptions) []model.EngineFacts {
	if o.Unasked != nil {
		return engine.UnaskedFacts(targets, o)
	}
	o = o.WithDefaults()
	return engine.ProbeEach(ctx, targets, o, func(ctx context.Context, t engine.Target, start time.Time) model.EngineFacts {
		return ask(ctx, t, o, start)
	})
}

// ask reads one member's /patroni and /cluster, concurrently, both within
// ctx.
func ask(ctx context.Context, t engine.Target, o engine.ProbeOptions, start time.Time) (f model.EngineFacts) {
	f.ProbedAt = start
	defer func() { f.Took = time.Since(start) }()

	c, err := newClient(ctx, t, o)
	if err != nil {
		f.Failure = model.ProbeFailureOther
		var ce *credentialsError
		if errors.As(err, &ce) {
			f.Failure = model.ProbeFailureCredentials
		}
		f.Err = fmt.Sprintf("%s: %v", t.Member, err)
		return f
	}
	defer c.close()
	defer func() { f.ServingCerts = engine.Certs(c.state.Snapshot().Cert) }()

	var (
		st, view       *answer
		stErr, viewErr error
		wg             sync.WaitGroup
	)
	wg.Go(func() { st, stErr = c.request(ctx, "GET", "/patroni", nil, nil, nil) })
	wg.Go(func() { view, viewErr = c.request(ctx, "GET", "/cluster", nil, nil, nil) })
	wg.Wait()

	s, failure, msg := c.readStatus(ctx, start, st, stErr)
	if s == nil {
		f.Failure, f.Err = failure, msg
		return f
	}
	f.Reachable = true
	fillStatus(&f, t, s)
	if viewErr != nil {
		_, f.Patroni.ViewErr = c.explain(ctx, start, "GET /cluster", viewErr)
		return f
	}
	leader, err := decodeLeader(view)
	if err != nil {
		f.Patroni.ViewErr = fmt.Sprintf("%s: %v", t.Member, err)
		return f
	}
	f.LeaderID, f.Patroni.ViewLeader = leader, leader
	return f
}

// readStatus decodes /patroni's answer, or says why there is none.
func (c *client) readStatus(ctx context.Context, start time.Time, a *answer, err error) (*status, model.ProbeFailure, string) {
	if err != nil {
		failure, msg := c.explain(ctx, start, "GET /patroni", err)
		return nil, failure, msg
	}
	s, derr := decodeStatus(a.body)
	switch {
	case derr == nil:
		return s, model.ProbeFailureNone, ""
	case a.code == 401 || a.code == 403:
		return nil, model.ProbeFailureCredentials, fmt.Sprintf("%s refused GET /patroni: HTTP %d: %s", c.target.Member, a.code, snippet(a.body))
	}
	return nil, model.ProbeFailureOther, fmt.Sprintf("%s: GET /patroni answered HTTP %d: %v: %s", c.target.Member, a.code, derr, snippet(a.body))
}

func fillStatus(f *model.EngineFacts, t engine.Target, s *status) {
	p := s.facts()
	// Patroni 3.0.2's /patroni carries no member name; on Kubernetes the
	// member is named after its pod.
	p.Name = t.Member
	f.MemberID = t.Member
	f.ClusterID = p.SystemID
	f.Version = PostgresVersion(p.ServerVersion)
	f.Patroni = p
}

// explain turns a failed request into a failure kind and a message that
// says what was being waited for, for how long, and the last thing the
// connection reported. It never includes credentials: dial and TLS errors
// name hosts and certificate subjects at most.
func (c *client) explain(ctx context.Context, start time.Time, call string, err error) (model.ProbeFailure, string) {
	took := engine.RoundDuration(time.Since(start))
	s := c.state.Snapshot()
	member := c.target.Member

	if hs := firstNonNil(s.HandshakeErr, err); isCredentialsError(hs) {
		return model.ProbeFailureCredentials, fmt.Sprintf("TLS handshake with %s failed: %v", member, hs)
	}
	if fwd := s.ForwardErr; fwd != nil || errors.Is(err, engine.ErrForward) {
		return model.ProbeFailureConnect, fmt.Sprintf("could not reach %s: %v", member, firstNonNil(fwd, err))
	}
	if s.DialErr != nil && !s.Connected {
		return model.ProbeFailureConnect, fmt.Sprintf("dialing %s failed after %s: %v", member, took, s.DialErr)
	}
	deadline := errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || engine.IsGaveUp(err)
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return model.ProbeFailureOther, fmt.Sprintf("%s to %s cancelled after %s", call, member, took)
	case deadline && s.Dials == 0:
		return model.ProbeFailureTimeout, fmt.Sprintf("deadline exceeded after %s before dialing %s", took, member)
	case deadline && !s.Connected:
		return model.ProbeFailureTimeout, fmt.Sprintf("deadline exceeded after %s dialing %s", took, member)
	case deadline:
		return model.ProbeFailureTimeout, fmt.Sprintf("deadline exceeded after %s waiting for %s to answer %s (connected, no reply: is it paused or overloaded?)", took, member, call)
	}
	msg := fmt.Sprintf("%s: %s: %v", member, call, err)
	if !c.hasTLS && s.Connected && droppedConn(err) {
		msg += " (no TLS credentials are configured: does the member require TLS?)"
	}
	return model.ProbeFailureOther, msg
}

// droppedConn reports whether the member closed or reset the connection
// without an answer: what a TLS-only listener does to a plaintext request.
func droppedConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

func firstNonNil(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
