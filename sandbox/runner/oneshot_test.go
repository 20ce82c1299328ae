package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/sandbox/controlplane"
	"github.com/hactl-dev/hactl/sandbox/fault"
	"github.com/hactl-dev/hactl/sandbox/kwok"
)

// cp is the package's control plane (nil under -short).
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { testenv.Main(m, controlplane.Options{}, &cp) }

// fakeAgent stands in for the kubectl-hactl binary (under another file
// name: the runner links it as kubectl-hactl). It prints its arguments and
// the store credentials it sees; `version` exits 0, anything else 5.
const fakeAgent = `#!/bin/sh
echo "agent argv: $*"
echo "agent AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID"
echo "agent AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY"
[ "$1" = version ] && exit 0
exit 5
`

var (
	installKwok    sync.Once
	installKwokErr error
)

type runnerEnv struct {
	kc  kubernetes.Interface
	ns  string
	r   *Runner
	dir string
}

// startRunner runs a Runner (with the fake agent) against the package's
// control plane, in a namespace of its own; cleanup deletes the
// namespace's pods, stops the runner and checks no process is left.
func startRunner(t *testing.T) *runnerEnv { return startRunnerWith(t, nil) }

// startRunnerWith is startRunner with the runner's options changed by mod.
func startRunnerWith(t *testing.T, mod func(*Options)) *runnerEnv {
	t.Helper()
	testenv.SkipShort(t)
	kc := testenv.Clientset(t, cp.Admin)
	dyn, err := dynamic.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	// kwok's CRDs, for the PortForward and Logs objects the runner keeps
	// (no kwok runs: the runner is the only kubelet here).
	installKwok.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m, err := kwok.LoadManifests(testenv.BinDir(t), EngineLabel)
		if err == nil {
			err = kwok.Install(ctx, dyn, m)
		}
		installKwokErr = err
	})
	if installKwokErr != nil {
		t.Fatalf("installing kwok's CRDs: %v", installKwokErr)
	}
	ns := testenv.Namespace(t, cp)
	dir := t.TempDir()
	agent := filepath.Join(dir, "fake-agent")
	if err := os.WriteFile(agent, []byte(fakeAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	var (
		logMu   sync.Mutex
		logDone bool
	)
	r := New(Options{
		Kube: kc, Dynamic: dyn, BinDir: t.TempDir(), AgentPath: agent,
		Dir: filepath.Join(dir, "runner"), Block: 253,
		HostDir: func(_, claim string) string {
			d := filepath.Join(dir, "volumes", claim)
			if err := os.MkdirAll(d, 0o755); err != nil {
				return ""
			}
			return d
		},
		Logf: func(format string, args ...any) {
			logMu.Lock()
			defer logMu.Unlock()
			if !logDone {
				t.Logf(format, args...)
			}
		},
	})
	if mod != nil {
		mod(&r.o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer dcancel()
		_ = kc.CoreV1().Pods(ns).DeleteCollection(dctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		cancel()
		r.Stop()
		logMu.Lock()
		logDone = true
		logMu.Unlock()
		if left := testenv.LeftoverProcesses(dir); len(left) > 0 {
			t.Errorf("processes left running: %v", left)
		}
	})
	return &runnerEnv{kc: kc, ns: ns, r: r, dir: dir}
}

// oneShot is a pod the runner runs (it carries the engine label), bound to
// a node, with one container running command.
func oneShot(name string, policy corev1.RestartPolicy, command ...string) *corev1.Pod {
	no := false
	grace := int64(2)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{EngineLabel: "etcd"}},
		Spec: corev1.PodSpec{
			NodeName:                      "node-1",
			RestartPolicy:                 policy,
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "main", Image: "busybox", Command: command,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
}

func (e *runnerEnv) create(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	p, err := e.kc.CoreV1().Pods(e.ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitPhase polls pod name until it reaches phase (30 s at most).
func (e *runnerEnv) waitPhase(t *testing.T, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		p, err := e.kc.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		switch p.Status.Phase {
		case phase:
			return true, nil
		case corev1.PodSucceeded, corev1.PodFailed:
			return false, fmt.Errorf("pod %s ended %s, want %s: %+v", name, p.Status.Phase, phase, p.Status.ContainerStatuses)
		}
		return false, nil
	})
	return pod
}

// only returns the pod's one container status.
func only(t *testing.T, pod *corev1.Pod) corev1.ContainerStatus {
	t.Helper()
	if len(pod.Status.ContainerStatuses) != 1 {
		t.Fatalf("container statuses %+v", pod.Status.ContainerStatuses)
	}
	return pod.Status.ContainerStatuses[0]
}

// logsOf lists the log files of the pod's container (one per run).
func (e *runnerEnv) logsOf(t *testing.T, pod *corev1.Pod) []string {
	t.Helper()
	d := filepath.Join(e.dir, "runner", "logs", "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID), "main")
	ents, err := os.ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, en := range ents {
		out = append(out, filepath.Join(d, en.Name()))
	}
	return out
}

// watchNoRestart watches pod name for d and fails on any sign of a second
// run: a restart count above 0, a running state, a phase other than want.
func (e *runnerEnv) watchNoRestart(t *testing.T, name string, want corev1.PodPhase, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	w, err := e.kc.CoreV1().Pods(e.ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted {
				continue
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.RestartCount != 0 || cs.State.Running != nil {
					t.Fatalf("pod %s restarted: %+v", name, cs)
				}
			}
			if p.Status.Phase != want {
				t.Fatalf("pod %s went %s after %s", name, p.Status.Phase, want)
			}
		}
	}
}

func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// TestOneShotPods runs pods with restartPolicy Never and OnFailure, and
// the agent, through the runner against a real API server.
func TestOneShotPods(t *testing.T) {
	e := startRunner(t)
	ctx := context.Background()

	t.Run("Never, exit 0: Succeeded", func(t *testing.T) {
		e.create(t, oneShot("ok", corev1.RestartPolicyNever, "sh", "-c", "echo fine; exit 0"))
		pod := e.waitPhase(t, "ok", corev1.PodSucceeded)
		cs := only(t, pod)
		term := cs.State.Terminated
		if term == nil || term.ExitCode != 0 || term.Reason != "Completed" || term.Message != "" ||
			term.StartedAt.IsZero() || term.FinishedAt.Before(&term.StartedAt) {
			t.Fatalf("state %+v", cs.State)
		}
		if cs.Ready || cs.RestartCount != 0 || (cs.Started != nil && *cs.Started) || cs.LastTerminationState.Terminated != nil {
			t.Fatalf("status %+v", cs)
		}
		if c := readyCondition(pod); c == nil || c.Status != corev1.ConditionFalse || c.Reason != "PodCompleted" {
			t.Fatalf("Ready condition %+v", c)
		}
	})

	t.Run("Never, exit 3: Failed with the log as message, not restarted", func(t *testing.T) {
		e.create(t, oneShot("boom", corev1.RestartPolicyNever, "sh", "-c", "echo boom; exit 3"))
		pod := e.waitPhase(t, "boom", corev1.PodFailed)
		cs := only(t, pod)
		term := cs.State.Terminated
		if term == nil || term.ExitCode != 3 || term.Reason != "Error" || !strings.Contains(term.Message, "boom") {
			t.Fatalf("state %+v", cs.State)
		}
		if cs.Ready || cs.RestartCount != 0 || cs.LastTerminationState.Terminated != nil {
			t.Fatalf("status %+v", cs)
		}
		// A restart (the runner's first one is immediate) would show
		// within this window; the pod must stay as it is.
		e.watchNoRestart(t, "boom", corev1.PodFailed, backoffFirst)
		if logs := e.logsOf(t, pod); len(logs) != 1 {
			t.Fatalf("the container ran %d times: %v", len(logs), logs)
		}
		if m, ok := e.r.Member(e.ns, "boom"); !ok || len(m.Pids) != 0 {
			t.Fatalf("member %+v (known %v): want no process", m, ok)
		}
		// Nor does a fault bring it back.
		if err := e.r.Break(ctx, e.ns, "boom", fault.Resume, nil); err == nil || !strings.Contains(err.Error(), "terminated") {
			t.Fatalf("resume of a finished pod: %v", err)
		}
	})

	t.Run("a finished pod is deleted like any other", func(t *testing.T) {
		if err := e.kc.CoreV1().Pods(e.ns).Delete(ctx, "boom", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.Poll(t, 30*time.Second, func() (bool, error) {
			_, err := e.kc.CoreV1().Pods(e.ns).Get(ctx, "boom", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	})

	t.Run("OnFailure: restarted after a failure, not after success", func(t *testing.T) {
		script := `if [ -e "$HOME/ran" ]; then echo second; exit 0; fi; touch "$HOME/ran"; echo first; exit 1`
		e.create(t, oneShot("retry", corev1.RestartPolicyOnFailure, "sh", "-c", script))
		pod := e.waitPhase(t, "retry", corev1.PodSucceeded)
		cs := only(t, pod)
		if cs.RestartCount != 1 || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 ||
			cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 ||
			!strings.Contains(cs.LastTerminationState.Terminated.Message, "first") {
			t.Fatalf("status %+v", cs)
		}
		if logs := e.logsOf(t, pod); len(logs) != 2 {
			t.Fatalf("the container ran %d times: %v", len(logs), logs)
		}
	})

	t.Run("kubectl-hactl runs the agent binary", func(t *testing.T) {
		pod := e.create(t, oneShot("agent-version", corev1.RestartPolicyNever, AgentCommand, "version"))
		pod = e.waitPhase(t, pod.Name, corev1.PodSucceeded)
		logs := e.logsOf(t, pod)
		if len(logs) != 1 {
			t.Fatalf("logs %v", logs)
		}
		b, err := os.ReadFile(logs[0])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "agent argv: version") {
			t.Fatalf("the agent did not run; log:\n%s", b)
		}
	})

	t.Run("a restore pod: store URL as written, credentials from the Secret, member addresses", func(t *testing.T) {
		const store = "s3://hactl-seeds/c?endpoint=http://127.0.0.1:39999&use_path_style=true&region=us-east-1"
		_, err := e.kc.CoreV1().Secrets(e.ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "store-creds"},
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": "hactl0123", "AWS_SECRET_ACCESS_KEY": "s3cr3t-0.0.0.0"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The StatefulSet whose members' DNS names the restore names.
		labels := map[string]string{EngineLabel: "etcd", "app": "c"}
		zero := int32(0)
		_, err = e.kc.AppsV1().StatefulSets(e.ns).Create(ctx, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: labels},
			Spec: appsv1.StatefulSetSpec{
				Replicas: &zero, ServiceName: "c-headless",
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}},
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		testenv.Poll(t, 10*time.Second, func() (bool, error) {
			_, ok := e.r.resolve(e.ns)("c-1.c-headless")
			return ok, nil
		})
		pod := restorePod(store)
		pod.Namespace, pod.UID = e.ns, ""
		pod.Spec.Containers[0].Env = nil
		for i, a := range pod.Spec.Containers[0].Args {
			pod.Spec.Containers[0].Args[i] = strings.ReplaceAll(a, ".ns.svc", "."+e.ns+".svc")
		}
		no := false
		pod.Spec.AutomountServiceAccountToken = &no
		pod.Spec.Containers[0].EnvFrom[0].SecretRef.Name = "store-creds"
		pod = e.create(t, pod)
		pod = e.waitPhase(t, pod.Name, corev1.PodFailed)
		cs := only(t, pod)
		term := cs.State.Terminated
		if term == nil || term.ExitCode != 5 || cs.RestartCount != 0 {
			t.Fatalf("status %+v", cs)
		}
		member, err := e.r.Addresses(e.ns, "c-1")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"--store=" + store + " ",
			"--data-dir=" + filepath.Join(e.dir, "volumes", "data-c-1", "default.etcd") + " ",
			"--initial-advertise-peer-urls=http://" + member.Address + ":2380 ",
			"agent AWS_ACCESS_KEY_ID=hactl0123\n",
			"agent AWS_SECRET_ACCESS_KEY=s3cr3t-0.0.0.0\n",
		} {
			if !strings.Contains(term.Message, want) {
				t.Errorf("the agent did not see %q; its termination message:\n%s", want, term.Message)
			}
		}
	})
}
