package http

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// Name is the engine's name (label hactl.dev/engine=http).
const Name model.Engine = "http"

// maxBody bounds how much of a status document is read.
const maxBody = 1 << 20

// Engine reads members' HTTP status documents through their cluster's
// mapping.
type Engine struct{}

var (
	_ engine.Engine = Engine{}
	_ engine.Judged = Engine{}
)

// New returns the http engine.
func New() engine.Engine { return Engine{} }

// Name implements engine.Engine.
func (Engine) Name() model.Engine { return Name }

// VerdictRules implements engine.Judged.
func (Engine) VerdictRules() model.VerdictRules { return Rules{} }

// Members implements engine.Engine: hactl has no fenced operations for
// these stores; every operation is refused before anything is sent.
func (Engine) Members(engine.ProbeOptions) engine.MemberOps { return noOps{} }

// Probe implements engine.Engine: every target on its own, in parallel,
// each bounded by o.Timeout (dial included) and ctx.
func (Engine) Probe(ctx context.Context, targets []engine.Target, o engine.ProbeOptions) []model.EngineFacts {
	if o.Unasked != nil {
		return engine.UnaskedFacts(targets, o)
	}
	o = o.WithDefaults()
	return engine.ProbeEach(ctx, targets, o, func(ctx context.Context, t engine.Target, start time.Time) model.EngineFacts {
		f := ask(ctx, t, o)
		f.ProbedAt, f.Took = start, time.Since(start)
		return f
	})
}

// ask reads one member's status document and maps it.
func ask(ctx context.Context, t engine.Target, o engine.ProbeOptions) (f model.EngineFacts) {
	m, err := Parse(t.Config)
	if err != nil {
		return model.EngineFacts{Failure: model.ProbeFailureOther, Err: fmt.Sprintf("%s: %v", t.Member, err)}
	}
	if o.Dial == nil {
		return model.EngineFacts{Failure: model.ProbeFailureOther, Err: t.Member + ": no dialer configured"}
	}
	t.Port = m.Port
	b, cert, failure, err := fetch(ctx, t, o, m)
	defer func() { f.ServingCerts = engine.Certs(cert) }()
	if err != nil {
		return model.EngineFacts{Failure: failure, Err: fmt.Sprintf("%s: %s %s: %v", t.Member, m.Method, m.Path, err)}
	}
	d, err := Decode(b)
	if err != nil {
		return model.EngineFacts{Failure: model.ProbeFailureOther, Err: fmt.Sprintf("%s: %s %s: not a JSON document: %v: %s", t.Member, m.Method, m.Path, err, snippet(b))}
	}
	f, err = m.Facts(d, t.Member)
	switch {
	case err != nil:
		// The member answered; the mapping cannot read its document.
		f.Document.Problem = err.Error()
	case !f.Document.Identified:
		return model.EngineFacts{Failure: model.ProbeFailureOther,
			Err: fmt.Sprintf("%s: %s %s answered a document without any of the mapped role, leader or memberID: %s", t.Member, m.Method, m.Path, snippet(b))}
	}
	return f
}

// fetch sends the mapping's request to the member through o.Dial and
// returns the first JSON document of its answer, and the certificate the
// member served (nil without TLS). The document ends the read (not the
// connection's close, which a tunnel may never pass on).
func fetch(ctx context.Context, t engine.Target, o engine.ProbeOptions, m *Mapping) ([]byte, *model.CertFacts, model.ProbeFailure, error) {
	c, err := newConn(t, o, m)
	if err != nil {
		return nil, nil, model.ProbeFailureCredentials, err
	}
	defer c.tr.CloseIdleConnections()
	var body io.Reader
	if m.Body != "" {
		body = strings.NewReader(m.Body)
	}
	req, err := nethttp.NewRequestWithContext(ctx, m.Method, c.url+m.Path, body)
	if err != nil {
		return nil, nil, model.ProbeFailureOther, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, engine.CertOf(t.Port, nil, err), c.failure(ctx, err), engine.UnwrapURL(err)
	}
	defer resp.Body.Close()
	b, failure, err := readAnswer(ctx, resp)
	return b, engine.CertOf(t.Port, resp.TLS, nil), failure, err
}

// conn is one request's way to a member: the transport dials the
// member's pod and port through the DialFunc, whatever the URL says.
type conn struct {
	tr     *nethttp.Transport
	client *nethttp.Client
	// url is the scheme and placeholder host the request names.
	url string

	mu        sync.Mutex
	dialErr   error
	connected bool
}

