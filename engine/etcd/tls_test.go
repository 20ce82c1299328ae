package etcd_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/internal/testbins"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/verdict"
)

// pki is a throw-away CA with one server and one client certificate,
// and a peer certificate (for https peer URLs).
type pki struct {
	caPEM, serverCertPEM, serverKeyPEM, clientCertPEM, clientKeyPEM []byte
	peerCertPEM, peerKeyPEM                                         []byte
}

const tlsServerName = "etcd-tls.hactl-test.svc"

func newPKI(t *testing.T) pki {
	t.Helper()
	return newPKIUntil(t, time.Now().Add(time.Hour))
}

// newPKIUntil is newPKI with serving and peer certificates valid until
// serverNotAfter (from an hour before it, when that is in the past).
func newPKIUntil(t *testing.T, serverNotAfter time.Time) pki {
	t.Helper()
	return newPKIWith(t, serverNotAfter, serverNotAfter)
}

// newPKIWith is newPKIUntil with the peer certificate valid until
// peerNotAfter.
func newPKIWith(t *testing.T, serverNotAfter, peerNotAfter time.Time) pki {
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
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, dns []string, ips []net.IP, notAfter time.Time) (certPEM, keyPEM []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    notBefore(notAfter),
			NotAfter:     notAfter,
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
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
	var p pki
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	p.serverCertPEM, p.serverKeyPEM = leaf(2, "etcd-tls", x509.ExtKeyUsageServerAuth, []string{tlsServerName}, []net.IP{net.ParseIP("127.0.0.1")}, serverNotAfter)
	p.clientCertPEM, p.clientKeyPEM = leaf(3, "root", x509.ExtKeyUsageClientAuth, nil, nil, time.Now().Add(time.Hour))
	// etcd's peers are each other's clients: the peer certificate serves
	// and authenticates.
	p.peerCertPEM, p.peerKeyPEM = leaf(4, "etcd-tls-peer", x509.ExtKeyUsageServerAuth, []string{tlsServerName}, []net.IP{net.ParseIP("127.0.0.1")}, peerNotAfter)
	return p
}

// notBefore starts a certificate valid until notAfter an hour before
// now, or before notAfter when that has passed.
func notBefore(notAfter time.Time) time.Time {
	if now := time.Now(); notAfter.Before(now) {
		return notAfter.Add(-time.Hour)
	}
	return time.Now().Add(-time.Hour)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startTLSMember runs one real etcd member that serves clients over TLS
// and requires a client certificate. It is killed when the test ends.
func startTLSMember(t *testing.T, p pki) (addr string) {
	t.Helper()
	addr, _, _ = startMember(t, p, false)
	return addr
}

// startMember is startTLSMember; with tlsPeer its peer URL is https too,
// served with the peer certificate.
// Its serving certificate is dir/server.crt (and .key): etcd reads them
// again for each new connection.
func startMember(t *testing.T, p pki, tlsPeer bool) (addr, peerAddr, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("tier-3 test (real etcd process) skipped with -short")
	}
	bin, err := testbins.Dir()
	if err != nil {
		t.Fatalf("test binaries: %v", err)
	}
	dir = t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cp, pp := freePort(t), freePort(t)
	addr, peerAddr = "127.0.0.1:"+strconv.Itoa(cp), "127.0.0.1:"+strconv.Itoa(pp)
	peer := "http://" + peerAddr
	var peerFlags []string
	if tlsPeer {
		peer = "https://" + peerAddr
		peerFlags = []string{"--peer-cert-file", write("peer.crt", p.peerCertPEM), "--peer-key-file", write("peer.key", p.peerKeyPEM),
			"--peer-trusted-ca-file", write("peer-ca.crt", p.caPEM), "--peer-client-cert-auth"}
	}
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "etcd"), append([]string{
		"--name", "etcd-tls",
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", "https://" + addr,
		"--advertise-client-urls", "https://" + addr,
		"--listen-peer-urls", peer,
		"--initial-advertise-peer-urls", peer,
		"--initial-cluster", "etcd-tls=" + peer,
		"--cert-file", write("server.crt", p.serverCertPEM),
		"--key-file", write("server.key", p.serverKeyPEM),
		"--trusted-ca-file", write("ca.crt", p.caPEM),
		"--client-cert-auth"}, peerFlags...)...,
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		logf.Close()
	})
	select {
	case <-exited:
		b, _ := os.ReadFile(logf.Name())
		t.Fatalf("etcd exited at once:\n%s", b)
	default:
	}
	return addr, peerAddr, dir
}

