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
