package runner

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"sync"
)

// forwardProxy stands between kwok's port-forward and the members: each
// pod's PortForward targets the member's forward address (127.x.3.n), and
// the proxy relays to its address (127.x.1.n) on the same port.
//
// It exists for one difference between kwok and a kubelet: kwok ends a
// forwarded connection only once both sides have closed, so a member's
// close never reaches the port-forward client. A response delimited by
// the close — an HTTP response without Content-Length or chunking, as
// Patroni's REST API (HTTP/1.0) answers — would arrive whole and never
// end. The proxy reads such a
// response to its end and hands it on with a Content-Length, so the
// client knows where it ends (and then closes, which kwok does pass on).
// Everything else passes through unchanged. A container's ports are
// relayed only while its process runs, so that, as without the proxy, a
// port-forward to a member that is not running is refused.
type forwardProxy struct {
	logf func(string, ...any)

	mu        sync.Mutex
	closed    bool
	listening map[string]net.Listener // by "addr:port"
	conns     map[net.Conn]bool
}

// maxBuffered bounds the close-delimited response the proxy buffers; a
// longer one passes through as it is.
const maxBuffered = 16 << 20

func newForwardProxy(logf func(string, ...any)) *forwardProxy {
	return &forwardProxy{logf: logf, listening: map[string]net.Listener{}, conns: map[net.Conn]bool{}}
}

// ensure relays front:port to back:port for each port (idempotent).
func (fp *forwardProxy) ensure(front, back string, ports []int) error {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if fp.closed {
		return net.ErrClosed
	}
	for _, port := range ports {
		hp := hostPort(front, port)
		if fp.listening[hp] != nil {
			continue
		}
		ln, err := net.Listen("tcp", hp)
		if err != nil {
			return err
		}
		fp.listening[hp] = ln
		go fp.serve(ln, hostPort(back, port))
	}
	return nil
}

func (fp *forwardProxy) serve(ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go fp.handle(c, target)
	}
}

func (fp *forwardProxy) track(c net.Conn, on bool) bool {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if on && fp.closed {
		return false
	}
	if on {
		fp.conns[c] = true
	} else {
		delete(fp.conns, c)
	}
	return true
}

func (fp *forwardProxy) handle(down net.Conn, target string) {
	defer down.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	if !fp.track(down, true) || !fp.track(up, true) {
		return
	}
	defer fp.track(down, false)
	defer fp.track(up, false)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, down); closeWrite(up); done <- struct{}{} }()
	go func() {
		relayResponse(down, up)
		// The member is done: end the connection both ways, so that
		// nothing waits for a client that will not close.
		down.Close()
		done <- struct{}{}
	}()
	<-done
	<-done
}

// relayResponse copies src to dst; when src starts with an HTTP/1.x
// response delimited by the connection's close, it is read to its end and
// written with a Content-Length header.
func relayResponse(dst io.Writer, src io.Reader) {
	br := bufio.NewReaderSize(src, 64<<10)
	head, closeDelimited := readResponseHead(br)
	if !closeDelimited {
		if len(head) > 0 {
			if _, err := dst.Write(head); err != nil {
				return
			}
		}
		_, _ = io.Copy(dst, br)
		return
	}
	body, err := io.ReadAll(io.LimitReader(br, maxBuffered+1))
	if err != nil || len(body) > maxBuffered {
		// Too long (or broken): as it is.
		if _, err := dst.Write(append(head, body...)); err == nil {
			_, _ = io.Copy(dst, br)
		}
		return
	}
	// head ends with the blank line: insert the length before it.
	blank := len(head) - bytes.LastIndexByte(head[:len(head)-1], '\n') - 1
	out := append([]byte(nil), head[:len(head)-blank]...)
	out = append(out, "Content-Length: "+strconv.Itoa(len(body))+"\r\n"...)
	out = append(out, head[len(head)-blank:]...)
	out = append(out, body...)
	_, _ = dst.Write(out)
}

// readResponseHead reads an HTTP/1.x response's status line and header
// block from br, returning the bytes read (all of them, to pass on) and
// whether the body ends with the connection: a status that has a body,
// and neither Content-Length nor Transfer-Encoding (RFC 9112 6.3).
// Anything else returns what was read and false.
func readResponseHead(br *bufio.Reader) ([]byte, bool) {
	// Peek one byte first: a server that speaks first with less than a
	// status line (PostgreSQL's one-byte answer to SSLRequest) must not be
	// held back waiting for nine.
	if p, err := br.Peek(1); err != nil || p[0] != 'H' {
		return nil, false
	}
	if p, err := br.Peek(9); err != nil || !(bytes.Equal(p, []byte("HTTP/1.0 ")) || bytes.Equal(p, []byte("HTTP/1.1 "))) {
		return nil, false
	}
	var head []byte
	lengthKnown := false
	for n := 0; ; n++ {
		line, err := br.ReadSlice('\n')
		head = append(head, line...)
		if err != nil || len(head) > 64<<10 {
			return head, false
		}
		if n == 0 {
			f := bytes.Fields(line)
			if len(f) < 2 {
				return head, false
			}
			code, err := strconv.Atoi(string(f[1]))
			if err != nil || code < 200 || code == 204 || code == 304 {
				return head, false
			}
			continue
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return head, !lengthKnown
		}
		if name, _, ok := bytes.Cut(line, []byte(":")); ok {
			switch string(bytes.ToLower(bytes.TrimSpace(name))) {
			case "content-length", "transfer-encoding":
				lengthKnown = true
			}
		}
	}
}

// drop stops relaying front:port for each port: connections are refused
// again, as by a member that is not running.
func (fp *forwardProxy) drop(front string, ports []int) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	for _, port := range ports {
		hp := hostPort(front, port)
		if ln := fp.listening[hp]; ln != nil {
			ln.Close()
			delete(fp.listening, hp)
		}
	}
}

// close stops every listener and connection.
func (fp *forwardProxy) close() {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	fp.closed = true
	for _, ln := range fp.listening {
		ln.Close()
	}
	for c := range fp.conns {
		c.Close()
	}
}
