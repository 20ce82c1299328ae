package druidstandin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"sigs.k8s.io/yaml"
)

// caPath is where druid mounts the etcd CA in the etcd container.
const caPath = "/var/etcd/ssl/ca/ca.crt"

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().UTC().Format(time.RFC3339)+" "+format+"\n", args...)
}

// runWrapper is etcd-wrapper's start-etcd.
func runWrapper(args []string) int {
	if len(args) == 0 || args[0] != "start-etcd" {
		logf("etcd-wrapper stand-in: want the start-etcd command, got %q", args)
		return 2
	}
	sc, err := loadContext()
	if err != nil {
		logf("etcd-wrapper stand-in: %v", err)
		return 2
	}
	f := flags(args[1:])
	br := sc.HostPort(f["backup-restore-host-port"])
	if br == "" {
		logf("etcd-wrapper stand-in: --backup-restore-host-port is required")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	// /readyz first: the kubelet probes it from the start.
	tc, err := clientTLS(sc.Path(caPath), f["etcd-client-cert-path"], f["etcd-client-key-path"], f["etcd-server-name"])
	if err != nil {
		logf("etcd-wrapper stand-in: client TLS: %v", err)
		return 1
	}
	clientURL := "https://" + net.JoinHostPort(sc.Address, orDefault(f["etcd-client-port"], "2379"))
	// One client for the process's life: it reconnects by itself.
	client, err := dial(clientURL, tc)
	if err != nil {
		logf("etcd-wrapper stand-in: %v", err)
		return 1
	}
	defer client.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := linearizableRead(r.Context(), client); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	ln, err := net.Listen("tcp", net.JoinHostPort(sc.Address, orDefault(f["etcd-wrapper-port"], "9095")))
	if err != nil {
		logf("etcd-wrapper stand-in: %v", err)
		return 1
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	base := "http://" + br
	if err := initialise(ctx, base); err != nil {
		logf("etcd-wrapper stand-in: %v", err)
		return 1
	}
	cfg, err := fetch(ctx, base+"/config")
	if err != nil {
		logf("etcd-wrapper stand-in: fetching the configuration: %v", err)
		return 1
	}
	local, err := translateConfig(sc, cfg)
	if err != nil {
		logf("etcd-wrapper stand-in: %v", err)
		return 1
	}
	home, _ := os.UserHomeDir()
	if home == "" {
		home = os.TempDir()
	}
	path := filepath.Join(home, "etcd.conf.yaml")
	if err := os.WriteFile(path, local, 0o600); err != nil {
		logf("etcd-wrapper stand-in: %v", err)
		return 1
	}
	logf("etcd-wrapper stand-in: starting etcd with %s (the configuration backup-restore served, in the sandbox's addresses)", path)
	cmd := exec.Command("etcd", "--config-file="+path)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		logf("etcd-wrapper stand-in: %v", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitCode(err)
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			return exitCode(err)
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			return exitCode(<-done)
		}
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	}
	return 1
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// initialise asks backup-restore to initialise and waits until it says
// Successful.
func initialise(ctx context.Context, base string) error {
	for {
		_, err := fetch(ctx, base+"/initialization/start")
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("asking backup-restore to initialise: %w", errors.Join(err, ctx.Err()))
		case <-time.After(time.Second):
		}
	}
	for {
		st, err := fetch(ctx, base+"/initialization/status")
		if err == nil && strings.TrimSpace(string(st)) == statusSuccessful {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for backup-restore's initialisation: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func fetch(ctx context.Context, u string) ([]byte, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return b, nil
}

// translateConfig maps the pod's view in an etcd configuration (YAML) to
// the sandbox's: listen URLs on the member's addresses (peers on the
// hidden peer address), advertised and initial-cluster URLs to the
// members' addresses, file paths to the volumes' host directories.
func translateConfig(sc Context, in []byte) ([]byte, error) {
	cfg := map[string]any{}
	if err := yaml.Unmarshal(in, &cfg); err != nil {
		return nil, fmt.Errorf("parsing the configuration: %w", err)
	}
	str := func(k string) (string, bool) {
		v, ok := cfg[k].(string)
		return v, ok
	}
	peer := sc.PeerAddress
	if peer == "" {
		peer = sc.Address
	}
	if v, ok := str("listen-peer-urls"); ok {
		cfg["listen-peer-urls"] = sc.URLs(v, peer)
	}
	if v, ok := str("listen-client-urls"); ok {
		cfg["listen-client-urls"] = sc.URLs(v, sc.Address)
	}
	for _, k := range []string{"initial-advertise-peer-urls", "advertise-client-urls"} {
		if v, ok := str(k); ok {
			cfg[k] = sc.URLs(v, "")
		}
	}
	if v, ok := str("initial-cluster"); ok {
		cfg["initial-cluster"] = sc.MemberURLs(v)
	}
	if v, ok := str("data-dir"); ok {
		cfg["data-dir"] = sc.Path(v)
	}
	for _, k := range []string{"client-transport-security", "peer-transport-security"} {
		sec, ok := cfg[k].(map[string]any)
		if !ok {
			continue
		}
		for _, f := range sortedKeys(sec) {
			if s, ok := sec[f].(string); ok && strings.HasSuffix(f, "-file") {
				sec[f] = sc.Path(s)
			}
		}
	}
	return yaml.Marshal(cfg)
}

func clientTLS(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %s", caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: serverName, MinVersion: tls.VersionTLS12}, nil
}

// dial is a client of exactly the member at u (it never syncs
// endpoints). Without a dial timeout it returns at once and connects in
// the background, so it works before etcd listens.
func dial(u string, tc *tls.Config) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{u}, TLS: tc, Logger: zap.NewNop()})
}

// linearizableRead succeeds when the member serves a linearizable read
// (it has a leader and quorum).
func linearizableRead(ctx context.Context, c *clientv3.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := c.Get(ctx, "health", clientv3.WithCountOnly())
	return err
}
