package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/kubeflags"
)

// writePair writes a self-signed certificate and its key under dir as
// name.crt and name.key.
func writePair(t *testing.T, dir, name string) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	crt, k := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	for p, b := range map[string][]byte{crt: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), k: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return crt, k
}

// The member TLS files are read as etcdctl reads --cacert/--cert/--key:
// none given is none; a certificate without its key, a key of another
// pair or a missing file is an error naming the flag, never the files'
// contents.
func TestMemberTLSFiles(t *testing.T) {
	dir := t.TempDir()
	crt, key := writePair(t, dir, "healthcheck-client")
	_, otherKey := writePair(t, dir, "other")
	keyPEM, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	flags := func(ca, c, k string) *kubeflags.ConfigFlags {
		f := kubeflags.NewConfigFlags(false)
		f.MemberCAFile, f.MemberCertFile, f.MemberKeyFile = ca, c, k
		return f
	}
	if cr, err := memberTLS(flags("", "", "")); cr != nil || err != nil {
		t.Errorf("no files: %v, %v; want none", cr, err)
	}
	cr, err := memberTLS(flags(crt, crt, key))
	if err != nil || cr == nil || len(cr.CAPEM) == 0 || len(cr.CertPEM) == 0 || len(cr.KeyPEM) == 0 {
		t.Fatalf("a pair and a CA: %v, %v", cr, err)
	}
	if s := fmt.Sprintf("%v %+v %s", cr, cr, *cr); strings.Contains(s, "PRIVATE KEY") {
		t.Errorf("credentials print their key: %s", s)
	}
	for name, c := range map[string]struct {
		f    *kubeflags.ConfigFlags
		want string
	}{
		"certificate without key": {flags("", crt, ""), "--etcd-key"},
		"CA alone":                {flags(crt, "", ""), "--etcd-cert"},
		"key of another pair":     {flags("", crt, otherKey), "one pair"},
		"missing file":            {flags(filepath.Join(dir, "nope.crt"), crt, key), "--etcd-cacert"},
	} {
		_, err := memberTLS(c.f)
		switch {
		case err == nil:
			t.Errorf("%s: accepted", name)
		case !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v, want it to name %s", name, err, c.want)
		case strings.Contains(err.Error(), string(keyPEM[:40])):
			t.Errorf("%s: the error quotes the key: %v", name, err)
		}
	}
	if _, err := memberTLS(flags("", crt, "")); codeOf(err) != ExitUsage {
		t.Errorf("a certificate without its key: %v, want a usage error (exit 2)", err)
	}
}
