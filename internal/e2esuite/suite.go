// Package e2esuite is the harness of the end-to-end packages that drive
// the built kubectl-hactl against a sandbox: it builds the plugin (and the
// sandbox command) through the Go build cache, so that packages and runs
// share one link, starts a sandbox for a test binary (Main) or for one
// test (StartTest), runs commands through the real kubectl (or the plugin
// binary itself, so that a signal reaches it), and reads members, the
// ledger and a sentinel key back on their own. For the adversarial suites
// (etcd's and Patroni's) it also reads the API server's audit log and
// checks the lock discipline from it (audit.go), runs a round's
// kubectl-hactl processes side by side and reads their progress lines
// (procs.go), and seeds and records a run of rounds (rounds.go). It is
// imported by tests only.
package e2esuite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine/registry"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/agent"
	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/internal/portforward"
	"github.com/hactl-dev/hactl/internal/testbins"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox"
)

// SentinelKey is the key PutSentinel writes and AssertSentinel reads.
const SentinelKey = "/hactl-e2e/sentinel"

// EnvSkip, when set to anything, makes Main run the tests without a
// sandbox and StartTest skip its test, as -short does.
const EnvSkip = "HACTL_SKIP_E2E"

// Plugin, Capture and SandboxCommand are the commands Build builds
// (cmd/NAME).
const (
	Plugin         = "kubectl-hactl"
	Capture        = "hactl-capture"
	SandboxCommand = "hactl-sandbox"
)

// StartTimeout bounds starting a sandbox unless Options.Timeout is set.
const StartTimeout = 6 * time.Minute

// Suite is one sandbox a test binary's tests (or one test) share.
type Suite struct {
	SB   *sandbox.Sandbox
	KC   kubernetes.Interface
	Dial engine.DialFunc
	// Bin is the directory holding kubectl-hactl (first on PATH) and, with
	// Options.SandboxBinary, hactl-sandbox.
	Bin     string
	Kubectl string
	// Namespace is the scenarios' namespace (Options.Namespace, else the
	// sandbox's default).
	Namespace string
	// AuditLog is the API server's audit log (JSON, one event a line)
	// with Options.AuditPolicy; "" without.
	AuditLog string
	tmp      string
}

// Options configure Start.
type Options struct {
	// Namespace for the scenarios' clusters (default: the sandbox's).
	Namespace string
	Scenarios []string
	// APIServerArgs are appended to kube-apiserver's flags.
	APIServerArgs []string
	// Agent is the kubectl-hactl binary agent pods (restore, capture)
	// run, with the hactl-capture capture pods run beside it; empty: the
	// ones built for the suite.
	Agent string
	// SandboxBinary runs the sandbox's supervisor as the built
	// hactl-sandbox command (`hactl-sandbox serve`), as a user's sandbox
	// runs. Otherwise the test binary is the supervisor, and its TestMain
	// must serve it (Main and MainWithoutSuite do).
	SandboxBinary bool
	// Timeout bounds starting the sandbox (default StartTimeout).
	Timeout time.Duration
	// AuditPolicy, when set, is the audit policy (YAML; AuditPolicy
	// builds the adversarial suites') under which the API server writes
	// every event to Suite.AuditLog, as it happens (blocking mode).
	AuditPolicy string
}

// serving is set once the test binary serves the sandbox's supervisor
// when asked (Main, MainWithoutSuite): only then may it be the supervisor.
var serving bool

func serveIfAsked() {
	sandbox.ServeIfAsked()
	serving = true
}

func skipped() bool { return testing.Short() || os.Getenv(EnvSkip) != "" }

// Main is the TestMain of a package with one suite: it serves the
// sandbox's supervisor when asked to (the sandbox runs `<test binary>
// serve --dir DIR`); with -short it runs the tests without a sandbox
// (*suite stays nil); otherwise it asks options for the suite's options
// (and what to clean up after), starts the suite into *suite, runs the
// tests and stops it.
//
// With HACTL_SKIP_E2E set it runs the tests without a sandbox, as with
// -short.
func Main(m *testing.M, suite **Suite, options func() (Options, func(), error)) {
	serveIfAsked()
	flag.Parse()
	if skipped() {
		os.Exit(m.Run())
	}
	os.Exit(run(m, suite, options))
}

// MainWithoutSuite is the TestMain of a package whose tests start their
// own suites (StartTest): it serves the sandbox's supervisor when asked
// to and runs the tests.
func MainWithoutSuite(m *testing.M) {
	serveIfAsked()
	os.Exit(m.Run())
}

