package status

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
)

// noEventsRules are what status needs, without events.
var noEventsRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"pods", "persistentvolumeclaims", "services"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
}

// startWatcher starts a watcher of ns for c and stops it when the test
// ends.
func startWatcher(t *testing.T, c kubernetes.Interface, ns string, opts WatchOptions) (*Watcher, context.Context) {
	t.Helper()
	if opts.Observer.Engines == nil {
		// The shipped engines decode and judge; without Dial nothing is
		// probed.
		opts.Observer.Engines = registry.Engines()
	}
	w := NewWatcher(c, ns, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(func() { cancel(); w.Stop() })
	if err := w.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	return w, ctx
}

func hasReason(r Result, code model.ReasonCode, member string) bool {
	for _, x := range r.Verdict.Reasons {
		if x.Code == code && (member == "" || x.Member == member) {
			return true
		}
	}
	return false
}

// drain empties the changes channel.
func drain(ch <-chan struct{}) {
	for len(ch) > 0 {
		<-ch
	}
}

// waitChange fails the test unless ch delivers before timeout.
func waitChange(t *testing.T, ch <-chan struct{}, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	select {
	case <-ch:
	case <-deadline.C:
		t.Fatalf("no change notification within %s", timeout)
	}
}

// TestWatcherDeliversChanges: the first read from the caches sees the
// cluster; a pod status change written to the API server arrives on the
// changes channel, and the next read shows it.
func TestWatcherDeliversChanges(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-w"))
	w, ctx := startWatcher(t, admin, ns, WatchOptions{})

	rs, warn, err := w.Observe(ctx, "etcd-w", false)
	if err != nil || len(rs) != 1 || rs[0].Observation.Cluster.Name != "etcd-w" {
		t.Fatalf("observe: %v %+v", err, rs)
	}
	if len(warn) != 0 {
		t.Errorf("warnings for an admin: %q", warn)
	}
	if hasReason(rs[0], model.ReasonPodNotReady, "") {
		t.Fatal("fresh fixture already not ready")
	}
	drain(w.Changes())

	fixtures.MarkNotReady(t, admin, ns, "etcd-w-1")
	waitChange(t, w.Changes(), 30*time.Second)
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		rs, _, err := w.Observe(ctx, "etcd-w", false)
		if err != nil {
			return false, err
		}
		return len(rs) == 1 && hasReason(rs[0], model.ReasonPodNotReady, "etcd-w-1"), nil
	})

	_, _, err = w.Observe(ctx, "nope", false)
	if !errors.Is(err, ErrClusterNotFound) {
		t.Errorf("observe an unknown cluster: %v, want ErrClusterNotFound", err)
	}
}

// TestWatcherWithoutEvents: a user who may not list or watch events still
// gets observations and changes, each observation warns that events are
// not shown, and the refused events watch is reported on Errors.
func TestWatcherWithoutEvents(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-ev"))
	_, cfg := testenv.RestrictedUser(t, cp, ns, noEventsRules)
	w, ctx := startWatcher(t, testenv.Clientset(t, cfg), ns, WatchOptions{SyncTimeout: 10 * time.Minute})

	rs, warn, err := w.Observe(ctx, "", false)
	if err != nil || len(rs) != 1 || rs[0].Observation.Cluster.Name != "etcd-ev" {
		t.Fatalf("observe without events: %v %+v", err, rs)
	}
	if s := strings.Join(warn, "\n"); !strings.Contains(s, "events not shown") || !strings.Contains(s, "forbidden") {
		t.Errorf("warnings %q, want events not shown because forbidden", warn)
	}

	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	select {
	case err := <-w.Errors():
		if !strings.Contains(err.Error(), "Event") || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("watch error %v, want events forbidden", err)
		}
	case <-deadline.C:
		t.Error("the forbidden events watch was not reported")
	}

	drain(w.Changes())
	fixtures.MarkNotReady(t, admin, ns, "etcd-ev-2")
	waitChange(t, w.Changes(), 30*time.Second)
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		rs, _, err := w.Observe(ctx, "etcd-ev", false)
		if err != nil {
			return false, err
		}
		return len(rs) == 1 && hasReason(rs[0], model.ReasonPodNotReady, "etcd-ev-2"), nil
	})
}

