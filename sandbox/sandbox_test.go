package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/internal/testbins"
	"github.com/hactl-dev/hactl/sandbox/fault"
	"github.com/hactl-dev/hactl/sandbox/internal/reap"
	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// TestMain lets the test binary be the sandbox's supervisor: Start runs
// `<test binary> serve --dir DIR`.
func TestMain(m *testing.M) {
	ServeIfAsked()
	os.Exit(m.Run())
}

func binDir(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("the sandbox is a tier-4 test (skipped with -short)")
	}
	d, err := testbins.Dir()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// sandboxDir is a short directory for a sandbox, removed at the end.
func sandboxDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "hactl-sbx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// assertNothingLeft fails if any process mentions dir.
func assertNothingLeft(t *testing.T, dir string) {
	t.Helper()
	poll.Until(t, 10*time.Second, "no process left behind", func() error {
		if left := reap.Mentioning(dir); len(left) > 0 {
			var s []string
			for _, p := range left {
				s = append(s, fmt.Sprintf("%d %q", p.Pid, reap.Cmdline(p.Pid)))
			}
			return errors.New(strings.Join(s, "; "))
		}
		return nil
	})
}

func start(t *testing.T, dir string, scenarios ...string) *Sandbox {
	t.Helper()
	return startWith(t, Options{Dir: dir, Scenarios: scenarios})
}

// portForward runs the real `kubectl port-forward` to port of pod ns/name
// until the test ends, and returns the local address it listens on once
// kubectl says it forwards.
func portForward(t *testing.T, sb *Sandbox, ns, name string, port int) string {
	t.Helper()
	local := freePort(t)
	pf := exec.Command(filepath.Join(binDir(t), "kubectl"), "--kubeconfig", sb.Kubeconfig, "-n", ns,
		"port-forward", "pod/"+name, fmt.Sprintf("%d:%d", local, port))
	out, err := pf.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	pf.Stderr = pf.Stdout
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pf.Process.Kill(); _ = pf.Wait() })
	ready := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Forwarding from") {
				select {
				case ready <- struct{}{}:
				default:
				}
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("kubectl port-forward to %s/%s:%d did not start", ns, name, port)
	}
	return fmt.Sprintf("127.0.0.1:%d", local)
}

