package runner

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRelayResponse(t *testing.T) {
	for name, c := range map[string]struct{ in, out string }{
		"HTTP/1.0 without a length gets one": {
			"HTTP/1.0 200 OK\r\nServer: BaseHTTP/0.6\r\nContent-Type: application/json\r\n\r\n{\"role\": \"master\"}",
			"HTTP/1.0 200 OK\r\nServer: BaseHTTP/0.6\r\nContent-Type: application/json\r\nContent-Length: 18\r\n\r\n{\"role\": \"master\"}",
		},
		"bare newlines": {
			"HTTP/1.0 503 Service Unavailable\nX: y\n\nbody",
			"HTTP/1.0 503 Service Unavailable\nX: y\nContent-Length: 4\r\n\nbody",
		},
		"a length passes": {
			"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
			"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		},
		"chunked passes": {
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		},
		"204 passes":   {"HTTP/1.0 204 No Content\r\n\r\n", "HTTP/1.0 204 No Content\r\n\r\n"},
		"not HTTP":     {"\x00\x00\x12\x04\x00\x00\x00\x00\x00", "\x00\x00\x12\x04\x00\x00\x00\x00\x00"},
		"short":        {"HTTP", "HTTP"},
		"empty":        {"", ""},
		"gRPC preface": {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
	} {
		var out bytes.Buffer
		relayResponse(&out, strings.NewReader(c.in))
		if out.String() != c.out {
			t.Errorf("%s: got %q, want %q", name, out.String(), c.out)
		}
	}
}

// TestForwardProxyEndsCloseDelimitedResponses: through the proxy, a
// client that reads to EOF (as Go's HTTP client does) gets an HTTP/1.0
// answer without a length, and the proxy ends the connection although
// the client does not close its side.
func TestForwardProxyEndsCloseDelimitedResponses(t *testing.T) {
	port := serveEach(t, "127.0.0.1:0", func(c net.Conn) {
		buf := make([]byte, 4096)
		_, _ = c.Read(buf)
		_, _ = io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"state\": \"running\"}")
	})
	fp := newForwardProxy(t.Logf)
	defer fp.close()
	if err := fp.ensure("127.0.0.2", "127.0.0.1", []int{port}); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	begin := time.Now()
	resp, err := client.Get("http://" + hostPort("127.0.0.2", port) + "/patroni")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != `{"state": "running"}` || resp.ContentLength != int64(len(b)) {
		t.Fatalf("body %q, length %d, %v", b, resp.ContentLength, err)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Fatalf("took %s", d)
	}
	// Once dropped (the container stopped), connections are refused.
	fp.drop("127.0.0.2", []int{port})
	if c, err := net.Dial("tcp", hostPort("127.0.0.2", port)); err == nil {
		c.Close()
		t.Fatal("a dropped port still accepts connections")
	}
}

// TestRelayPassesAShortFirstAnswerAtOnce: PostgreSQL answers a client's
// SSLRequest with the single byte N and then waits for the client; the
// relay must pass that byte on at once, not wait for nine.
func TestRelayPassesAShortFirstAnswerAtOnce(t *testing.T) {
	server, relayIn := net.Pipe()
	defer server.Close()
	out, client := net.Pipe()
	defer client.Close()
	go relayResponse(out, relayIn)
	go func() { _, _ = server.Write([]byte("N")) }()
	_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 1)
	if _, err := io.ReadFull(client, b); err != nil || b[0] != 'N' {
		t.Fatalf("the relay held back the server's one-byte answer: %q, %v", b, err)
	}
}
