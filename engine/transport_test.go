package engine

import (
	"strings"
	"testing"
)

func TestTLSConfigErrorsNameNoMaterial(t *testing.T) {
	key := []byte("-----BEGIN EC PRIVATE KEY-----\nbm90IGEga2V5\n-----END EC PRIVATE KEY-----\n")
	for _, cr := range []Credentials{{CertPEM: key, KeyPEM: key}, {KeyPEM: key}, {CAPEM: key}, {ServerName: "a b"}} {
		_, err := TLSConfig(&cr, Target{Pod: "member-0"})
		if err == nil {
			t.Errorf("bad credentials accepted")
			continue
		}
		if strings.Contains(err.Error(), "bm90") || strings.Contains(err.Error(), "PRIVATE") {
			t.Errorf("error leaks material: %v", err)
		}
	}
}

func TestPlaceholderHost(t *testing.T) {
	for _, c := range []struct {
		t    Target
		cr   *Credentials
		want string
	}{
		{Target{Member: "pg-0", Pod: "pg-0", Port: 8008}, nil, "pg-0:8008"},
		{Target{Member: "x y", Port: 2379}, nil, "member:2379"},
		{Target{Member: "etcd-0", Pod: "etcd-0", ServerName: "etcd-0.etcd.db.svc", Port: 2379}, &Credentials{}, "etcd-0.etcd.db.svc:2379"},
		{Target{Member: "etcd-0", Pod: "etcd-0", Port: 2379}, &Credentials{ServerName: "etcd.example"}, "etcd.example:2379"},
	} {
		if got := PlaceholderHost(c.t, c.cr); got != c.want {
			t.Errorf("PlaceholderHost(%+v) = %q, want %q", c.t, got, c.want)
		}
	}
}