func run(m *testing.M, suite **Suite, options func() (Options, func(), error)) int {
	o, cleanup, err := options()
	if cleanup != nil {
		defer cleanup()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := Start(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*suite = s
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2esuite: stopping the sandbox:", err)
		code = max(code, 1)
	}
	return code
}

// StartTest starts a suite for one test or benchmark and stops it when t
// ends; with -short or HACTL_SKIP_E2E it skips t instead.
func StartTest(t testing.TB, o Options) *Suite {
	t.Helper()
	if skipped() {
		t.Skip("end-to-end test (the sandbox) skipped with -short or " + EnvSkip)
	}
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping the sandbox: %v", err)
		}
	})
	return s
}

// Start builds kubectl-hactl (and hactl-sandbox with o.SandboxBinary) and
// starts a sandbox with the scenarios whose agent pods run that
// kubectl-hactl. Stop ends both.
func Start(o Options) (*Suite, error) {
	if !o.SandboxBinary && !serving {
		return nil, errors.New("e2esuite: the test binary does not serve the sandbox's supervisor: " +
			"call Main or MainWithoutSuite from TestMain, or set Options.SandboxBinary")
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = StartTimeout
	}
	tmp, err := os.MkdirTemp("", "hactl-e2e-")
	if err != nil {
		return nil, err
	}
	s := &Suite{tmp: tmp, Bin: filepath.Join(tmp, "bin")}
	fail := func(err error) (*Suite, error) {
		os.RemoveAll(tmp)
		return nil, err
	}
	apiServerArgs := o.APIServerArgs
	if o.AuditPolicy != "" {
		policy := filepath.Join(tmp, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(o.AuditPolicy), 0o644); err != nil {
			return fail(err)
		}
		s.AuditLog = filepath.Join(tmp, "audit.log")
		apiServerArgs = append(slices.Clone(apiServerArgs), "--audit-policy-file="+policy, "--audit-log-path="+s.AuditLog,
			"--audit-log-format=json", "--audit-log-mode=blocking", "--audit-log-maxsize=0")
	}
	// The sandbox's capture pods run the hactl-capture beside the agent.
	cmds := []string{Plugin, Capture}
	if o.SandboxBinary {
		cmds = append(cmds, SandboxCommand)
	}
	if err := Build(s.Bin, cmds...); err != nil {
		return fail(err)
	}
	binDir, err := testbins.Dir()
	if err != nil {
		return fail(fmt.Errorf("test binaries: %w", err))
	}
	agent := o.Agent
	if agent == "" {
		agent = filepath.Join(s.Bin, Plugin)
	}
	so := sandbox.Options{Dir: filepath.Join(tmp, "sbx"), BinDir: binDir, Namespace: o.Namespace,
		Agent: agent, Scenarios: o.Scenarios, APIServerArgs: apiServerArgs,
		Progress: os.Stderr, Timeout: timeout}
	if o.SandboxBinary {
		so.Executable = filepath.Join(s.Bin, SandboxCommand)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	begin := time.Now()
	s.SB, err = sandbox.Start(ctx, so)
	if err != nil {
		return fail(fmt.Errorf("starting the sandbox: %w", err))
	}
	fmt.Fprintf(os.Stderr, "e2esuite: sandbox with %d clusters up in %s\n", len(s.SB.State.Clusters), time.Since(begin).Round(time.Second))
	s.Namespace = s.SB.State.Namespace
	cfg, err := s.SB.RESTConfig()
	if err == nil {
		s.KC, err = kubernetes.NewForConfig(cfg)
	}
	if err == nil {
		s.Dial, err = portforward.NewDialer(cfg)
	}
	if err != nil {
		_ = s.Stop()
		return nil, err
	}
	s.Kubectl = filepath.Join(binDir, "kubectl")
	return s, nil
}

// Stop stops the sandbox and removes the suite's files.
func (s *Suite) Stop() error {
	var err error
	if s.SB != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		err = sandbox.Down(ctx, s.SB.Dir, sandbox.DownOptions{})
	}
	os.RemoveAll(s.tmp)
	return err
}

// Dir is a directory for the suite's own files, removed by Stop.
func (s *Suite) Dir() string { return s.tmp }

// BuildPlugin builds cmd/kubectl-hactl into dir.
func BuildPlugin(dir string) error { return Build(dir, Plugin) }

