package druidstandin

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/sandbox/scenario"
)

func testContext(t *testing.T) (Context, string) {
	t.Helper()
	d := t.TempDir()
	cfg := filepath.Join(d, "config")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "etcd.conf.yaml"), []byte(scenario.DruidEtcdConfig("ns", "e")), 0o644); err != nil {
		t.Fatal(err)
	}
	return Context{
		Address: "127.5.1.2", PeerAddress: "127.5.2.2",
		Hosts: map[string]string{
			"e-local": "127.5.1.2", "e-0.e-peer.ns.svc": "127.5.1.1", "e-1.e-peer.ns.svc": "127.5.1.2", "e-2.e-peer.ns.svc": "127.5.1.3",
		},
		Mounts: map[string]string{"/var/etcd/config": cfg, "/var/etcd/data": "/host/data", "/var/etcd/ssl/server": "/host/server", "/var/etcd/ssl/ca": "/host/ca"},
	}, d
}

func TestContextPath(t *testing.T) {
	sc, _ := testContext(t)
	for in, want := range map[string]string{
		"/var/etcd/data/new.etcd":      "/host/data/new.etcd",
		"/var/etcd/data":               "/host/data",
		"/var/etcd/database":           "/var/etcd/database",
		"/var/etcd/ssl/ca/ca.crt":      "/host/ca/ca.crt",
		"/elsewhere/etcd.conf.yaml":    "/elsewhere/etcd.conf.yaml",
		"/var/etcd/ssl/server/tls.key": "/host/server/tls.key",
	} {
		if got := sc.Path(in); got != want {
			t.Errorf("Path(%s) = %s, want %s", in, got, want)
		}
	}
	if got := sc.HostPort("e-local:8080"); got != "127.5.1.2:8080" {
		t.Errorf("HostPort = %s", got)
	}
}

// TestConfigRoundTrip: backup-restore serves the member's configuration
// (its name and URLs, state new); the wrapper translates it into the
// sandbox's addresses and host paths.
func TestConfigRoundTrip(t *testing.T) {
	sc, _ := testContext(t)
	b := &backupRestore{sc: sc, f: map[string]string{}, pod: "e-1", ns: "ns", status: statusNew}
	rec := httptest.NewRecorder()
	b.serveConfig(rec, httptest.NewRequest("GET", "/config", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /config: %d %s", rec.Code, rec.Body)
	}
	served := map[string]any{}
	if err := yaml.Unmarshal(rec.Body.Bytes(), &served); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"name": "e-1", "initial-cluster-state": "new",
		"initial-advertise-peer-urls": "http://e-1.e-peer.ns.svc:2380",
		"advertise-client-urls":       "https://e-1.e-peer.ns.svc:2379",
		"data-dir":                    "/var/etcd/data/new.etcd",
	} {
		if served[k] != want {
			t.Errorf("served %s = %v, want %v", k, served[k], want)
		}
	}
	out, err := translateConfig(sc, rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	local := map[string]any{}
	if err := yaml.Unmarshal(out, &local); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"name":                        "e-1",
		"data-dir":                    "/host/data/new.etcd",
		"listen-peer-urls":            "http://127.5.2.2:2380",
		"listen-client-urls":          "https://127.5.1.2:2379",
		"initial-advertise-peer-urls": "http://127.5.1.2:2380",
		"advertise-client-urls":       "https://127.5.1.2:2379",
		"initial-cluster":             "e-0=http://127.5.1.1:2380,e-1=http://127.5.1.2:2380,e-2=http://127.5.1.3:2380",
	} {
		if local[k] != want {
			t.Errorf("translated %s = %v, want %v", k, local[k], want)
		}
	}
	sec := local["client-transport-security"].(map[string]any)
	if sec["cert-file"] != "/host/server/tls.crt" || sec["trusted-ca-file"] != "/host/ca/ca.crt" {
		t.Errorf("client-transport-security %v", sec)
	}
}

func TestMainDispatch(t *testing.T) {
	if _, ok := Main("/some/dir/kubectl", nil); ok {
		t.Error("dispatched a foreign name")
	}
	t.Setenv(ContextEnv, "")
	if code, ok := Main("/x/etcd-wrapper", []string{"start-etcd"}); !ok || code == 0 {
		t.Errorf("wrapper without a context: %d %v", code, ok)
	}
}
