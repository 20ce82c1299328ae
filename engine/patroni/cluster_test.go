package patroni_test

// The test harness: a real Patroni 3.0.2 cluster (PostgreSQL 15) on
// loopback addresses with a one-member etcd (from internal/testbins) as its
// etcd3 DCS, reached through a direct TCP DialFunc that stands in for the
// port-forward.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/internal/testbins"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
)

const (
	testNamespace = "hactl-test"
	// restPort and pgPort are the ports every member listens on, each on
	// its own loopback address, as in a pod.
	restPort = 8008
	pgPort   = 5432
)

// Binaries: Debian's patroni and postgresql-15 packages, overridable.
var (
	patroniBin = envOr("HACTL_PATRONI_BIN", "/usr/bin/patroni")
	pgBinDir   = envOr("HACTL_PG_BIN_DIR", "/usr/lib/postgresql/15/bin")
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// clusterOptions shape a test cluster.
type clusterOptions struct {
	// Members is the number of Patroni members (default 3).
	Members int
	// Tags are per-member Patroni tags, by member name.
	Tags map[string]map[string]any
	// Auth, when set, is the REST API's basic authentication (unsafe
	// methods only, as Patroni does).
	Auth *struct{ Username, Password string }
	// TLS, when set, makes the REST API serve HTTPS with this material
	// and require client certificates.
	TLS *restTLS
}

// restTLS is the REST API's TLS material, PEM.
type restTLS struct {
	CertPEM, KeyPEM, CAPEM []byte
}

// pgCluster is a running Patroni cluster.
type pgCluster struct {
	Scope   string
	Dir     string
	Members []*pgMember
}

// pgMember is one Patroni process and the PostgreSQL it runs.
type pgMember struct {
	Name    string
	Addr    string // loopback IP
	Dir     string
	DataDir string
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
}

// startCluster starts etcd and the Patroni members and stops everything
// (postmasters included, which setsid out of Patroni's process group) when
// the test ends. It does not wait for the cluster to be healthy.
func startCluster(t *testing.T, o clusterOptions) *pgCluster {
	t.Helper()
	requirePatroni(t)
	if o.Members <= 0 {
		o.Members = 3
	}
	etcdURL := startEtcd(t)
	ips := claimAddresses(t, o.Members)
	cred := runAs(t)

	dir, err := os.MkdirTemp("", "hactl-patroni-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &pgCluster{Scope: "pgt-" + randomHex(4), Dir: dir}
	t.Cleanup(func() { c.stop(t) })
	for i := range o.Members {
		m := c.newMember(t, fmt.Sprintf("pg-%d", i), ips[i], cred)
		if err := m.writeConfig(c.Scope, etcdURL, o); err != nil {
			t.Fatal(err)
		}
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		if err := m.start(cred); err != nil {
			t.Fatalf("starting %s: %v", m.Name, err)
		}
	}
	return c
}

func requirePatroni(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("tier-3 test (real Patroni and PostgreSQL processes) skipped with -short")
	}
	for _, p := range []string{patroniBin, filepath.Join(pgBinDir, "postgres"), filepath.Join(pgBinDir, "initdb")} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("Patroni or PostgreSQL not installed (%v): apt-get install patroni postgresql-15", err)
		}
	}
}

