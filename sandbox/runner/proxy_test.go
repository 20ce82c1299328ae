package runner

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestPeekSender(t *testing.T) {
	req := "GET /raft/stream/message/abc HTTP/1.1\r\nHost: 127.5.1.2:2380\r\nX-Server-From: abc\r\nX-PeerURLs: http://127.5.1.1:2380\r\n\r\nBODY"
	br := bufio.NewReader(strings.NewReader(req))
	head, from := peekSender(br)
	if from != "127.5.1.1" {
		t.Fatalf("sender %q", from)
	}
	rest, _ := io.ReadAll(br)
	if string(head)+string(rest) != req {
		t.Fatalf("bytes lost: %q + %q", head, rest)
	}
	if _, from := peekSender(bufio.NewReader(strings.NewReader("GET /members HTTP/1.1\r\nHost: x\r\n\r\n"))); from != "" {
		t.Fatalf("sender %q from a request without X-PeerURLs", from)
	}
}

// TestPeerProxyIsolation runs the proxy in front of a real HTTP server and
// checks that isolating the target or the sender refuses connections, and
// that healing lets them through again.
func TestPeerProxyIsolation(t *testing.T) {
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(backend) }()
	defer srv.Close()
	port := backend.Addr().(*net.TCPAddr).Port

	pp := newPeerProxy(t.Logf)
	defer pp.close()
	// Front 127.0.0.2:port and forward to 127.0.0.1:port (the backend).
	if err := pp.ensure("127.0.0.2", "127.0.0.1", []int{port}); err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	get := func(from string) error {
		c, err := net.DialTimeout("tcp", hostPort("127.0.0.2", port), time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		fmt.Fprintf(c, "GET /version HTTP/1.1\r\nHost: x\r\nX-PeerURLs: http://%s:2380\r\nConnection: close\r\n\r\n", from)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	if err := get("127.0.0.3"); err != nil {
		t.Fatalf("healthy proxy refused: %v", err)
	}
	pp.isolate("127.0.0.3")
	if err := get("127.0.0.3"); err == nil {
		t.Fatal("a connection from an isolated member got through")
	}
	if err := get("127.0.0.4"); err != nil {
		t.Fatalf("another member was refused: %v", err)
	}
	pp.isolate("127.0.0.2")
	if err := get("127.0.0.4"); err == nil {
		t.Fatal("a connection to an isolated member got through")
	}
	pp.heal("127.0.0.2")
	pp.heal("127.0.0.3")
	if err := get("127.0.0.3"); err != nil {
		t.Fatalf("healed proxy refused: %v", err)
	}
}