// TestWatcherRequiredForbidden: a user who may not list StatefulSets gets
// the reason at once, not after the sync timeout.
func TestWatcherRequiredForbidden(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.Namespace(t, cp)
	_, cfg := testenv.RestrictedUser(t, cp, ns, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}})
	w := NewWatcher(testenv.Clientset(t, cfg), ns, WatchOptions{SyncTimeout: 10 * time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(func() { cancel(); w.Stop() })
	err := w.Start(ctx)
	if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "statefulsets") {
		t.Fatalf("start as a restricted user: %v, want a forbidden error naming statefulsets", err)
	}
}

// TestWatcherStopEndsTheWatches: Stop returns (its informers ended) while
// the context Start was given is still live.
func TestWatcherStopEndsTheWatches(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	w := NewWatcher(admin, ns, WatchOptions{})
	if err := w.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	stopped := make(chan struct{})
	go func() { w.Stop(); close(stopped) }()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	select {
	case <-stopped:
	case <-deadline.C:
		t.Fatal("Stop did not return")
	}
}

// TestWatcherStartsDespiteAHungDirectRead: the watches list after a
// direct read's lists, but a direct read that hangs holds them back only
// for the sync timeout: Start still syncs and returns.
func TestWatcherStartsDespiteAHungDirectRead(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-hung"))

	// The direct read's list of StatefulSets (a plain list: the
	// informers' carry a resourceVersion or watch) never returns.
	release := make(chan struct{})
	defer close(release)
	cfg := rest.CopyConfig(cp.Admin)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			q := r.URL.Query()
			if strings.HasSuffix(r.URL.Path, "/statefulsets") && !q.Has("resourceVersion") && q.Get("watch") == "" {
				select {
				case <-release:
				case <-r.Context().Done():
					return nil, r.Context().Err()
				}
			}
			return rt.RoundTrip(r)
		})
	})
	w := NewWatcher(testenv.Clientset(t, cfg), ns, WatchOptions{SyncTimeout: 3 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(w.Stop)
	direct := make(chan error, 1)
	dctx, dcancel := context.WithCancel(ctx)
	defer dcancel()
	go func() {
		_, _, err := w.ObserveDirect(dctx, "", false)
		direct <- err
	}()
	// Start once the direct read has begun (it sets directBegun first).
	poll.Until(t, 30*time.Second, "the direct read to begin", func() error {
		if !w.directBegun.Load() {
			return errors.New("not yet")
		}
		return nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatalf("start while the direct read hangs: %v", err)
	}
	rs, _, err := w.Observe(ctx, "", false)
	if err != nil || len(rs) != 1 {
		t.Fatalf("observe from the caches: %v (%d clusters)", err, len(rs))
	}
	select {
	case err := <-direct:
		t.Fatalf("the direct read returned (%v) though its list hangs", err)
	default:
	}
}

// TestWatcherSyncsWhileTheDirectReadProbes: the watches wait for the
// direct read's probes only for the probe grace: a member that does not
// answer holds up the direct read until its probe timeout, but not the
// caches, which show the pods meanwhile. Start must return while that
// probe still hangs (its timeout here: 10 minutes).
func TestWatcherSyncsWhileTheDirectReadProbes(t *testing.T) {
	testenv.SkipShort(t)
	_, ns := oneMemberCluster(t, "etcd-silent")
	obs, dialing := silentMembers()
	w := NewWatcher(testenv.Clientset(t, cp.Admin), ns, WatchOptions{Observer: obs, SyncTimeout: 10 * time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(w.Stop)
	w.ExpectDirect()
	dctx, dcancel := context.WithCancel(ctx)
	defer dcancel()
	direct := make(chan error, 1)
	go func() {
		_, _, err := w.ObserveDirect(dctx, "", true)
		direct <- err
	}()
	if err := w.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	select {
	case err := <-direct:
		t.Fatalf("the caches synced only after the direct read returned (%v): its hanging probe held them back", err)
	default:
	}
	select {
	case <-dialing:
	case <-ctx.Done():
		t.Fatal("the direct read never dialled the member")
	}
	rs, _, err := w.Observe(ctx, "", false)
	if err != nil || len(rs) != 1 || len(rs[0].Observation.Members) != 1 {
		t.Fatalf("observe from the caches while the probe hangs: %v (%d clusters)", err, len(rs))
	}
}

// TestWatcherWaitsForTheDirectReadsProbes: after a direct read's lists,
// the watches wait for its probes (within the probe grace), so that their
// lists do not share the API server and the process with the probes'
// port-forwards. While the one probe is held, no informer lists or
// watches (seen at the API client's transport); once it answers, Start
// syncs.
func TestWatcherWaitsForTheDirectReadsProbes(t *testing.T) {
	testenv.SkipShort(t)
	_, ns := oneMemberCluster(t, "etcd-held")
	var informed atomic.Bool // an informer's list or watch was sent
	cfg := rest.CopyConfig(cp.Admin)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			// The informers' lists carry a resourceVersion, their
			// watches watch=true; the direct read's lists neither.
			if q := r.URL.Query(); q.Has("resourceVersion") || q.Get("watch") != "" {
				informed.Store(true)
			}
			return rt.RoundTrip(r)
		})
	})
	obs, dialing := silentMembers()
	w := NewWatcher(testenv.Clientset(t, cfg), ns, WatchOptions{Observer: obs, SyncTimeout: 10 * time.Minute, DirectProbeGrace: 10 * time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(w.Stop)
	w.ExpectDirect()
	// The probe answers (with its timeout) when dctx is cancelled.
	dctx, release := context.WithCancel(ctx)
	defer release()
	direct := make(chan struct{})
	go func() {
		defer close(direct)
		_, _, _ = w.ObserveDirect(dctx, "", true)
	}()
	started := make(chan error, 1)
	go func() { started <- w.Start(ctx) }()
	select {
	case <-dialing:
	case <-ctx.Done():
		t.Fatal("the direct read never dialled the member")
	}
	// The direct read has listed and its probe is out. Before the fix
	// the informers listed within milliseconds of the direct lists; watch
	// for a second that they do not.
	window := time.NewTimer(time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for held := true; held; {
		select {
		case <-window.C:
			held = false
		case <-tick.C:
			if informed.Load() {
				t.Fatal("the watches listed while the direct read's probe was out")
			}
		case err := <-started:
			t.Fatalf("Start returned (%v) while the direct read's probe was out", err)
		}
	}
	release()
	<-direct
	if err := <-started; err != nil {
		t.Fatalf("start after the probe answered: %v", err)
	}
	if !informed.Load() {
		t.Fatal("Start returned without the informers listing")
	}
	rs, _, err := w.Observe(ctx, "", false)
	if err != nil || len(rs) != 1 {
		t.Fatalf("observe from the caches: %v (%d clusters)", err, len(rs))
	}
}

// silentMembers is an Observer whose probes never answer: each dial
// waits for its context (the probe timeout: 10 minutes), after saying on
// dialing that it began.
func silentMembers() (Observer, <-chan struct{}) {
	dialing := make(chan struct{}, 1)
	dial := func(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
		select {
		case dialing <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return Observer{Dial: dial, ProbeTimeout: 10 * time.Minute, Engines: map[model.Engine]engine.Engine{etcdengine.Name: etcdengine.New()}}, dialing
}

// oneMemberCluster creates the fixture cluster name with one member in a
// new namespace, returning the admin client and the namespace.
func oneMemberCluster(t *testing.T, name string) (*kubernetes.Clientset, string) {
	t.Helper()
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	spec := fixtures.DefaultSpec(name)
	spec.Replicas = 1
	fixtures.CreateCluster(t, admin, ns, spec)
	return admin, ns
}

// TestStaleNeedsTwoRecentFailures: one failure of a required watch (a
// blip, retried at once) is not staleness; two within the window are,
// until the last is older than the window.
func TestStaleNeedsTwoRecentFailures(t *testing.T) {
	w := &Watcher{}
	if err := w.Stale(time.Minute); err != nil {
		t.Fatalf("no failure: %v", err)
	}
	fail := errors.New("connection refused")
	w.requiredErr, w.requiredErrAt = fail, time.Now()
	if err := w.Stale(time.Minute); err != nil {
		t.Errorf("one failure: %v", err)
	}
	w.requiredErrPrev, w.requiredErrAt = time.Now().Add(-30*time.Second), time.Now()
	if err := w.Stale(time.Minute); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("two failures within the window: %v", err)
	}
	w.requiredErrPrev, w.requiredErrAt = time.Now().Add(-3*time.Minute), time.Now().Add(-2*time.Minute)
	if err := w.Stale(time.Minute); err != nil {
		t.Errorf("failures older than the window: %v", err)
	}
}
