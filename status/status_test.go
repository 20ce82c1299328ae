package status

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { testenv.Main(m, controlplane.Options{}, &cp) }

func observe(t *testing.T, c kubernetes.Interface, ns, name string, vopts model.VerdictOptions) []Result {
	t.Helper()
	o := &Observer{Source: APISource{Client: c, Engines: registry.Engines()}, Engines: registry.Engines(), Secrets: SecretsFrom(c), Verdict: judged(vopts)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, _, err := o.Observe(ctx, ns, name)
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	return rs
}

func codes(r Result) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range r.Verdict.Reasons {
		if x.Code == model.ReasonLagUnknown {
			continue // no engine probes in this tier
		}
		if !seen[string(x.Code)] {
			seen[string(x.Code)] = true
			out = append(out, string(x.Code))
		}
	}
	sort.Strings(out)
	return out
}

// TestVerdictOnRealAPIServer writes each Kubernetes-level state through the
// real API server (pod status via the status subresource) and checks the
// verdict read back from it.
func TestVerdictOnRealAPIServer(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	two := intstr.FromInt32(2)
	cases := []struct {
		name    string
		mutate  func(*fixtures.Spec)
		control bool
		want    []string
	}{
		{"healthy", func(*fixtures.Spec) {}, true, nil},
		{"pod not ready", func(s *fixtures.Spec) {
			s.Pod = func(i int, st *corev1.PodStatus) {
				if i == 1 {
					st.Conditions[1].Status = corev1.ConditionFalse
					st.ContainerStatuses[0].Ready = false
				}
			}
		}, true, []string{"pod_not_ready"}},
		{"crash looping", func(s *fixtures.Spec) {
			s.Pod = func(i int, st *corev1.PodStatus) {
				if i == 2 {
					st.Conditions[1].Status = corev1.ConditionFalse
					cs := &st.ContainerStatuses[0]
					cs.Ready, cs.Started, cs.RestartCount = false, new(bool), 7
					cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s restarting failed container"}}
					cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
				}
			}
		}, true, []string{"pod_crashlooping"}},
		{"never started: pull unauthorized", func(s *fixtures.Spec) {
			s.Pod = func(i int, st *corev1.PodStatus) {
				if i == 0 {
					st.Phase = corev1.PodPending
					st.Conditions[1].Status = corev1.ConditionFalse
					cs := &st.ContainerStatuses[0]
					cs.Ready, cs.Started = false, new(bool)
					cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "failed to pull: 401 Unauthorized"}}
				}
			}
		}, true, []string{"pod_never_started"}},
		{"pvc pending", func(s *fixtures.Spec) {
			s.PVCPhase = func(i int) corev1.PersistentVolumeClaimPhase {
				if i == 1 {
					return corev1.ClaimPending
				}
				return corev1.ClaimBound
			}
		}, true, []string{"pvc_pending"}},
		{"colocated", func(s *fixtures.Spec) { s.Nodes = []string{"node-a"} }, true, []string{"members_colocated"}},
		{"no pdb", func(s *fixtures.Spec) { s.PDB = nil }, true, []string{"pdb_missing"}},
		{"pdb allows quorum loss", func(s *fixtures.Spec) { s.PDB = &two }, true, []string{"pdb_allows_quorum_loss"}},
		{"no ready client endpoints", func(s *fixtures.Spec) { s.Ready = 0 }, false, []string{"client_endpoints_missing"}},
	}
	ns := testenv.Namespace(t, cp)
	for i, c := range cases {
		s := fixtures.DefaultSpec("etcd-" + string(rune('a'+i)))
		c.mutate(&s)
		fixtures.CreateCluster(t, admin, ns, s)
		t.Run(c.name, func(t *testing.T) {
			rs := observe(t, admin, ns, s.Name, model.VerdictOptions{})
			if len(rs) != 1 {
				t.Fatalf("got %d results, want 1", len(rs))
			}
			r := rs[0]
			if r.Verdict.ControlReady != c.control {
				t.Errorf("control_ready = %v, want %v (reasons %+v)", r.Verdict.ControlReady, c.control, r.Verdict.Reasons)
			}
			if r.Verdict.FailoverReady {
				t.Errorf("failover_ready without engine probes: lag cannot be known")
			}
			if got := strings.Join(codes(r), ","); got != strings.Join(c.want, ",") {
				t.Errorf("codes = %q, want %q (reasons %+v)", got, strings.Join(c.want, ","), r.Verdict.Reasons)
			}
		})
	}
	t.Run("never started reports the pull sub-kind", func(t *testing.T) {
		rs := observe(t, admin, ns, "etcd-d", model.VerdictOptions{})
		for _, r := range rs[0].Verdict.Reasons {
			if r.Code == model.ReasonPodNeverStarted && !strings.Contains(r.Detail, "unauthorized") {
				t.Errorf("pod_never_started detail %q does not name the pull failure", r.Detail)
			}
		}
	})
	t.Run("all clusters in the namespace", func(t *testing.T) {
		rs := observe(t, admin, ns, "", model.VerdictOptions{})
		if len(rs) != len(cases) {
			t.Fatalf("listed %d clusters, want %d", len(rs), len(cases))
		}
	})
	t.Run("unknown cluster names those that exist", func(t *testing.T) {
		o := &Observer{Source: APISource{Client: admin, Engines: registry.Engines()}, Engines: registry.Engines(), Verdict: judged(model.VerdictOptions{})}
		_, _, err := o.Observe(context.Background(), ns, "nope")
		var nf *NotFoundError
		if !errors.As(err, &nf) || !errors.Is(err, ErrClusterNotFound) {
			t.Fatalf("err = %v, want a NotFoundError", err)
		}
		if !strings.Contains(err.Error(), "etcd-a") {
			t.Errorf("error %q does not list the existing clusters", err)
		}
	})
}

