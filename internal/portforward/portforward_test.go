package portforward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/poll"
)

func newServer(t *testing.T, s *pfServer) *rest.Config {
	t.Helper()
	s.t = t
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// goroutineBaseline returns a check that the goroutine count came back to
// what it is now (give or take a few started by the runtime or the test
// server's listener).
func goroutineBaseline(t *testing.T) func() {
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		poll.Until(t, 5*time.Second, "goroutines to wind down", func() error {
			if n := runtime.NumGoroutine(); n > before+2 {
				return fmt.Errorf("%d goroutines, %d before", n, before)
			}
			return nil
		})
	}
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read: %v", err)
	}
	if string(buf) != msg {
		t.Fatalf("echo = %q, want %q", buf, msg)
	}
}

func TestDialEcho(t *testing.T) {
	echo := echoServer(t)
	for _, tc := range []struct {
		name    string
		tr      Transport
		allowWS bool
		want    string
	}{
		{"auto prefers WebSocket", TransportAuto, true, "websocket"},
		{"auto falls back to SPDY", TransportAuto, false, "spdy"},
		{"WebSocket only", TransportWebSocket, true, "websocket"},
		{"SPDY only", TransportSPDY, true, "spdy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &pfServer{allowWS: tc.allowWS, resolve: func(ns, pod string, port int) (string, error) {
				if ns != "ns1" || pod != "etcd-0" || port != 2379 {
					return "", fmt.Errorf("unexpected target %s/%s:%d", ns, pod, port)
				}
				return echo, nil
			}}
			cfg := newServer(t, s)
			settled := goroutineBaseline(t)
			dial, err := NewDialerWithOptions(cfg, Options{Transport: tc.tr})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := dial(ctx, "ns1", "etcd-0", 2379)
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, c, "hello through the tunnel")
			roundTrip(t, c, strings.Repeat("0123456789", 10000)) // bigger than one frame
			if got := c.RemoteAddr().String(); got != "ns1/etcd-0:2379" {
				t.Errorf("RemoteAddr = %q", got)
			}
			if got := s.transports(); len(got) != 1 || got[0] != tc.want {
				t.Errorf("server saw transports %v, want [%s]", got, tc.want)
			}
			s.mu.Lock()
			hs := s.headers
			s.mu.Unlock()
			if len(hs) != 2 {
				t.Fatalf("server saw %d streams, want 2", len(hs))
			}
			types := map[string]bool{}
			for _, h := range hs {
				types[h.Get(corev1.StreamType)] = true
				if h.Get(corev1.PortHeader) != "2379" || h.Get(corev1.PortForwardRequestIDHeader) != hs[0].Get(corev1.PortForwardRequestIDHeader) {
					t.Errorf("stream headers %v", h)
				}
			}
			if !types[corev1.StreamTypeError] || !types[corev1.StreamTypeData] {
				t.Errorf("stream types %v, want error and data", types)
			}

			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
				t.Errorf("write after close: %v, want net.ErrClosed", err)
			}
			select {
			case <-c.(*conn).finished:
			case <-time.After(5 * time.Second):
				t.Fatal("conn did not wind down after Close")
			}
			poll.Until(t, 5*time.Second, "the server to see the connection closed", func() error {
				if n := s.openConns(); n != 0 {
					return fmt.Errorf("%d open", n)
				}
				return nil
			})
			settled()
		})
	}
}

func TestWebSocketOnlyDoesNotFallBack(t *testing.T) {
	s := &pfServer{allowWS: false, resolve: func(string, string, int) (string, error) { return "", errors.New("unused") }}
	dial, err := NewDialerWithOptions(newServer(t, s), Options{Transport: TransportWebSocket})
	if err != nil {
		t.Fatal(err)
	}
	_, err = dial(context.Background(), "ns1", "etcd-0", 2379)
	if err == nil || !strings.Contains(err.Error(), "ns1/etcd-0:2379") {
		t.Fatalf("err = %v, want an upgrade failure naming the target", err)
	}
	if got := s.transports(); len(got) != 0 {
		t.Errorf("server upgraded %v", got)
	}
}

