package patroni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hactl-dev/hactl/engine"
)

// DefaultActionTimeout bounds an action when ctx has no deadline. Patroni
// answers POST /switchover only once the new leader holds the lock, or
// after polling for 2×max(10 s, loop_wait): a minute covers loop_wait up to
// 30 s.
const DefaultActionTimeout = 60 * time.Second

// Outcomes of the REST actions (wrapped with the member's answer; test
// them with errors.Is). A refusal the member answered changed nothing
// beyond what it says.
var (
	// ErrPrecondition: Patroni refused a switchover with HTTP 412 (the
	// leader named is not the leader, the candidate is not a member, no
	// candidate is healthy): its built-in compare-and-swap failed.
	ErrPrecondition = errors.New("precondition failed")
	// ErrIsLeader: reinitialize was sent to the leader, which refuses.
	ErrIsLeader = errors.New("member is the leader")
	// ErrNoLeader: the member sees no leader lock, so it cannot
	// reinitialize from one. Wraps engine.ErrNotYet.
	ErrNoLeader = errors.New("cluster has no leader")
	// ErrBusy: the member is running another long action (a restart, a
	// reinitialize not started by this call). Wraps engine.ErrNotYet.
	ErrBusy = errors.New("member is busy with another action")
	// ErrUnauthorized: the REST API refused the request's basic auth
	// (HTTP 401). It is engine.ErrUnauthorized; a 403 (allowlist, client
	// certificate) is engine.ErrForbidden.
	ErrUnauthorized = engine.ErrUnauthorized
)

// StatusError is a member's answer that the action did not expect: the
// request, the HTTP code and the member's own words.
type StatusError struct {
	Member  string
	Request string // "POST /switchover"
	Code    int
	Body    string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s answered %s with HTTP %d: %s", e.Member, e.Request, e.Code, e.Body)
}

// BasicAuth is the username and password Patroni's restapi.authentication
// asks for on unsafe methods (POST, PATCH, …); it never prints.
type BasicAuth = engine.BasicAuth

// ActionOption tunes one action.
type ActionOption func(*actionOptions)

type actionOptions struct {
	auth *BasicAuth
}

// WithBasicAuth sends a as the request's basic authentication.
func WithBasicAuth(a BasicAuth) ActionOption {
	return func(o *actionOptions) { o.auth = &a }
}

// Switchover asks the member t (any member; Patroni records the request in
// its DCS) to hand the leader lock from leader to candidate (empty: a
// candidate Patroni picks), with POST /switchover. It returns nil once
// Patroni reports the lock moved (HTTP 200; should another member have
// taken it instead, Patroni still answers 200: observe to see who leads);
// ErrPrecondition (HTTP 412) when leader is
// not the leader or the candidate cannot take over; engine.ErrOutcomeUnknown
// when the request was sent and no answer came, or Patroni itself could not
// tell ("Switchover status unknown"). The connection goes through o.Dial;
// o.Timeout bounds the dial, ctx (DefaultActionTimeout when it has no
// deadline) the whole call.
func Switchover(ctx context.Context, t engine.Target, o engine.ProbeOptions, leader, candidate string, opts ...ActionOption) error {
	if leader == "" {
		return errors.New("switchover: the current leader must be named (Patroni's compare-and-swap)")
	}
	body, err := json.Marshal(struct {
		Leader    string `json:"leader"`
		Candidate string `json:"candidate,omitempty"`
	}{leader, candidate})
	if err != nil {
		return err
	}
	a, err := post(ctx, t, o, "/switchover", body, opts)
	if err != nil {
		return err
	}
	switch {
	case a.code == 200:
		return nil
	case a.code == 412:
		return fmt.Errorf("%w: %w", ErrPrecondition, a.statusError())
	case a.code == 503 && strings.Contains(strings.ToLower(string(a.body)), "status unknown"):
		return fmt.Errorf("%w: %w", engine.ErrOutcomeUnknown, a.statusError())
	}
	return a.refusal()
}

