package runner

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"time"
)

// peerProxy fronts every member's advertised peer address (127.x.1.n:port)
// and forwards to where the member really listens (127.x.2.n:port). It can
// isolate members: an isolated member accepts no peer connection and no
// other member accepts one from it, so it is cut off from raft while its
// clients still reach it.
//
// The sender of a connection is known from its first request: etcd's peer
// transport sends the sender's advertised peer URLs (X-PeerURLs) on every
// stream, pipeline and snapshot request, and a connection only ever
// carries one sender's requests. Over TLS (kubeadm's etcd: https peer
// URLs) nothing can be read: the sender is the member whose process holds
// the connection's other end (owner, from /proc), looked up when a member
// is isolated.
type peerProxy struct {
	logf func(string, ...any)
	// owner returns the public address of the member holding socket
	// inode ino, or "" (nil: TLS senders stay unknown).
	owner func(ino uint64) string

	mu        sync.Mutex
	fronts    map[string]*front // by public address
	isolated  map[string]bool   // public addresses
	listening map[string]bool   // "addr:port" already proxied
}

type front struct {
	addr, peerAddr string
	lns            []net.Listener
	conns          map[*proxied]bool
}

type proxied struct {
	from     string // sender's public address ("" if unknown)
	down, up net.Conn
	// ino is the inode of the dialling socket of a TLS connection whose
	// sender is not known yet (0: none).
	ino uint64
}

func newPeerProxy(logf func(string, ...any)) *peerProxy {
	return &peerProxy{logf: logf, fronts: map[string]*front{}, isolated: map[string]bool{}, listening: map[string]bool{}}
}

// ensure proxies addr:port to peerAddr:port for each port (idempotent).
func (pp *peerProxy) ensure(addr, peerAddr string, ports []int) error {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	f := pp.fronts[addr]
	if f == nil {
		f = &front{addr: addr, peerAddr: peerAddr, conns: map[*proxied]bool{}}
		pp.fronts[addr] = f
	}
	for _, port := range ports {
		hp := hostPort(addr, port)
		if pp.listening[hp] {
			continue
		}
		ln, err := net.Listen("tcp", hp)
		if err != nil {
			return err
		}
		pp.listening[hp] = true
		f.lns = append(f.lns, ln)
		go pp.serve(f, ln, hostPort(peerAddr, port))
	}
	return nil
}

func (pp *peerProxy) serve(f *front, ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go pp.handle(f, c, target)
	}
}

func (pp *peerProxy) handle(f *front, down net.Conn, target string) {
	_ = down.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReaderSize(down, 16<<10)
	var head []byte
	var from string
	var ino uint64
	if first, err := br.Peek(1); err == nil && first[0] == tlsHandshake {
		// TLS: the client speaks first and waits for the server's
		// answer; nothing more can be read. The sender is whoever holds
		// the dialling socket.
		if pp.owner != nil {
			ino, _ = dialerInode(down)
		}
	} else {
		head, from = peekSender(br)
	}
	_ = down.SetReadDeadline(time.Time{})

	pp.mu.Lock()
	if ino != 0 && len(pp.isolated) > 0 {
		from, ino = pp.owner(ino), 0
	}
	denied := pp.isolated[f.addr] || (from != "" && pp.isolated[from])
	pp.mu.Unlock()
	if denied {
		down.Close()
		return
	}
	up, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		down.Close()
		return
	}
	pc := &proxied{from: from, down: down, up: up, ino: ino}
	pp.mu.Lock()
	if pc.ino != 0 && len(pp.isolated) > 0 {
		pc.from, pc.ino = pp.owner(pc.ino), 0
	}
	// Re-check under the lock that registers the connection, so an
	// isolation racing with this connection either sees it or refuses it.
	if pp.isolated[f.addr] || (pc.from != "" && pp.isolated[pc.from]) {
		pp.mu.Unlock()
		down.Close()
		up.Close()
		return
	}
	f.conns[pc] = true
	pp.mu.Unlock()
	defer func() {
		pp.mu.Lock()
		delete(f.conns, pc)
		pp.mu.Unlock()
		down.Close()
		up.Close()
	}()
	if _, err := up.Write(head); err != nil {
		return
	}
	relay(down, br, up)
}

// tlsHandshake is the first byte of a TLS connection (a handshake record).
const tlsHandshake = 0x16

// relay copies from (down's bytes, read through r) to up and back, each
// way closing the writing half when its source ends, until both ended.
func relay(down net.Conn, r io.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, r); closeWrite(up); done <- struct{}{} }()
	go func() { _, _ = io.Copy(down, up); closeWrite(down); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// peekSender reads the first request's header block (without consuming
// more) and returns the bytes read and the sender's public address from
// X-PeerURLs, or "" when the connection does not say (not HTTP, TLS, a
// request without the header).
func peekSender(br *bufio.Reader) ([]byte, string) {
	var head []byte
	for {
		line, err := br.ReadSlice('\n')
		head = append(head, line...)
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return head, ""
		}
		if len(head) > 32<<10 {
			return head, ""
		}
		if bytes.Equal(bytes.TrimRight(line, "\r\n"), nil) && err == nil {
			break
		}
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(head)))
	if _, err := tp.ReadLine(); err != nil {
		return head, ""
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil && len(h) == 0 {
		return head, ""
	}
	urls := http.Header(h).Get("X-PeerURLs")
	for _, raw := range strings.Split(urls, ",") {
		if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && u.Hostname() != "" {
			return head, u.Hostname()
		}
	}
	return head, ""
}

// isolate cuts the member at addr off from its peers, closing its current
// peer connections.
func (pp *peerProxy) isolate(addr string) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.isolated[addr] = true
	for _, f := range pp.fronts {
		for pc := range f.conns {
			if pc.ino != 0 {
				pc.from, pc.ino = pp.owner(pc.ino), 0
			}
			if f.addr == addr || pc.from == addr {
				pc.down.Close()
				pc.up.Close()
			}
		}
	}
}

// heal undoes isolate.
func (pp *peerProxy) heal(addr string) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	delete(pp.isolated, addr)
}

// close stops every listener and connection.
func (pp *peerProxy) close() {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for _, f := range pp.fronts {
		for _, ln := range f.lns {
			ln.Close()
		}
		for pc := range f.conns {
			pc.down.Close()
			pc.up.Close()
		}
	}
}
