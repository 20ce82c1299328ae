package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

func TestBlockResolver(t *testing.T) {
	r := BlockResolver(7)
	for _, tc := range []struct {
		host string
		port int
		want string
		ok   bool
	}{
		{"10.244.7.3", 8000, "127.7.1.3:8000", true},
		{"10.244.7.254", 5432, "127.7.1.254:5432", true},
		{"10.244.8.3", 8000, "", false},  // another sandbox's block
		{"10.244.7.0", 8000, "", false},  // no member
		{"10.244.7.03", 8000, "", false}, // not canonical
		{"10.244.x.1", 8000, "", false},
		{"127.0.0.1", 10250, "127.0.0.1:10250", true}, // kwok's kubelet: through
		{"127.7.1.2", 2379, "127.7.1.2:2379", true},   // a hostNetwork pod's IP
		{"node-1", 10250, "node-1:10250", true},
	} {
		got, ok := r(tc.host, tc.port)
		if got != tc.want || ok != tc.ok {
			t.Errorf("resolve(%s, %d) = %q, %v; want %q, %v", tc.host, tc.port, got, ok, tc.want, tc.ok)
		}
	}
}

// echo serves one line back with a prefix on a loopback port.
func echo(t *testing.T, prefix string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				_, _ = io.WriteString(c, prefix+line)
			}()
		}
	}()
	return ln
}

func connect(t *testing.T, sock, target string) (net.Conn, *bufio.Reader, int) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// As k8s.io/apiserver's tunnelHTTPConnect writes it.
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, "127.0.0.1")
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return c, br, res.StatusCode
}

func TestProxyMapsPodIPsAndPassesThrough(t *testing.T) {
	member := echo(t, "member:")
	other := echo(t, "kubelet:")
	_, mport, _ := net.SplitHostPort(member.Addr().String())
	_, oport, _ := net.SplitHostPort(other.Addr().String())
	// Pod 10.244.1.1's port stands for the member at 127.0.0.1 (the test's
	// resolver: BlockResolver's addresses need a block's loopback range).
	resolve := func(host string, port int) (string, bool) {
		if strings.HasPrefix(host, PodCIDRPrefix) {
			if host != "10.244.1.1" {
				return "", false
			}
			return net.JoinHostPort("127.0.0.1", fmt.Sprint(port)), true
		}
		return BlockResolver(1)(host, port)
	}
	sock := filepath.Join(t.TempDir(), "egress.sock")
	p, err := Start("unix", sock, resolve, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	for _, tc := range []struct{ target, want string }{
		{"10.244.1.1:" + mport, "member:hello\n"},
		{"127.0.0.1:" + oport, "kubelet:hello\n"},
	} {
		c, br, code := connect(t, sock, tc.target)
		if code != http.StatusOK {
			t.Fatalf("CONNECT %s: %d", tc.target, code)
		}
		if br.Buffered() != 0 {
			t.Fatalf("CONNECT %s: %d bytes after the response (the API server refuses them)", tc.target, br.Buffered())
		}
		_, _ = io.WriteString(c, "hello\n")
		got, err := br.ReadString('\n')
		if err != nil || got != tc.want {
			t.Fatalf("CONNECT %s: read %q, %v; want %q", tc.target, got, err, tc.want)
		}
	}
	if _, _, code := connect(t, sock, "10.244.1.9:8000"); code != http.StatusBadGateway {
		t.Fatalf("CONNECT to an unknown pod IP: %d, want 502", code)
	}
	if _, _, code := connect(t, sock, "10.244.1.1:1"); code != http.StatusServiceUnavailable {
		t.Fatalf("CONNECT to a closed port: %d, want 503", code)
	}
}

func TestConfig(t *testing.T) {
	got := Config("/tmp/x/egress.sock")
	for _, want := range []string{"kind: EgressSelectorConfiguration", "- name: cluster", "proxyProtocol: HTTPConnect", `udsName: "/tmp/x/egress.sock"`} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
}