// Reinitialize asks the replica t to wipe its data and copy it again from
// the leader (POST /reinitialize {}). Patroni starts the work and answers
// at once: nil means "started", not "done"; observe until the member
// streams again. The leader refuses with ErrIsLeader; a member that sees
// no leader with ErrNoLeader; one already reinitializing with
// engine.ErrAlready; one busy with another action with ErrBusy.
func Reinitialize(ctx context.Context, t engine.Target, o engine.ProbeOptions, opts ...ActionOption) error {
	a, err := post(ctx, t, o, "/reinitialize", []byte("{}"), opts)
	if err != nil {
		return err
	}
	if a.code == 200 {
		return nil
	}
	if a.code == 503 {
		text := strings.ToLower(string(a.body))
		switch {
		case strings.Contains(text, "i am the leader"):
			return fmt.Errorf("%w: %w", ErrIsLeader, a.statusError())
		case strings.Contains(text, "has no leader"):
			return fmt.Errorf("%w: %w: %w", engine.ErrNotYet, ErrNoLeader, a.statusError())
		case strings.HasPrefix(text, "reinitialize already in progress"):
			return fmt.Errorf("%w: %w", engine.ErrAlready, a.statusError())
		case strings.Contains(text, "already in progress"):
			return fmt.Errorf("%w: %w: %w", engine.ErrNotYet, ErrBusy, a.statusError())
		}
	}
	return a.refusal()
}

// actionAnswer is a member's answer to an action.
type actionAnswer struct {
	answer
	member, request string
}

func (a *actionAnswer) statusError() *StatusError {
	return &StatusError{Member: a.member, Request: a.request, Code: a.code, Body: snippet(a.body)}
}

// refusal is an answer no action expects. A 4xx is a refusal before
// acting (credentials refused: ErrUnauthorized). Any 5xx the callers did
// not recognise is engine.ErrOutcomeUnknown: Patroni answers "Switchover
// failed" or a handler's exception after it may already have acted (the
// primary demoted, the failover key written), so it is never "nothing
// changed".
func (a *actionAnswer) refusal() error {
	switch {
	case a.code == 401:
		return fmt.Errorf("%w: %w", ErrUnauthorized, a.statusError())
	case a.code == 403:
		return fmt.Errorf("%w: %w", engine.ErrForbidden, a.statusError())
	case a.code >= 500:
		return fmt.Errorf("%w: the member failed while handling it, after it may have acted: %w", engine.ErrOutcomeUnknown, a.statusError())
	}
	return a.statusError()
}

// post sends one unsafe request through a client of its own and returns
// the answer, whatever its code. A request that was written and got no
// answer is engine.ErrOutcomeUnknown; one that never left (dial, TLS) is
// reported as it failed.
func post(ctx context.Context, t engine.Target, o engine.ProbeOptions, path string, body []byte, opts []ActionOption) (*actionAnswer, error) {
	var ao actionOptions
	for _, opt := range opts {
		opt(&ao)
	}
	o = o.WithDefaults()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultActionTimeout)
		defer cancel()
	}
	if t.Member == "" {
		t.Member = t.Pod
	}
	request := "POST " + path
	c, err := newClient(ctx, t, o)
	if err != nil {
		return nil, fmt.Errorf("%s to %s: %w", request, t.Member, err)
	}
	defer c.close()
	var wrote atomic.Bool
	start := time.Now()
	a, err := c.request(ctx, "POST", path, body, ao.auth, &wrote)
	if err != nil {
		_, msg := c.explain(ctx, start, request, err)
		if wrote.Load() {
			return nil, fmt.Errorf("%w: %s was sent, no answer: %w", engine.ErrOutcomeUnknown, request, &explained{msg, err})
		}
		return nil, fmt.Errorf("%s was not sent: %w", request, &explained{msg, err})
	}
	return &actionAnswer{answer: *a, member: t.Member, request: request}, nil
}

// explained is an error told in explain's words (which name the member
// and say what was waited for) that still unwraps to the cause.
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }
