package actions_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/testenv"
)

// The lock helper is this test binary run again as a second process
// (HACTL_LOCK_HELPER=take|hold) against the test's API server.
func lockHelperAsked() bool { return os.Getenv("HACTL_LOCK_HELPER") != "" }

// lockHelper: "take" tries once to acquire the lock and prints
// "took <identity>" or "held <holder>"; "hold" acquires it, prints
// "holding <identity>", then makes one marked change (a ConfigMap named
// mut-<n>) every 20 ms while Lock.Valid allows it, and prints "stopped
// <why>" when it no longer does.
func lockHelper() int {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("HACTL_LOCK_KUBECONFIG"))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	cfg.Wrap(actions.GuardTransport) // as hactl's own clients
	cs := kubernetes.NewForConfigOrDie(cfg)
	ns, cluster := os.Getenv("HACTL_LOCK_NS"), os.Getenv("HACTL_LOCK_CLUSTER")
	dur, _ := time.ParseDuration(os.Getenv("HACTL_LOCK_DURATION"))
	ctx := context.Background()
	lk, err := actions.AcquireLock(ctx, cs, ns, cluster, actions.LockOptions{Identity: actions.NewIdentity(), Duration: dur})
	var held *actions.LockHeldError
	switch {
	case errors.As(err, &held):
		fmt.Println("held", held.Holder)
		return 7
	case err != nil:
		fmt.Println("error", err)
		return 1
	}
	if os.Getenv("HACTL_LOCK_HELPER") == "take" {
		fmt.Println("took", lk.Identity(), lk.TookOver)
		return 0
	}
	fmt.Println("holding", lk.Identity())
	for n := 0; ; n++ {
		if err := lk.Valid(); err != nil {
			fmt.Println("stopped", err)
			return 7
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("mut-%d", n),
			Labels: map[string]string{"holder": "helper"}}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			if errors.Is(err, actions.ErrLockLost) {
				fmt.Println("stopped", err) // refused by the transport guard
				return 7
			}
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("wrote", cm.Name)
		time.Sleep(200 * time.Millisecond) // pacing of the helper's changes, not a wait
	}
}

func helperCmd(t *testing.T, mode, ns, cluster string, dur time.Duration, wrap ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string(nil), wrap...), self)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "HACTL_LOCK_HELPER="+mode, "HACTL_LOCK_KUBECONFIG="+cp.AdminKubeconfig,
		"HACTL_LOCK_NS="+ns, "HACTL_LOCK_CLUSTER="+cluster, "HACTL_LOCK_DURATION="+dur.String())
	cmd.Stderr = os.Stderr
	return cmd
}

