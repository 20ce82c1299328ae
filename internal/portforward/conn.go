package portforward

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	streamhttp "k8s.io/streaming/pkg/httpstream"

	"github.com/hactl-dev/hactl/engine"
)

// closeGrace bounds how long Close lets the half-close of the data stream
// flush before the connection to the API server is cut.
const closeGrace = time.Second

// errGrace bounds how long a finished data stream waits for a message on
// the error stream, so that the reader sees the reason rather than a bare
// EOF.
const errGrace = time.Second

// conn is a net.Conn over one port-forward data stream. The caller holds
// one end of an in-memory pipe (which gives it deadlines); pumps copy
// between the other end and the stream.
type conn struct {
	net.Conn // the caller's end of the pipe

	remote     net.Conn // the pumps' end of the pipe
	sc         streamhttp.Connection
	errStream  streamhttp.Stream
	dataStream streamhttp.Stream
	target     addr

	closing   chan struct{}
	closeOnce sync.Once
	errDone   chan struct{}
	// finished is closed once every goroutine of this conn has returned
	// and the connection to the API server is closed.
	finished chan struct{}

	mu        sync.Mutex
	remoteErr error
}

func newConn(sc streamhttp.Connection, errStream, dataStream streamhttp.Stream, target addr) *conn {
	local, remote := net.Pipe()
	c := &conn{
		Conn:       local,
		remote:     remote,
		sc:         sc,
		errStream:  errStream,
		dataStream: dataStream,
		target:     target,
		closing:    make(chan struct{}),
		errDone:    make(chan struct{}),
		finished:   make(chan struct{}),
	}
	readDone := make(chan struct{})
	writeDone := make(chan struct{})

	// The error stream carries a message only when forwarding failed
	// (for example nothing listens on the port in the pod).
	go func() {
		defer close(c.errDone)
		msg, err := io.ReadAll(errStream)
		if len(msg) > 0 {
			c.setRemoteErr(&forwardError{target: target, msg: string(msg)})
		} else if err != nil && !isClosed(err) {
			c.setRemoteErr(fmt.Errorf("port-forward to %s: error stream: %w", target, err))
		}
	}()

	// Pod to caller.
	go func() {
		defer close(readDone)
		_, _ = io.Copy(remote, dataStream)
		select {
		case <-c.errDone:
		case <-c.closing:
		case <-time.After(errGrace):
		}
		_ = remote.Close()
	}()

	// Caller to pod; a closed caller end half-closes the data stream.
	go func() {
		defer close(writeDone)
		_, err := io.Copy(dataStream, remote)
		if err != nil {
			_ = remote.Close()
		}
		_ = dataStream.Close()
	}()

	go func() {
		defer close(c.finished)
		select {
		case <-readDone:
			<-writeDone
		case <-c.closing:
			select {
			case <-writeDone:
			case <-time.After(closeGrace):
			}
		}
		// Close resets every stream, then closes the connection; the
		// pumps still running return once their stream is gone.
		_ = sc.Close()
		_ = remote.Close()
		<-readDone
		<-writeDone
		<-c.errDone
	}()
	return c
}

// forwardError is a message from the error stream: the port-forward
// reached the API server but not the port in the pod.
type forwardError struct {
	target addr
	msg    string
}

func (e *forwardError) Error() string        { return "port-forward to " + e.target.String() + ": " + e.msg }
func (e *forwardError) Is(target error) bool { return target == engine.ErrForward }

func (c *conn) setRemoteErr(err error) {
	c.mu.Lock()
	if c.remoteErr == nil {
		c.remoteErr = err
	}
	c.mu.Unlock()
}

func (c *conn) remoteError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.remoteErr
}

// Read returns the pod's bytes; once the stream ends, the reason from the
// error stream if there was one.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && !isTimeout(err) {
		if re := c.remoteError(); re != nil {
			return n, re
		}
		if c.isClosing() {
			return n, &net.OpError{Op: "read", Net: c.target.Network(), Addr: c.target, Err: net.ErrClosed}
		}
	}
	return n, err
}

// Write sends bytes to the pod.
func (c *conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil && !isTimeout(err) {
		if re := c.remoteError(); re != nil {
			return n, re
		}
		if c.isClosing() {
			return n, &net.OpError{Op: "write", Net: c.target.Network(), Addr: c.target, Err: net.ErrClosed}
		}
	}
	return n, err
}

// Close closes the caller's end and, in the background, the streams and
// the connection to the API server. It never blocks on the network.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closing)
		_ = c.Conn.Close()
	})
	return nil
}

func (c *conn) isClosing() bool {
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

func (c *conn) LocalAddr() net.Addr  { return addr{namespace: "local", pod: "hactl", port: 0} }
func (c *conn) RemoteAddr() net.Addr { return c.target }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, net.ErrClosed)
}
