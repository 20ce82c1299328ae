package engine

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http/httptest"
	"testing"
	"time"
)

// tlsPeer is a TLS listener that records, per connection, whether any
// application data arrived after the handshake.
type tlsPeer struct {
	ln   net.Listener
	sent chan int
}

func newTLSPeer(t *testing.T, cert tls.Certificate) *tlsPeer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tlsPeer{ln: ln, sent: make(chan int, 8)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}})
				if s.Handshake() != nil {
					p.sent <- -1
					return
				}
				_ = s.SetReadDeadline(time.Now().Add(2 * time.Second))
				n, _ := io.Copy(io.Discard, s)
				p.sent <- int(n)
			}()
		}
	}()
	return p
}

func (p *tlsPeer) dial(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", p.ln.Addr().String())
}

// selfSigned is a CA certificate of its own, in PEM.
func selfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestReadCert: the certificate of a port is read with a handshake alone
// (no byte of application data follows), verified against the CA given,
// unverified against another, unchecked without credentials, and nil when
// the port never answers within the deadline.
func TestReadCert(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	defer srv.Close()
	leaf := srv.Certificate()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})
	otherPEM := selfSigned(t)
	peer := newTLSPeer(t, srv.TLS.Certificates[0])
	tg := Target{Member: "m-0", Namespace: "db", Pod: "m-0", Port: 2379, ServerName: "example.com"}
	for _, c := range []struct {
		name     string
		cr       *Credentials
		verified bool
	}{
		{"the CA given", &Credentials{CAPEM: caPEM}, true},
		{"another CA", &Credentials{CAPEM: otherPEM}, false},
		{"no credentials", nil, false},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got := ReadCert(ctx, peer.dial, tg, c.cr, 2380)
		cancel()
		if got == nil || got.Verified != c.verified || got.Port != 2380 || !got.NotAfter.Equal(leaf.NotAfter.UTC()) {
			t.Errorf("%s: %+v, want the listener's certificate on 2380, verified %v", c.name, got, c.verified)
		}
		if n := <-peer.sent; n > 0 {
			t.Errorf("%s: %d bytes of application data sent after the handshake", c.name, n)
		}
	}

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never answered
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	dialSilent := func(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", silent.Addr().String())
	}
	if got := ReadCert(ctx, dialSilent, tg, nil, 2380); got != nil || time.Since(start) > 2*time.Second {
		t.Errorf("a port that never answers: %+v after %s", got, time.Since(start))
	}
}