// TestBootstrapFlagStale: a template hard-coding state "new" for a cluster
// that has formed would silently re-bootstrap an emptied member (seed 000).
func TestBootstrapFlagStale(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	s := fixtures.DefaultSpec("etcd-static-new")
	s.State = "new"
	fixtures.CreateCluster(t, admin, ns, s)
	// The StatefulSet was just created: within the bootstrap window the
	// flag is still legitimate.
	rs := observe(t, admin, ns, s.Name, model.VerdictOptions{})
	if got := codes(rs[0]); len(got) != 0 {
		t.Errorf("fresh cluster: codes %v, want none", got)
	}
	if rs[0].Observation.Cluster.Shape != model.ShapeStaticNew {
		t.Errorf("shape = %s, want static-new", rs[0].Observation.Cluster.Shape)
	}
	// Past the window, the cluster has formed and the flag is stale.
	rs = observe(t, admin, ns, s.Name, model.VerdictOptions{BootstrapWindow: time.Nanosecond})
	if got := strings.Join(codes(rs[0]), ","); got != "bootstrap_flag_stale" {
		t.Errorf("codes = %q, want bootstrap_flag_stale", got)
	}
}

// statusRules is the read-only RBAC that status documents it needs.
var statusRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"pods", "persistentvolumeclaims", "services", "events"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
}

func TestRestrictedUser(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-r"))

	t.Run("get/list/watch is enough", func(t *testing.T) {
		_, cfg := testenv.RestrictedUser(t, cp, ns, statusRules)
		rs := observe(t, testenv.Clientset(t, cfg), ns, "", model.VerdictOptions{})
		if len(rs) != 1 || !rs[0].Verdict.ControlReady {
			t.Fatalf("restricted user: %+v", rs)
		}
	})
	t.Run("missing list on pods is named", func(t *testing.T) {
		var rules []rbacv1.PolicyRule
		rules = append(rules, statusRules[0])
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list"}})
		_, cfg := testenv.RestrictedUser(t, cp, ns, rules)
		o := &Observer{Source: APISource{Client: testenv.Clientset(t, cfg), Engines: registry.Engines()}, Engines: registry.Engines(), Verdict: judged(model.VerdictOptions{})}
		_, _, err := o.Observe(context.Background(), ns, "")
		if !errors.Is(err, ErrForbidden) {
			t.Fatalf("err = %v, want ErrForbidden", err)
		}
		if !strings.Contains(err.Error(), "list pods") {
			t.Errorf("error %q does not name the missing verb and resource", err)
		}
	})
}

// TestAPISourceListsAtOnce: after the StatefulSets, the read's other
// lists are all in flight at once (a read takes two round trips, not
// nine): each list is held until all eight have been sent, which lists
// sent one after the other never reach.
func TestAPISourceListsAtOnce(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-at-once"))
	const others = 8 // pods, PVCs, PDBs, Services, EndpointSlices, Events, hactl's Leases and ledgers
	var mu sync.Mutex
	inFlight, most := 0, 0
	all := make(chan struct{})
	var allOnce sync.Once
	cfg := rest.CopyConfig(cp.Admin)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/statefulsets") {
				return rt.RoundTrip(r)
			}
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			if inFlight == others {
				allOnce.Do(func() { close(all) }) // a retried list may count again
			}
			mu.Unlock()
			select {
			case <-all:
			case <-time.After(5 * time.Second): // lists sent one by one are never all in flight
			}
			defer func() {
				mu.Lock()
				inFlight--
				mu.Unlock()
			}()
			return rt.RoundTrip(r)
		})
	})
	objs, err := APISource{Client: testenv.Clientset(t, cfg)}.Read(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if most != others {
		t.Errorf("at most %d of the %d lists after the StatefulSets were in flight at once", most, others)
	}
	if len(objs.StatefulSets) != 1 || len(objs.Pods) == 0 {
		t.Errorf("read %d StatefulSets and %d pods, want the cluster's", len(objs.StatefulSets), len(objs.Pods))
	}
}

