package spilostandin

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// installedVersion is a PostgreSQL major version installed on the host,
// or "" when there is none.
func installedVersion() string {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(found) == 0 {
		return ""
	}
	return filepath.Base(filepath.Dir(filepath.Dir(found[0])))
}

// operatorEnv is the postgres container's environment as the Zalando
// operator sets it (after the runner resolved it), plus what the runner
// adds.
func operatorEnv(t *testing.T, version string, configMaps bool) []string {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\ncurrent-context: sandbox-ctx\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"HOSTNAME=acid-x-1", "HOME=/host/home", "SCOPE=acid-x", "PGROOT=/host/pvc/pgroot", "POD_IP=127.9.1.2",
		"POD_NAMESPACE=ns", "PGUSER_SUPERUSER=postgres", "KUBERNETES_SCOPE_LABEL=cluster-name",
		"KUBERNETES_ROLE_LABEL=spilo-role", "PGPASSWORD_SUPERUSER=su-pw", "PGUSER_STANDBY=standby",
		"PGPASSWORD_STANDBY=sb-pw", "PGVERSION=" + version, `KUBERNETES_LABELS={"application":"spilo"}`,
		`SPILO_CONFIGURATION={"postgresql":{"parameters":{"shared_buffers":"32MB"}},"bootstrap":{"initdb":[{"auth-host":"scram-sha-256"},{"auth-local":"trust"}],"dcs":{"maximum_lag_on_failover":1048576,"postgresql":{"parameters":{"max_connections":"50"}}}}}`,
		"DCS_ENABLE_KUBERNETES_API=true", "KUBECONFIG=" + kc, PodIPEnv + "=10.244.9.2",
	}
	if configMaps {
		env = append(env, "KUBERNETES_USE_CONFIGMAPS=true")
	}
	return env
}