func TestProbeTLS(t *testing.T) {
	p := newPKI(t)
	dial, tg, good := dialTLS(startTLSMember(t, p), p)

	probeWith := func(cr *engine.Credentials) model.EngineFacts {
		return etcd.New().Probe(context.Background(), tg, engine.ProbeOptions{Timeout: time.Second, Dial: dial, Credentials: cr})[0]
	}
	poll.Until(t, 20*time.Second, "the TLS member to answer", func() error {
		if f := probeWith(good); !f.Reachable {
			return fmt.Errorf("%s", f.Err)
		}
		return nil
	})
	f := probeWith(good)
	if f.MemberID == "" || f.LeaderID != f.MemberID || len(f.Peers) != 1 {
		t.Errorf("TLS probe: member %s leader %s peers %d", f.MemberID, f.LeaderID, len(f.Peers))
	}

	other := newPKI(t)
	cases := []struct {
		name    string
		cr      *engine.Credentials
		failure model.ProbeFailure
		errHas  string
	}{
		{"server certificate from an unknown CA", &engine.Credentials{CertPEM: p.clientCertPEM, KeyPEM: p.clientKeyPEM, CAPEM: other.caPEM}, model.ProbeFailureCredentials, "TLS handshake with etcd-tls failed"},
		{"client certificate from an unknown CA", &engine.Credentials{CertPEM: other.clientCertPEM, KeyPEM: other.clientKeyPEM, CAPEM: p.caPEM}, model.ProbeFailureCredentials, "TLS handshake with etcd-tls failed"},
		{"no client certificate", &engine.Credentials{CAPEM: p.caPEM}, model.ProbeFailureCredentials, "TLS handshake with etcd-tls failed"},
		{"wrong server name", &engine.Credentials{CertPEM: p.clientCertPEM, KeyPEM: p.clientKeyPEM, CAPEM: p.caPEM, ServerName: "etcd-9.elsewhere"}, model.ProbeFailureCredentials, "TLS handshake with etcd-tls failed"},
		{"key without certificate", &engine.Credentials{KeyPEM: p.clientKeyPEM, CAPEM: p.caPEM}, model.ProbeFailureCredentials, "together"},
		{"plaintext against a TLS member", nil, model.ProbeFailureTimeout, "TLS"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := probeWith(c.cr)
			t.Logf("failure=%q err=%q", f.Failure, f.Err)
			if f.Reachable {
				t.Fatal("reported reachable")
			}
			if f.Failure != c.failure {
				t.Errorf("Failure = %q, want %q", f.Failure, c.failure)
			}
			if !strings.Contains(f.Err, c.errHas) {
				t.Errorf("Err = %q, want it to mention %q", f.Err, c.errHas)
			}
			for _, secret := range [][]byte{p.clientKeyPEM, other.clientKeyPEM, p.clientCertPEM} {
				if strings.Contains(f.Err, string(secret[30:60])) {
					t.Errorf("Err leaks PEM material: %q", f.Err)
				}
			}
		})
	}
}

