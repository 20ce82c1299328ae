package tui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"

	"github.com/hactl-dev/hactl/actions"
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

// TestKubeBackendReadsActionsFromItsWatches: once the watches have
// synced, the locks and ledgers of every cluster come from their caches
// (no API call, however many clusters there are), each matched to its
// own cluster.
func TestKubeBackendReadsActionsFromItsWatches(t *testing.T) {
	testenv.SkipShort(t)
	ns, ctx := actionsFixture(t)

	var calls atomic.Int64
	cfg := rest.CopyConfig(cp.Admin)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			return rt.RoundTrip(r)
		})
	})
	b := NewKubeBackend(testenv.Clientset(t, cfg), ns, status.Observer{})
	t.Cleanup(b.Shutdown)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	before := calls.Load()
	rs, warn, err := b.Observe(ctx, true)
	if err != nil || len(rs) != 5 {
		t.Fatalf("observe: %v (%d clusters)", err, len(rs))
	}
	if n := calls.Load() - before; n != 0 {
		t.Errorf("%d API calls for the locks and ledgers of 5 clusters, want none: the watches hold them", n)
	}
	for _, w := range warn {
		if strings.Contains(w, "actions not shown") {
			t.Errorf("warning %q", w)
		}
	}
	checkActions(t, rs)
}

// TestKubeBackendGetsLocksWhenItMayNotListThem: a user whose role grants
// get on Leases (as the actions' role does) but not list still sees each
// cluster's lock, read cluster by cluster, and the ledgers from their list.
func TestKubeBackendGetsLocksWhenItMayNotListThem(t *testing.T) {
	testenv.SkipShort(t)
	ns, ctx := actionsFixture(t)
	read := []string{"get", "list", "watch"}
	_, cfg := testenv.RestrictedUser(t, cp, ns, []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"pods", "persistentvolumeclaims", "services", "events", "configmaps"}, Verbs: read},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: read},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get"}},
	})
	var calls atomic.Int64
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			return rt.RoundTrip(r)
		})
	})
	b := NewKubeBackend(testenv.Clientset(t, cfg), ns, status.Observer{})
	t.Cleanup(b.Shutdown)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	rs, warn, err := b.Observe(ctx, true)
	if err != nil || len(rs) != 5 {
		t.Fatalf("observe: %v (%d clusters)", err, len(rs))
	}
	for _, w := range warn {
		if strings.Contains(w, "actions not shown") {
			t.Errorf("warning %q", w)
		}
	}
	checkActions(t, rs)
	// A round between probes (a watch event) reuses what the probe round
	// read: no API call, although the Leases cannot be watched.
	before := calls.Load()
	rs, _, err = b.Observe(ctx, false)
	if err != nil || len(rs) != 5 {
		t.Fatalf("observe from the caches: %v (%d clusters)", err, len(rs))
	}
	if n := calls.Load() - before; n != 0 {
		t.Errorf("a round between probes made %d API calls for locks it may not watch, want none", n)
	}
	checkActions(t, rs)
}

// actionsFixture makes five clusters in a namespace of their own, etcd-1's
// lock held by someone@host and an entry a1 in etcd-3's ledger.
func actionsFixture(t *testing.T) (string, context.Context) {
	t.Helper()
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	for i := 0; i < 5; i++ {
		fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec(fmt.Sprintf("etcd-%d", i)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	lock, err := actions.AcquireLock(ctx, admin, ns, "etcd-1", actions.LockOptions{Identity: "someone@host", Action: "replace etcd-1-2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Release(context.Background()) })
	led := &actions.Ledger{Client: admin, Namespace: ns, Cluster: "etcd-3"}
	if _, err := led.Begin(ctx, model.LedgerEntry{ID: "a1", Action: model.ActionReplace, Member: "etcd-3-0", Holder: "h"}, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	return ns, ctx
}

// checkActions holds the results of actionsFixture's clusters to its lock
// and ledger entry, each on its own cluster only.
func checkActions(t *testing.T, rs []status.Result) {
	t.Helper()
	for _, r := range rs {
		o := r.Observation
		switch name := o.Cluster.Name; {
		case name == "etcd-1" && (o.Lock == nil || o.Lock.Holder != "someone@host"):
			t.Errorf("etcd-1's lock: %+v, want held by someone@host", o.Lock)
		case name != "etcd-1" && o.Lock != nil:
			t.Errorf("%s shows a lock %+v it does not have", name, o.Lock)
		case name == "etcd-3" && (len(o.Ledger) != 1 || o.Ledger[0].ID != "a1"):
			t.Errorf("etcd-3's ledger: %+v, want entry a1", o.Ledger)
		case name != "etcd-3" && len(o.Ledger) != 0:
			t.Errorf("%s shows ledger entries %+v it does not have", name, o.Ledger)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
