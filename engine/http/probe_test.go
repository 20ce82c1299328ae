package http

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// serve runs h on a real listener and returns a DialFunc that reaches it
// for pod kv-0 on port 8080 only (as a port-forward would).
func serve(t *testing.T, h nethttp.HandlerFunc, tls bool) engine.DialFunc {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	return func(ctx context.Context, ns, pod string, port int) (net.Conn, error) {
		if ns != "db" || pod != "kv-0" || port != 8080 {
			return nil, fmt.Errorf("unexpected dial to %s/%s:%d", ns, pod, port)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

func probeOne(t *testing.T, dial engine.DialFunc, mapping map[string]string) model.EngineFacts {
	t.Helper()
	target := engine.Target{Member: "kv-0", Namespace: "db", Pod: "kv-0", Config: mapping}
	start := time.Now()
	fs := New().Probe(context.Background(), []engine.Target{target}, engine.ProbeOptions{Timeout: time.Second, Dial: dial})
	if took := time.Since(start); took > time.Second+engine.StragglerGrace {
		t.Errorf("the probe took %s, past its deadline", took)
	}
	if len(fs) != 1 {
		t.Fatalf("%d facts", len(fs))
	}
	return fs[0]
}

func baseMapping() map[string]string {
	return map[string]string{"port": "8080", "path": "/status", "role": "{.role}", "memberID": "{.id}", "applied": "{.applied}", "frontier": "{.frontier}"}
}

func TestProbeReadsTheMappedDocument(t *testing.T) {
	var host, method, body string
	dial := serve(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		host, method, body = r.Host, r.Method, string(b)
		fmt.Fprint(w, `{"role":"leader","id":"n1","applied":"18446744073709551615","frontier":42}`)
	}, false)
	m := baseMapping()
	m["method"], m["body"] = "POST", "{}"
	f := probeOne(t, dial, m)
	if !f.Reachable || f.MemberID != "n1" || f.LeaderID != "n1" || f.RaftApplied != 18446744073709551615 || f.RaftIndex != 42 {
		t.Fatalf("facts %+v (error %q)", f, f.Err)
	}
	if host != "kv-0:8080" || method != "POST" || body != "{}" {
		t.Errorf("request: host %q, method %q, body %q", host, method, body)
	}
}

func TestProbeFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       nethttp.HandlerFunc
		tls     bool
		mapping func(map[string]string)
		failure model.ProbeFailure
		want    string
	}{
		{name: "https without client TLS is checked against the system's roots, not a crash", tls: true,
			h:       func(w nethttp.ResponseWriter, _ *nethttp.Request) { fmt.Fprint(w, `{"role":"leader"}`) },
			mapping: func(m map[string]string) { m["scheme"] = "https" }, failure: model.ProbeFailureCredentials, want: "certificate"},
		{name: "a refusal without a JSON body is about credentials",
			h:       func(w nethttp.ResponseWriter, _ *nethttp.Request) { nethttp.Error(w, "go away", 401) },
			failure: model.ProbeFailureCredentials, want: "refused: HTTP 401"},
		{name: "a redirect is not followed",
			h: func(w nethttp.ResponseWriter, r *nethttp.Request) {
				nethttp.Redirect(w, r, "http://elsewhere/status", 302)
			},
			failure: model.ProbeFailureOther, want: "HTTP 302"},
		{name: "an error document is no answer",
			h: func(w nethttp.ResponseWriter, _ *nethttp.Request) {
				w.WriteHeader(503)
				fmt.Fprint(w, `{"error":"no quorum"}`)
			},
			failure: model.ProbeFailureOther, want: "without any of the mapped role, leader or memberID"},
		{name: "a document too large",
			h: func(w nethttp.ResponseWriter, _ *nethttp.Request) {
				fmt.Fprint(w, `{"role":"leader","pad":"`+strings.Repeat("x", maxBody)+`"}`)
			},
			failure: model.ProbeFailureOther, want: "larger than"},
		{name: "a member that never answers times out",
			h: func(w nethttp.ResponseWriter, r *nethttp.Request) {
				<-r.Context().Done()
			},
			failure: model.ProbeFailureTimeout, want: "deadline"},
		{name: "not JSON",
			h:       func(w nethttp.ResponseWriter, _ *nethttp.Request) { fmt.Fprint(w, "<html>hi</html>") },
			failure: model.ProbeFailureOther, want: "not a JSON document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := baseMapping()
			if tc.mapping != nil {
				tc.mapping(m)
			}
			f := probeOne(t, serve(t, tc.h, tc.tls), m)
			if f.Reachable || f.Failure != tc.failure || !strings.Contains(f.Err, tc.want) {
				t.Errorf("reachable %v, failure %q, error %q; want %q naming %q", f.Reachable, f.Failure, f.Err, tc.failure, tc.want)
			}
			// The certificate the handshake failed on is still read
			// (httptest's own, for example.com, issued by Acme Co).
			if c := firstCert(f); tc.tls && (c == nil || c.Verified || !strings.Contains(c.Issuer, "Acme") || c.NotAfter.IsZero() || c.Port != 8080) {
				t.Errorf("serving certificate %+v, want httptest's, unverified, on port 8080", c)
			}
		})
	}
}

