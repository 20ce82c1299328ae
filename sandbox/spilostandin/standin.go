// Package spilostandin is the sandbox's stand-in for the entrypoint of
// Zalando's Spilo image (github.com/zalando/spilo, postgres-appliance:
// launch.sh, which runs scripts/configure_spilo.py and then Patroni under
// runit). The Zalando postgres-operator creates its pods with the Spilo
// image and no command, configured by environment variables only; the
// image cannot run here, so the runner runs this program for such a
// container instead (under the name Command).
//
// Like configure_spilo.py, it turns the container's environment into
// Patroni's configuration and then runs the host's Patroni
// (PatroniBinary) with it, in its own process (exec): what Spilo writes
// that matters to the cluster's shape, and what a reader of the API
// server sees. That is the scope, the member's name (the pod's), the
// Kubernetes DCS (KUBERNETES_LABELS, KUBERNETES_SCOPE_LABEL,
// KUBERNETES_ROLE_LABEL; ConfigMaps when KUBERNETES_USE_CONFIGMAPS is
// non-empty, else Endpoints with the pod's IP and the port postgresql
// 5432, as get_dcs_config does), the REST API on 8008 and PostgreSQL on
// 5432, the data directory $PGROOT/data, the superuser and replication
// users (PGUSER_SUPERUSER, PGPASSWORD_SUPERUSER, PGUSER_STANDBY,
// PGPASSWORD_STANDBY), and SPILO_CONFIGURATION merged over Spilo's
// defaults (bootstrap.dcs: ttl 30, loop_wait 10, retry_timeout 10,
// maximum_lag_on_failover 33554432, use_pg_rewind, use_slots; the user's
// lists replace Spilo's, as its deep_update does). The bin dir is
// /usr/lib/postgresql/<version>/bin, the version from the data
// directory's PG_VERSION, else PGVERSION.
//
// What it leaves out of Spilo's configuration: TLS (certificates, the
// hostssl pg_hba lines), WAL archiving and backups, the extensions and
// preloaded libraries of the image, logging to files, callbacks and the
// image's scripts; replicas are created with Patroni's own basebackup.
//
// What it does for the sandbox (each member is a set of host processes on
// a loopback address of its own, see package runner):
//
//   - Patroni and PostgreSQL listen on POD_IP (the runner gives the
//     member's own address there) rather than on every interface, and
//     PostgreSQL has no socket directory (every member uses port 5432);
//   - the Endpoints carry the pod's reported IP, which the runner passes in
//     PodIPEnv (the API server refuses loopback addresses there);
//   - Patroni 3.0.2 ignores a kubeconfig's current-context outside a
//     cluster, so the Kubernetes DCS is given the current context of the
//     kubeconfig the runner hands the container as KUBECONFIG;
//   - the Kubernetes DCS is used when DCS_ENABLE_KUBERNETES_API is set
//     (Spilo also wants KUBERNETES_SERVICE_HOST, which no sandbox pod has).
package spilostandin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"sigs.k8s.io/yaml"
)

// Command is the stand-in's command name: the runner links its program
// under it and runs it for a Spilo container without a command; Main
// dispatches on it.
const Command = "spilo-launch"

// PodIPEnv is the variable through which the runner hands the stand-in
// the pod's reported IP (status.podIP), which Patroni writes into its
// Endpoints; POD_IP itself holds the member's sandbox address.
const PodIPEnv = "HACTL_SANDBOX_POD_IP"

// PatroniBinary is the Patroni the stand-in runs (Debian's patroni).
const PatroniBinary = "/usr/bin/patroni"

// ConfigFile is the name of the configuration the stand-in writes in the
// container's HOME (Spilo's $PGHOME/postgres.yml).
const ConfigFile = "postgres.yml"

// Spilo's defaults (configure_spilo.py: TEMPLATE and get_placeholders).
const (
	DefaultLabels          = `{"application": "spilo"}`
	DefaultRoleLabel       = "spilo-role"
	DefaultScopeLabel      = "version"
	MaximumLagOnFailover   = 33554432
	restAPIPort            = "8008"
	postgresPort           = "5432"
	postgresqlBinDirFormat = "/usr/lib/postgresql/%s/bin"
)

// Commands lists the stand-in's command names.
func Commands() []string { return []string{Command} }

// Main runs the stand-in when name (argv[0]) is Command: it writes the
// configuration and replaces itself with Patroni, returning only on
// failure; ok is false when name is not the stand-in's.
func Main(name string, args []string) (code int, ok bool) {
	if filepath.Base(name) != Command {
		return 0, false
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "spilo stand-in: %v\n", err)
		return 1, true
	}
	return 0, true
}

