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
	"net/url"
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
	o = o.WithDefaults()
	return engine.ProbeEach(ctx, targets, o, func(ctx context.Context, t engine.Target, start time.Time) model.EngineFacts {
		f := ask(ctx, t, o)
		f.ProbedAt, f.Took = start, time.Since(start)
		return f
	})
}

// ask reads one member's status document and maps it.
func ask(ctx context.Context, t engine.Target, o engine.ProbeOptions) model.EngineFacts {
	m, err := Parse(t.Config)
	if err != nil {
		return model.EngineFacts{Failure: model.ProbeFailureOther, Err: fmt.Sprintf("%s: %v", t.Member, err)}
	}
	if o.Dial == nil {
		return model.EngineFacts{Failure: model.ProbeFailureOther, Err: t.Member + ": no dialer configured"}
	}
	t.Port = m.Port
	b, failure, err := fetch(ctx, t, o, m)
	if err != nil {
		return model.EngineFacts{Failure: failure, Err: fmt.Sprintf("%s: %s %s: %v", t.Member, m.Method, m.Path, err)}
	}
	d, err := Decode(b)
	if err != nil {
		return model.EngineFacts{Failure: model.ProbeFailureOther, Err: fmt.Sprintf("%s: %s %s: not a JSON document: %v: %s", t.Member, m.Method, m.Path, err, snippet(b))}
	}
	f, err := m.Facts(d, t.Member)
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
// returns the first JSON document of its answer. The document ends the
// read (not the connection's close, which a tunnel may never pass on).
func fetch(ctx context.Context, t engine.Target, o engine.ProbeOptions, m *Mapping) ([]byte, model.ProbeFailure, error) {
	var (
		mu        sync.Mutex
		dialErr   error
		connected bool
	)
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		c, err := o.Dial(ctx, t.Namespace, t.Pod, m.Port)
		mu.Lock()
		dialErr, connected = err, err == nil
		mu.Unlock()
		return c, err
	}
	tr := &nethttp.Transport{Proxy: nil, DialContext: dial, DisableKeepAlives: true, DisableCompression: true}
	defer tr.CloseIdleConnections()
	scheme := m.Scheme
	if scheme == "" {
		scheme = "http"
		if o.Credentials != nil {
			scheme = "https"
		}
	}
	creds := o.Credentials
	if scheme == "http" {
		creds = nil
	}
	if scheme == "https" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: engine.ServerName(nil, t)}
		if creds != nil {
			c, err := engine.TLSConfig(creds, t)
			if err != nil {
				return nil, model.ProbeFailureCredentials, err
			}
			tc = c
		}
		tr.TLSClientConfig = tc
	}
	client := &nethttp.Client{Transport: tr, CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error {
		return nethttp.ErrUseLastResponse // never follow: a redirect leaves the tunnel
	}}
	var body io.Reader
	if m.Body != "" {
		body = strings.NewReader(m.Body)
	}
	host := engine.PlaceholderHost(t, creds)
	if scheme == "https" && creds == nil {
		host = net.JoinHostPort(engine.ServerName(nil, t), strconv.Itoa(m.Port))
	}
	req, err := nethttp.NewRequestWithContext(ctx, m.Method, scheme+"://"+host+m.Path, body)
	if err != nil {
		return nil, model.ProbeFailureOther, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		mu.Lock()
		de, c := dialErr, connected
		mu.Unlock()
		return nil, failureOf(ctx, err, de, c), unwrapURL(err)
	}
	defer resp.Body.Close()
	switch code := resp.StatusCode; {
	case code == 401 || code == 403:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, model.ProbeFailureCredentials, fmt.Errorf("refused: HTTP %d: %s", code, snippet(b))
	case code >= 300 && code != 503:
		// 503 is how many stores say "not ready" while still describing
		// themselves; its document is read like any other.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, model.ProbeFailureOther, fmt.Errorf("HTTP %d: %s", code, snippet(b))
	}
	lr := &io.LimitedReader{R: resp.Body, N: maxBody}
	var raw json.RawMessage
	if derr := json.NewDecoder(lr).Decode(&raw); derr != nil {
		switch {
		case ctx.Err() != nil:
			return nil, model.ProbeFailureTimeout, fmt.Errorf("HTTP %d, then no complete document before the deadline", resp.StatusCode)
		case lr.N <= 0:
			return nil, model.ProbeFailureOther, fmt.Errorf("HTTP %d: the document is larger than %d bytes", resp.StatusCode, maxBody)
		}
		return nil, model.ProbeFailureOther, fmt.Errorf("HTTP %d: not a JSON document: %v", resp.StatusCode, derr)
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

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// snippet is the start of a body, for messages.
func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
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
