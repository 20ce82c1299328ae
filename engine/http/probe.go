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
	"strings"
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
	b, failure, err := fetch(ctx, t, o, m)
	if err != nil {
		return model.EngineFacts{Failure: failure, Err: fmt.Sprintf("%s: %s %s: %v", t.Member, m.Method, m.Path, err)}
	}
	d, err := Decode(b)
	if err != nil {
		return model.EngineFacts{Failure: model.ProbeFailureOther, Err: fmt.Sprintf("%s: %s %s: not a JSON document: %v: %s", t.Member, m.Method, m.Path, err, snippet(b))}
	}
	f, err := m.Facts(d, t.Member)
	if err != nil {
		return model.EngineFacts{Failure: model.ProbeFailureOther, Err: fmt.Sprintf("%s: %s %s: %v", t.Member, m.Method, m.Path, err)}
	}
	return f
}

// fetch sends the mapping's request to the member through o.Dial and
// returns the first JSON document of its answer. The document ends the
// read (not the connection's close, which a tunnel may never pass on).
func fetch(ctx context.Context, t engine.Target, o engine.ProbeOptions, m *Mapping) ([]byte, model.ProbeFailure, error) {
	var dialErr error
	connected := false
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		c, err := o.Dial(ctx, t.Namespace, t.Pod, m.Port)
		dialErr, connected = err, err == nil
		return c, err
	}
	tr := &nethttp.Transport{Proxy: nil, DialContext: dial, DisableKeepAlives: true, DisableCompression: true}
	defer tr.CloseIdleConnections()
	scheme := m.Scheme
	if o.Credentials != nil {
		scheme = "https"
	}
	if scheme == "https" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: engine.ServerName(o.Credentials, t)}
		if o.Credentials != nil {
			c, err := engine.TLSConfig(o.Credentials, t)
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
	req, err := nethttp.NewRequestWithContext(ctx, m.Method, scheme+"://"+engine.PlaceholderHost(t, o.Credentials)+m.Path, body)
	if err != nil {
		return nil, model.ProbeFailureOther, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, failureOf(ctx, err, dialErr, connected), unwrapURL(err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	if derr := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&raw); derr != nil {
		if ctx.Err() != nil {
			return nil, model.ProbeFailureTimeout, fmt.Errorf("HTTP %d, then no complete document before the deadline", resp.StatusCode)
		}
		return nil, model.ProbeFailureOther, fmt.Errorf("HTTP %d: not a JSON document: %v", resp.StatusCode, derr)
	}
	switch {
	case resp.StatusCode == 401 || resp.StatusCode == 403:
		return nil, model.ProbeFailureCredentials, fmt.Errorf("refused: HTTP %d: %s", resp.StatusCode, snippet(raw))
	case resp.StatusCode >= 300 && resp.StatusCode != 503:
		// 503 is how many stores say "not ready" while still describing
		// themselves; its document is read like any other.
		return nil, model.ProbeFailureOther, fmt.Errorf("HTTP %d: %s", resp.StatusCode, snippet(raw))
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
