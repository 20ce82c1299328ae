package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/storetest"
	"github.com/hactl-dev/hactl/internal/testenv"
)

// capturePods watches the capture pods of the cluster from outside hactl
// (its own API reads): every UID seen, and the node each was bound to.
type capturePods struct {
	mu    sync.Mutex
	uids  map[types.UID]string
	stop  context.CancelFunc
	ended chan struct{}
}

func watchCapturePods(t *testing.T, e *env) *capturePods {
	ctx, cancel := context.WithCancel(context.Background())
	w := &capturePods{uids: map[types.UID]string{}, stop: cancel, ended: make(chan struct{})}
	go func() {
		defer close(w.ended)
		for ctx.Err() == nil {
			l, err := e.cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: actions.CaptureLabel + "=" + cluster})
			if err == nil {
				w.mu.Lock()
				for _, p := range l.Items {
					if w.uids[p.UID] == "" {
						w.uids[p.UID] = p.Spec.NodeName
					}
				}
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(w.end)
	return w
}

func (w *capturePods) end() { w.stop(); <-w.ended }

func (w *capturePods) seen() map[types.UID]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[types.UID]string{}
	for k, v := range w.uids {
		out[k] = v
	}
	return out
}

// startCapturing starts the environment with 10 000 keys in the member,
// the store behind a throttle, and a watch of the capture pods.
func startCapturing(t *testing.T) (*env, *storetest.Throttle, *capturePods) {
	e := start(t)
	e.fill(10_000)
	th := storetest.NewThrottle()
	e.setStore(e.storeURL(th.Proxy(t, e.s3.Endpoint)))
	return e, th, watchCapturePods(t, e)
}

