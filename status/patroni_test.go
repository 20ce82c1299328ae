package status

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
)

// pgObjects writes what a 3-member Patroni cluster with the Kubernetes DCS
// leaves on the API server: the StatefulSet, pods labelled by Patroni
// (role), the leader, config and sync ConfigMaps (data in annotations, as
// Patroni 3.0.2 writes them), the primary's Service selecting role=master
// with its EndpointSlice, and a PDB.
func pgObjects(t *testing.T, c kubernetes.Interface, ns, name string, renew time.Time, config string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	labels := map[string]string{"application": "patroni", "cluster-name": name}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"hactl.dev/engine": "patroni"}},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(3)), ServiceName: name + "-headless",
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "postgres", Image: "example/patroni:3.0.2", Command: []string{"/usr/bin/patroni", "/etc/patroni.yml"},
					Env: []corev1.EnvVar{
						{Name: "PATRONI_SCOPE", Value: name},
						{Name: "PATRONI_RESTAPI_LISTEN", Value: "0.0.0.0:8009"},
					},
					Ports: []corev1.ContainerPort{{Name: "postgresql", ContainerPort: 5432}},
				}}},
			},
		},
	}
	sts, err := c.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: sts.UID, Controller: ptr.To(true)}
	for i := range 3 {
		pl := map[string]string{"role": "replica"}
		if i == 0 {
			pl["role"] = "master"
		}
		for k, v := range labels {
			pl[k] = v
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Labels: pl, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec:       corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i), Containers: sts.Spec.Template.Spec.Containers},
		}
		pod, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "postgres", Ready: true, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}}
		if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cms := map[string]map[string]string{
		name + "-leader": {"leader": name + "-0", "renewTime": renew.UTC().Format("2006-01-02T15:04:05.000000+00:00"),
			"acquireTime": renew.UTC().Format(time.RFC3339), "optime": "67108864", "transitions": "2", "ttl": "30"},
		name + "-config": {"config": config, "initialize": "7714413371406231513",
			"history": `[[1,67393304,"no recovery target specified","2026-12-01T19:05:43.092611+00:00","` + name + `-1"],[2,9007199254740993,"no recovery target specified","2026-12-01T19:07:01+00:00","` + name + `-0"],[3,"x"],"x"]`},
		name + "-sync": {"leader": name + "-0", "sync_standby": name + "-1"},
	}
	for n, ann := range cms {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: labels, Annotations: ann}}
		if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"cluster-name": name, "role": "master"}, Ports: []corev1.ServicePort{{Port: 5432}}}}
	if _, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: name + "-0", Namespace: ns}}},
	}
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	if _, err := c.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

const pgConfig = `{"ttl":30,"loop_wait":10,"retry_timeout":10,"maximum_lag_on_failover":2097152,"postgresql":{"use_pg_rewind":true},"synchronous_mode":true}`