func run() error {
	cfg, err := Config(os.Environ())
	if err != nil {
		return err
	}
	// launch.sh: mkdir -p $PGDATA; chmod 0700 $PGDATA.
	data := cfg["postgresql"].(map[string]any)["data_dir"].(string)
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(data, 0o700); err != nil {
		return err
	}
	home := os.Getenv("HOME")
	if home == "" {
		return errors.New("HOME is not set")
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	path := filepath.Join(home, ConfigFile)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "spilo stand-in: wrote %s; running %s\n", path, PatroniBinary)
	return syscall.Exec(PatroniBinary, []string{PatroniBinary, path}, os.Environ())
}

// Config is the Patroni configuration configure_spilo.py would write for
// the environment environ (KEY=value entries), in the subset described in
// the package documentation.
func Config(environ []string) (map[string]any, error) {
	vars := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	getenv := func(k string) string { return vars[k] }
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	if getenv("DCS_ENABLE_KUBERNETES_API") == "" {
		return nil, errors.New("DCS_ENABLE_KUBERNETES_API is not set: only Patroni's Kubernetes DCS is supported")
	}
	podIP := getenv("POD_IP")
	if podIP == "" {
		return nil, errors.New("POD_IP is not set")
	}
	name := env("HOSTNAME", getenv("POD_NAME"))
	if name == "" {
		return nil, errors.New("neither HOSTNAME nor POD_NAME is set")
	}
	pgroot := getenv("PGROOT")
	if pgroot == "" {
		// get_placeholders: $PGHOME/pgroot.
		pgroot = filepath.Join(env("PGHOME", getenv("HOME")), "pgroot")
	}
	dataDir := filepath.Join(pgroot, "data")

	user := map[string]any{}
	if s := getenv("SPILO_CONFIGURATION"); s != "" {
		if err := yaml.Unmarshal([]byte(s), &user); err != nil {
			return nil, fmt.Errorf("SPILO_CONFIGURATION: %w", err)
		}
	}

	kube, err := kubernetesConfig(vars)
	if err != nil {
		return nil, err
	}
	superUser, standbyUser := env("PGUSER_SUPERUSER", "postgres"), env("PGUSER_STANDBY", "standby")
	spilo := map[string]any{
		"scope": env("SCOPE", "dummy"),
		"name":  name,
		"restapi": map[string]any{
			"listen":          podIP + ":" + restAPIPort,
			"connect_address": podIP + ":" + restAPIPort,
		},
		"postgresql": map[string]any{
			"name":            name,
			"listen":          podIP + ":" + postgresPort,
			"connect_address": podIP + ":" + postgresPort,
			"data_dir":        dataDir,
			"pgpass":          filepath.Join(pgroot, "pgpass"),
			"authentication": map[string]any{
				"superuser":   map[string]any{"username": superUser, "password": env("PGPASSWORD_SUPERUSER", "zalando")},
				"replication": map[string]any{"username": standbyUser, "password": env("PGPASSWORD_STANDBY", "standby")},
			},
			"basebackup": []any{map[string]any{"checkpoint": "fast"}},
			"pg_hba": []any{
				"local   all             all                                   trust",
				"host    all             all                127.0.0.1/32       md5",
				"local   replication     " + standbyUser + "                    trust",
				"host    replication     " + standbyUser + " all                md5",
				"host    all             all                all                md5",
			},
			"parameters": map[string]any{
				// Every member listens on port 5432: no shared socket
				// directory (Patroni then connects over TCP).
				"unix_socket_directories": "",
			},
		},
		"bootstrap": map[string]any{
			"dcs": map[string]any{
				"ttl":                     30,
				"loop_wait":               10,
				"retry_timeout":           10,
				"maximum_lag_on_failover": MaximumLagOnFailover,
				"postgresql": map[string]any{
					"use_pg_rewind": true,
					"use_slots":     true,
					"parameters": map[string]any{
						"wal_level":             "hot_standby",
						"wal_log_hints":         "on",
						"max_wal_senders":       10,
						"max_connections":       100,
						"max_replication_slots": 10,
						"hot_standby":           "on",
					},
				},
			},
			"initdb": []any{map[string]any{"encoding": "UTF8"}, "data-checksums"},
		},
		"kubernetes": kube,
	}
	if ns := getenv("POD_NAMESPACE"); ns != "" {
		spilo["namespace"] = ns
	}
	// configure_spilo: deep_update(user_config, config): the user's values
	// win, dicts merge, a user's list replaces Spilo's.
	cfg := deepUpdate(user, spilo).(map[string]any)

	pg := cfg["postgresql"].(map[string]any)
	version := ""
	if b, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION")); err == nil {
		version = strings.TrimSpace(string(b))
	}
	if version != "" {
		pg["bin_dir"] = fmt.Sprintf(postgresqlBinDirFormat, version)
	} else if _, set := pg["bin_dir"]; !set {
		v := getenv("PGVERSION")
		if v == "" {
			return nil, errors.New("PGVERSION is not set and the data directory has no PG_VERSION: which PostgreSQL?")
		}
		pg["bin_dir"] = fmt.Sprintf(postgresqlBinDirFormat, v)
	}
	if _, err := os.Stat(filepath.Join(pg["bin_dir"].(string), "postgres")); err != nil {
		return nil, fmt.Errorf("PostgreSQL is not installed in %s (apt-get install postgresql-<version>): %w", pg["bin_dir"], err)
	}
	return cfg, nil
}

