package actions_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/testenv"
)

// TestWithLockHoldsRunsAndReleases checks the one lock sequence on the
// real API server: fn runs holding the Lease, a second caller is refused
// without running, and the Lease is free afterwards.
func TestWithLockHoldsRunsAndReleases(t *testing.T) {
	testenv.SkipShort(t)
	cs := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	ctx := context.Background()
	ran := false
	err := actions.WithLock(ctx, cs, ns, "c", actions.LockOptions{Identity: "hactl/test/1/a", Action: "seed g1"}, func(ctx context.Context, lk *actions.Lock) error {
		ran = true
		f, err := actions.ReadLock(ctx, cs, ns, "c")
		if err != nil || f == nil || f.Holder != "hactl/test/1/a" {
			t.Errorf("inside fn the lease is %+v (%v), want it held by hactl/test/1/a", f, err)
		}
		second := false
		err = actions.WithLock(ctx, cs, ns, "c", actions.LockOptions{Identity: "hactl/test/2/b"}, func(context.Context, *actions.Lock) error {
			second = true
			return nil
		})
		var held *actions.LockHeldError
		if !errors.As(err, &held) || second {
			t.Errorf("a second holder: err %v, ran %v; want a LockHeldError and fn not run", err, second)
		}
		return lk.Valid()
	})
	if err != nil || !ran {
		t.Fatalf("WithLock: %v (ran %v)", err, ran)
	}
	f, err := actions.ReadLock(ctx, cs, ns, "c")
	if err != nil || f.Holder != "" {
		t.Fatalf("after WithLock the lease is %+v (%v), want it released", f, err)
	}
}

// TestWithLockEndsFnWhenTheLockIsLost takes the Lease away from under a
// running fn (another process writing itself in as holder): fn's context
// ends, the error wraps ErrLockLost, and the other holder keeps the Lease.
func TestWithLockEndsFnWhenTheLockIsLost(t *testing.T) {
	testenv.SkipShort(t)
	cs := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	ctx := context.Background()
	var warnings []string
	o := actions.LockOptions{Identity: "hactl/test/1/a", Duration: 3 * time.Second, Warn: func(s string) { warnings = append(warnings, s) }}
	fnErr := errors.New("fn saw its context end")
	err := actions.WithLock(ctx, cs, ns, "c", o, func(ctx context.Context, lk *actions.Lock) error {
		leases := cs.CoordinationV1().Leases(ns)
		l, err := leases.Get(ctx, actions.LockName("c"), metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Spec.HolderIdentity = ptr.To("hactl/thief/9/z")
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fnErr
		case <-time.After(time.Minute):
			return errors.New("fn's context did not end within a minute of the lock being taken")
		}
	})
	if !errors.Is(err, actions.ErrLockLost) || !errors.Is(err, fnErr) {
		t.Fatalf("err = %v; want it to wrap ErrLockLost and fn's error", err)
	}
	f, rerr := actions.ReadLock(ctx, cs, ns, "c")
	if rerr != nil || f.Holder != "hactl/thief/9/z" {
		t.Fatalf("the lease is %+v (%v); the release must not free another holder's lock", f, rerr)
	}
	if strings.Contains(strings.Join(warnings, "\n"), "took the lock over") {
		t.Errorf("no takeover happened, yet: %v", warnings)
	}
}