// Build builds each of cmds (cmd/NAME of this module) into dir/NAME.
//
// It builds with `go run -exec cp ./cmd/NAME dir/NAME`: go run keeps the
// executables it links in the Go build cache, and -exec runs cp on the
// executable instead of the program itself. So the first package (or
// run) to build a version of the sources links it, and every later one,
// in any package, copies the cached executable. go run links without
// DWARF debug information; nothing in the tests reads it.
func Build(dir string, cmds ...string) error {
	root, err := testbins.RepoRoot()
	if err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range cmds {
		out := filepath.Join(dir, c)
		args := []string{"run", "-exec", "cp"}
		if c == Capture {
			// What the agent image ships: the s3:// and file:// drivers.
			args = append(args, "-tags", agent.CaptureBuildTags)
		}
		cmd := exec.Command("go", append(args, "./cmd/"+c, out)...)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", c, err, b)
		}
		if fi, err := os.Stat(out); err != nil || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("building %s: no executable at %s (%v)", c, out, err)
		}
	}
	return nil
}

// PluginDir builds kubectl-hactl into a directory of t's own and returns
// the directory.
func PluginDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := BuildPlugin(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Result is one finished command.
type Result struct {
	Stdout, Stderr string
	Code           int
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout ---\n%s--- stderr ---\n%s", r.Code, r.Stdout, r.Stderr)
}

// Env is the environment of every command: kubectl-hactl first on PATH,
// the sandbox's kubeconfig.
func (s *Suite) Env() []string {
	return append(os.Environ(), "PATH="+s.Bin+string(os.PathListSeparator)+filepath.Dir(s.Kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+s.SB.Kubeconfig, "NO_COLOR=1")
}

// Hactl runs `kubectl hactl ARGS -n namespace` through the real kubectl.
func (s *Suite) Hactl(t testing.TB, args ...string) Result {
	t.Helper()
	return s.Run(t, 8*time.Minute, append(append([]string{"hactl"}, args...), "-n", s.Namespace)...)
}

// Run runs the real kubectl with ARGS as given (in Env), ending it after
// timeout.
func (s *Suite) Run(t testing.TB, timeout time.Duration, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Kubectl, args...)
	cmd.Env = s.Env()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	default:
		t.Fatalf("running kubectl %v: %v", args, err)
	}
	return r
}

// ReceiptsDoc is the -o json document of replace, reseed and restore.
type ReceiptsDoc struct {
	Result   string          `json:"result"`
	EntryID  string          `json:"entryID"`
	Receipts []model.Receipt `json:"receipts"`
}

// Receipts parses the -o json document of an action.
func Receipts(t testing.TB, r Result) ReceiptsDoc {
	t.Helper()
	var doc ReceiptsDoc
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("receipts document: %v\n%s", err, r)
	}
	return doc
}

// Observer observes the sandbox's clusters as status does.
func (s *Suite) Observer() *actions.Observer {
	return &actions.Observer{Engines: registry.Engines(), Client: s.KC, Dial: s.Dial, ProbeTimeout: 3 * time.Second}
}

// FailoverReady says why the cluster is not failover-ready, as status
// says it (nil: it is).
func (s *Suite) FailoverReady(cluster string) error {
	res, _, err := s.Observer().Observe(context.Background(), s.Namespace, cluster)
	if err != nil {
		return err
	}
	if !res.Verdict.FailoverReady {
		return fmt.Errorf("not failover-ready: %+v", res.Verdict.Reasons)
	}
	return nil
}

// WaitFailoverReady polls until the cluster is failover-ready
// (FailoverReady).
func (s *Suite) WaitFailoverReady(t testing.TB, cluster string) {
	t.Helper()
	poll.Until(t, 3*time.Minute, cluster+" to be failover-ready", func() error { return s.FailoverReady(cluster) }, poll.Every(time.Second))
}

// Roles returns the leader and the followers of a cluster.
func (s *Suite) Roles(t testing.TB, cluster string) (leader string, followers []string) {
	t.Helper()
	res, _, err := s.Observer().Observe(context.Background(), s.Namespace, cluster)
	if err != nil {
		t.Fatal(err)
	}
	leader = res.Analysis.LeaderMember
	for _, m := range res.Observation.Members {
		if m.Name != leader {
			followers = append(followers, m.Name)
		}
	}
	if leader == "" || len(followers) == 0 {
		t.Fatalf("%s: leader %q, followers %v", cluster, leader, followers)
	}
	return leader, followers
}

// OpenMember opens a client to one member's pod alone.
func (s *Suite) OpenMember(ctx context.Context, pod string, timeout time.Duration) (*etcdengine.Client, error) {
	return etcdengine.Open(ctx, engine.Target{Member: pod, Namespace: s.Namespace, Pod: pod, Port: 2379},
		engine.ProbeOptions{Dial: s.Dial, Timeout: timeout})
}