// startWith starts a sandbox with o (BinDir and Progress filled in) and
// downs it in t.Cleanup.
func startWith(t *testing.T, o Options) *Sandbox {
	t.Helper()
	dir := o.Dir
	o.BinDir, o.Progress = binDir(t), testWriter{t}
	begin := time.Now()
	sb, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("warm up with %d scenarios: %s (supervisor ready after %s)", len(sb.State.Clusters), time.Since(begin).Round(100*time.Millisecond),
		time.Duration(sb.State.ReadyAfter).Round(100*time.Millisecond))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := Down(ctx, dir, DownOptions{}); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	return sb
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func kube(t *testing.T, sb *Sandbox) kubernetes.Interface {
	t.Helper()
	cfg, err := sb.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// status asks one member, dialled alone, for its status.
func status(ctx context.Context, url string) (*clientv3.StatusResponse, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return c.Status(ctx, url)
}

func podReady(kc kubernetes.Interface, ns, name string) error {
	pod, err := kc.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !scenario.PodReady(pod) {
		return fmt.Errorf("pod %s not ready: %+v", name, pod.Status.ContainerStatuses)
	}
	return nil
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestSandbox starts the demo set, checks each acceptance criterion
// against it, then downs it and checks nothing is left.
func TestSandbox(t *testing.T) {
	dir := sandboxDir(t)
	// The demo's scenarios, kubeadm's stacked etcd, the cozystack
	// etcd-operator's clusters and Bitnami's chart with authentication in
	// one sandbox.
	// etcd-druid's clusters too, and Bitnami's chart with client TLS.
	sb := start(t, dir, append(append(append(slices.Clone(scenario.Demo), "kubeadm", bitnamiScenario, bitnamiTLSScenario), cozystackScenarios...), druidScenarios...)...)
	kc := kube(t, sb)
	ctx := context.Background()
	ns := sb.State.Namespace
	if len(sb.State.Clusters) != len(scenario.Demo)+3+len(cozystackScenarios)+len(druidScenarios) {
		t.Fatalf("clusters %+v", sb.State.Clusters)
	}
	t.Run("kubeadm's stacked etcd", func(t *testing.T) { kubeadmStackedEtcd(t, sb, dir) })
	t.Run("cozystack etcd-operator", func(t *testing.T) { cozystackOperator(t, sb) })
	t.Run("druid etcd-druid", func(t *testing.T) { druidOperator(t, sb) })
	t.Run("bitnami chart with authentication", func(t *testing.T) { bitnamiAuth(t, sb) })
	t.Run("bitnami chart with client TLS", func(t *testing.T) { bitnamiTLS(t, sb) })

	t.Run("kubectl port-forward reaches the member's real etcd", func(t *testing.T) {
		bin := binDir(t)
		m, err := sb.Member(ctx, "healthy-1")
		if err != nil {
			t.Fatal(err)
		}
		direct, err := status(ctx, m.ClientURL)
		if err != nil {
			t.Fatal(err)
		}
		ep := portForward(t, sb, ns, "healthy-1", 2379)
		b, err := exec.Command(filepath.Join(bin, "etcdctl"), "--endpoints="+ep, "endpoint", "status", "-w", "json").Output()
		if err != nil {
			t.Fatalf("etcdctl endpoint status through the port-forward: %v", err)
		}
		var eps []struct {
			Status struct {
				Header struct {
					MemberID uint64 `json:"member_id"`
				} `json:"header"`
			} `json:"Status"`
		}
		if err := json.Unmarshal(b, &eps); err != nil || len(eps) != 1 {
			t.Fatalf("etcdctl output %s: %v", b, err)
		}
		if got, want := eps[0].Status.Header.MemberID, direct.Header.MemberId; got != want || got == 0 {
			t.Fatalf("through the port-forward: member %x, the member itself says %x", got, want)
		}
	})

	t.Run("seed-rebootstrap reproduces seed 000", func(t *testing.T) {
		var ids [3]uint64
		var members [3]uint64
		for i := range 3 {
			m, err := sb.Member(ctx, scenario.MemberName("seed-rebootstrap", i))
			if err != nil {
				t.Fatal(err)
			}
			st, err := status(ctx, m.ClientURL)
			if err != nil {
				t.Fatal(err)
			}
			ids[i], members[i] = st.Header.ClusterId, st.Header.MemberId
		}
		if ids[1] != ids[2] || ids[0] == ids[1] {
			t.Fatalf("cluster IDs %x: want member 0 alone in its own cluster", ids)
		}
		if err := podReady(kc, ns, "seed-rebootstrap-0"); err != nil {
			t.Fatal(err)
		}
		// The survivors still list the seed under the very member ID it
		// re-bootstrapped with: nothing about it looks foreign.
		m1, _ := sb.Member(ctx, "seed-rebootstrap-1")
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{m1.ClientURL}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		list, err := c.MemberList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, mm := range list.Members {
			found = found || mm.ID == members[0]
		}
		if !found {
			t.Fatalf("the survivors' member list lacks the seed's ID %x", members[0])
		}
	})

	t.Run("crashloop member restarts and backs off", func(t *testing.T) {
		poll.Until(t, 30*time.Second, "crashloop-2 in CrashLoopBackOff", func() error {
			pod, err := kc.CoreV1().Pods(ns).Get(ctx, "crashloop-2", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cs := pod.Status.ContainerStatuses[0]
			if scenario.PodReady(pod) || cs.RestartCount < 2 || cs.LastTerminationState.Terminated == nil ||
				cs.LastTerminationState.Terminated.ExitCode == 0 {
				return fmt.Errorf("status %+v", cs)
			}
			if cs.State.Waiting == nil && cs.State.Running == nil {
				return fmt.Errorf("state %+v", cs.State)
			}
			return nil
		})
	})

	t.Run("lagging learner answers far behind", func(t *testing.T) {
		l, err := sb.Member(ctx, "lagging-learner-3")
		if err != nil {
			t.Fatal(err)
		}
		v, _ := sb.Member(ctx, "lagging-learner-0")
		ls, err := status(ctx, l.ClientURL)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := status(ctx, v.ClientURL)
		if err != nil {
			t.Fatal(err)
		}
		if !ls.IsLearner || vs.RaftAppliedIndex < ls.RaftAppliedIndex+1000 {
			t.Fatalf("learner %v applied %d, voter applied %d", ls.IsLearner, ls.RaftAppliedIndex, vs.RaftAppliedIndex)
		}
	})

	t.Run("faults: pause, resume, stop, kill", func(t *testing.T) {
		const pod = "healthy-2"
		if err := sb.Break(ctx, pod, fault.Pause); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 30*time.Second, "paused member not ready", func() error {
			if podReady(kc, ns, pod) == nil {
				return errors.New("still ready")
			}
			return nil
		})
		if err := sb.Break(ctx, pod, fault.Resume); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 30*time.Second, "resumed member ready", func() error { return podReady(kc, ns, pod) })

		before, _ := kc.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		m, _ := sb.Member(ctx, pod)
		var procs []reap.Stat
		for _, pid := range m.Pids {
			procs = append(procs, reap.Stat{Pid: pid, Start: startOf(pid)})
		}
		if len(procs) == 0 {
			t.Fatalf("member %+v has no process", m)
		}
		if err := sb.Break(ctx, pod, fault.Stop); err != nil {
			t.Fatal(err)
		}
		for _, p := range procs {
			if reap.Same(p) {
				t.Fatalf("pid %d survived stop", p.Pid)
			}
		}
		poll.Until(t, 10*time.Second, "stopped member not ready", func() error {
			if podReady(kc, ns, pod) == nil {
				return errors.New("still ready")
			}
			return nil
		})
		if err := sb.Break(ctx, pod, fault.Resume); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 30*time.Second, "restarted member ready", func() error { return podReady(kc, ns, pod) })

		if err := sb.Break(ctx, pod, fault.Kill); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 30*time.Second, "killed member restarted and ready", func() error {
			p, err := kc.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Status.ContainerStatuses[0].RestartCount < before.Status.ContainerStatuses[0].RestartCount+2 {
				return fmt.Errorf("restart count %d", p.Status.ContainerStatuses[0].RestartCount)
			}
			return podReady(kc, ns, pod)
		})
	})

	t.Run("fill-quota raises NOSPACE", func(t *testing.T) {
		if err := sb.Break(ctx, "healthy-self-registering-0", fault.FillQuota); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("deleting a pod stops its process; the recreated pod gets a new one", func(t *testing.T) {
		const pod = "healthy-0"
		old, err := sb.Member(ctx, pod)
		if err != nil || len(old.Pids) != 1 {
			t.Fatalf("member %+v: %v", old, err)
		}
		oldStart := startOf(old.Pids[0])
		if err := kc.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 30*time.Second, "old process gone", func() error {
			if reap.Same(reap.Stat{Pid: old.Pids[0], Start: oldStart}) {
				return fmt.Errorf("pid %d alive", old.Pids[0])
			}
			return nil
		})
		poll.Until(t, 60*time.Second, "recreated pod ready with a new process", func() error {
			m, err := sb.Member(ctx, pod)
			if err != nil {
				return err
			}
			if m.UID == old.UID || len(m.Pids) != 1 || m.Pids[0] == old.Pids[0] {
				return fmt.Errorf("member %+v", m)
			}
			return podReady(kc, ns, pod)
		})
	})

	t.Run("deleting a PVC removes its directory; the new PVC starts empty", func(t *testing.T) {
		const pod, claim = "no-pdb-1", "data-no-pdb-1"
		m, err := sb.Member(ctx, pod)
		if err != nil || len(m.DataDirs) != 1 {
			t.Fatalf("member %+v: %v", m, err)
		}
		oldDir := m.DataDirs[0]
		if _, err := os.Stat(filepath.Join(oldDir, "default.etcd", "member")); err != nil {
			t.Fatalf("no data in %s: %v", oldDir, err)
		}
		if err := kc.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := kc.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 60*time.Second, "old volume directory removed", func() error {
			if _, err := os.Stat(oldDir); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%s still there (%v)", oldDir, err)
			}
			return nil
		})
		poll.Until(t, 60*time.Second, "new member on a new, fresh volume", func() error {
			nm, err := sb.Member(ctx, pod)
			if err != nil {
				return err
			}
			if nm.UID == m.UID || len(nm.DataDirs) != 1 || nm.DataDirs[0] == oldDir {
				return fmt.Errorf("member %+v", nm)
			}
			return nil
		})
	})

	t.Run("versitygw serves the bucket with the generated credentials", func(t *testing.T) {
		s3, err := sb.S3()
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(sb.State.S3File)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("credentials file %v %v", fi.Mode(), err)
		}
		resp, err := s3.do(ctx, http.MethodPut, "/"+s3.Bucket+"/probe", []byte("hello"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("PUT object: %s", resp.Status)
		}
		resp, err = s3.do(ctx, http.MethodGet, "/"+s3.Bucket+"/probe", nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "hello" {
			t.Fatalf("GET object: %s %q", resp.Status, b)
		}
		bad := s3
		bad.SecretKey = "wrong"
		resp, err = bad.do(ctx, http.MethodGet, "/"+s3.Bucket+"/probe", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("wrong credentials got %s", resp.Status)
		}
	})

	t.Run("agent pods run once, with the sandbox's kubectl-hactl, and reach its S3", func(t *testing.T) {
		if sb.State.Agent == "" {
			t.Fatalf("the sandbox has no agent: %s", sb.State.AgentError)
		}
		if fi, err := os.Stat(sb.State.Agent); err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("agent %s: %v", sb.State.Agent, err)
		}
		s3, err := sb.S3()
		if err != nil {
			t.Fatal(err)
		}
		_, err = kc.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "agent-store"},
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3.AccessKey, "AWS_SECRET_ACCESS_KEY": s3.SecretKey},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		agentPod := func(name string, args ...string) *corev1.Pod {
			return &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"hactl.dev/engine": "etcd"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Volumes:       []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
					Containers: []corev1.Container{{
						Name: "restore", Image: "ghcr.io/hactl-dev/hactl:v0.1.0",
						Command: []string{"kubectl-hactl"}, Args: args,
						EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: "agent-store"}}}},
						VolumeMounts:             []corev1.VolumeMount{{Name: "data", MountPath: "/var/run/etcd"}},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
				},
			}
		}
		ended := func(name string) *corev1.Pod {
			var pod *corev1.Pod
			poll.Until(t, 60*time.Second, name+" ended", func() error {
				p, err := kc.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				pod = p
				if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
					return fmt.Errorf("phase %s: %+v", p.Status.Phase, p.Status.ContainerStatuses)
				}
				return nil
			})
			return pod
		}
		if _, err := kc.CoreV1().Pods(ns).Create(ctx, agentPod("agent-version", "version"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A generation the store does not hold: the agent reaches
		// versitygw (at 127.0.0.1, as the URL says) with the Secret's
		// credentials, finds no manifest and refuses (exit 5).
		restore := agentPod("agent-restore", "agent", "restore", "--store="+s3.URL(), "--generation=g-missing",
			"--data-dir=/var/run/etcd/default.etcd", "--name=x-0", "--replace", "-o", "json")
		if _, err := kc.CoreV1().Pods(ns).Create(ctx, restore, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if p := ended("agent-version"); p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("kubectl-hactl version: %s %+v", p.Status.Phase, p.Status.ContainerStatuses)
		}
		p := ended("agent-restore")
		cs := p.Status.ContainerStatuses[0]
		if p.Status.Phase != corev1.PodFailed || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 5 ||
			!strings.Contains(cs.State.Terminated.Message, "no manifest") || cs.RestartCount != 0 {
			t.Fatalf("restore of a missing generation: %s %+v", p.Status.Phase, cs)
		}
	})

	t.Run("down leaves no process behind", func(t *testing.T) {
		if err := Down(ctx, dir, DownOptions{}); err != nil {
			t.Fatal(err)
		}
		assertNothingLeft(t, dir)
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s still exists: %v", dir, err)
		}
	})
}

