package actions_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/testenv"
)

// TestLockOneOfTenWins races ten acquirers on the real API server: the
// resourceVersion preconditions let exactly one win; the others learn who
// holds the lock.
func TestLockOneOfTenWins(t *testing.T) {
	testenv.SkipShort(t)
	cs := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	ctx := context.Background()
	for round, precreate := range []bool{false, true} {
		if precreate {
			// A released lease: the race is on Update, not Create.
			_, err := cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "hactl-c1"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
		cluster := fmt.Sprintf("c%d", round)
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []*actions.Lock
			held    int
		)
		start := make(chan struct{})
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				lk, err := actions.AcquireLock(ctx, cs, ns, cluster, actions.LockOptions{Identity: fmt.Sprintf("hactl/test/%d/%d", round, i), Action: "replace etcd-1"})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners = append(winners, lk)
				case errors.Is(err, actions.ErrLockHeld):
					held++
				default:
					t.Errorf("acquire: %v", err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 || held != 9 {
			t.Fatalf("round %d: %d winners, %d refused; want 1 and 9", round, len(winners), held)
		}
		f, err := actions.ReadLock(ctx, cs, ns, cluster)
		if err != nil || f.Holder != winners[0].Identity() {
			t.Fatalf("lease holder %+v (%v), want %s", f, err, winners[0].Identity())
		}
		if err := winners[0].Release(ctx); err != nil {
			t.Fatal(err)
		}
		f, _ = actions.ReadLock(ctx, cs, ns, cluster)
		if f.Holder != "" {
			t.Fatalf("holder after release = %q", f.Holder)
		}
		lk, err := actions.AcquireLock(ctx, cs, ns, cluster, actions.LockOptions{Identity: "hactl/test/next/1"})
		if err != nil {
			t.Fatalf("acquire after release: %v", err)
		}
		if lk.TookOver != "" {
			t.Errorf("a released lock was reported taken over from %q", lk.TookOver)
		}
		_ = lk.Release(ctx)
	}
}

func TestLockHeldStaleAndGone(t *testing.T) {
	testenv.SkipShort(t)
	cs := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	ctx := context.Background()
	put := func(name, holder string, renewed time.Time, secs ...int32) {
		t.Helper()
		d := int32(30)
		if len(secs) > 0 {
			d = secs[0]
		}
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "hactl-" + name, Annotations: map[string]string{actions.AnnotationAction: "replace etcd-0"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(int32(d)),
				RenewTime: ptr.To(metav1.NewMicroTime(renewed)), AcquireTime: ptr.To(metav1.NewMicroTime(renewed))}}
		if _, err := cs.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Live holder elsewhere: refused, and the refusal names it.
	put("live", "hactl/elsewhere/1/aa", time.Now())
	_, err := actions.AcquireLock(ctx, cs, ns, "live", actions.LockOptions{Identity: "hactl/me/1/bb"})
	var held *actions.LockHeldError
	if !errors.As(err, &held) || held.Holder != "hactl/elsewhere/1/aa" || held.Action != "replace etcd-0" {
		t.Fatalf("err = %v, want LockHeldError naming the holder and its action", err)
	}

	// Expired: watched for one lease duration on this process's clock,
	// then taken over, and the takeover is reported.
	put("expired", "hactl/elsewhere/1/cc", time.Now().Add(-time.Minute), 2)
	var waited []string
	start := time.Now()
	lk, err := actions.AcquireLock(ctx, cs, ns, "expired", actions.LockOptions{Identity: "hactl/me/1/dd", OnWait: func(m string) { waited = append(waited, m) }})
	if err != nil || lk.TookOver != "hactl/elsewhere/1/cc" {
		t.Fatalf("takeover of an expired lease: %v, took over %q", err, lk.TookOver)
	}
	if len(waited) != 1 || time.Since(start) < 2*time.Second || !strings.Contains(lk.TookOverWhy, "did not change") {
		t.Errorf("the takeover did not watch the lease for its duration first: said %q, took %s, why %q", waited, time.Since(start), lk.TookOverWhy)
	}
	l, _ := cs.CoordinationV1().Leases(ns).Get(ctx, "hactl-expired", metav1.GetOptions{})
	if ptr.Deref(l.Spec.LeaseTransitions, 0) != 1 {
		t.Errorf("leaseTransitions = %d, want 1", ptr.Deref(l.Spec.LeaseTransitions, 0))
	}
	_ = lk.Release(ctx)

	// Fresh, but its process on this host has ended: taken over at once.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	dead := fmt.Sprintf("hactl/%s/%s/%d/ee", host, actions.PIDSpace(), cmd.Process.Pid)
	put("gone", dead, time.Now())
	f, err := actions.ReadLock(ctx, cs, ns, "gone")
	if err != nil || !f.HolderGone || f.Held(time.Now()) {
		t.Fatalf("lock facts %+v (%v): want holder gone, not held", f, err)
	}
	lk, err = actions.AcquireLock(ctx, cs, ns, "gone", actions.LockOptions{Identity: "hactl/me/1/ff"})
	if err != nil || lk.TookOver != dead || lk.TookOverWhy == "" {
		t.Fatalf("takeover from a gone process: %v, %q (%q)", err, lk.TookOver, lk.TookOverWhy)
	}
	_ = lk.Release(ctx)

	// This very process is alive: never gone.
	if actions.HolderGone(fmt.Sprintf("hactl/%s/%s/%d/x", host, actions.PIDSpace(), os.Getppid())) {
		t.Error("the parent process was reported gone")
	}
	// The same dead pid in another pid space, or in the older identity
	// form that names none, is never gone.
	for _, id := range []string{fmt.Sprintf("hactl/%s/0123456789ab/%d/ee", host, cmd.Process.Pid), fmt.Sprintf("hactl/%s/%d/ee", host, cmd.Process.Pid)} {
		if actions.HolderGone(id) {
			t.Errorf("%s was reported gone", id)
		}
	}
}

// TestLockRenewsAndNoticesLoss: the holder renews within the duration;
// when another process forces its way in, Lost closes.
func TestLockRenewsAndNoticesLoss(t *testing.T) {
	testenv.SkipShort(t)
	cs := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	ctx := context.Background()
	lk, err := actions.AcquireLock(ctx, cs, ns, "r", actions.LockOptions{Identity: "hactl/me/1/a", Duration: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := actions.ReadLock(ctx, cs, ns, "r")
	testenv.Poll(t, 10*time.Second, func() (bool, error) {
		f, err := actions.ReadLock(ctx, cs, ns, "r")
		return err == nil && f.RenewedAt.After(first.RenewedAt), err
	})
	l, err := cs.CoordinationV1().Leases(ns).Get(ctx, "hactl-r", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity = ptr.To("hactl/thief/1/b")
	if _, err := cs.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lk.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not notice losing the lock")
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	f, _ := actions.ReadLock(ctx, cs, ns, "r")
	if f.Holder != "hactl/thief/1/b" {
		t.Fatalf("release of a lost lock cleared the new holder: %q", f.Holder)
	}
}