// A reader whose clock runs 25 s ahead sees a live holder's lease as
// expired by renewTime; it must judge by watching the lease on its own
// clock, see it renewed, and leave it alone.
func TestLockSkewedClockNeverTakesALiveLock(t *testing.T) {
	testenv.SkipShort(t)
	cs := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	ctx := context.Background()
	holder, err := actions.AcquireLock(ctx, cs, ns, "skew", actions.LockOptions{Identity: actions.NewIdentity(), Duration: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release(ctx)
	ahead := func() time.Time { return time.Now().Add(25 * time.Second) }
	other := testenv.Clientset(t, cp.Admin)
	_, err = actions.AcquireLock(ctx, other, ns, "skew", actions.LockOptions{Identity: "hactl/skewed/x/1/ab", Duration: 6 * time.Second, Now: ahead})
	var held *actions.LockHeldError
	if !errors.As(err, &held) || held.Holder != holder.Identity() {
		t.Fatalf("a reader 25 s ahead: %v, want the lock held by %s", err, holder.Identity())
	}
	f, err := actions.ReadLock(ctx, cs, ns, "skew")
	if err != nil || f.Holder != holder.Identity() {
		t.Fatalf("the lease names %+v (%v), want the live holder %s", f, err, holder.Identity())
	}
	if err := holder.Valid(); err != nil {
		t.Fatalf("the live holder lost its lock: %v", err)
	}
}

// Two processes with one host name in separate PID namespaces: the one
// in the new namespace cannot see the other's pid, which must not make a
// live holder "gone".
func TestLockOtherPIDNamespaceIsNeverGone(t *testing.T) {
	testenv.SkipShort(t)
	if os.Geteuid() != 0 {
		t.Skip("unshare --pid needs root")
	}
	cs := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	ctx := context.Background()
	holder, err := actions.AcquireLock(ctx, cs, ns, "pidns", actions.LockOptions{Identity: actions.NewIdentity(), Duration: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release(ctx)
	cmd := helperCmd(t, "take", ns, "pidns", 30*time.Second, "unshare", "--pid", "--fork", "--mount-proc")
	out, err := cmd.Output()
	text := strings.TrimSpace(string(out))
	if !strings.HasPrefix(text, "held ") || !strings.Contains(text, holder.Identity()) {
		t.Fatalf("a process in another PID namespace: %q (%v), want the lock held by %s", text, err, holder.Identity())
	}
	if f, err := actions.ReadLock(ctx, cs, ns, "pidns"); err != nil || f.Holder != holder.Identity() {
		t.Fatalf("the lease names %+v (%v), want %s", f, err, holder.Identity())
	}
}

// A holder frozen (SIGSTOP) past its lease loses the lock to a second
// process; when it wakes (SIGCONT) it makes no change: every change it
// made was committed before the second process took the lease, as the
// API server's own order (resourceVersions) shows.
func TestLockFrozenHolderStopsItself(t *testing.T) {
	testenv.SkipShort(t)
	cs := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	ctx := context.Background()
	const dur = 3 * time.Second
	cmd := helperCmd(t, "hold", ns, "frozen", dur)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	first := <-lines
	if !strings.HasPrefix(first, "holding ") {
		t.Fatalf("helper: %q", first)
	}
	helperID := strings.TrimPrefix(first, "holding ")
	// Let it make some changes, then freeze it right after one, between
	// two changes (its next check of the lock comes after the pause). A
	// freeze between that check and the request itself is the transport
	// guard's case (TestGuardTransportRefusesChangesWithoutALock).
	for n := 0; n < 5; {
		l, ok := <-lines
		if !ok {
			t.Fatal("the helper ended before making 5 changes")
		}
		if strings.HasPrefix(l, "wrote ") {
			n++
		}
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := true
	defer func() {
		if frozen {
			_ = cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	// The second process is refused while the lease looks fresh, then
	// waits out one lease duration on its own clock and takes it.
	var taker *actions.Lock
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		lk, err := actions.AcquireLock(ctx, cs, ns, "frozen", actions.LockOptions{Identity: "hactl/second/x/1/cd", Duration: dur})
		if errors.Is(err, actions.ErrLockHeld) {
			return false, nil
		}
		taker = lk
		return err == nil, err
	})
	defer taker.Release(ctx)
	if taker.TookOver != helperID {
		t.Fatalf("took over %q, want %q", taker.TookOver, helperID)
	}
	lease, err := cs.CoordinationV1().Leases(ns).Get(ctx, "hactl-frozen", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	takenAt, _ := strconv.ParseInt(lease.ResourceVersion, 10, 64)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	frozen = false
	var last string
	for l := range lines {
		last = l
	}
	_ = cmd.Wait()
	if !strings.HasPrefix(last, "stopped ") || !strings.Contains(last, "lock lost") {
		t.Errorf("the woken holder ended with %q, want it to stop on its own", last)
	}
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "holder=helper"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range l.Items {
		rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
		if rv > takenAt {
			t.Errorf("the frozen holder changed %s (resourceVersion %d) after the second process took the lease (resourceVersion %d)", cm.Name, rv, takenAt)
		}
	}
	if f, _ := actions.ReadLock(ctx, cs, ns, "frozen"); f == nil || f.Holder != "hactl/second/x/1/cd" {
		t.Errorf("lease holder %+v, want the second process", f)
	}
}