// TestDownAfterSupervisorCrash kills the supervisor with SIGKILL (its
// members, control plane and kwok keep running, orphaned) and checks that
// Down still ends every one of them.
func TestDownAfterSupervisorCrash(t *testing.T) {
	dir := sandboxDir(t)
	// An agent given (rather than built, as in TestSandbox): a stand-in,
	// no pod here runs it.
	agent := filepath.Join(t.TempDir(), "kubectl-hactl")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sb := startWith(t, Options{Dir: dir, Scenarios: []string{"healthy"}, Agent: agent})
	if sb.State.Agent != agent || sb.State.AgentError != "" {
		t.Fatalf("agent %q (%s), want %s", sb.State.Agent, sb.State.AgentError, agent)
	}
	ms, err := sb.Members(context.Background())
	if err != nil || len(ms) != 3 {
		t.Fatalf("members %+v: %v", ms, err)
	}
	if err := syscall.Kill(sb.SupervisorPid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "supervisor dead", func() error {
		if alive(sb.SupervisorPid()) {
			return errors.New("alive")
		}
		return nil
	})
	t.Logf("%d processes of the sandbox outlived its supervisor's SIGKILL", len(reap.Mentioning(dir)))
	if _, err := Open(dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Open after the crash: %v", err)
	}
	// Without the supervisor's parent-death signal reaching them all
	// (wrapper scripts' children, say), something may survive: Down must
	// end whatever did.
	if err := Down(context.Background(), dir, DownOptions{}); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, dir)
}

