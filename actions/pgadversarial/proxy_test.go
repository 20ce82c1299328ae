package pgadversarial

import (
	"net"
	"sync"
	"time"
)

// latencyProxy forwards TCP connections to target, delivering every chunk
// of either direction delay after it arrived (order kept): an API server
// that answers slowly, seen through TLS it does not need to understand.
type latencyProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	wg     sync.WaitGroup
}

func newLatencyProxy(target string, delay time.Duration) (*latencyProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &latencyProxy{ln: ln, target: target, delay: delay}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *latencyProxy) Addr() string { return p.ln.Addr().String() }

func (p *latencyProxy) Close() {
	_ = p.ln.Close()
	p.wg.Wait()
}

func (p *latencyProxy) accept() {
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
func (p *latencyProxy) pipe(dst, src net.Conn) {
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