// countingConfig counts every request the client sends.
func countingConfig(cfg *rest.Config, n *atomic.Int64) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 1000, 1000
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			n.Add(1)
			return rt.RoundTrip(r)
		})
	})
	return c
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestConstantListCalls: 50 clusters × 3 members cost the same number of
// API calls as one cluster.
func TestConstantListCalls(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	count := func(ns string) (int64, int) {
		var n atomic.Int64
		c := testenv.Clientset(t, countingConfig(cp.Admin, &n))
		rs := observe(t, c, ns, "", model.VerdictOptions{})
		return n.Load(), len(rs)
	}
	one := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, one, fixtures.DefaultSpec("etcd-0"))
	many := testenv.Namespace(t, cp)
	for i := 0; i < 50; i++ {
		fixtures.CreateCluster(t, admin, many, fixtures.DefaultSpec("etcd-"+itoa(i)))
	}
	c1, n1 := count(one)
	c50, n50 := count(many)
	if n1 != 1 || n50 != 50 {
		t.Fatalf("clusters seen: %d and %d, want 1 and 50", n1, n50)
	}
	if c1 != c50 {
		t.Errorf("API calls: %d for 1 cluster, %d for 50: not constant", c1, c50)
	}
	if c50 > 9 {
		t.Errorf("API calls for 50 clusters = %d, want at most 9 (one list per resource, hactl's Leases and ledgers included)", c50)
	}
	t.Logf("API calls: 1 cluster %d, 50 clusters × 3 members %d", c1, c50)
}

func itoa(i int) string { return strconv.Itoa(i) }

// A StatefulSet labelled with an engine hactl has no rules for is
// observed from the API server and judged engine_unsupported (not
// control-ready), never by etcd's rules, although its containers run etcd.
func TestUnknownEngineLabelIsUnsupported(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	s := fixtures.DefaultSpec("store")
	fixtures.CreateCluster(t, admin, ns, s)
	ctx := context.Background()
	patch := []byte(`{"metadata":{"labels":{"` + LabelEngine + `":"redis"}}}`)
	if _, err := admin.AppsV1().StatefulSets(ns).Patch(ctx, s.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	rs := observe(t, admin, ns, s.Name, model.VerdictOptions{})
	if len(rs) != 1 || rs[0].Observation.Cluster.Engine != "redis" {
		t.Fatalf("observed %+v, want the one cluster with engine redis", rs)
	}
	v := rs[0].Verdict
	if v.ControlReady || strings.Join(codes(rs[0]), ",") != "engine_unsupported" {
		t.Errorf("verdict %+v, want engine_unsupported alone, not control-ready", v)
	}
}

// A user whose role names the hactl objects it may read (get on
// hactl-a only, no list) sees cluster a's lock and ledger, read by name,
// while cluster b's are said to be unknown: one cluster's refusal does
// not hide the others'.
func TestActionObjectsReadByNameWhereListIsForbidden(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	ctx := context.Background()
	for _, n := range []string{"a", "b"} {
		fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec(n))
		holder := "hactl/elsewhere/1/" + n
		if _, err := admin.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: LockName(n), Labels: map[string]string{LabelCluster: n}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rules := append(append([]rbacv1.PolicyRule(nil), statusRules...),
		rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{LockName("a")}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{LockName("a")}, Verbs: []string{"get"}},
	)
	_, cfg := testenv.RestrictedUser(t, cp, ns, rules)
	o := &Observer{Source: APISource{Client: testenv.Clientset(t, cfg), Engines: registry.Engines()}, Engines: registry.Engines(), Verdict: judged(model.VerdictOptions{})}
	rs, warn, err := o.Observe(ctx, ns, "")
	if err != nil || len(rs) != 2 {
		t.Fatalf("observe: %v (%d clusters)", err, len(rs))
	}
	for _, r := range rs {
		switch r.Observation.Cluster.Name {
		case "a":
			if l := r.Observation.Lock; l == nil || l.Holder != "hactl/elsewhere/1/a" {
				t.Errorf("cluster a's lock, readable by name: %+v", l)
			}
		case "b":
			if r.Observation.Lock != nil {
				t.Errorf("cluster b's lock was not readable, yet: %+v", r.Observation.Lock)
			}
		}
	}
	if w := strings.Join(warn, "\n"); !strings.Contains(w, ns+"/b: actions not shown") || strings.Contains(w, ns+"/a: actions not shown") {
		t.Errorf("warnings %q, want b's lock and ledger said unknown, not a's", warn)
	}
}