func TestStartRefusesABadAgent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sandbox")
	_, err := Start(context.Background(), Options{Dir: dir, BinDir: dir, Agent: filepath.Join(t.TempDir(), "missing")})
	if err == nil || !strings.Contains(err.Error(), "--agent") {
		t.Fatalf("Start with a missing agent: %v", err)
	}
	t.Setenv(EnvAgent, t.TempDir())
	_, err = Start(context.Background(), Options{Dir: dir, BinDir: dir})
	if err == nil || !strings.Contains(err.Error(), "$"+EnvAgent) || !strings.Contains(err.Error(), "not an executable file") {
		t.Fatalf("Start with %s a directory: %v", EnvAgent, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the sandbox directory was created: %v", err)
	}
}

func TestStartRefusesAForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "precious"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{Dir: dir, BinDir: dir, Scenarios: []string{"healthy"}})
	if err == nil || !strings.Contains(err.Error(), "holds no sandbox") {
		t.Fatalf("Start on a foreign dir: %v", err)
	}
	if err := Down(context.Background(), dir, DownOptions{}); err == nil {
		t.Fatal("Down on a foreign dir did not refuse")
	}
	if _, err := os.Stat(filepath.Join(dir, "precious")); err != nil {
		t.Fatal("a foreign file was touched")
	}
}

func alive(pid int) bool {
	s, err := reap.ReadStat(pid)
	return err == nil && s.Alive()
}

func startOf(pid int) uint64 {
	s, err := reap.ReadStat(pid)
	if err != nil {
		return 0
	}
	return s.Start
}