// Member is a client to one member's pod, closed when the test ends.
func (s *Suite) Member(t testing.TB, pod string) *etcdengine.Client {
	t.Helper()
	c, err := s.OpenMember(context.Background(), pod, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// PutSentinel writes a fresh sentinel value through the cluster's member 0.
func (s *Suite) PutSentinel(t testing.TB, cluster string) string {
	t.Helper()
	v := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	var err error
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = s.Member(t, cluster+"-0").Put(ctx, SentinelKey, v)
		cancel()
		if err == nil {
			return v
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("writing the sentinel: %v", err)
	return ""
}

// AssertSentinel reads the sentinel from every member of a three-member
// cluster on its own (a serializable read of that member's store).
func (s *Suite) AssertSentinel(t testing.TB, cluster, want string) {
	t.Helper()
	for i := 0; i < 3; i++ {
		pod := fmt.Sprintf("%s-%d", cluster, i)
		err := poll.Wait(time.Minute, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := s.OpenMember(ctx, pod, 5*time.Second)
			if err != nil {
				return err
			}
			got, found, err := c.Get(ctx, SentinelKey)
			_ = c.Close()
			if err != nil || !found || got != want {
				return fmt.Errorf("sentinel %q (found %v, err %v), want %q", got, found, err, want)
			}
			return nil
		}, poll.Every(500*time.Millisecond))
		if err != nil {
			t.Errorf("%s: %v", pod, err)
		}
	}
}

// PodUID is the UID of a pod of the suite's namespace.
func (s *Suite) PodUID(t testing.TB, pod string) string {
	t.Helper()
	p, err := s.KC.CoreV1().Pods(s.Namespace).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(p.UID)
}

// Ledger reads a cluster's ledger.
func (s *Suite) Ledger(t testing.TB, cluster string) actions.LedgerContents {
	t.Helper()
	l, err := actions.ReadLedger(context.Background(), s.KC, s.Namespace, cluster)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// SetupStore configures a cluster's seed store as an operator would: a
// Secret with the sandbox S3 server's credentials and the StatefulSet's
// annotations naming the bucket (prefix: the cluster's name) and Secret.
func (s *Suite) SetupStore(t testing.TB, cluster string) {
	t.Helper()
	ctx := context.Background()
	s3, err := s.SB.S3()
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "seed-store", Namespace: s.Namespace},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3.AccessKey, "AWS_SECRET_ACCESS_KEY": s3.SecretKey, "AWS_REGION": s3.Region}}
	if _, err := s.KC.CoreV1().Secrets(s.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:"seed-store"}}}`, artifact.AnnotationStore,
		strings.Replace(s3.URL(), "s3://"+s3.Bucket, "s3://"+s3.Bucket+"/"+cluster, 1), artifact.AnnotationStoreSecret)
	if _, err := s.KC.AppsV1().StatefulSets(s.Namespace).Patch(ctx, cluster, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Started is a running kubectl-hactl whose stdout is read line by line.
type Started struct {
	Cmd   *exec.Cmd
	Lines chan string
	Done  chan struct{}
	// All is stderr (and, once Done, nothing more is written to it).
	All  *bytes.Buffer
	Code int
	out  bytes.Buffer
}

// Stdout is everything the process printed on stdout, once Done.
func (p *Started) Stdout() string { return p.out.String() }

// Start runs the plugin binary itself (so that a signal reaches it) with
// ARGS -n namespace, streaming stdout; extraEnv is added to its
// environment.
func (s *Suite) Start(t testing.TB, extraEnv []string, args ...string) *Started {
	t.Helper()
	cmd := exec.Command(filepath.Join(s.Bin, "kubectl-hactl"), append(args, "-n", s.Namespace)...)
	cmd.Env = append(s.Env(), extraEnv...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	all := &bytes.Buffer{}
	cmd.Stderr = all
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Started{Cmd: cmd, Lines: make(chan string, 4096), Done: make(chan struct{}), All: all}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			p.out.WriteString(sc.Text() + "\n")
			select {
			case p.Lines <- sc.Text():
			default: // nobody reads: the line stays in Stdout
			}
		}
		close(p.Lines)
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.Code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.Code = -int(ws.Signal())
			}
		}
		close(p.Done)
	}()
	return p
}

// KillAt reads p's progress lines until one contains marker, then
// SIGKILLs p and waits for it to end. It reports whether it killed p (false:
// p ended without printing marker); it fails the test after 5 minutes.
func (p *Started) KillAt(t testing.TB, marker string) bool {
	t.Helper()
	timeout := time.After(5 * time.Minute)
	defer func() { <-p.Done }()
	for {
		select {
		case line, ok := <-p.Lines:
			if !ok {
				return false
			}
			if strings.Contains(line, marker) {
				if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				return true
			}
		case <-timeout:
			_ = p.Cmd.Process.Kill()
			<-p.Done // stderr is complete (and no longer written) once it ended
			t.Fatalf("no %q within 5m:\n%s", marker, p.All)
		}
	}
}