// TestProbeReadsTheServingCertificate: a real member whose serving
// certificate expires in ten days answers, and its probe carries the
// certificate (verified); the verdict warns with cert_expiring. A member
// whose certificate has expired cannot be read, yet its probe carries the
// certificate the handshake failed on, and the verdict says cert_expired
// beside credentials_unavailable, so failover readiness falls.
func TestProbeReadsTheServingCertificate(t *testing.T) {
	for _, c := range []struct {
		name     string
		notAfter time.Time
		want     model.ReasonCode
	}{
		{"expiring in ten days", time.Now().Add(10 * 24 * time.Hour).Truncate(time.Second), model.ReasonCertExpiring},
		{"expired an hour ago", time.Now().Add(-time.Hour).Truncate(time.Second), model.ReasonCertExpired},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPKIUntil(t, c.notAfter)
			dial, tg, cr := dialTLS(startTLSMember(t, p), p)
			expired := c.want == model.ReasonCertExpired
			var f model.EngineFacts
			poll.Until(t, 20*time.Second, "the member's handshake", func() error {
				f = etcd.New().Probe(context.Background(), tg, engine.ProbeOptions{Timeout: time.Second, Dial: dial, Credentials: cr})[0]
				if len(f.ServingCerts) != 1 || f.Reachable == expired {
					return fmt.Errorf("reachable %v, certificates %+v: %s", f.Reachable, f.ServingCerts, f.Err)
				}
				// A member still starting may drop the handshake (a
				// timeout); the failure this case is about comes once it
				// serves.
				if expired && f.Failure != model.ProbeFailureCredentials {
					return fmt.Errorf("failure %q, want credentials: %s", f.Failure, f.Err)
				}
				return nil
			})
			sc := f.ServingCerts[0]
			if !sc.NotAfter.Equal(c.notAfter.UTC()) || sc.Verified == expired || sc.Subject != "CN=etcd-tls" || sc.Port != podPort {
				t.Errorf("serving certificate %+v, want CN=etcd-tls until %s, verified %v, port %d", sc, c.notAfter.UTC(), !expired, podPort)
			}
			v := verdict.Compute(oneMember(f), time.Now(), model.VerdictOptions{})
			found := false
			for _, r := range v.Reasons {
				found = found || (r.Code == c.want && r.Member == "etcd-tls" && strings.Contains(r.Detail, c.notAfter.UTC().Format(time.RFC3339)))
			}
			if !found || (expired && v.FailoverReady) {
				t.Errorf("verdict %+v, want %s naming %s", v, c.want, c.notAfter.UTC().Format(time.RFC3339))
			}
		})
	}
}

