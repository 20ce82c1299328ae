package druidstandin

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// backup-restore's initialisation states (pkg/server/httpAPI.go).
const (
	statusNew        = "New"
	statusProgress   = "Progress"
	statusSuccessful = "Successful"
)

// configPath is where druid mounts etcd.conf.yaml in the backup-restore
// container (backup-restore's miscellaneous.EtcdConfigFilePath).
const configPath = "/var/etcd/config/etcd.conf.yaml"

// TLSEnabledAnnotation is the member Lease annotation backup-restore's
// heartbeat sets: whether the member's peer URLs use TLS.
const TLSEnabledAnnotation = "member.etcd.gardener.cloud/tls-enabled"

type backupRestore struct {
	sc   Context
	f    map[string]string
	pod  string
	ns   string
	kc   kubernetes.Interface
	etcd string // the member's client URL in the sandbox
	tc   *tls.Config
	// cl is the one client of the member for the process's life (it
	// reconnects by itself).
	cl *clientv3.Client

	mu     sync.Mutex
	status string
}

// runBackupRestore is etcdbrctl's server.
func runBackupRestore(args []string) int {
	if len(args) == 0 || args[0] != "server" {
		logf("etcdbrctl stand-in: want the server command, got %q", args)
		return 2
	}
	sc, err := loadContext()
	if err != nil {
		logf("etcdbrctl stand-in: %v", err)
		return 2
	}
	b := &backupRestore{sc: sc, f: flags(args[1:]), pod: os.Getenv("POD_NAME"), ns: os.Getenv("POD_NAMESPACE"), status: statusNew}
	if b.pod == "" || b.ns == "" {
		logf("etcdbrctl stand-in: POD_NAME and POD_NAMESPACE are required")
		return 2
	}
	ep := strings.Split(b.f["endpoints"], ",")[0]
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" {
		logf("etcdbrctl stand-in: --endpoints %q: %v", ep, err)
		return 2
	}
	b.etcd = u.Scheme + "://" + sc.HostPort(u.Host)
	if u.Scheme == "https" {
		if b.tc, err = clientTLS(b.f["cacert"], b.f["cert"], b.f["key"], u.Hostname()); err != nil {
			logf("etcdbrctl stand-in: client TLS: %v", err)
			return 1
		}
	}
	if b.cl, err = dial(b.etcd, b.tc); err != nil {
		logf("etcdbrctl stand-in: %v", err)
		return 1
	}
	defer b.cl.Close()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		logf("etcdbrctl stand-in: the pod's kubeconfig: %v", err)
		return 1
	}
	if b.kc, err = kubernetes.NewForConfig(cfg); err != nil {
		logf("etcdbrctl stand-in: %v", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	mux := http.NewServeMux()
	mux.HandleFunc("/initialization/start", b.serveInitialize)
	mux.HandleFunc("/initialization/status", func(w http.ResponseWriter, _ *http.Request) {
		b.mu.Lock()
		defer b.mu.Unlock()
		_, _ = io.WriteString(w, b.status)
	})
	mux.HandleFunc("/config", b.serveConfig)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]bool{"health": true})
	})
	ln, err := net.Listen("tcp", net.JoinHostPort(sc.Address, orDefault(b.f["server-port"], "8080")))
	if err != nil {
		logf("etcdbrctl stand-in: %v", err)
		return 1
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	logf("etcdbrctl stand-in: serving on %s for member %s", ln.Addr(), b.pod)

	go b.heartbeat(ctx)
	if b.f["enable-snapshot-lease-renewal"] == "true" {
		go b.snapshots(ctx)
	}
	<-ctx.Done()
	return 0
}

// serveInitialize starts the initialisation: the real one validates the
// data directory and restores it from the store when it is missing or
// corrupt; the stand-in has nothing to restore from and reports success.
func (b *backupRestore) serveInitialize(w http.ResponseWriter, _ *http.Request) {
	b.mu.Lock()
	if b.status == statusNew {
		b.status = statusProgress
		go func() {
			if err := os.MkdirAll(b.sc.Path(orDefault(b.f["data-dir"], "/var/etcd/data/new.etcd")), 0o700); err != nil {
				logf("etcdbrctl stand-in: data dir: %v", err)
			}
			b.mu.Lock()
			b.status = statusSuccessful
			b.mu.Unlock()
		}()
	}
	b.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// serveConfig serves the mounted configuration with this member's name
// and advertise URLs and initial-cluster-state new (backup-restore's
// serveConfig when no learner is present).
func (b *backupRestore) serveConfig(w http.ResponseWriter, _ *http.Request) {
	in, err := os.ReadFile(b.sc.Path(configPath))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	cfg := map[string]any{}
	if err := yaml.Unmarshal(in, &cfg); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	name := b.pod
	if p, ok := cfg["member-name-prefix"].(string); ok && p != "" {
		name = p + "-" + b.pod
	}
	cfg["name"] = name
	for _, k := range []string{"initial-advertise-peer-urls", "advertise-client-urls"} {
		m, ok := cfg[k].(map[string]any)
		if !ok {
			continue
		}
		var urls []string
		if l, ok := m[name].([]any); ok {
			for _, u := range l {
				urls = append(urls, fmt.Sprint(u))
			}
		}
		cfg[k] = strings.Join(urls, ",")
	}
	cfg["initial-cluster-state"] = "new"
	out, err := yaml.Marshal(cfg)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if home, err := os.UserHomeDir(); err == nil {
		_ = os.WriteFile(filepath.Join(home, "etcd.conf.yaml"), out, 0o600)
	}
	_, _ = w.Write(out)
}

func (b *backupRestore) etcdStatus(ctx context.Context) (*clientv3.StatusResponse, error) {
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return b.cl.Status(sctx, b.etcd)
}

func duration(v string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d
	}
	return def
}