func TestProbeKeepsAMemberWhoseDocumentTheMappingCannotRead(t *testing.T) {
	dial := serve(t, func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		fmt.Fprint(w, `{"role":"follower","id":"n2","applied":{"seq":3}}`)
	}, false)
	f := probeOne(t, dial, baseMapping())
	if !f.Reachable || f.Document == nil || !strings.Contains(f.Document.Problem, "applied") || f.Document.Applied != nil {
		t.Errorf("facts %+v, document %+v", f, f.Document)
	}
}

// firstCert is the probed port's certificate, nil when none was read.
func firstCert(f model.EngineFacts) *model.CertFacts {
	if len(f.ServingCerts) == 0 {
		return nil
	}
	return &f.ServingCerts[0]
}

// TestProbeReadsTheCertificateOverHTTPS: with the cluster's client TLS
// (its CA trusting the member's certificate), the document is read and
// the certificate the member served is in the facts, verified.
func TestProbeReadsTheCertificateOverHTTPS(t *testing.T) {
	srv := httptest.NewUnstartedServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		fmt.Fprint(w, `{"role":"leader","id":"n1","applied":7,"frontier":7}`)
	}))
	srv.StartTLS()
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	dial := func(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	target := engine.Target{Member: "kv-0", Namespace: "db", Pod: "kv-0", ServerName: "example.com", Config: baseMapping()}
	f := New().Probe(context.Background(), []engine.Target{target}, engine.ProbeOptions{Timeout: time.Second, Dial: dial,
		Credentials: &engine.Credentials{CAPEM: ca}})[0]
	c := firstCert(f)
	if !f.Reachable || c == nil || !c.Verified || !c.NotAfter.Equal(srv.Certificate().NotAfter.UTC()) || c.Port != 8080 {
		t.Errorf("reachable %v (%s), certificate %+v; want httptest's, verified, on 8080", f.Reachable, f.Err, c)
	}
}

// TestProbeDropsControlCharacters: a member's document values and error
// bodies reach hactl's faces without control characters.
func TestProbeDropsControlCharacters(t *testing.T) {
	f := probeOne(t, serve(t, func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		fmt.Fprint(w, `{"role":"leader\u001b[2J","id":"n1\u001b]0;x\u0007","applied":1,"frontier":1}`)
	}, false), baseMapping())
	if !f.Reachable || f.MemberID != "n1]0;x" {
		t.Errorf("member ID %q (%s), want it without control characters", f.MemberID, f.Err)
	}
	f = probeOne(t, serve(t, func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		nethttp.Error(w, "denied\x1b[31m", 403)
	}, false), baseMapping())
	if strings.ContainsRune(f.Err, 0x1b) || !strings.Contains(f.Err, "denied[31m") {
		t.Errorf("error %q", f.Err)
	}
}