// TestSeedInACapturePod: `kubectl hactl seed --capture pod` captures in a
// one-shot pod the scheduler binds to the source member's node; killed
// while that pod uploads, hactl leaves nothing published and the pod
// working; run again it adopts that same pod (no second pod is ever
// created, watched from outside) and publishes its upload once, which
// verifies; the pod is then gone. With the member's node tainted against
// it, auto captures through a port-forward and says why, and --capture pod
// refuses and publishes nothing. No credential appears anywhere.
func TestSeedInACapturePod(t *testing.T) {
	e, th, pods := startCapturing(t)
	bg := context.Background()

	ctx, cancel := context.WithTimeout(bg, 4*time.Minute)
	defer cancel()
	cmd, out, exited := e.seedUntilUploading(ctx, th, "pod-1", "--capture", "pod")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	e.record(out.String())
	s := e.store()
	if _, err := s.ReadManifest(bg, "pod-1"); !errors.Is(err, artifact.ErrNoManifest) {
		t.Fatalf("after the kill: %v, want no manifest\n%s", err, out.String())
	}
	first := pods.seen()
	if len(first) != 1 {
		t.Fatalf("capture pods seen: %v, want one", first)
	}
	// The pod is where the member is, and it keeps working without hactl.
	var capPod *corev1.Pod
	testenv.Poll(t, time.Minute, func() (bool, error) {
		l, err := e.cs.CoreV1().Pods(namespace).List(bg, metav1.ListOptions{LabelSelector: actions.CaptureLabel + "=" + cluster})
		if err != nil || len(l.Items) != 1 || l.Items[0].Spec.NodeName == "" {
			return false, err
		}
		capPod = &l.Items[0]
		return true, nil
	})
	member, err := e.cs.CoreV1().Pods(namespace).Get(bg, capPod.Labels[actions.MemberLabel], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if capPod.Spec.NodeName != member.Spec.NodeName {
		t.Fatalf("capture pod %s runs on %s, its source member %s on %s", capPod.Name, capPod.Spec.NodeName, member.Name, member.Spec.NodeName)
	}
	if capPod.Status.Phase == corev1.PodFailed {
		t.Fatalf("capture pod failed once hactl was killed: %+v", capPod.Status)
	}

	// Run again at full speed: the same pod, published once.
	th.Slow.Store(false)
	stdout, stderr, code := e.run("hactl", "seed", cluster, "-n", namespace, "--generation", "pod-1", "--yes", "-o", "json", "--capture", "pod")
	if code != 0 {
		t.Fatalf("seed again: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var rc seedReceipt
	if err := json.Unmarshal([]byte(stdout), &rc); err != nil || rc.Result != "done" || rc.Phase != "published" || rc.Manifest == nil {
		t.Fatalf("seed receipt: %v\n%s", err, stdout)
	}
	if !strings.Contains(stderr, "in capture pod "+capPod.Name+" on node "+member.Spec.NodeName) {
		t.Fatalf("the receipts do not say the capture ran in %s on %s:\n%s", capPod.Name, member.Spec.NodeName, stderr)
	}
	all := pods.seen()
	if len(all) != 1 {
		t.Fatalf("capture pods seen: %v, want only the first one (adopted)", all)
	}
	if _, err := s.Verify(bg, "pod-1", artifact.Expect{ClusterID: rc.Manifest.Identity.ClusterID}, nil); err != nil {
		t.Fatalf("the generation does not verify: %v", err)
	}
	if !strings.Contains(rc.Manifest.CreatedBy, "capture pod") {
		t.Fatalf("manifest createdBy %q: not written from the capture pod's receipt", rc.Manifest.CreatedBy)
	}
	testenv.Poll(t, time.Minute, func() (bool, error) {
		_, err := e.cs.CoreV1().Pods(namespace).Get(bg, capPod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	// The member's node refuses new pods: auto falls back and says why;
	// --capture pod refuses.
	node := member.Spec.NodeName
	taint(t, e, node, true)
	defer taint(t, e, node, false)
	stdout, stderr, code = e.run("hactl", "seed", cluster, "-n", namespace, "--generation", "pod-2", "--yes", "--member", member.Name, "--capture", "pod")
	if code == 0 || !strings.Contains(stdout+stderr, "cannot capture in a pod") || !strings.Contains(stdout+stderr, "cannot be scheduled") {
		t.Fatalf("--capture pod on a tainted node: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := s.ReadManifest(bg, "pod-2"); !errors.Is(err, artifact.ErrNoManifest) {
		t.Fatalf("--capture pod refused but: %v", err)
	}
	stdout, stderr, code = e.run("hactl", "seed", cluster, "-n", namespace, "--generation", "pod-2", "--yes", "--member", member.Name)
	if code != 0 || !strings.Contains(stderr, "capturing through a port-forward instead of a capture pod") || !strings.Contains(stderr, "cannot be scheduled") ||
		!strings.Contains(stdout, "through a port-forward (") {
		t.Fatalf("auto on a tainted node: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := s.Verify(bg, "pod-2", artifact.Expect{}, nil); err != nil {
		t.Fatalf("pod-2 does not verify: %v", err)
	}
	if l, err := e.cs.CoreV1().Pods(namespace).List(bg, metav1.ListOptions{LabelSelector: actions.CaptureLabel + "=" + cluster}); err != nil || len(l.Items) != 0 {
		t.Fatalf("capture pods left: %v %v", l, err)
	}

	for _, what := range [][]string{{"get", "configmap", "hactl-" + cluster, "-o", "yaml"}, {"get", "events", "-o", "yaml"}} {
		_, _, _ = e.run(append(what, "-n", namespace)...)
	}
	e.mu.Lock()
	collected := e.outputs.String()
	e.mu.Unlock()
	for _, secret := range []string{e.s3.AccessKey, e.s3.SecretKey} {
		if strings.Contains(collected, secret) {
			t.Error("a store credential appears in the output")
		}
	}
}

func taint(t *testing.T, e *env, node string, on bool) {
	t.Helper()
	ctx := context.Background()
	n, err := e.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keep []corev1.Taint
	for _, tn := range n.Spec.Taints {
		if tn.Key != "e2e.hactl.dev/no-capture" {
			keep = append(keep, tn)
		}
	}
	if on {
		keep = append(keep, corev1.Taint{Key: "e2e.hactl.dev/no-capture", Effect: corev1.TaintEffectNoSchedule})
	}
	n.Spec.Taints = keep
	if _, err := e.cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestCapturePodHolderFrozenPastItsLease: a seed frozen (SIGSTOP) while
// its capture pod uploads loses its lock; a second seed of the same
// generation takes the lock over, adopts the same pod (no second pod, seen
// from outside) and publishes its upload. The first, woken, publishes
// nothing and exits non-zero; it does not remove the upload the second
// published: the generation verifies byte for byte afterwards.
func TestCapturePodHolderFrozenPastItsLease(t *testing.T) {
	e, th, pods := startCapturing(t)
	bg := context.Background()

	ctx, cancel := context.WithTimeout(bg, 6*time.Minute)
	defer cancel()
	first, out, exited := e.seedUntilUploading(ctx, th, "frozen-1", "--capture", "pod")
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Process.Signal(syscall.SIGCONT) }()
	// Past the lease, as the API server's own Lease says.
	testenv.Poll(t, 2*time.Minute, func() (bool, error) {
		l, err := e.cs.CoordinationV1().Leases(namespace).Get(bg, "hactl-"+cluster, metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
			return false, err
		}
		end := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second + 2*time.Second)
		return time.Now().After(end), nil
	})
	th.Slow.Store(false)
	stdout, stderr, code := e.run("hactl", "seed", cluster, "-n", namespace, "--generation", "frozen-1", "--yes", "-o", "json", "--capture", "pod")
	if code != 0 {
		t.Fatalf("second seed: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var rc seedReceipt
	if err := json.Unmarshal([]byte(stdout), &rc); err != nil || rc.Phase != "published" || rc.Manifest == nil {
		t.Fatalf("second seed's receipt: %v\n%s", err, stdout)
	}
	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err == nil {
			t.Fatalf("the frozen seed exited 0 after losing its lock:\n%s", out.String())
		}
	case <-ctx.Done():
		t.Fatalf("the woken seed did not exit:\n%s", out.String())
	}
	e.record(out.String())
	if seen := pods.seen(); len(seen) != 1 {
		t.Fatalf("capture pods seen: %v, want one (adopted by the second seed)", seen)
	}
	s := e.store()
	m, err := s.Verify(bg, "frozen-1", artifact.Expect{ClusterID: rc.Manifest.Identity.ClusterID}, nil)
	if err != nil {
		t.Fatalf("the published generation does not verify after the first seed woke: %v\nfirst seed:\n%s", err, out.String())
	}
	if m.Digest != rc.Manifest.Digest {
		t.Fatalf("manifest digest %s, the second seed published %s", m.Digest, rc.Manifest.Digest)
	}
	t.Logf("the woken seed said:\n%s", out.String())
}
