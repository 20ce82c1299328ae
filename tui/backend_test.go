package tui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/controlplane"
	"github.com/hactl-dev/hactl/status"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { testenv.Main(m, controlplane.Options{}, &cp) }

func hasReason(r status.Result, code model.ReasonCode, member string) bool {
	for _, x := range r.Verdict.Reasons {
		if x.Code == code && (member == "" || x.Member == member) {
			return true
		}
	}
	return false
}

// TestKubeBackendFollowsTheAPIServer runs the real informers against a
// real API server: the first read sees the cluster, a pod status change
// arrives as a change notification, and the next read shows it.
func TestKubeBackendFollowsTheAPIServer(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-w"))

	b := NewKubeBackend(admin, ns, status.Observer{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); b.Shutdown() })
	if err := b.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	rs, _, err := b.Observe(ctx, true)
	if err != nil || len(rs) != 1 || rs[0].Observation.Cluster.Name != "etcd-w" {
		t.Fatalf("observe: %v %+v", err, rs)
	}
	if hasReason(rs[0], model.ReasonPodNotReady, "") {
		t.Fatal("fresh fixture already not ready")
	}
	// Drain the notifications of the initial list.
	for len(b.Changes()) > 0 {
		<-b.Changes()
	}

	fixtures.MarkNotReady(t, admin, ns, "etcd-w-1")
	select {
	case <-b.Changes():
	case <-time.After(30 * time.Second):
		t.Fatal("no change notification for a pod status update")
	}
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		rs, _, err := b.Observe(ctx, false)
		if err != nil {
			return false, err
		}
		return len(rs) == 1 && hasReason(rs[0], model.ReasonPodNotReady, "etcd-w-1"), nil
	})
}

// TestKubeBackendReadsDirectlyBeforeSync: the first screen's read needs
// no synced watches: one list of each type at the real API server.
func TestKubeBackendReadsDirectlyBeforeSync(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-d"))
	b := NewKubeBackend(admin, ns, status.Observer{})
	t.Cleanup(b.Shutdown)
	rs, _, err := b.ObserveDirect(context.Background())
	if err != nil || len(rs) != 1 || rs[0].Observation.Cluster.Name != "etcd-d" || len(rs[0].Observation.Members) != 3 {
		t.Fatalf("direct read before Start: %v %+v", err, rs)
	}
}

// TestKubeBackendExplainsRBAC: a user who may not list StatefulSets gets
// the reason, not a timeout.
func TestKubeBackendExplainsRBAC(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.Namespace(t, cp)
	_, cfg := testenv.RestrictedUser(t, cp, ns, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}})
	b := NewKubeBackend(testenv.Clientset(t, cfg), ns, status.Observer{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*CacheSyncTimeout)
	t.Cleanup(func() { cancel(); b.Shutdown() })
	err := b.Start(ctx)
	if !errors.Is(err, status.ErrForbidden) || !strings.Contains(err.Error(), "statefulsets") {
		t.Fatalf("start as a restricted user: %v, want a forbidden error naming statefulsets", err)
	}
}

// TestKubeBackendWithoutEvents: events are optional, as in status; a user
// who may not watch them still gets the view, and is told.
func TestKubeBackendWithoutEvents(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-ev"))
	read := []string{"get", "list", "watch"}
	_, cfg := testenv.RestrictedUser(t, cp, ns, []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"pods", "persistentvolumeclaims", "services"}, Verbs: read},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: read},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
	})
	b := NewKubeBackend(testenv.Clientset(t, cfg), ns, status.Observer{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*CacheSyncTimeout)
	t.Cleanup(func() { cancel(); b.Shutdown() })
	if err := b.Start(ctx); err != nil {
		t.Fatalf("start without events: %v", err)
	}
	rs, _, err := b.Observe(ctx, false)
	if err != nil || len(rs) != 1 {
		t.Fatalf("observe: %v (%d results)", err, len(rs))
	}
	// Nor may this user read the action lock and ledger: the view goes on
	// and says so.
	rs, warn, err := b.Observe(ctx, true)
	if err != nil || len(rs) != 1 {
		t.Fatalf("observe with probes: %v", err)
	}
	if len(warn) == 0 || !strings.Contains(strings.Join(warn, "\n"), "actions not shown") {
		t.Errorf("warnings %q, want the unreadable lock/ledger said", warn)
	}
	select {
	case err := <-b.Errors():
		if !strings.Contains(err.Error(), "Event") || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("watch error %v, want events forbidden", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the forbidden events watch was not reported")
	}
}