// TestProbeReadsThePeerPortsCertificate: a real member with https peer
// URLs whose peer certificate expires in ten days, its client one in an
// hour: the probe reads both (a handshake alone on the peer port), and the
// verdict names each port.
func TestProbeReadsThePeerPortsCertificate(t *testing.T) {
	peerExpiry := time.Now().Add(10 * 24 * time.Hour).Truncate(time.Second)
	p := newPKIWith(t, time.Now().Add(time.Hour), peerExpiry)
	addr, peerAddr, _ := startMember(t, p, true)
	const peerPort = 2380
	var peerDials atomic.Int32
	dial := func(ctx context.Context, _, _ string, port int) (net.Conn, error) {
		to := addr
		if port == peerPort {
			to = peerAddr
			peerDials.Add(1)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", to)
	}
	tg := []engine.Target{{Member: "etcd-tls", Namespace: testNamespace, Pod: "etcd-tls", Port: podPort, ServerName: tlsServerName, CertPorts: []int{peerPort}}}
	cr := &engine.Credentials{CertPEM: p.clientCertPEM, KeyPEM: p.clientKeyPEM, CAPEM: p.caPEM}
	var f model.EngineFacts
	poll.Until(t, 20*time.Second, "both handshakes", func() error {
		f = etcd.New().Probe(context.Background(), tg, engine.ProbeOptions{Timeout: time.Second, Dial: dial, Credentials: cr})[0]
		if !f.Reachable || len(f.ServingCerts) != 2 {
			return fmt.Errorf("reachable %v, certificates %+v: %s", f.Reachable, f.ServingCerts, f.Err)
		}
		return nil
	})
	client, peer := f.ServingCerts[0], f.ServingCerts[1]
	if client.Port != podPort || peer.Port != peerPort || !peer.Verified || !peer.NotAfter.Equal(peerExpiry.UTC()) || peer.Subject != "CN=etcd-tls-peer" {
		t.Errorf("certificates %+v, want the client port's then the peer port's (CN=etcd-tls-peer, verified, until %s)", f.ServingCerts, peerExpiry.UTC())
	}
	if peerDials.Load() == 0 {
		t.Error("the peer port was never dialled")
	}
	ports := map[string]bool{}
	for _, r := range verdict.Compute(oneMember(f), time.Now(), model.VerdictOptions{}).Reasons {
		if r.Code == model.ReasonCertExpiring {
			ports[strings.Fields(strings.TrimPrefix(r.Detail, "the serving certificate on port "))[0]] = true
		}
	}
	if !ports[strconv.Itoa(podPort)] || !ports[strconv.Itoa(peerPort)] {
		t.Errorf("cert_expiring on ports %v, want %d and %d", ports, podPort, peerPort)
	}
}

// TestKeptConnectionSeesARenewedCertificate: the live view keeps one
// connection per member, which handshook once. After the member's
// certificate is renewed on disk (etcd reads it for each new connection),
// the next read of the certificate reports the new one, not the one the
// kept connection saw.
func TestKeptConnectionSeesARenewedCertificate(t *testing.T) {
	defer etcd.SetCertRefresh(0)()
	old := time.Now().Add(5 * 24 * time.Hour).Truncate(time.Second)
	p := newPKIUntil(t, old)
	addr, _, dir := startMember(t, p, false)
	dial := func(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	renewed := time.Now().Add(300 * 24 * time.Hour).Truncate(time.Second)
	q := newPKIWith(t, renewed, renewed)
	conns := engine.NewConns()
	defer conns.Close()
	tg := []engine.Target{{Member: "etcd-tls", Namespace: testNamespace, Pod: "etcd-tls", Port: podPort, ServerName: tlsServerName}}
	// The renewal comes from another CA: both are trusted from the start
	// (the same credentials keep the same kept connection).
	o := engine.ProbeOptions{Timeout: time.Second, Dial: dial, Conns: conns,
		Credentials: &engine.Credentials{CertPEM: p.clientCertPEM, KeyPEM: p.clientKeyPEM, CAPEM: append(append([]byte(nil), p.caPEM...), q.caPEM...)}}
	notAfter := func() (time.Time, error) {
		f := etcd.New().Probe(context.Background(), tg, o)[0]
		if !f.Reachable || len(f.ServingCerts) == 0 {
			return time.Time{}, fmt.Errorf("reachable %v, certificates %v: %s", f.Reachable, f.ServingCerts, f.Err)
		}
		return f.ServingCerts[0].NotAfter, nil
	}
	poll.Until(t, 20*time.Second, "the old certificate", func() error {
		got, err := notAfter()
		if err == nil && !got.Equal(old.UTC()) {
			err = fmt.Errorf("certificate until %s, want %s", got, old.UTC())
		}
		return err
	})
	for name, b := range map[string][]byte{"server.crt": q.serverCertPEM, "server.key": q.serverKeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if conns.Len() != 1 {
		t.Fatalf("%d kept connections, want 1", conns.Len())
	}
	poll.Until(t, 20*time.Second, "the renewed certificate", func() error {
		got, err := notAfter()
		if err == nil && !got.Equal(renewed.UTC()) {
			err = fmt.Errorf("certificate until %s, want the renewed one's %s", got, renewed.UTC())
		}
		return err
	})
}

// oneMember is a one-member cluster whose running, ready member's probe
// gave f.
func oneMember(f model.EngineFacts) model.Observation {
	return model.Observation{At: time.Now(), EngineProbed: true,
		Cluster: model.ClusterFacts{Namespace: testNamespace, Name: "etcd", Engine: etcd.Name, Replicas: 1, ReadyReplicas: 1, CreatedAt: time.Now().Add(-time.Hour)},
		Members: []model.Member{{Name: "etcd-tls", Engine: &f,
			Pod: &model.PodFacts{Name: "etcd-tls", Phase: "Running", Started: true, Running: true, Ready: true, EverStarted: true}}}}
}

// dialTLS dials the member at addr for any target, and is the target and
// the good credentials of p for it.
func dialTLS(addr string, p pki) (engine.DialFunc, []engine.Target, *engine.Credentials) {
	dial := func(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	tg := []engine.Target{{Member: "etcd-tls", Namespace: testNamespace, Pod: "etcd-tls", Port: podPort, ServerName: tlsServerName}}
	return dial, tg, &engine.Credentials{CertPEM: p.clientCertPEM, KeyPEM: p.clientKeyPEM, CAPEM: p.caPEM}
}