// TestPatroniFromTheAPIServer decodes a Patroni cluster's lock,
// configuration, role labels and primary Service from the real API server,
// through both sources (list calls and watch caches), and judges the lock
// without dialling anyone.
func TestPatroniFromTheAPIServer(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	now := time.Now()
	pgObjects(t, admin, ns, "pgfresh", now.Add(-3*time.Second), pgConfig)
	pgObjects(t, admin, ns, "pgstale", now.Add(-2*time.Minute), `{"ttl":30,"pause":true}`)

	check := func(t *testing.T, rs []Result) {
		t.Helper()
		by := map[string]Result{}
		for _, r := range rs {
			by[r.Observation.Cluster.Name] = r
		}
		fresh, stale := by["pgfresh"], by["pgstale"]
		p := fresh.Observation.Cluster.Patroni
		if p == nil {
			t.Fatalf("no Patroni facts: %+v", fresh.Observation.Cluster)
		}
		want := model.PatroniClusterFacts{Scope: "pgfresh", RoleLabel: "role", ScopeLabel: "cluster-name", DCS: model.DCSConfigMaps, DCSFrom: "where its leader record is", RESTPort: 8009, LockFound: true, LockHolder: "pgfresh-0",
			LockTTL: 30 * time.Second, LockTransitions: 2, ConfigFound: true, MaximumLagOnFailover: 2 << 20, SynchronousMode: true,
			Initialize: "7714413371406231513", SyncStandby: "pgfresh-1"}
		want.History = []model.TimelineSwitch{
			{Timeline: 1, LSN: 67393304, Reason: "no recovery target specified", At: time.Date(2026, 12, 1, 19, 5, 43, 92611000, time.UTC), NewLeader: "pgfresh-1"},
			// a position past 2^53 stays exact; an entry that does not read is left out
			{Timeline: 2, LSN: 9007199254740993, Reason: "no recovery target specified", At: time.Date(2026, 12, 1, 19, 7, 1, 0, time.UTC), NewLeader: "pgfresh-0"},
		}
		want.LockAcquired = now.Add(-3 * time.Second).UTC().Truncate(time.Second)
		got := *p
		got.LockRenew = time.Time{}
		for i := range got.History {
			got.History[i].At = got.History[i].At.UTC()
		}
		got.LockAcquired = got.LockAcquired.UTC()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Patroni facts\n got %+v\nwant %+v", got, want)
		}
		if d := now.Add(-3 * time.Second).Sub(p.LockRenew); d > time.Millisecond || d < -time.Millisecond {
			t.Errorf("renewTime %s, want %s", p.LockRenew, now.Add(-3*time.Second))
		}
		if c := fresh.Observation.Cluster.Template.ClientPort; c != 8009 {
			t.Errorf("REST port %d, want 8009 (PATRONI_RESTAPI_LISTEN)", c)
		}
		roles := []string{}
		for _, m := range fresh.Observation.Members {
			roles = append(roles, m.Pod.RoleLabel)
		}
		if !slices.Equal(roles, []string{"master", "replica", "replica"}) {
			t.Errorf("role labels %v", roles)
		}
		if e := fresh.Observation.ClientEndpoints; e == nil || e.Service != "pgfresh" || !slices.Equal(e.Pods, []string{"pgfresh-0"}) {
			t.Errorf("primary endpoints %+v, want Service pgfresh -> pgfresh-0", e)
		}
		if hasReason(fresh, model.ReasonLeaderLockStale, "") || hasReason(fresh, model.ReasonClientEndpointsMissing, "") {
			t.Errorf("fresh cluster: %+v", fresh.Verdict.Reasons)
		}
		if !hasReason(stale, model.ReasonLeaderLockStale, "pgstale-0") || !hasReason(stale, model.ReasonMaintenancePaused, "") {
			t.Errorf("stale, paused cluster: %+v", stale.Verdict.Reasons)
		}
		if stale.Verdict.ControlReady {
			t.Error("a stale leader lock must defeat control readiness")
		}
	}
	t.Run("list calls", func(t *testing.T) { check(t, observe(t, admin, ns, "", model.VerdictOptions{})) })
	t.Run("watch caches", func(t *testing.T) { check(t, watchedPatroni(t, admin, ns, 2)) })
	t.Run("a watch without configmaps says so per cluster, not as a watch error", func(t *testing.T) {
		_, cfg := testenv.RestrictedUser(t, cp, ns, statusRules)
		w, ctx := startWatcher(t, testenv.Clientset(t, cfg), ns, WatchOptions{})
		var p *model.PatroniClusterFacts
		testenv.Poll(t, 30*time.Second, func() (bool, error) {
			rs, _, err := w.Observe(ctx, "pgstale", false)
			if err != nil {
				return false, err
			}
			p = rs[0].Observation.Cluster.Patroni
			return p != nil && strings.Contains(p.ObjectsErr, "forbidden"), nil
		})
		if p.LockFound {
			t.Errorf("Patroni facts %+v: an unreadable lock was found", p)
		}
		select {
		case err := <-w.Errors():
			if strings.Contains(err.Error(), "ConfigMap") {
				t.Errorf("the ConfigMaps watch failure was reported as a watch error: %v", err)
			}
		default:
		}
	})
	t.Run("without configmaps the lock is unknown, not absent", func(t *testing.T) {
		_, cfg := testenv.RestrictedUser(t, cp, ns, statusRules)
		o := &Observer{Source: APISource{Client: testenv.Clientset(t, cfg), Engines: registry.Engines()}, Engines: registry.Engines(), Verdict: judged(model.VerdictOptions{})}
		rs, warn, err := o.Observe(context.Background(), ns, "pgstale")
		if err != nil {
			t.Fatal(err)
		}
		if len(warn) == 0 || !strings.Contains(strings.Join(warn, "\n"), "configmaps") {
			t.Errorf("warnings %q should name the configmaps it could not list", warn)
		}
		p := rs[0].Observation.Cluster.Patroni
		if p == nil || p.ObjectsErr == "" || p.LockFound {
			t.Errorf("Patroni facts %+v: want ObjectsErr and no lock", p)
		}
		if hasReason(rs[0], model.ReasonLeaderLockStale, "") || hasReason(rs[0], model.ReasonPrimaryMissing, "") {
			t.Errorf("an unread lock was judged: %+v", rs[0].Verdict.Reasons)
		}
	})
}