// startEtcd starts a one-member etcd for the DCS and returns its host:port.
func startEtcd(t *testing.T) string {
	t.Helper()
	bin, err := testbins.Dir()
	if err != nil {
		t.Fatalf("test binaries: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, err := etcdcluster.Start(ctx, etcdcluster.Options{BinDir: bin, Dir: t.TempDir(), Members: 1})
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping etcd: %v", err)
		}
	})
	u, err := url.Parse(e.Members[0].ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// claimAddresses picks n loopback addresses 127.X.Y.1…n where nothing
// listens on the REST and PostgreSQL ports. X and Y are random in 100…254:
// the sandbox's blocks use 127.B.1.* and 127.B.2.*, and other test
// processes pick their own random block. A lock file (held for the test)
// keeps two test processes of this package off the same block.
func claimAddresses(t *testing.T, n int) []string {
	t.Helper()
	lockDir := filepath.Join(os.TempDir(), "hactl-patroni-test-blocks-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(lockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		x, y := 100+randInt(155), 100+randInt(155)
		f, err := os.OpenFile(filepath.Join(lockDir, fmt.Sprintf("%d.%d.lock", x, y)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close()
			continue
		}
		ips := make([]string, n)
		for i := range ips {
			ips[i] = fmt.Sprintf("127.%d.%d.%d", x, y, i+1)
		}
		if addressesFree(ips) {
			t.Cleanup(func() { f.Close() })
			return ips
		}
		f.Close()
	}
	t.Fatal("no free loopback block found in 50 tries")
	return nil
}

func addressesFree(ips []string) bool {
	for _, ip := range ips {
		for _, port := range []int{restPort, pgPort} {
			l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
			if err != nil {
				return false
			}
			l.Close()
		}
	}
	return true
}

// runAs is the user Patroni runs as: postgres when the test runs as root
// (initdb and postgres refuse root), else the test's own user (nil).
func runAs(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Skipf("running as root and there is no postgres user to run PostgreSQL as: %v", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
}

func (c *pgCluster) newMember(t *testing.T, name, ip string, cred *syscall.Credential) *pgMember {
	t.Helper()
	d := filepath.Join(c.Dir, name)
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	return &pgMember{Name: name, Addr: ip, Dir: d, DataDir: filepath.Join(d, "data"), LogPath: filepath.Join(c.Dir, name+".log")}
}

// writeConfig writes the member's Patroni configuration. JSON is YAML, so
// the file is written with encoding/json.
func (m *pgMember) writeConfig(scope, etcdHost string, o clusterOptions) error {
	rest := map[string]any{
		"listen":          net.JoinHostPort(m.Addr, strconv.Itoa(restPort)),
		"connect_address": net.JoinHostPort(m.Addr, strconv.Itoa(restPort)),
	}
	if o.Auth != nil {
		rest["authentication"] = map[string]string{"username": o.Auth.Username, "password": o.Auth.Password}
	}
	if o.TLS != nil {
		files := map[string][]byte{"rest.crt": o.TLS.CertPEM, "rest.key": o.TLS.KeyPEM, "ca.crt": o.TLS.CAPEM}
		for n, b := range files {
			if err := os.WriteFile(filepath.Join(m.Dir, n), b, 0o644); err != nil {
				return err
			}
		}
		rest["certfile"] = filepath.Join(m.Dir, "rest.crt")
		rest["keyfile"] = filepath.Join(m.Dir, "rest.key")
		rest["cafile"] = filepath.Join(m.Dir, "ca.crt")
		rest["verify_client"] = "required"
	}
	pgAddr := net.JoinHostPort(m.Addr, strconv.Itoa(pgPort))
	cfg := map[string]any{
		"scope":     scope,
		"namespace": "/service/",
		"name":      m.Name,
		"restapi":   rest,
		"etcd3":     map[string]any{"hosts": etcdHost},
		"bootstrap": map[string]any{
			"dcs": map[string]any{
				"ttl": 20, "loop_wait": 5, "retry_timeout": 5, "maximum_lag_on_failover": 1048576,
				"postgresql": map[string]any{
					"use_pg_rewind": true, "use_slots": true,
					"parameters": map[string]any{
						"wal_level": "replica", "hot_standby": "on", "max_wal_senders": 10,
						"max_replication_slots": 10, "wal_log_hints": "on", "max_connections": 30,
					},
				},
			},
			"initdb": []any{map[string]string{"encoding": "UTF8"}, "data-checksums"},
			"pg_hba": []string{
				"local all all trust",
				"host replication replicator 127.0.0.0/8 md5",
				"host all all 127.0.0.0/8 md5",
			},
		},
		"postgresql": map[string]any{
			"listen":          pgAddr,
			"connect_address": pgAddr,
			"data_dir":        m.DataDir,
			"bin_dir":         pgBinDir,
			"pgpass":          filepath.Join(m.Dir, "pgpass"),
			"authentication": map[string]any{
				"replication": map[string]string{"username": "replicator", "password": "rep-pass"},
				"superuser":   map[string]string{"username": "postgres", "password": "su-pass"},
				"rewind":      map[string]string{"username": "rewinder", "password": "rw-pass"},
			},
			"parameters": map[string]any{"unix_socket_directories": m.Dir, "shared_buffers": "16MB"},
			"basebackup": []any{map[string]string{"checkpoint": "fast"}},
		},
	}
	if tags := o.Tags[m.Name]; tags != nil {
		cfg["tags"] = tags
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(m.configPath(), b, 0o644)
}

func (m *pgMember) configPath() string { return filepath.Join(m.Dir, "patroni.yml") }

// start runs Patroni in a process group of its own, as cred when set.
func (m *pgMember) start(cred *syscall.Credential) error {
	logf, err := os.OpenFile(m.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(patroniBin, m.configPath())
	cmd.Dir = m.Dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + m.Dir, "TMPDIR=" + m.Dir, "LC_ALL=C.UTF-8", "PYTHONUNBUFFERED=1"}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		return err
	}
	m.cmd, m.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(m.done) }()
	return nil
}

// Pid is the Patroni process's pid.
func (m *pgMember) Pid() int { return m.cmd.Process.Pid }

// Freeze stops the Patroni process (its REST API accepts TCP and never
// answers); PostgreSQL keeps running. Thaw undoes it.
func (m *pgMember) Freeze() error { return syscall.Kill(m.Pid(), syscall.SIGSTOP) }

// Thaw resumes a frozen Patroni.
func (m *pgMember) Thaw() error { return syscall.Kill(m.Pid(), syscall.SIGCONT) }

// stop kills every member (Patroni's process group, then the postmaster
// and its children, which left the group with setsid), checks nothing is
// left running and removes the directory.
func (c *pgCluster) stop(t *testing.T) {
	if t.Failed() {
		for _, m := range c.Members {
			t.Logf("--- last lines of %s ---\n%s", m.LogPath, tail(m.LogPath, 40))
		}
	}
	var wg sync.WaitGroup
	for _, m := range c.Members {
		wg.Go(func() { m.kill(t) })
	}
	wg.Wait()
	if left := leftovers(c.Dir); len(left) > 0 {
		t.Errorf("processes left running: %v", left)
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		t.Errorf("removing %s: %v", c.Dir, err)
	}
}

func (m *pgMember) kill(t *testing.T) {
	if m.cmd != nil {
		_ = syscall.Kill(-m.Pid(), syscall.SIGKILL)
		<-m.done
	}
	pm := postmasterPid(m.DataDir)
	if pm == 0 {
		return
	}
	children := childrenOf(pm)
	// SIGQUIT is PostgreSQL's immediate shutdown: the postmaster stops its
	// children and removes its shared memory before exiting.
	_ = syscall.Kill(pm, syscall.SIGQUIT)
	if err := poll.Wait(10*time.Second, func() error {
		if alive(pm) {
			return errors.New("postmaster still running")
		}
		return nil
	}); err != nil {
		t.Logf("%s: postmaster %d ignored SIGQUIT; killing it", m.Name, pm)
		_ = syscall.Kill(pm, syscall.SIGKILL)
	}
	for _, pid := range children {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// postmasterPid reads PGDATA/postmaster.pid, and returns the pid only if
// that process is a postgres running on dataDir (never a recycled pid).
func postmasterPid(dataDir string) int {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 || !alive(pid) {
		return 0
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || !bytes.Contains(cmdline, []byte(dataDir)) {
		return 0
	}
	return pid
}

// childrenOf lists the live processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _ := procStat(p); ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

// procStat returns a process's parent pid and state letter.
func procStat(pid int) (ppid int, state byte) {
	st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0
	}
	i := bytes.LastIndexByte(st, ')')
	if i < 0 || i+2 >= len(st) {
		return 0, 0
	}
	f := strings.Fields(string(st[i+2:]))
	if len(f) < 2 {
		return 0, 0
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0][0]
}

// alive reports whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	_, state := procStat(pid)
	return state != 0 && state != 'Z' && state != 'X'
}

// leftovers lists live processes whose command line mentions dir.
func leftovers(dir string) []int {
	var pids []int
	needle := []byte(filepath.Clean(dir) + "/")
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, needle) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Member returns the member named name.
func (c *pgCluster) Member(t *testing.T, name string) *pgMember {
	t.Helper()
	for _, m := range c.Members {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no member %s", name)
	return nil
}

// Targets are the members as the engine sees them: pods in a namespace.
func (c *pgCluster) Targets() []engine.Target {
	var ts []engine.Target
	for _, m := range c.Members {
		ts = append(ts, target(m.Name))
	}
	return ts
}

func target(pod string) engine.Target {
	return engine.Target{Member: pod, Namespace: testNamespace, Pod: pod, Port: restPort}
}

// Dial maps (namespace, pod, port) to the member's loopback address; it
// refuses anything else, so an engine that dialled an advertised URL or
// another port would fail.
func (c *pgCluster) Dial(ctx context.Context, namespace, pod string, port int) (net.Conn, error) {
	if namespace != testNamespace || port != restPort {
		return nil, fmt.Errorf("unexpected dial to %s/%s:%d", namespace, pod, port)
	}
	for _, m := range c.Members {
		if m.Name == pod {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", net.JoinHostPort(m.Addr, strconv.Itoa(restPort)))
		}
	}
	return nil, fmt.Errorf("no pod %s/%s", namespace, pod)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randInt(n int) int {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		panic(err)
	}
	return int(v.Int64())
}
