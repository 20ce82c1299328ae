package patroni

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/hactl-dev/hactl/engine"
)

// maxBody bounds how much of an answer is read: Patroni's status and
// cluster documents are a few kilobytes.
const maxBody = 1 << 20

// client talks to exactly one member's REST API through a DialFunc. Every
// connection it opens goes to the target's pod and port, whatever the URL
// says; it never follows redirects and uses no proxy. Patroni 3.0.2 speaks
// HTTP/1.0 and closes the connection after each answer, so keep-alives are
// off and each request opens (and closes) its own connection.
type client struct {
	target engine.Target
	http   *http.Client
	tr     *http.Transport
	base   string
	state  *engine.DialState
	hasTLS bool
}

// answer is one HTTP answer: the status code and the (bounded) body.
type answer struct {
	code int
	body []byte
}

// newClient builds a client for t. life bounds every dial besides the
// request's own context (a dial the transport keeps going after its request
// gave up still ends with life); dialTimeout bounds each dial on its own.
func newClient(life context.Context, t engine.Target, o engine.ProbeOptions) (*client, error) {
	if o.Dial == nil {
		return nil, errors.New("no dialer configured")
	}
	if t.Pod == "" || t.Port <= 0 {
		return nil, errors.New("no pod or port given")
	}
	c := &client{target: t, state: &engine.DialState{}, hasTLS: o.Credentials != nil}
	scheme := "http"
	tr := &http.Transport{
		Proxy:              nil, // never: the DialFunc is the only way in
		DialContext:        c.dialer(life, o.Dial, o.Timeout, nil),
		DisableKeepAlives:  true,
		DisableCompression: true,
		MaxConnsPerHost:    2,
	}
	if o.Credentials != nil {
		tc, err := engine.TLSConfig(o.Credentials, t)
		if err != nil {
			return nil, &credentialsError{err: err}
		}
		scheme = "https"
		tr.DialTLSContext = c.dialer(life, o.Dial, o.Timeout, tc)
	}
	c.tr = tr
	c.base = scheme + "://" + engine.PlaceholderHost(t, o.Credentials)
	c.http = &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // never follow: a redirect leaves the tunnel
		},
	}
	return c, nil
}

// close releases every connection the client still holds.
func (c *client) close() { c.tr.CloseIdleConnections() }

// dialer returns the transport's dial function: it ignores the address,
// calls dial for the target's pod and port, and records how it went. With
// tc set it also runs the TLS handshake.
func (c *client) dialer(life context.Context, dial engine.DialFunc, timeout time.Duration, tc *tls.Config) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		stop := context.AfterFunc(life, cancel)
		defer stop()

		c.state.DialStarted()
		raw, err := dial(ctx, c.target.Namespace, c.target.Pod, c.target.Port)
		c.state.DialDone(err)
		if err != nil {
			return nil, err
		}
		conn := c.state.Observe(raw)
		if tc == nil {
			return conn, nil
		}
		tconn := tls.Client(conn, tc)
		if err := tconn.HandshakeContext(ctx); err != nil {
			c.state.Handshook(c.target.Port, nil, err)
			_ = conn.Close()
			return nil, err
		}
		cs := tconn.ConnectionState()
		c.state.Handshook(c.target.Port, &cs, nil)
		return c.state.Observe(tconn), nil
	}
}

// request sends one request and reads its answer. wrote, when not nil, is
// set once the whole request has been written (from then on the member
// may act on it even if no answer arrives).
func (c *client) request(ctx context.Context, method, path string, body []byte, auth *BasicAuth, wrote *atomic.Bool) (*answer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	if wrote != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(i httptrace.WroteRequestInfo) {
				if i.Err == nil {
					wrote.Store(true)
				}
			},
		})
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != nil {
		req.SetBasicAuth(auth.Username, auth.Password)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, engine.UnwrapURL(err)
	}
	defer resp.Body.Close()
	b, err := readBody(ctx, resp.Body, resp.ContentLength)
	if err != nil {
		return nil, fmt.Errorf("reading the answer to %s %s (HTTP %d): %w", method, path, resp.StatusCode, err)
	}
	return &answer{code: resp.StatusCode, body: b}, nil
}

// bodyIdle is how long a body without a length may stay silent, after
// some of it arrived, before it is taken as complete.
const bodyIdle = 300 * time.Millisecond

// readBody reads an answer's body (at most maxBody bytes). Patroni 3.0.2
// answers in HTTP/1.0 without a Content-Length and ends the body by
// closing its connection; through a port-forward that close may never
// reach the client (the tunnel stays open until it is closed from this
// side). So a body without a length ends at EOF, as soon as it holds one
// complete JSON document, or once nothing more arrives for bodyIdle after
// text did; ctx bounds the wait.
func readBody(ctx context.Context, r io.Reader, length int64) ([]byte, error) {
	if length >= 0 {
		return io.ReadAll(io.LimitReader(r, min(length, maxBody)))
	}
	type chunk struct {
		b   []byte
		err error
	}
	chunks := make(chan chunk)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		for {
			buf := make([]byte, 16<<10)
			n, err := r.Read(buf)
			select {
			case chunks <- chunk{buf[:n], err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var body []byte
	idle := time.NewTimer(time.Hour)
	defer idle.Stop()
	for {
		select {
		case c := <-chunks:
			body = append(body, c.b...)
			switch {
			case errors.Is(c.err, io.EOF):
				return body, nil
			case c.err != nil:
				return body, c.err
			case len(body) >= maxBody:
				return body[:maxBody], nil
			case completeJSON(body):
				return body, nil
			}
			if len(bytes.TrimSpace(body)) > 0 {
				idle.Reset(bodyIdle)
			}
		case <-idle.C:
			return body, nil
		case <-ctx.Done():
			if len(bytes.TrimSpace(body)) > 0 {
				return body, nil
			}
			return nil, ctx.Err()
		}
	}
}

// completeJSON reports whether b holds one whole JSON object or array.
func completeJSON(b []byte) bool {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		return false
	}
	return json.Valid(t)
}

// credentialsError marks a failure caused by the client's TLS material.
type credentialsError struct{ err error }

func (e *credentialsError) Error() string { return "TLS credentials: " + e.err.Error() }
func (e *credentialsError) Unwrap() error { return e.err }

// isCredentialsError reports whether a handshake failed because of
// certificates or a protocol mismatch, rather than a timeout or a dropped
// connection.
func isCredentialsError(err error) bool {
	var ce *credentialsError
	return engine.IsCredentialsError(err) || errors.As(err, &ce)
}
