package actions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/hactl-dev/hactl/engine"
)

// member is the far end of a loopback TCP connection: it counts what
// reaches it.
type member struct {
	ln       net.Listener
	received atomic.Int64
	done     chan struct{}
}

func newMember(t *testing.T) *member {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &member{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n, _ := io.Copy(io.Discard, c)
			m.received.Add(n)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-m.done })
	return m
}

func (m *member) dial(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", m.ln.Addr().String())
}

var errLapsed = fmt.Errorf("%w: the test's lease lapsed", ErrLockLost)

// The send guard refuses a dial and every write once the lock is no
// longer valid; a step is "not sent" (ErrLockLost) only when none of its
// bytes reached the member, else its outcome is unknown and never reads
// as ErrLockLost.
func TestSendGuard(t *testing.T) {
	ctx := context.Background()
	var lapsed atomic.Bool
	g := &sendGuard{valid: func() error {
		if lapsed.Load() {
			return errLapsed
		}
		return nil
	}}

	t.Run("dial refused", func(t *testing.T) {
		lapsed.Store(true)
		defer lapsed.Store(false)
		var dialed bool
		a := g.begin()
		_, err := g.Dial(func(context.Context, string, string, int) (net.Conn, error) {
			dialed = true
			return nil, errors.New("dialed")
		})(ctx, "ns", "pod", 2379)
		if !errors.Is(err, ErrLockLost) || dialed {
			t.Fatalf("dial: %v (dialed %v), want refused before dialing", err, dialed)
		}
		if got := a.judge(fmt.Errorf("%w: connection failed", engine.ErrOutcomeUnknown)); !errors.Is(got, ErrLockLost) || errors.Is(got, ErrOutcomeUnknown) {
			t.Fatalf("judged %v, want not sent (lock lost)", got)
		}
	})

	t.Run("lapsed during the dial", func(t *testing.T) {
		m := newMember(t)
		a := g.begin()
		var conn net.Conn
		_, err := g.Dial(func(ctx context.Context, ns, pod string, port int) (net.Conn, error) {
			c, err := m.dial(ctx, ns, pod, port)
			conn = c
			lapsed.Store(true) // the dial took past the deadline
			return c, err
		})(ctx, "ns", "pod", 2379)
		defer lapsed.Store(false)
		if !errors.Is(err, ErrLockLost) {
			t.Fatalf("dial: %v, want refused", err)
		}
		if _, werr := conn.Write([]byte("x")); werr == nil {
			t.Fatal("the connection dialed past the deadline was left open")
		}
		if got := a.judge(errors.New("rpc error: connection closed")); !errors.Is(got, ErrLockLost) {
			t.Fatalf("judged %v, want not sent (lock lost)", got)
		}
	})

	t.Run("write refused before any byte", func(t *testing.T) {
		m := newMember(t)
		a := g.begin()
		c, err := g.Dial(m.dial)(ctx, "ns", "pod", 2379)
		if err != nil {
			t.Fatal(err)
		}
		lapsed.Store(true)
		defer lapsed.Store(false)
		if n, err := c.Write([]byte("POST /switchover")); n != 0 || !errors.Is(err, ErrLockLost) {
			t.Fatalf("write: %d, %v; want refused", n, err)
		}
		_ = c.Close()
		if got := a.judge(fmt.Errorf("POST /switchover was not sent: %w", io.ErrClosedPipe)); !errors.Is(got, ErrLockLost) {
			t.Fatalf("judged %v, want not sent (lock lost)", got)
		}
		_ = m.ln.Close()
		<-m.done
		if n := m.received.Load(); n != 0 {
			t.Fatalf("the member received %d bytes", n)
		}
	})

	t.Run("write refused after bytes went out", func(t *testing.T) {
		m := newMember(t)
		a := g.begin()
		c, err := g.Dial(m.dial)(ctx, "ns", "pod", 2379)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("PRI * HTTP/2.0")); err != nil {
			t.Fatal(err)
		}
		lapsed.Store(true)
		defer lapsed.Store(false)
		if _, err := c.Write([]byte("MemberRemove")); !errors.Is(err, ErrLockLost) {
			t.Fatalf("write: %v, want refused", err)
		}
		_ = c.Close()
		unanswered := fmt.Errorf("%w: rpc error: %w", engine.ErrOutcomeUnknown, errLapsed)
		got := a.judge(unanswered)
		if !errors.Is(got, ErrOutcomeUnknown) || errors.Is(got, ErrLockLost) {
			t.Fatalf("judged %v, want an unknown outcome that is not read as not sent", got)
		}
		if answered := fmt.Errorf("%w: learner not in sync", engine.ErrNotYet); a.judge(answered) != answered {
			t.Fatalf("the member's own answer was not kept")
		}
	})

	t.Run("no refusal", func(t *testing.T) {
		a := g.begin()
		err := fmt.Errorf("%w: timed out", engine.ErrOutcomeUnknown)
		if a.judge(err) != err || a.judge(nil) != nil {
			t.Fatal("judge changed an error the guard did not cause")
		}
		var none *sendGuard
		if s := none.begin(); s.judge(err) != err {
			t.Fatal("without a guard the error must stand")
		}
	})
}
