package patroni

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine"
)

// tunnelMember answers like Patroni 3.0.2 (HTTP/1.0, no Content-Length, the
// body ended by closing) but behind a tunnel that never passes the close
// on, as a port-forward does: the connection stays open after the body.
// It serves one canned body per path.
func tunnelMember(t *testing.T, bodies map[string]string, code int) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	t.Cleanup(func() {
		l.Close()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
			go func() {
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				body := bodies[req.URL.Path]
				_, _ = c.Write([]byte("HTTP/1.0 " + strconv.Itoa(code) + " X\r\nServer: BaseHTTP/0.6 Python/3.11.2\r\nContent-Type: application/json\r\n\r\n" + body))
				// no close: the tunnel keeps the connection open
			}()
		}
	}()
	return l.Addr().String()
}

// TestAnswersThroughATunnelThatKeepsTheConnectionOpen: through a
// port-forward Patroni's end-of-body close never arrives; the probe must
// still read the JSON documents at once (not at the deadline), and an
// action's text answer must end once the text stops coming.
func TestAnswersThroughATunnelThatKeepsTheConnectionOpen(t *testing.T) {
	addr := tunnelMember(t, map[string]string{
		"/patroni": `{"state": "running", "role": "master", "server_version": 150018, "xlog": {"location": 67108864}, "timeline": 1, "database_system_identifier": "7714", "patroni": {"version": "3.0.2", "scope": "pg"}}`,
		"/cluster": `{"members": [{"name": "pg-0", "role": "leader", "state": "running"}]}`,
	}, 200)
	dial := func(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	o := engine.ProbeOptions{Timeout: 10 * time.Second, Dial: dial}
	// Waiting for the close would run into the probe's deadline.
	f := New().Probe(context.Background(), []engine.Target{{Member: "pg-0", Pod: "pg-0", Port: 8008}}, o)[0]
	if !f.Reachable || f.Patroni == nil || !f.Patroni.Writable() || f.Patroni.ViewLeader != "pg-0" || f.Patroni.WALLocation == nil {
		t.Fatalf("facts %+v (%+v)", f, f.Patroni)
	}

	text := tunnelMember(t, map[string]string{"/switchover": "leader name does not match"}, 412)
	dialText := func(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", text)
	}
	// Waiting for the close would run into this deadline: outcome unknown.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := Switchover(ctx, engine.Target{Member: "pg-0", Pod: "pg-0", Port: 8008}, engine.ProbeOptions{Timeout: 5 * time.Second, Dial: dialText}, "pg-0", "pg-1")
	if !errors.Is(err, ErrPrecondition) {
		t.Errorf("switchover answered 412 through the tunnel: %v, want ErrPrecondition", err)
	}
}

// TestSwitchoverFailedIsUnknown: Patroni answers "503 Switchover failed"
// after it may have demoted the primary: an unknown outcome, never a
// refusal that changed nothing. A 4xx other than 412 is a refusal.
func TestSwitchoverFailedIsUnknown(t *testing.T) {
	for _, tc := range []struct {
		code    int
		body    string
		unknown bool
	}{
		{503, "Switchover failed", true},
		{500, "internal error", true},
		{400, "Failover could be performed only to a specific candidate", false},
	} {
		addr := tunnelMember(t, map[string]string{"/switchover": tc.body}, tc.code)
		dial := func(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
		err := Switchover(context.Background(), engine.Target{Member: "pg-0", Pod: "pg-0", Port: 8008}, engine.ProbeOptions{Timeout: 5 * time.Second, Dial: dial}, "pg-0", "pg-1")
		if got := errors.Is(err, engine.ErrOutcomeUnknown); got != tc.unknown || err == nil {
			t.Errorf("HTTP %d %q: %v; unknown outcome %v, want %v", tc.code, tc.body, err, got, tc.unknown)
		}
	}
}