// kubernetesConfig is get_dcs_config's kubernetes section: every
// KUBERNETES_<PARAM> variable (with Spilo's defaults) as <param>, labels
// and bootstrap_labels parsed as JSON, use_configmaps replaced by
// use_endpoints with the pod's IP and port when it is empty; plus the
// kubeconfig's current context.
func kubernetesConfig(env map[string]string) (map[string]any, error) {
	vals := map[string]string{
		"role_label":                 DefaultRoleLabel,
		"leader_label_value":         "master",
		"standby_leader_label_value": "master",
		"scope_label":                DefaultScopeLabel,
		"labels":                     DefaultLabels,
		"use_configmaps":             "",
		"bypass_api_service":         "true",
		"bootstrap_labels":           "{}",
	}
	for k, v := range env {
		if p, ok := strings.CutPrefix(k, "KUBERNETES_"); ok && p != "" {
			vals[strings.ToLower(p)] = v
		}
	}
	k := map[string]any{}
	keys := make([]string, 0, len(vals))
	for p := range vals {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		v := vals[p]
		switch p {
		case "labels", "bootstrap_labels":
			def := DefaultLabels
			if p == "bootstrap_labels" {
				def = "{}"
			}
			m := map[string]string{}
			if err := json.Unmarshal([]byte(v), &m); err != nil {
				fmt.Fprintf(os.Stderr, "spilo stand-in: could not parse kubernetes %s as JSON (%v), reverting to the default: %s\n", p, err, def)
				m = map[string]string{}
				_ = json.Unmarshal([]byte(def), &m)
			}
			k[p] = m
		case "use_configmaps":
		case "bypass_api_service":
			if strings.EqualFold(v, "true") {
				k[p] = true
			}
		default:
			k[p] = v
		}
	}
	if vals["use_configmaps"] == "" {
		ip := env[PodIPEnv]
		if ip == "" {
			ip = env["POD_IP"]
		}
		k["use_endpoints"] = true
		k["pod_ip"] = ip
		k["ports"] = []any{map[string]any{"port": 5432, "name": "postgresql"}}
	}
	if kc := env["KUBECONFIG"]; kc != "" {
		ctx, err := currentContext(kc)
		if err != nil {
			return nil, err
		}
		if ctx != "" {
			k["context"] = ctx
		}
	}
	return k, nil
}

// currentContext reads the current-context of the kubeconfig at path.
func currentContext(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("KUBECONFIG: %w", err)
	}
	var kc struct {
		CurrentContext string `json:"current-context"`
	}
	if err := yaml.Unmarshal(b, &kc); err != nil {
		return "", fmt.Errorf("KUBECONFIG %s: %w", path, err)
	}
	return kc.CurrentContext, nil
}

// deepUpdate is configure_spilo.py's deep_update(a, b): dicts merge
// recursively, a's list wins over b's, and otherwise a's value unless it
// is nil.
func deepUpdate(a, b any) any {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		for k, bv := range bm {
			if av, ok := am[k]; ok {
				am[k] = deepUpdate(av, bv)
			} else {
				am[k] = bv
			}
		}
		return am
	}
	if _, ok := a.([]any); ok {
		if _, ok := b.([]any); ok {
			return a
		}
	}
	if a != nil {
		return a
	}
	return b
}
