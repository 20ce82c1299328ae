// Package cnpgstandin is the sandbox's stand-in for CloudNativePG's
// instance manager (`/controller/manager instance run`, cnpg's
// internal/cmd/manager/instance/run), which cannot be built here. The
// runner runs it (under the name Command) for the postgres container of a
// pod of a CloudNativePG Cluster, with the pod's environment (PGDATA,
// POD_NAME, NAMESPACE, CLUSTER_NAME, PGHOST, PGPORT), as the postgres
// user, around the host's real PostgreSQL (Debian's
// /usr/lib/postgresql/<major>/bin, the major from the image's tag).
//
// What it does, per instance (read from cloudnative-pg @a95a534, v1.30.0):
//
//   - bootstrap: the instance named by the Cluster's
//     status.currentPrimary (else targetPrimary, else <cluster>-1) runs
//     initdb and starts as the primary, creating the streaming_replica
//     role and setting the postgres and app users' passwords from the
//     Secrets <cluster>-superuser and <cluster>-app (their key
//     `password`) and the app database; every other instance takes a
//     pg_basebackup from the primary and streams from it (standby.signal,
//     primary_conninfo with application_name its pod's name, as cnpg's
//     replicas do);
//   - serves on :8000, unauthenticated plain HTTP, GET /pg/status (the
//     JSON of cnpg's postgres.PostgresqlStatus computed from the instance's
//     own PostgreSQL with cnpg's queries, see status.go and probe.go; when
//     PostgreSQL does not answer, status 500 with the error as text, as
//     webserver/remote.go's pgStatus does), /healthz, /readyz and
//     /startupz as cnpg's probes answer them;
//   - a switchover, requested as `kubectl cnpg promote` does it
//     (status.targetPrimary set to another instance): the current
//     primary shuts its PostgreSQL down (fast) and, once the Cluster
//     names the target as currentPrimary, restarts as a standby of it
//     (recovery_target_timeline latest; pg_rewind when it cannot follow);
//     the target waits until the old primary is down and it has replayed
//     all it received, promotes, labels the pods and writes
//     status.currentPrimary; the other replicas re-point primary_conninfo
//     and reload.
//
// What the stand-in does that the operator does in cnpg: it labels its
// own pod cnpg.io/instanceRole and role (primary|replica) and, on a
// switchover, writes the Cluster's status. It leaves out TLS, WAL
// archiving and backups, the metrics exporter (:9187), managed roles and
// the generated postgresql.conf (it writes its own settings,
// cnpg-standin.conf), and failover of a lost primary.
//
// The other instances' addresses: their pods' status.podIP (10.244.b.n),
// which the stand-in maps to the members' addresses 127.b.1.n as the
// sandbox's pod network does (package runner); its own address comes
// from the runner in AddressEnv.
package cnpgstandin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Command is the stand-in's command name: the runner links its program
// under it and runs it in place of /controller/manager.
const Command = "cnpg-instance-manager"

// Commands lists the names the runner links.
func Commands() []string { return []string{Command} }

// The variables through which the runner hands the stand-in what the pod
// cannot say: the member's sandbox address (where PostgreSQL and the
// status server listen), the pod's reported IP and the container's image.
const (
	AddressEnv = "HACTL_SANDBOX_ADDRESS"
	PodIPEnv   = "HACTL_SANDBOX_POD_IP"
	ImageEnv   = "HACTL_SANDBOX_IMAGE"
)

// cnpg's names (api/v1, pkg/utils/labels_annotations.go, pkg/specs).
const (
	Group   = "postgresql.cnpg.io"
	Version = "v1"
	Kind    = "Cluster"

	ClusterLabel      = "cnpg.io/cluster"
	InstanceNameLabel = "cnpg.io/instanceName"
	InstanceRoleLabel = "cnpg.io/instanceRole"
	PodRoleLabel      = "cnpg.io/podRole"
	// RoleLabel is the legacy role label cnpg still writes.
	RoleLabel       = "role"
	PodRoleInstance = "instance"
	RolePrimary     = "primary"
	RoleReplica     = "replica"

	PhaseHealthy    = "Cluster in healthy state"
	PhaseSwitchover = "Switchover in progress"

	// ReplicationUser is apiv1.StreamingReplicationUser.
	ReplicationUser = "streaming_replica"
	// StatusPort is url.StatusPort.
	StatusPort = 8000
	// InstanceManagerVersion is the cnpg version whose manager this
	// stands in for.
	InstanceManagerVersion = "1.30.0"
)