// A port nothing listens on inside the pod: the API server reports it on
// the error stream, and the next Read returns that message.
func TestRemoteErrorSurfacesOnRead(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	s := &pfServer{allowWS: true, resolve: func(string, string, int) (string, error) { return closed, nil }}
	dial, err := NewDialer(newServer(t, s))
	if err != nil {
		t.Fatal(err)
	}
	settled := goroutineBaseline(t)
	c, err := dial(context.Background(), "ns1", "etcd-0", 2379)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 10))
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "ns1/etcd-0:2379") {
		t.Fatalf("read: %v, want the forwarding error naming the target", err)
	}
	if !errors.Is(err, engine.ErrForward) {
		t.Errorf("read: %v does not match engine.ErrForward", err)
	}
	c.Close()
	settled()
}

// An API server that never answers the upgrade: the dial returns when its
// context ends, not when the server gives up.
func TestDialHonoursContext(t *testing.T) {
	hang := make(chan struct{})
	s := &pfServer{allowWS: true, hang: hang}
	cfg := newServer(t, s)
	t.Cleanup(func() { close(hang) }) // runs before the server closes
	dial, err := NewDialer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []Transport{TransportAuto, TransportSPDY} {
		dial, _ := NewDialerWithOptions(cfg, Options{Transport: tr})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		start := time.Now()
		_, err = dial(ctx, "ns1", "etcd-0", 2379)
		took := time.Since(start)
		cancel()
		t.Logf("%s: dial gave up after %s: %v", tr, took, err)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: err = %v, want context.DeadlineExceeded", tr, err)
		}
		if took > 3*time.Second {
			t.Errorf("%s: dial took %s with a 300ms context", tr, took)
		}
	}
	_ = dial
}

func TestDeadlinesOnConn(t *testing.T) {
	echo := echoServer(t)
	s := &pfServer{allowWS: true, resolve: func(string, string, int) (string, error) { return echo, nil }}
	dial, err := NewDialer(newServer(t, s))
	if err != nil {
		t.Fatal(err)
	}
	c, err := dial(context.Background(), "ns1", "etcd-0", 2379)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read with nothing to read: %v, want a timeout", err)
	}
	// A timed-out read leaves the conn usable.
	roundTrip(t, c, "still alive")
}

func TestNewDialerRejectsBadInput(t *testing.T) {
	if _, err := NewDialer(nil); err == nil {
		t.Error("NewDialer(nil) succeeded")
	}
	if _, err := NewDialerWithOptions(&rest.Config{Host: "http://127.0.0.1:1"}, Options{Transport: Transport(9)}); err == nil {
		t.Error("unknown transport accepted")
	}
	if _, err := NewDialer(&rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{CAFile: "/nonexistent/ca.crt"}}); err == nil {
		t.Error("unreadable CA file accepted")
	}
	dial, err := NewDialer(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	var _ engine.DialFunc = dial
	for _, bad := range []struct {
		ns, pod string
		port    int
	}{{"", "p", 1}, {"n", "", 1}, {"n", "a/b", 1}, {"n", "p", 0}, {"n", "p", 70000}} {
		if _, err := dial(context.Background(), bad.ns, bad.pod, bad.port); err == nil {
			t.Errorf("dial(%q, %q, %d) succeeded", bad.ns, bad.pod, bad.port)
		}
	}
}

func TestPodURL(t *testing.T) {
	d := &dialer{}
	for host, want := range map[string]string{
		"https://api.example:6443":         "https://api.example:6443/api/v1/namespaces/ns1/pods/etcd-0/portforward",
		"https://gateway.example/k8s/prod": "https://gateway.example/k8s/prod/api/v1/namespaces/ns1/pods/etcd-0/portforward",
	} {
		base, _, err := rest.DefaultServerUrlFor(&rest.Config{Host: host})
		if err != nil {
			t.Fatal(err)
		}
		d.base = base
		if got := d.podURL("ns1", "etcd-0").String(); got != want {
			t.Errorf("%s: %s, want %s", host, got, want)
		}
	}
}