// newConn builds the transport for m's scheme: https when the mapping
// says so or, when it says nothing, when the cluster names client TLS.
func newConn(t engine.Target, o engine.ProbeOptions, m *Mapping) (*conn, error) {
	c := &conn{}
	c.tr = &nethttp.Transport{Proxy: nil, DisableKeepAlives: true, DisableCompression: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			nc, err := o.Dial(ctx, t.Namespace, t.Pod, m.Port)
			c.mu.Lock()
			c.dialErr, c.connected = err, err == nil
			c.mu.Unlock()
			return nc, err
		}}
	c.client = &nethttp.Client{Transport: c.tr, CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error {
		return nethttp.ErrUseLastResponse // never follow: a redirect leaves the tunnel
	}}
	scheme, creds := m.Scheme, o.Credentials
	if scheme == "" {
		scheme = "http"
		if creds != nil {
			scheme = "https"
		}
	}
	host := engine.PlaceholderHost(t, nil)
	switch {
	case scheme == "http":
	case creds != nil:
		tc, err := engine.TLSConfig(creds, t)
		if err != nil {
			return nil, err
		}
		c.tr.TLSClientConfig, host = tc, engine.PlaceholderHost(t, creds)
	default:
		// https without client TLS: the member's certificate is checked
		// against this machine's roots.
		sn := engine.ServerName(nil, t)
		c.tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: sn}
		host = net.JoinHostPort(sn, strconv.Itoa(m.Port))
	}
	c.url = scheme + "://" + host
	return c, nil
}

// failure classifies a request that got no answer.
func (c *conn) failure(ctx context.Context, err error) model.ProbeFailure {
	c.mu.Lock()
	defer c.mu.Unlock()
	return failureOf(ctx, err, c.dialErr, c.connected)
}

// readAnswer reads the member's document from resp, or says why there is
// none: a refusal is about credentials whatever its body, a status other
// than success (or 503, which many stores answer with a document while
// not ready) is no answer, and the document is bounded.
func readAnswer(ctx context.Context, resp *nethttp.Response) ([]byte, model.ProbeFailure, error) {
	switch code := resp.StatusCode; {
	case code == 401 || code == 403:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, model.ProbeFailureCredentials, fmt.Errorf("refused: HTTP %d: %s", code, snippet(b))
	case code >= 300 && code != 503:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, model.ProbeFailureOther, fmt.Errorf("HTTP %d: %s", code, snippet(b))
	}
	lr := &io.LimitedReader{R: resp.Body, N: maxBody}
	var raw json.RawMessage
	if err := json.NewDecoder(lr).Decode(&raw); err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, model.ProbeFailureTimeout, fmt.Errorf("HTTP %d, then no complete document before the deadline", resp.StatusCode)
		case lr.N <= 0:
			return nil, model.ProbeFailureOther, fmt.Errorf("HTTP %d: the document is larger than %d bytes", resp.StatusCode, maxBody)
		}
		return nil, model.ProbeFailureOther, fmt.Errorf("HTTP %d: not a JSON document: %v", resp.StatusCode, err)
	}
	return raw, model.ProbeFailureNone, nil
}

// failureOf classifies a request that got no answer.
func failureOf(ctx context.Context, err, dialErr error, connected bool) model.ProbeFailure {
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &certErr) || engine.IsTLSAlert(err) || engine.IsCredentialsError(err):
		return model.ProbeFailureCredentials
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return model.ProbeFailureTimeout
	case dialErr != nil || !connected || errors.Is(err, engine.ErrForward):
		return model.ProbeFailureConnect
	}
	return model.ProbeFailureOther
}

// snippet is the start of a body, for messages.
func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 200 {
		return engine.Printable(string(b[:200])) + "…"
	}
	return engine.Printable(string(b))
}

// noOps refuses every member operation before sending anything.
type noOps struct{}

var errNoOps = errors.New("the http engine has no fenced member operations")

func (noOps) RemoveMember(context.Context, engine.Target, string) error { return errNoOps }
func (noOps) AddLearner(context.Context, engine.Target, []string) (model.Peer, error) {
	return model.Peer{}, errNoOps
}
func (noOps) PromoteLearner(context.Context, engine.Target, string) error { return errNoOps }
func (noOps) MoveLeader(context.Context, engine.Target, string) error     { return errNoOps }
