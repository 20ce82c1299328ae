package e2esuite

import (
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// LatencyProxy forwards TCP connections to a target, delivering every
// chunk of either direction a delay after it arrived (order kept): an API
// server that answers slowly, seen through TLS it does not need to
// understand.
type LatencyProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	wg     sync.WaitGroup
}

// NewLatencyProxy listens on a free loopback port and forwards to target.
func NewLatencyProxy(target string, delay time.Duration) (*LatencyProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &LatencyProxy{ln: ln, target: target, delay: delay}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address the proxy listens on.
func (p *LatencyProxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting; open connections end with either side.
func (p *LatencyProxy) Close() {
	_ = p.ln.Close()
	p.wg.Wait()
}

func (p *LatencyProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				return
			}
			go p.pipe(up, c)
			p.pipe(c, up)
		}()
	}
}

type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies from src to dst, each chunk delay late; either side's end
// closes both.
func (p *LatencyProxy) pipe(dst, src net.Conn) {
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{b: b[:n], due: time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	_ = dst.Close()
	_ = src.Close()
	for range q { // drain, so that the reader ends
	}
}

// SlowKubeconfig starts a latency proxy in front of the sandbox's API
// server and writes a kubeconfig that goes through it.
func (s *Suite) SlowKubeconfig(t testing.TB, delay time.Duration) (*LatencyProxy, string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(s.SB.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var proxy *LatencyProxy
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		if proxy == nil {
			if proxy, err = NewLatencyProxy(u.Host, delay); err != nil {
				t.Fatal(err)
			}
		}
		u.Host = proxy.Addr()
		c.Server = u.String()
	}
	if proxy == nil {
		t.Fatal("the sandbox kubeconfig names no cluster")
	}
	path := filepath.Join(s.Dir(), "kubeconfig-slow")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return proxy, path
}
