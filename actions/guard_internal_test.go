package actions

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// guardTestConfig returns the real API server's config, set by the
// external tests' TestMain (SetGuardTestConfig); nil with -short.
var guardTestConfig = func() *rest.Config { return nil }

// SetGuardTestConfig hands the external tests' API server to this file.
func SetGuardTestConfig(f func() *rest.Config) { guardTestConfig = f }

// A process whose lock is no longer known valid sends no changing request
// through a guarded client, whatever it was about to do; reads and the
// Lease's own writes still go. The API server, read through an unguarded
// client, confirms nothing was created.
func TestGuardTransportRefusesChangesWithoutALock(t *testing.T) {
	base := guardTestConfig()
	if base == nil {
		t.Skip("needs the API server (skipped with -short)")
	}
	plain := kubernetes.NewForConfigOrDie(base)
	cfg := rest.CopyConfig(base)
	cfg.Wrap(GuardTransport)
	guarded := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "guard-"}}
	ns, err := plain.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	lk, err := AcquireLock(ctx, guarded, ns.Name, "g", LockOptions{Identity: NewIdentity(), Duration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	if _, err := guarded.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm("while-held"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a change while the lock is valid: %v", err)
	}
	lk.markLost() // as a holder past its renew deadline finds it
	_, err = guarded.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm("after-loss"), metav1.CreateOptions{})
	if !errors.Is(err, ErrLockLost) {
		t.Fatalf("a change after the lock was lost: %v, want ErrLockLost", err)
	}
	if _, err := plain.CoreV1().ConfigMaps(ns.Name).Get(ctx, "after-loss", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the API server has after-loss (%v): the request was sent", err)
	}
	if _, err := guarded.CoreV1().ConfigMaps(ns.Name).Get(ctx, "while-held", metav1.GetOptions{}); err != nil {
		t.Errorf("a read after the loss: %v", err)
	}
	if err := lk.Release(ctx); err != nil {
		t.Errorf("release: %v", err)
	}
	if _, err := guarded.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm("after-release"), metav1.CreateOptions{}); err != nil {
		t.Errorf("a change after the lock was released (no lock held): %v", err)
	}
}

// A guard consults the set of locks it was built with, and only that
// set: a lost lock of another set (another face in the same process,
// with its own clients) does not stop it, one of its own does.
func TestGuardConsultsItsOwnLocks(t *testing.T) {
	base := guardTestConfig()
	if base == nil {
		t.Skip("needs the API server (skipped with -short)")
	}
	plain := kubernetes.NewForConfigOrDie(base)
	ctx := context.Background()
	ns, err := plain.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "guard-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	mine, other := &Locks{}, &Locks{}
	cfg := rest.CopyConfig(base)
	cfg.Wrap(mine.Guard)
	guarded := kubernetes.NewForConfigOrDie(cfg)
	lost, err := AcquireLock(ctx, plain, ns.Name, "other", LockOptions{Identity: NewIdentity(), Duration: 10 * time.Second, Locks: other})
	if err != nil {
		t.Fatal(err)
	}
	defer lost.Release(ctx)
	lost.markLost()
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	if _, err := guarded.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm("others-lost"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("another set's lost lock stopped this guard: %v", err)
	}
	own, err := AcquireLock(ctx, plain, ns.Name, "mine", LockOptions{Identity: NewIdentity(), Duration: 10 * time.Second, Locks: mine})
	if err != nil {
		t.Fatal(err)
	}
	defer own.Release(ctx)
	own.markLost()
	if _, err := guarded.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm("own-lost"), metav1.CreateOptions{}); !errors.Is(err, ErrLockLost) {
		t.Fatalf("a change after this set's lock was lost: %v, want ErrLockLost", err)
	}
	if _, err := plain.CoreV1().ConfigMaps(ns.Name).Get(ctx, "own-lost", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the API server has own-lost (%v): the request was sent", err)
	}
}
