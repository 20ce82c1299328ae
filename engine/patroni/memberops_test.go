package patroni

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine"
)

// stubMember answers every request with code and body, in Patroni 3.0.2's
// manner (HTTP/1.0, closed after the answer), and records what it was
// sent.
func stubMember(t *testing.T, code int, body string) (engine.DialFunc, func() []string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var (
		mu  sync.Mutex
		got []string
	)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			req, err := http.ReadRequest(bufio.NewReader(c))
			if err == nil {
				b := make([]byte, req.ContentLength)
				_, _ = req.Body.Read(b)
				mu.Lock()
				got = append(got, req.Method+" "+req.URL.Path+" "+string(b))
				mu.Unlock()
			}
			fmt.Fprintf(c, "HTTP/1.0 %d X\r\nContent-Type: text/plain\r\n\r\n%s", code, body)
			c.Close()
		}
	}()
	dial := func(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", l.Addr().String())
	}
	return dial, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestActionsMapOutcomes: through Actions, a switchover is sent to via
// naming via.Member as the leader, Patroni's 412 is
// engine.ErrPrecondition, a reinitialize refused by the leader too, and
// "already in progress" is engine.ErrAlready.
func TestActionsMapOutcomes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	via := engine.Target{Member: "pg-0", Pod: "pg-0", Port: 8008}

	dial, got := stubMember(t, 200, "Successfully switched over to \"pg-1\"")
	ops := New().(engine.Actioner).Actions(engine.ProbeOptions{Dial: dial})
	if err := ops.MoveLeader(ctx, via, "pg-1"); err != nil {
		t.Fatalf("switchover: %v", err)
	}
	if g := got(); len(g) != 1 || !strings.Contains(g[0], `POST /switchover {"leader":"pg-0","candidate":"pg-1"}`) {
		t.Errorf("sent %q", g)
	}

	dial, _ = stubMember(t, 412, "leader name does not match")
	ops = New().(engine.Actioner).Actions(engine.ProbeOptions{Dial: dial})
	if err := ops.MoveLeader(ctx, via, "pg-1"); !errors.Is(err, engine.ErrPrecondition) || !errors.Is(err, ErrPrecondition) || !strings.Contains(err.Error(), "412") {
		t.Errorf("switchover answered 412: %v, want engine.ErrPrecondition", err)
	}
	if err := ops.RemoveMember(ctx, via, "pg-1"); !errors.Is(err, ErrNotApplicable) {
		t.Errorf("remove member: %v", err)
	}

	dial, got = stubMember(t, 503, "I am the leader, can not reinitialize")
	ri := New().(engine.Actioner).Actions(engine.ProbeOptions{Dial: dial}).(engine.Reinitializer)
	if err := ri.Reinitialize(ctx, via); !errors.Is(err, engine.ErrPrecondition) || !errors.Is(err, ErrIsLeader) {
		t.Errorf("reinitialize of the leader: %v, want engine.ErrPrecondition", err)
	}
	if g := got(); len(g) != 1 || !strings.HasPrefix(g[0], "POST /reinitialize") {
		t.Errorf("sent %q", g)
	}

	dial, _ = stubMember(t, 503, "reinitialize already in progress")
	ri = New().(engine.Actioner).Actions(engine.ProbeOptions{Dial: dial}).(engine.Reinitializer)
	if err := ri.Reinitialize(ctx, via); !errors.Is(err, engine.ErrAlready) || errors.Is(err, engine.ErrPrecondition) {
		t.Errorf("reinitialize in progress: %v, want engine.ErrAlready", err)
	}
	dial, _ = stubMember(t, 200, "reinitialize started")
	ri = New().(engine.Actioner).Actions(engine.ProbeOptions{Dial: dial}).(engine.Reinitializer)
	if err := ri.Reinitialize(ctx, via); err != nil {
		t.Errorf("reinitialize: %v", err)
	}
}