// spiloObjects writes a 3-member cluster as Zalando's postgres-operator
// lays it out, with nothing of hactl's: Spilo's variables (SCOPE,
// DCS_ENABLE_KUBERNETES_API, KUBERNETES_ROLE_LABEL and, for ConfigMaps,
// KUBERNETES_USE_CONFIGMAPS), pods labelled application=spilo,
// cluster-name and spilo-role, and the leader and config records on
// ConfigMaps <name>-leader/-config or on the Endpoints <name>/-config.
// orphan, with ConfigMaps, also leaves the Endpoints <name> an earlier
// Endpoints-mode run wrote, naming another leader, renewed hours ago.
func spiloObjects(t *testing.T, c kubernetes.Interface, ns, name string, endpoints, orphan bool, renew time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	labels := map[string]string{"application": "spilo", "cluster-name": name}
	env := []corev1.EnvVar{
		{Name: "SCOPE", Value: name}, {Name: "PGROOT", Value: "/home/postgres/pgdata/pgroot"},
		{Name: "KUBERNETES_SCOPE_LABEL", Value: "cluster-name"}, {Name: "KUBERNETES_ROLE_LABEL", Value: "spilo-role"},
		{Name: "KUBERNETES_LABELS", Value: `{"application":"spilo"}`}, {Name: "DCS_ENABLE_KUBERNETES_API", Value: "true"},
	}
	if !endpoints {
		env = append(env, corev1.EnvVar{Name: "KUBERNETES_USE_CONFIGMAPS", Value: "true"})
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(3)), ServiceName: name,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "postgres", Image: "ghcr.io/zalando/spilo-15:3.0-p1", Env: env,
					Ports: []corev1.ContainerPort{{ContainerPort: 8008}, {ContainerPort: 5432}, {ContainerPort: 8080}},
				}}},
			},
		},
	}
	sts, err := c.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: sts.UID, Controller: ptr.To(true)}
	for i := range 3 {
		pl := map[string]string{"spilo-role": "replica"}
		if i == 0 {
			pl["spilo-role"] = "master"
		}
		for k, v := range labels {
			pl[k] = v
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Labels: pl, OwnerReferences: []metav1.OwnerReference{owner},
				Annotations: map[string]string{"status": `{"state":"running","role":"replica","version":"3.0.2"}`}},
			Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i), Containers: sts.Spec.Template.Spec.Containers},
		}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stamp := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000+00:00") }
	leader := map[string]string{"leader": name + "-0", "renewTime": stamp(renew), "acquireTime": stamp(renew), "transitions": "1", "ttl": "30"}
	config := map[string]string{"config": `{"ttl":30,"loop_wait":10,"maximum_lag_on_failover":33554432}`, "initialize": "7714413371406231513"}
	put := func(kind, n string, ann map[string]string) {
		meta := metav1.ObjectMeta{Name: n, Labels: labels, Annotations: ann}
		var err error
		if kind == model.DCSEndpoints {
			_, err = c.CoreV1().Endpoints(ns).Create(ctx, &corev1.Endpoints{ObjectMeta: meta}, metav1.CreateOptions{}) //nolint:staticcheck // Patroni's objects
		} else {
			_, err = c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// The operator's Services and budget: the primary's Service (on
	// Endpoints without a selector, Patroni writing its endpoints; the
	// mirrored slice names the leader) and a budget of the primary alone.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 5432}}}}
	if !endpoints {
		svc.Spec.Selector = map[string]string{"application": "spilo", "cluster-name": name, "spilo-role": "master"}
	}
	if _, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: name + "-0", Namespace: ns}}},
	}
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "postgres-" + name + "-pdb"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"application": "spilo", "cluster-name": name, "spilo-role": "master"}}}}
	if _, err := c.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if endpoints {
		put(model.DCSEndpoints, name, leader)
		put(model.DCSEndpoints, name+"-config", config)
		return
	}
	put(model.DCSConfigMaps, name+"-leader", leader)
	put(model.DCSConfigMaps, name+"-config", config)
	if orphan {
		old := renew.Add(-3 * time.Hour)
		put(model.DCSEndpoints, name, map[string]string{"leader": name + "-2", "renewTime": stamp(old), "acquireTime": stamp(old), "transitions": "7", "ttl": "30"})
		put(model.DCSEndpoints, name+"-config", map[string]string{"config": `{"ttl":30,"pause":true}`, "initialize": "7714413371406231513"})
	}
}

