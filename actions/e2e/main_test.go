package e2e

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
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/portforward"
	"github.com/hactl-dev/hactl/internal/testbins"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox"
)

const (
	namespace      = "hactl-e2e"
	staticCluster  = "healthy"
	selfRegCluster = "healthy-self-registering"
	sentinelKey    = "/hactl-e2e/sentinel"
)

// suite is the one sandbox the package's tests share.
type suite struct {
	sb      *sandbox.Sandbox
	kc      kubernetes.Interface
	dial    engine.DialFunc
	bin     string // directory holding kubectl-hactl (first on PATH)
	kubectl string
}

var s *suite

// TestMain serves the sandbox's supervisor when asked to (the sandbox runs
// `<test binary> serve --dir DIR`), otherwise builds kubectl-hactl,
// starts one sandbox with a static-existing and a self-registering
// cluster, runs the tests and stops it.
func TestMain(m *testing.M) {
	sandbox.ServeIfAsked()
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "hactl-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bin")
	if err := buildPlugin(bin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir, err := testbins.Dir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test binaries:", err)
		return 1
	}
	dir := filepath.Join(tmp, "sbx")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	sb, err := sandbox.Start(ctx, sandbox.Options{Dir: dir, BinDir: binDir, Namespace: namespace, Agent: filepath.Join(bin, "kubectl-hactl"),
		Scenarios: []string{staticCluster, selfRegCluster}, Progress: os.Stderr, Timeout: 6 * time.Minute})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the sandbox:", err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := sandbox.Down(ctx, dir, sandbox.DownOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, "sandbox down:", err)
		}
	}()
	cfg, err := sb.RESTConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dial, err := portforward.NewDialer(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s = &suite{sb: sb, kc: kc, dial: dial, bin: bin, kubectl: filepath.Join(binDir, "kubectl")}
	return m.Run()
}

// buildPlugin builds cmd/kubectl-hactl into dir.
func buildPlugin(dir string) error {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-hactl"), "./cmd/kubectl-hactl")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building kubectl-hactl: %v\n%s", err, b)
	}
	return nil
}

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() || s == nil {
		t.Skip("end-to-end test (the sandbox) skipped with -short")
	}
}

// result is one finished command.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout ---\n%s--- stderr ---\n%s", r.code, r.stdout, r.stderr)
}

// env is the environment of every command: kubectl-hactl first on PATH,
// the sandbox's kubeconfig.
func (s *suite) env() []string {
	return append(os.Environ(), "PATH="+s.bin+string(os.PathListSeparator)+filepath.Dir(s.kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+s.sb.Kubeconfig, "NO_COLOR=1")
}

// hactl runs `kubectl hactl ARGS -n namespace` through the real kubectl.
func (s *suite) hactl(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.kubectl, append(append([]string{"hactl"}, args...), "-n", namespace)...)
	cmd.Env = s.env()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("running kubectl hactl %v: %v", args, err)
	}
	return r
}

// receipts parses the -o json document of replace/reseed.
func receipts(t *testing.T, r result) (doc struct {
	Result   string          `json:"result"`
	EntryID  string          `json:"entryID"`
	Receipts []model.Receipt `json:"receipts"`
}) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("receipts document: %v\n%s", err, r)
	}
	return doc
}

func (s *suite) observer() *actions.Observer {
	return &actions.Observer{Client: s.kc, Dial: s.dial, ProbeTimeout: 3 * time.Second}
}

// waitFailoverReady polls until the cluster is failover-ready, as status
// says it.
func (s *suite) waitFailoverReady(t *testing.T, cluster string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var last string
	for time.Now().Before(deadline) {
		res, _, err := s.observer().Observe(context.Background(), namespace, cluster)
		if err == nil && res.Verdict.FailoverReady {
			return
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("%+v", res.Verdict.Reasons)
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("%s not failover-ready within 3m: %s", cluster, last)
}

// roles returns the leader and the followers of a cluster.
func (s *suite) roles(t *testing.T, cluster string) (leader string, followers []string) {
	t.Helper()
	res, _, err := s.observer().Observe(context.Background(), namespace, cluster)
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

func (s *suite) member(t *testing.T, pod string) *etcdengine.Client {
	t.Helper()
	c, err := etcdengine.Open(context.Background(), engine.Target{Member: pod, Namespace: namespace, Pod: pod, Port: 2379},
		engine.ProbeOptions{Dial: s.dial, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// putSentinel writes a fresh sentinel value through one member.
func (s *suite) putSentinel(t *testing.T, cluster string) string {
	t.Helper()
	v := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	var err error
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = s.member(t, cluster+"-0").Put(ctx, sentinelKey, v)
		cancel()
		if err == nil {
			return v
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("writing the sentinel: %v", err)
	return ""
}

// assertSentinel reads the sentinel from every member on its own (a
// serializable read of that member's store).
func (s *suite) assertSentinel(t *testing.T, cluster, want string) {
	t.Helper()
	for i := 0; i < 3; i++ {
		pod := fmt.Sprintf("%s-%d", cluster, i)
		deadline := time.Now().Add(time.Minute)
		var got string
		var found bool
		var err error
		for time.Now().Before(deadline) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			c, oerr := etcdengine.Open(ctx, engine.Target{Member: pod, Namespace: namespace, Pod: pod, Port: 2379},
				engine.ProbeOptions{Dial: s.dial, Timeout: 5 * time.Second})
			if oerr == nil {
				got, found, err = c.Get(ctx, sentinelKey)
				_ = c.Close()
			} else {
				err = oerr
			}
			cancel()
			if err == nil && found && got == want {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil || !found || got != want {
			t.Errorf("%s: sentinel %q (found %v, err %v), want %q", pod, got, found, err, want)
		}
	}
}

func (s *suite) podUID(t *testing.T, pod string) string {
	t.Helper()
	p, err := s.kc.CoreV1().Pods(namespace).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(p.UID)
}

// ledger reads the cluster's ledger.
func (s *suite) ledger(t *testing.T, cluster string) actions.LedgerContents {
	t.Helper()
	l, err := actions.ReadLedger(context.Background(), s.kc, namespace, cluster)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// started is a running kubectl-hactl whose output is read line by line.
type started struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan struct{}
	all   *bytes.Buffer
	code  int
}

// start runs the plugin binary itself (so that a signal reaches it) with
// ARGS -n namespace, streaming stdout.
func (s *suite) start(t *testing.T, args ...string) *started {
	t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, "kubectl-hactl"), append(args, "-n", namespace, "--kubeconfig", s.sb.Kubeconfig)...)
	cmd.Env = s.env()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	all := &bytes.Buffer{}
	cmd.Stderr = all
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &started{cmd: cmd, lines: make(chan string, 1024), done: make(chan struct{}), all: all}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	return p
}

// killAt reads p's progress lines until one contains marker, then
// SIGKILLs p and waits for it to end. It reports whether it killed p (false:
// p ended without printing marker); it fails the test after 5 minutes.
func (p *started) killAt(t *testing.T, marker string) bool {
	t.Helper()
	timeout := time.After(5 * time.Minute)
	defer func() { <-p.done }()
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				return false
			}
			if strings.Contains(line, marker) {
				if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				return true
			}
		case <-timeout:
			_ = p.cmd.Process.Kill()
			t.Fatalf("no %q within 5m:\n%s", marker, p.all)
		}
	}
}
