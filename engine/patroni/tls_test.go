package patroni_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
)

// pki is a throw-away CA with one server and one client certificate.
type pki struct {
	caPEM, serverCertPEM, serverKeyPEM, clientCertPEM, clientKeyPEM []byte
}

// serverNotAfter is when the serving certificate expires, read from it.
func (p pki) serverNotAfter(t *testing.T) time.Time {
	t.Helper()
	b, _ := pem.Decode(p.serverCertPEM)
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.NotAfter
}

// newPKI makes a CA, a serving certificate for the pod names pg-0…pg-2
// (and ips) and a client certificate.
func newPKI(t *testing.T, ips []net.IP) pki {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "hactl test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, cn string, usage []x509.ExtKeyUsage, dns []string) (certPEM, keyPEM []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  usage,
			DNSNames:     dns,
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	}
	p := pki{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	// Patroni uses its serving certificate as its client certificate too.
	p.serverCertPEM, p.serverKeyPEM = leaf(2, "pg", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		[]string{"pg-0", "pg-1", "pg-2"})
	p.clientCertPEM, p.clientKeyPEM = leaf(3, "hactl", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil)
	return p
}

// TestTLS probes a one-member cluster whose REST API serves HTTPS and
// requires client certificates: good credentials read it; a foreign CA, a
// missing client certificate or a wrong server name are credentials
// failures; plaintext is refused.
func TestTLS(t *testing.T) {
	p := newPKI(t, nil)
	other := newPKI(t, nil)
	c := startCluster(t, clusterOptions{Members: 1, TLS: &restTLS{CertPEM: p.serverCertPEM, KeyPEM: p.serverKeyPEM, CAPEM: p.caPEM}})
	good := &engine.Credentials{CAPEM: p.caPEM, CertPEM: p.clientCertPEM, KeyPEM: p.clientKeyPEM}
	tg := []engine.Target{target("pg-0")}
	probeWith := func(cr *engine.Credentials) model.EngineFacts {
		return patroni.New().Probe(context.Background(), tg, engine.ProbeOptions{Timeout: 2 * time.Second, Dial: c.Dial, Credentials: cr})[0]
	}

	var f model.EngineFacts
	poll.Until(t, bringUp, "the TLS member running as primary", func() error {
		f = probeWith(good)
		if !f.Reachable {
			return errors.New(f.Err)
		}
		// While bootstrapping, the member already reports master/running
		// but no system identifier, and its view names no leader yet.
		if !f.Patroni.Writable() || f.Patroni.State != "running" || f.Patroni.WALLocation == nil || f.ClusterID == "" || f.LeaderID != "pg-0" {
			return fmt.Errorf("%s/%s, system ID %q, leader %q", f.Patroni.Role, f.Patroni.State, f.ClusterID, f.LeaderID)
		}
		return nil
	}, poll.Every(500*time.Millisecond))
	t.Logf("over mTLS: role=%s state=%s sysid=%s leader=%s version=%s", f.Patroni.Role, f.Patroni.State, f.ClusterID, f.LeaderID, f.Version)
	if f.LeaderID != "pg-0" || f.ClusterID == "" || f.Patroni.ViewErr != "" {
		t.Errorf("over mTLS: leader %q cluster %q viewErr %q", f.LeaderID, f.ClusterID, f.Patroni.ViewErr)
	}
	if c, want := firstCert(f), p.serverNotAfter(t); c == nil || !c.Verified || !c.NotAfter.Equal(want) || c.Port != tg[0].Port {
		t.Errorf("serving certificate %+v, want the member's, verified, expiring %s, on port %d", c, want, tg[0].Port)
	}

	cases := []struct {
		name string
		cr   *engine.Credentials
		want model.ProbeFailure
	}{
		{"foreign CA", &engine.Credentials{CAPEM: other.caPEM, CertPEM: p.clientCertPEM, KeyPEM: p.clientKeyPEM}, model.ProbeFailureCredentials},
		{"client certificate from a foreign CA", &engine.Credentials{CAPEM: p.caPEM, CertPEM: other.clientCertPEM, KeyPEM: other.clientKeyPEM}, model.ProbeFailureCredentials},
		{"no client certificate", &engine.Credentials{CAPEM: p.caPEM}, model.ProbeFailureCredentials},
		{"wrong server name", &engine.Credentials{CAPEM: p.caPEM, CertPEM: p.clientCertPEM, KeyPEM: p.clientKeyPEM, ServerName: "pg-9"}, model.ProbeFailureCredentials},
		{"key without certificate", &engine.Credentials{CAPEM: p.caPEM, KeyPEM: p.clientKeyPEM}, model.ProbeFailureCredentials},
		{"plaintext", nil, model.ProbeFailureOther},
	}
	for _, tc := range cases {
		f := probeWith(tc.cr)
		t.Logf("%s: failure=%q err=%q", tc.name, f.Failure, f.Err)
		if f.Reachable || f.Failure != tc.want {
			t.Errorf("%s: reachable=%v failure=%q err=%q, want %q", tc.name, f.Reachable, f.Failure, f.Err, tc.want)
		}
		if c := firstCert(f); tc.name == "foreign CA" && (c == nil || c.Verified) {
			t.Errorf("%s: serving certificate %+v, want the member's, unverified", tc.name, c)
		}
		if strings.Contains(f.Err, "PRIVATE") || strings.Contains(f.Err, "BEGIN") {
			t.Errorf("%s: error leaks material: %q", tc.name, f.Err)
		}
	}

	// Actions use the same TLS setup.
	err := patroni.Reinitialize(context.Background(), tg[0], engine.ProbeOptions{Dial: c.Dial, Credentials: good})
	if !errors.Is(err, patroni.ErrIsLeader) {
		t.Errorf("reinitialize over mTLS: %v, want ErrIsLeader", err)
	}
	err = patroni.Reinitialize(context.Background(), tg[0], engine.ProbeOptions{Dial: c.Dial, Credentials: &engine.Credentials{CAPEM: other.caPEM}})
	if err == nil || errors.Is(err, engine.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "was not sent") {
		t.Errorf("reinitialize with a foreign CA: %v, want an error saying it was not sent", err)
	}
}

// firstCert is the probed port's certificate, nil when none was read.
func firstCert(f model.EngineFacts) *model.CertFacts {
	if len(f.ServingCerts) == 0 {
		return nil
	}
	return &f.ServingCerts[0]
}