// TestSpiloClustersWithoutHactlLabels: clusters laid out as Zalando's
// postgres-operator does, with no hactl label, are found by their Spilo
// container and read on the DCS their template names: ConfigMaps (with
// an upgrade's orphaned Endpoints, reported and not read: no second
// leader, no pause), Endpoints (fresh, and stale: leader_lock_stale
// naming the Endpoints), through list calls and watch caches.
func TestSpiloClustersWithoutHactlLabels(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	now := time.Now()
	spiloObjects(t, admin, ns, "acid-cm", false, true, now.Add(-2*time.Second))
	spiloObjects(t, admin, ns, "acid-ep", true, false, now.Add(-2*time.Second))
	spiloObjects(t, admin, ns, "acid-stale", true, false, now.Add(-5*time.Minute))

	check := func(t *testing.T, rs []Result) {
		t.Helper()
		by := map[string]Result{}
		for _, r := range rs {
			by[r.Observation.Cluster.Name] = r
		}
		for _, c := range []struct {
			name, dcs, from string
			orphan          bool
			stale           bool
		}{
			{"acid-cm", model.DCSConfigMaps, "Spilo's KUBERNETES_USE_CONFIGMAPS", true, false},
			{"acid-ep", model.DCSEndpoints, "Spilo without KUBERNETES_USE_CONFIGMAPS", false, false},
			{"acid-stale", model.DCSEndpoints, "Spilo without KUBERNETES_USE_CONFIGMAPS", false, true},
		} {
			r, ok := by[c.name]
			if !ok {
				t.Errorf("%s not found among %d clusters", c.name, len(rs))
				continue
			}
			p := r.Observation.Cluster.Patroni
			if r.Observation.Cluster.Engine != "patroni" || p == nil {
				t.Errorf("%s: engine %q, Patroni facts %+v", c.name, r.Observation.Cluster.Engine, p)
				continue
			}
			if p.Scope != c.name || p.RoleLabel != "spilo-role" || p.DCS != c.dcs || p.DCSFrom != c.from || p.ObjectsErr != "" {
				t.Errorf("%s: scope %q, role label %q, DCS %q from %q, error %q", c.name, p.Scope, p.RoleLabel, p.DCS, p.DCSFrom, p.ObjectsErr)
			}
			if !p.LockFound || p.LockHolder != c.name+"-0" || p.Initialize != "7714413371406231513" || p.MaximumLagOnFailover != 33554432 || p.Paused {
				t.Errorf("%s: lock %v held by %q, initialize %q, maximum lag %d, paused %v", c.name, p.LockFound, p.LockHolder, p.Initialize, p.MaximumLagOnFailover, p.Paused)
			}
			if got := p.Orphaned != ""; got != c.orphan || (c.orphan && (!strings.Contains(p.Orphaned, "Endpoints "+c.name) || !strings.Contains(p.Orphaned, c.name+"-2"))) {
				t.Errorf("%s: orphaned %q, want one: %v", c.name, p.Orphaned, c.orphan)
			}
			roles := []string{}
			for _, m := range r.Observation.Members {
				roles = append(roles, m.Pod.RoleLabel)
			}
			if !slices.Equal(roles, []string{"master", "replica", "replica"}) {
				t.Errorf("%s: role labels %v", c.name, roles)
			}
			stale := false
			for _, rr := range r.Verdict.Reasons {
				if rr.Code == model.ReasonLeaderLockStale {
					stale = rr.Member == c.name+"-0" && strings.Contains(rr.Detail, "Endpoints "+c.name+" ")
				}
				if rr.Code == model.ReasonLeaderLockUnknown || rr.Code == model.ReasonMaintenancePaused {
					t.Errorf("%s: %s %s", c.name, rr.Code, rr.Detail)
				}
			}
			if stale != c.stale {
				t.Errorf("%s: leader_lock_stale naming the Endpoints %v, want %v: %+v", c.name, stale, c.stale, r.Verdict.Reasons)
			}
			// The primary's Service, by its selector or (on Endpoints)
			// by its name, points at the primary.
			if e := r.Observation.ClientEndpoints; e == nil || e.Service != c.name || !slices.Equal(e.Pods, []string{c.name + "-0"}) {
				t.Errorf("%s: primary endpoints %+v", c.name, e)
			}
			// The operator's budget covers the primary alone: a drain may
			// take every replica.
			if p := r.Observation.PDB; p == nil || p.Role != "master" {
				t.Errorf("%s: budget %+v, want the primary's", c.name, p)
			}
			pdbNamed := false
			for _, rr := range r.Verdict.Reasons {
				pdbNamed = pdbNamed || (rr.Code == model.ReasonPDBAllowsQuorumLoss && strings.Contains(rr.Detail, "selects only the pod labelled spilo-role=master"))
				if rr.Code == model.ReasonPDBMissing || rr.Code == model.ReasonClientEndpointsMissing {
					t.Errorf("%s: %s %s", c.name, rr.Code, rr.Detail)
				}
			}
			if !pdbNamed {
				t.Errorf("%s: no pdb_allows_quorum_loss for the primary's budget: %+v", c.name, r.Verdict.Reasons)
			}
		}
	}
	t.Run("list calls", func(t *testing.T) { check(t, observe(t, admin, ns, "", model.VerdictOptions{})) })
	t.Run("watch caches", func(t *testing.T) { check(t, watchedPatroni(t, admin, ns, 3)) })
	t.Run("a watch that may list Endpoints but not ConfigMaps reads the clusters on Endpoints", func(t *testing.T) {
		rules := append(slices.Clone(statusRules), rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"endpoints"}, Verbs: []string{"list"}})
		_, cfg := testenv.RestrictedUser(t, cp, ns, rules)
		w, ctx := startWatcher(t, testenv.Clientset(t, cfg), ns, WatchOptions{})
		var ep, cm *model.PatroniClusterFacts
		testenv.Poll(t, 30*time.Second, func() (bool, error) {
			rs, _, err := w.Observe(ctx, "", false)
			if err != nil {
				return false, err
			}
			for _, r := range rs {
				switch r.Observation.Cluster.Name {
				case "acid-ep":
					ep = r.Observation.Cluster.Patroni
				case "acid-cm":
					cm = r.Observation.Cluster.Patroni
				}
			}
			return ep != nil && ep.LockFound && cm != nil && cm.ObjectsErr != "", nil
		})
		if ep.ObjectsErr != "" || ep.LockHolder != "acid-ep-0" || ep.DCS != model.DCSEndpoints {
			t.Errorf("on Endpoints: %+v", ep)
		}
		if cm.LockFound || !strings.Contains(cm.ObjectsErr, "configmaps") {
			t.Errorf("on ConfigMaps, which may not be listed: %+v (the orphaned Endpoints must not stand in)", cm)
		}
	})
}

// watchedPatroni is a Watcher's first read of ns's n Patroni clusters
// with their DCS objects read (polled while the caches sync).
func watchedPatroni(t *testing.T, c kubernetes.Interface, ns string, n int) []Result {
	t.Helper()
	w, ctx := startWatcher(t, c, ns, WatchOptions{})
	var rs []Result
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		var err error
		rs, _, err = w.Observe(ctx, "", false)
		if err != nil {
			return false, err
		}
		for _, r := range rs {
			if p := r.Observation.Cluster.Patroni; p == nil || p.ObjectsErr != "" {
				return false, nil
			}
		}
		return len(rs) == n, nil
	})
	return rs
}
