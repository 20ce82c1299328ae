package actions

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/hactl-dev/hactl/engine"
)

// Locks are the action locks a process holds (AcquireLock adds one,
// Release removes it), which its guarded API transports consult before
// every changing request (Guard). The clients a process builds and the
// locks it takes must meet in one set: ProcessLocks, unless a caller
// hands both the same set of its own (LockOptions.Locks).
type Locks struct {
	m sync.Map // *Lock -> struct{}
}

// ProcessLocks are this process's locks: the set AcquireLock registers in
// when LockOptions.Locks is nil, and GuardTransport consults.
var ProcessLocks = &Locks{}

func (ls *Locks) add(lk *Lock)    { ls.m.Store(lk, struct{}{}) }
func (ls *Locks) remove(lk *Lock) { ls.m.Delete(lk) }

// valid is nil while every lock of the set is known valid (Lock.Valid).
func (ls *Locks) valid() error {
	var err error
	ls.m.Range(func(k, _ any) bool {
		err = k.(*Lock).Valid()
		return err == nil
	})
	return err
}

// Guard wraps an API client's transport (rest.Config.Wrap) so that no
// changing request (POST, PUT, PATCH, DELETE) leaves this process while a
// lock of ls is no longer known valid (Lock.Valid). The executor checks
// validity before each step; this check sits right before the request is
// written, so a holder frozen (SIGSTOP, a paused VM) after that check and
// woken past its renew deadline still sends nothing. Requests to Leases
// pass: they are the lock's own renewals and release, fenced by the
// Lease's resourceVersion.
func (ls *Locks) Guard(rt http.RoundTripper) http.RoundTripper {
	return guard{next: rt, locks: ls}
}

// GuardTransport is ProcessLocks.Guard: the guard of every client
// kubectl-hactl builds.
func GuardTransport(rt http.RoundTripper) http.RoundTripper { return ProcessLocks.Guard(rt) }

type guard struct {
	next  http.RoundTripper
	locks *Locks
}

func (g guard) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return g.next.RoundTrip(req)
	}
	if strings.Contains(req.URL.Path, "/apis/coordination.k8s.io/") {
		return g.next.RoundTrip(req)
	}
	if err := g.locks.valid(); err != nil {
		return nil, fmt.Errorf("%s %s not sent: %w", req.Method, req.URL.Path, err)
	}
	return g.next.RoundTrip(req)
}

// sendGuard is the transport guard of the engine's own requests (a
// member removal over gRPC, Patroni's POST /switchover): they travel in a
// tunnel opened with a read (a port-forward's GET upgrade), which
// GuardTransport lets pass. The executor hands the engine a dial wrapped
// by Dial: it checks valid before dialing and again before returning the
// connection (a dial can take long), and the connection checks it before
// every write. A write refused there never leaves this process. Each
// member operation gets an account (begin) of what its connections wrote
// and whether the guard refused one, so that the step is reported "not
// sent" only when none of its bytes reached the member.
type sendGuard struct {
	valid func() error
	mu    sync.Mutex
	cur   *sendAccount
}

// sendAccount is what one member operation's connections did.
type sendAccount struct {
	mu      sync.Mutex
	wrote   bool
	refused error
}

// begin opens the account of the next member operation; connections
// dialed from now on write to it. Nil-safe: without a guard (member
// operations handed to the Executor) it returns nil.
func (g *sendGuard) begin() *sendAccount {
	if g == nil {
		return nil
	}
	a := &sendAccount{}
	g.mu.Lock()
	g.cur = a
	g.mu.Unlock()
	return a
}

func (g *sendGuard) account() *sendAccount {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cur == nil {
		g.cur = &sendAccount{}
	}
	return g.cur
}

// check asks valid and records a refusal in a.
func (g *sendGuard) check(a *sendAccount) error {
	err := g.valid()
	if err != nil {
		a.mu.Lock()
		if a.refused == nil {
			a.refused = err
		}
		a.mu.Unlock()
	}
	return err
}

// Dial wraps next as described on sendGuard (nil stays nil: the engine
// reports that no dialer is configured).
func (g *sendGuard) Dial(next engine.DialFunc) engine.DialFunc {
	if next == nil {
		return nil
	}
	return func(ctx context.Context, namespace, pod string, port int) (net.Conn, error) {
		a := g.account()
		if err := g.check(a); err != nil {
			return nil, fmt.Errorf("connection to %s/%s port %d not opened: %w", namespace, pod, port, err)
		}
		c, err := next(ctx, namespace, pod, port)
		if err != nil {
			return nil, err
		}
		if err := g.check(a); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("connection to %s/%s port %d closed before any request: %w", namespace, pod, port, err)
		}
		return &guardedConn{Conn: c, g: g, a: a}, nil
	}
}

// guardedConn checks the guard right before every write.
type guardedConn struct {
	net.Conn
	g *sendGuard
	a *sendAccount
}

func (c *guardedConn) Write(p []byte) (int, error) {
	if err := c.g.check(c.a); err != nil {
		return 0, fmt.Errorf("not written to the member: %w", err)
	}
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.a.mu.Lock()
		c.a.wrote = true
		c.a.mu.Unlock()
	}
	return n, err
}

// judge tells what a member operation that ended in err did when the
// guard refused one of its writes or dials: nothing reached the member
// (the refusal, an ErrLockLost: "not sent"), or some of its bytes did
// before the refusal, and then the member may have acted on them unless
// it answered (ErrOutcomeUnknown, which never matches ErrLockLost: the
// run observes, then stops at its next lock check). Without a refusal err
// stands as it is.
func (a *sendAccount) judge(err error) error {
	if a == nil || err == nil {
		return err
	}
	a.mu.Lock()
	wrote, refused := a.wrote, a.refused
	a.mu.Unlock()
	switch {
	case refused == nil:
		return err
	case !wrote:
		return fmt.Errorf("refused before any byte reached the member: %w", refused)
	case errors.Is(err, ErrAlready), errors.Is(err, ErrNotYet), errors.Is(err, engine.ErrPrecondition),
		errors.Is(err, engine.ErrForbidden), errors.Is(err, engine.ErrUnauthorized):
		return err // the member answered
	}
	return fmt.Errorf("%w: part of the request reached the member before the lock check refused the rest (%v): it may have taken effect (%v)", ErrOutcomeUnknown, refused, err)
}