// ClusterGVR is cnpg's Cluster resource.
var ClusterGVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "clusters"}

// SuperuserSecret and AppSecret are the Cluster's Secrets.
func SuperuserSecret(cluster string) string { return cluster + "-superuser" }
func AppSecret(cluster string) string       { return cluster + "-app" }

// Main runs the stand-in when argv0 names it; ok is false otherwise.
func Main(argv0 string, args []string) (code int, ok bool) {
	if filepath.Base(argv0) != Command {
		return 0, false
	}
	if len(args) < 2 || args[0] != "instance" || args[1] != "run" {
		fmt.Fprintf(os.Stderr, "%s: only `instance run` is stood in for (got %q)\n", Command, args)
		return 2, true
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Command, err)
		return 1, true
	}
	return 0, true
}

type standIn struct {
	pod, ns, cluster, addr string
	pg                     *postgres
	kc                     kubernetes.Interface
	dyn                    dynamic.Interface

	arch, hash, session string
	canCheckReadiness   atomic.Bool

	mu sync.Mutex
	// role is what this instance runs as: primary, replica, or
	// "demoted" (shut down by a switchover, waiting for the new primary).
	role string
	// upstream is the pod this replica streams from.
	upstream string
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s cnpg-standin: %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

func run(ctx context.Context) error {
	env := func(k string) string { return os.Getenv(k) }
	s := &standIn{pod: env("POD_NAME"), ns: env("NAMESPACE"), cluster: env("CLUSTER_NAME"), addr: env(AddressEnv),
		arch: runtime.GOARCH, session: newSessionID()}
	if s.pod == "" || s.ns == "" || s.cluster == "" || env("PGDATA") == "" {
		return errors.New("POD_NAME, NAMESPACE, CLUSTER_NAME and PGDATA must be set (the pod's environment)")
	}
	if s.addr == "" {
		s.addr = "127.0.0.1"
	}
	port := 5432
	if p, err := strconv.Atoi(env("PGPORT")); err == nil {
		port = p
	}
	sock := SocketDir(env("PGHOST"), s.addr)
	_ = os.MkdirAll(os.TempDir(), 0o700)
	bin, err := binDir(env(ImageEnv), env("PGDATA"))
	if err != nil {
		return err
	}
	s.pg = &postgres{bin: bin, data: env("PGDATA"), sock: sock, addr: s.addr, port: port, logf: logf}
	if exe, err := os.Executable(); err == nil {
		if b, err := os.ReadFile(exe); err == nil {
			sum := sha256.Sum256(b)
			s.hash = hex.EncodeToString(sum[:])
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", env("KUBECONFIG"))
	if err != nil {
		return fmt.Errorf("the API server (KUBECONFIG): %w", err)
	}
	if s.kc, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if s.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", net.JoinHostPort(s.addr, strconv.Itoa(StatusPort)))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.mux(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	err = s.bootstrap(ctx)
	if err != nil && ctx.Err() == nil {
		s.pg.stop(30 * time.Second)
		return err
	}
	s.canCheckReadiness.Store(true)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			if err := s.reconcile(ctx); err != nil && ctx.Err() == nil {
				logf("%v", err)
			}
		}
	}
	logf("stopping: shutting PostgreSQL down (fast)")
	s.pg.stop(30 * time.Second)
	if sock != env("PGHOST") {
		// The /tmp fallback goes with the instance (once empty).
		_ = os.Remove(sock)
	}
	return nil
}

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// SocketDir is where the instance's PostgreSQL puts its Unix socket:
// PGHOST (cnpg's /controller/run, a directory of the pod's in the
// sandbox) when the socket's path fits a Unix socket address (107
// bytes), else /tmp/hactl-cnpg-<address>. SocketDirShell computes the
// same in a container's shell.
func SocketDir(pghost, addr string) string {
	if filepath.IsAbs(pghost) && len(pghost) <= maxSocketDir {
		return pghost
	}
	return "/tmp/hactl-cnpg-" + addr
}

// maxSocketDir is the longest socket directory whose socket path
// (dir/.s.PGSQL.5432) stays within 100 bytes.
const maxSocketDir = 86

// SocketDirShell is SocketDir in sh, for `sh -c` scripts run in the
// container (its environment: PGHOST and AddressEnv).
const SocketDirShell = `$(if [ ${#PGHOST} -le 86 ]; then echo "$PGHOST"; else echo "/tmp/hactl-cnpg-$` + AddressEnv + `"; fi)`

// binDir finds the PostgreSQL binaries: /usr/lib/postgresql/<major>/bin,
// the major from the data directory's PG_VERSION, else the image's tag
// (ghcr.io/cloudnative-pg/postgresql:15 or 15.8-…).
func binDir(image, pgdata string) (string, error) {
	var major string
	if b, err := os.ReadFile(filepath.Join(pgdata, "PG_VERSION")); err == nil {
		major = strings.TrimSpace(string(b))
	} else if i := strings.LastIndex(image, ":"); i >= 0 && !strings.Contains(image[i:], "/") {
		tag := image[i+1:]
		major = strings.FieldsFunc(tag, func(r rune) bool { return r == '.' || r == '-' })[0]
	}
	if major != "" {
		d := filepath.Join("/usr/lib/postgresql", major, "bin")
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
		return "", fmt.Errorf("PostgreSQL %s is not installed at %s (apt-get install postgresql-%s)", major, d, major)
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(found) == 0 {
		return "", errors.New("no PostgreSQL under /usr/lib/postgresql (apt-get install postgresql-15)")
	}
	sort.Strings(found)
	return filepath.Dir(found[len(found)-1]), nil
}

// clusterStatus is what the stand-in reads of its Cluster.
type clusterStatus struct {
	currentPrimary, targetPrimary string
	superuserAccess               bool
}

func (s *standIn) getCluster(ctx context.Context) (clusterStatus, error) {
	u, err := s.dyn.Resource(ClusterGVR).Namespace(s.ns).Get(ctx, s.cluster, metav1.GetOptions{})
	if err != nil {
		return clusterStatus{}, err
	}
	var c clusterStatus
	c.currentPrimary, _, _ = unstructured.NestedString(u.Object, "status", "currentPrimary")
	c.targetPrimary, _, _ = unstructured.NestedString(u.Object, "status", "targetPrimary")
	c.superuserAccess, _, _ = unstructured.NestedBool(u.Object, "spec", "enableSuperuserAccess")
	return c, nil
}

// password reads key password of Secret name ("" when it is missing).
func (s *standIn) password(ctx context.Context, name string) string {
	sec, err := s.kc.CoreV1().Secrets(s.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			logf("secret %s: %v", name, err)
		}
		return ""
	}
	return string(sec.Data["password"])
}

// addressOf returns the sandbox address of instance pod: its pod IP
// 10.244.b.n stands for 127.b.1.n.
func (s *standIn) addressOf(ctx context.Context, pod string) (string, error) {
	if pod == s.pod {
		return s.addr, nil
	}
	p, err := s.kc.CoreV1().Pods(s.ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return MemberAddress(p.Status.PodIP)
}

// MemberAddress maps a sandbox pod IP (10.244.b.n) to the member's
// address (127.b.1.n); a 127.* address stands for itself.
func MemberAddress(podIP string) (string, error) {
	var b, n int
	if _, err := fmt.Sscanf(podIP, "10.244.%d.%d", &b, &n); err == nil && fmt.Sprintf("10.244.%d.%d", b, n) == podIP {
		return fmt.Sprintf("127.%d.1.%d", b, n), nil
	}
	if strings.HasPrefix(podIP, "127.") {
		return podIP, nil
	}
	return "", fmt.Errorf("pod IP %q is none of the sandbox's", podIP)
}

func (s *standIn) bootstrap(ctx context.Context) error {
	var c clusterStatus
	for {
		var err error
		if c, err = s.getCluster(ctx); err == nil {
			break
		}
		logf("reading Cluster %s: %v", s.cluster, err)
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	primary := c.currentPrimary
	if primary == "" {
		primary = c.targetPrimary
	}
	if primary == "" {
		primary = s.cluster + "-1"
	}
	if primary == s.pod {
		fresh := !s.pg.initialised()
		if fresh {
			logf("initdb: %s is the first primary", s.pod)
			if err := s.pg.initdb(ctx); err != nil {
				return err
			}
		}
		if err := s.pg.configure("", s.pod); err != nil {
			return err
		}
		if err := s.pg.start(ctx); err != nil {
			return err
		}
		if fresh {
			if err := s.initRoles(ctx, c); err != nil {
				return err
			}
		}
		s.setRole(RolePrimary, "")
		return s.label(ctx, s.pod, RolePrimary)
	}
	addr, err := s.waitAddress(ctx, primary)
	if err != nil {
		return err
	}
	if !s.pg.initialised() {
		for {
			logf("pg_basebackup from %s (%s)", primary, addr)
			err := s.pg.basebackup(ctx, addr, s.pod)
			if err == nil {
				break
			}
			logf("%v", err)
			if err := sleep(ctx, 2*time.Second); err != nil {
				return err
			}
		}
	}
	if err := s.pg.configure(addr, s.pod); err != nil {
		return err
	}
	if err := s.pg.start(ctx); err != nil {
		return err
	}
	s.setRole(RoleReplica, primary)
	return s.label(ctx, s.pod, RoleReplica)
}

func (s *standIn) waitAddress(ctx context.Context, pod string) (string, error) {
	for {
		addr, err := s.addressOf(ctx, pod)
		if err == nil {
			return addr, nil
		}
		logf("address of %s: %v", pod, err)
		if err := sleep(ctx, time.Second); err != nil {
			return "", err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// initRoles does what cnpg's bootstrap does after initdb: the replication
// user, the superuser's password (enableSuperuserAccess), the app user
// and database.
func (s *standIn) initRoles(ctx context.Context, c clusterStatus) error {
	sqls := []string{"CREATE ROLE " + ReplicationUser + " WITH REPLICATION LOGIN"}
	if pw := s.password(ctx, SuperuserSecret(s.cluster)); pw != "" && c.superuserAccess {
		sqls = append(sqls, "ALTER ROLE postgres WITH PASSWORD "+quote(pw))
	}
	if pw := s.password(ctx, AppSecret(s.cluster)); pw != "" {
		sqls = append(sqls, "CREATE ROLE app WITH LOGIN PASSWORD "+quote(pw), "CREATE DATABASE app OWNER app")
	}
	for _, q := range sqls {
		if _, err := s.pg.query(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", strings.Fields(q)[0]+" "+strings.Fields(q)[1], err)
		}
	}
	return nil
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (s *standIn) setRole(role, upstream string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.role, s.upstream = role, upstream
}

func (s *standIn) state() (role, upstream string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.role, s.upstream
}

// label sets pod's role labels (cnpg.io/instanceRole and the legacy
// role), as cnpg's operator does (internal/controller/cluster_status.go
// updateRoleLabels).
func (s *standIn) label(ctx context.Context, pod, role string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{
		InstanceRoleLabel: role, RoleLabel: role,
	}}})
	_, err := s.kc.CoreV1().Pods(s.ns).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// mux serves cnpg's unauthenticated endpoints (webserver/remote.go).
func (s *standIn) mux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("/pg/status", func(w http.ResponseWriter, r *http.Request) {
		st, err := s.status(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		js, err := json.Marshal(st)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(js)
	})
	m.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		// The liveness probe answers OK unless the primary is isolated
		// (isolationCheck, off by default).
		_, _ = io.WriteString(w, "OK")
	})
	m.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.canCheckReadiness.Load() {
			http.Error(w, "instance is not ready yet", http.StatusInternalServerError)
			return
		}
		s.pgIsReady(w, r, "readiness")
	})
	m.HandleFunc("/startupz", func(w http.ResponseWriter, r *http.Request) {
		s.pgIsReady(w, r, "startup")
	})
	m.HandleFunc("/failsafe", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "OK") })
	return m
}

// pgIsReady answers a probe as cnpg's pg_isready checker does
// (webserver/probes/checker.go, isready.go; instance.go PgIsReady).
func (s *standIn) pgIsReady(w http.ResponseWriter, r *http.Request, probe string) {
	var err error
	switch code := s.pg.isReady(r.Context()); code {
	case 0:
	case 1:
		if probe != "startup" {
			err = errors.New("server is alive but rejecting connections")
		}
	case 2:
		err = errors.New("could not establish connection")
	case 3:
		err = errors.New("pg_isready usage error: exit status 3")
	default:
		err = fmt.Errorf("unknown exit code %d: exit status %d", code, code)
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("%s check failed: %s", probe, err), http.StatusInternalServerError)
		return
	}
	_, _ = io.WriteString(w, "OK")
}