func (b *backupRestore) patchLease(ctx context.Context, name, holder string, renew time.Time, annotations map[string]string) error {
	patch := map[string]any{"spec": map[string]any{
		"holderIdentity": holder,
		"renewTime":      metav1.NewMicroTime(renew).Format(metav1.RFC3339Micro),
	}}
	if annotations != nil {
		patch["metadata"] = map[string]any{"annotations": annotations}
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = b.kc.CoordinationV1().Leases(b.ns).Patch(pctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

// heartbeat renews the member Lease (named after the member) every
// --k8s-heartbeat-duration, and every second until the first renewal.
func (b *backupRestore) heartbeat(ctx context.Context) {
	if b.f["enable-member-lease-renewal"] != "true" {
		return
	}
	period := duration(b.f["k8s-heartbeat-duration"], 10*time.Second)
	renewed := false
	for {
		st, err := b.etcdStatus(ctx)
		if err == nil {
			holder := strconv.FormatUint(st.Header.MemberId, 16) + ":" + strconv.FormatUint(st.Header.ClusterId, 16)
			if st.Header.MemberId == st.Leader {
				holder += ":Leader"
			} else {
				holder += ":Member"
			}
			err = b.patchLease(ctx, b.pod, holder, time.Now(), map[string]string{TLSEnabledAnnotation: strconv.FormatBool(false)})
			if err == nil && !renewed {
				logf("etcdbrctl stand-in: member Lease %s renewed: %s", b.pod, holder)
			}
			renewed = renewed || err == nil
		}
		if err != nil {
			logf("etcdbrctl stand-in: member Lease not renewed: %v", err)
		}
		wait := period
		if !renewed {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// snapshots takes, while this sidecar's etcd leads, one full snapshot into
// the Local store and then renews the delta-snap Lease every
// --delta-snapshot-period with the latest revision.
func (b *backupRestore) snapshots(ctx context.Context) {
	period := duration(b.f["delta-snapshot-period"], 20*time.Second)
	full := false
	start := time.Now()
	for {
		// Every second while the cluster forms (the leader's sidecar
		// snapshots at once), then every period.
		wait := time.Second
		if time.Since(start) > time.Minute {
			wait = period
		}
		st, err := b.etcdStatus(ctx)
		if err == nil && st.Header.MemberId == st.Leader {
			if !full {
				if err := b.fullSnapshot(ctx); err != nil {
					logf("etcdbrctl stand-in: full snapshot: %v", err)
				} else {
					full = true
				}
			} else {
				wait = period
				err = b.patchLease(ctx, b.f["delta-snapshot-lease-name"], strconv.FormatInt(st.Header.Revision, 10), time.Now(), nil)
				if err != nil {
					logf("etcdbrctl stand-in: delta-snap Lease: %v", err)
				}
			}
		} else if full {
			wait = period
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// storeDir is the Local store's directory: the mount of the container
// named by STORAGE_CONTAINER, then --store-prefix and v2 (backup-restore's
// snapstore layout).
func (b *backupRestore) storeDir() (string, error) {
	container := os.Getenv("STORAGE_CONTAINER")
	if container == "" {
		return "", fmt.Errorf("STORAGE_CONTAINER is not set")
	}
	for m, h := range b.sc.Mounts {
		if filepath.Base(filepath.Clean(m)) == container {
			return filepath.Join(h, b.f["store-prefix"], "v2"), nil
		}
	}
	return "", fmt.Errorf("no volume is mounted for the store container %s", container)
}

func (b *backupRestore) fullSnapshot(ctx context.Context) error {
	dir, err := b.storeDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c := b.cl
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The revision the snapshot holds at least (it is taken after).
	g, err := c.Get(sctx, "health", clientv3.WithCountOnly())
	if err != nil {
		return err
	}
	rev := g.Header.Revision
	rc, err := c.Snapshot(sctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	at := time.Now()
	compress := b.f["compress-snapshots"] != "false"
	name := fmt.Sprintf("Full-%08d-%08d-%d", 0, rev, at.Unix())
	if compress {
		name += ".gz"
	}
	tmp := filepath.Join(dir, "."+name+".part")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	var w io.Writer = f
	var gz *gzip.Writer
	if compress {
		gz = gzip.NewWriter(f)
		w = gz
	}
	_, err = io.Copy(w, rc)
	if err == nil && gz != nil {
		err = gz.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	logf("etcdbrctl stand-in: full snapshot at revision %d: %s", rev, filepath.Join(dir, name))
	return b.patchLease(ctx, b.f["full-snapshot-lease-name"], strconv.FormatInt(rev, 10), at, nil)
}
