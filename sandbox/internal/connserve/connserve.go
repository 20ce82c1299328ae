// Package connserve serves a listener's connections, each in a
// goroutine of its own, and ends them all on Close: what the sandbox's
// small proxies (the pod network's SOCKS5 proxy, the API server's egress
// proxy) share.
package connserve

import (
	"net"
	"sync"
)

// Server hands each connection its listener accepts to a handler.
type Server struct {
	ln     net.Listener
	handle func(net.Conn)

	mu    sync.Mutex
	conns map[net.Conn]bool
	done  bool
	wg    sync.WaitGroup
}

// Serve starts serving ln's connections with handle, which owns each
// connection (closes it when done).
func Serve(ln net.Listener, handle func(net.Conn)) *Server {
	s := &Server{ln: ln, handle: handle, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.serve()
	return s
}

// Addr is where it listens.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		if !s.track(c, true) {
			c.Close()
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.track(c, false)
			s.handle(c)
		}()
	}
}

func (s *Server) track(c net.Conn, on bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		if s.done {
			return false
		}
		s.conns[c] = true
		return true
	}
	delete(s.conns, c)
	return true
}

// Track adds c, a connection a handler opened (the other end of a
// relay), to those Close ends; false when the server is closing (c is
// then the handler's to close).
func (s *Server) Track(c net.Conn) bool { return s.track(c, true) }

// Untrack removes c from those Close ends.
func (s *Server) Untrack(c net.Conn) { s.track(c, false) }

// Close stops accepting, closes every open connection and waits for
// their handlers.
func (s *Server) Close() {
	s.mu.Lock()
	s.done = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	s.wg.Wait()
}