func TestConfig(t *testing.T) {
	v := installedVersion()
	if v == "" {
		if _, err := Config(operatorEnv(t, "15", true)); err == nil || !strings.Contains(err.Error(), "not installed") {
			t.Fatalf("no PostgreSQL installed, yet: %v", err)
		}
		return
	}
	cfg, err := Config(operatorEnv(t, v, true))
	if err != nil {
		t.Fatal(err)
	}
	if cfg["scope"] != "acid-x" || cfg["name"] != "acid-x-1" || cfg["namespace"] != "ns" {
		t.Errorf("scope, name, namespace: %v %v %v", cfg["scope"], cfg["name"], cfg["namespace"])
	}
	k := cfg["kubernetes"].(map[string]any)
	if !reflect.DeepEqual(k["labels"], map[string]string{"application": "spilo"}) || k["scope_label"] != "cluster-name" ||
		k["role_label"] != "spilo-role" || k["context"] != "sandbox-ctx" || k["bypass_api_service"] != true {
		t.Errorf("kubernetes %v", k)
	}
	if _, ok := k["use_endpoints"]; ok {
		t.Errorf("ConfigMaps mode uses endpoints: %v", k)
	}
	if _, ok := k["use_configmaps"]; ok {
		t.Errorf("use_configmaps is Spilo's, not Patroni's: %v", k)
	}
	rest := cfg["restapi"].(map[string]any)
	pg := cfg["postgresql"].(map[string]any)
	if rest["listen"] != "127.9.1.2:8008" || rest["connect_address"] != "127.9.1.2:8008" || pg["listen"] != "127.9.1.2:5432" ||
		pg["connect_address"] != "127.9.1.2:5432" || pg["data_dir"] != "/host/pvc/pgroot/data" ||
		pg["bin_dir"] != "/usr/lib/postgresql/"+v+"/bin" {
		t.Errorf("restapi %v, postgresql %v", rest, pg)
	}
	auth := pg["authentication"].(map[string]any)
	if !reflect.DeepEqual(auth["superuser"], map[string]any{"username": "postgres", "password": "su-pw"}) ||
		!reflect.DeepEqual(auth["replication"], map[string]any{"username": "standby", "password": "sb-pw"}) {
		t.Errorf("authentication %v", auth)
	}
	params := pg["parameters"].(map[string]any)
	if params["shared_buffers"] != "32MB" || params["unix_socket_directories"] != "" {
		t.Errorf("parameters %v", params)
	}
	boot := cfg["bootstrap"].(map[string]any)
	dcs := boot["dcs"].(map[string]any)
	// The user's value wins; Spilo's defaults fill the rest.
	if dcs["maximum_lag_on_failover"] != float64(1048576) || dcs["ttl"] != 30 || dcs["loop_wait"] != 10 || dcs["retry_timeout"] != 10 {
		t.Errorf("dcs %v", dcs)
	}
	dpg := dcs["postgresql"].(map[string]any)
	dp := dpg["parameters"].(map[string]any)
	if dp["max_connections"] != "50" || dp["max_wal_senders"] != 10 || dpg["use_pg_rewind"] != true {
		t.Errorf("dcs postgresql %v", dpg)
	}
	// The user's list replaces Spilo's.
	if !reflect.DeepEqual(boot["initdb"], []any{map[string]any{"auth-host": "scram-sha-256"}, map[string]any{"auth-local": "trust"}}) {
		t.Errorf("initdb %v", boot["initdb"])
	}

	cfg, err = Config(operatorEnv(t, v, false))
	if err != nil {
		t.Fatal(err)
	}
	k = cfg["kubernetes"].(map[string]any)
	if k["use_endpoints"] != true || k["pod_ip"] != "10.244.9.2" ||
		!reflect.DeepEqual(k["ports"], []any{map[string]any{"port": 5432, "name": "postgresql"}}) {
		t.Errorf("Endpoints mode: %v", k)
	}
	if dcs := cfg["bootstrap"].(map[string]any)["dcs"].(map[string]any); dcs["maximum_lag_on_failover"] != float64(1048576) {
		t.Errorf("dcs %v", dcs)
	}

	// Spilo's default maximum_lag_on_failover without the user's.
	env := operatorEnv(t, v, true)
	for i, e := range env {
		if strings.HasPrefix(e, "SPILO_CONFIGURATION=") {
			env[i] = "SPILO_CONFIGURATION="
		}
	}
	cfg, err = Config(env)
	if err != nil {
		t.Fatal(err)
	}
	if dcs := cfg["bootstrap"].(map[string]any)["dcs"].(map[string]any); dcs["maximum_lag_on_failover"] != MaximumLagOnFailover {
		t.Errorf("default dcs %v", dcs)
	}
}

func TestConfigRefuses(t *testing.T) {
	base := operatorEnv(t, "15", true)
	for _, drop := range []string{"DCS_ENABLE_KUBERNETES_API", "POD_IP", "PGVERSION"} {
		var env []string
		for _, e := range base {
			if !strings.HasPrefix(e, drop+"=") {
				env = append(env, e)
			}
		}
		if _, err := Config(env); err == nil {
			t.Errorf("without %s: no error", drop)
		}
	}
	env := append(append([]string{}, base...), "PGVERSION=0")
	if _, err := Config(env); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("PostgreSQL 0: %v", err)
	}
}

func TestMainDispatch(t *testing.T) {
	if _, ok := Main("/x/hactl-sandbox", nil); ok {
		t.Error("ran under another name")
	}
	t.Setenv("DCS_ENABLE_KUBERNETES_API", "")
	if code, ok := Main("/x/standin/"+Command, nil); !ok || code == 0 {
		t.Errorf("stand-in without its environment: code %d, ok %v", code, ok)
	}
}

func TestDeepUpdate(t *testing.T) {
	a := map[string]any{"x": map[string]any{"k": 1}, "l": []any{1}, "n": nil}
	b := map[string]any{"x": map[string]any{"k": 2, "j": 3}, "l": []any{2, 3}, "n": 4, "m": 5}
	got := deepUpdate(a, b)
	want := map[string]any{"x": map[string]any{"k": 1, "j": 3}, "l": []any{1}, "n": 4, "m": 5}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
}
