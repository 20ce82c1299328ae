package actions_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/engine/registry"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// statusRules is the read-only Role of docs/rbac.md.
var statusRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"pods", "persistentvolumeclaims", "services", "events"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
}

// TestRBAC proves what a restricted user can and cannot do: with the
// status Role alone, observing for an action fails naming the Lease; with
// the lock and ledger but no delete, execution stops before changing
// anything, naming the missing permission; with the rules docs/actions.md
// lists, the server dry run passes.
func TestRBAC(t *testing.T) {
	e := newEnv(t, true)
	target := e.follower()
	ctx := context.Background()

	_, cfg := testenv.RestrictedUser(t, cp, e.ns, statusRules)
	obs := &actions.Observer{Engines: registry.Engines(), Client: testenv.Clientset(t, cfg), Dial: e.dialer.dial}
	_, _, err := obs.Observe(ctx, e.ns, "etcd")
	if !errors.Is(err, status.ErrForbidden) || !strings.Contains(err.Error(), "leases.coordination.k8s.io") {
		t.Fatalf("status role only: %v, want a refusal naming the lease", err)
	}

	lockAndLedger := append(append([]rbacv1.PolicyRule(nil), statusRules...),
		rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	)
	_, cfg = testenv.RestrictedUser(t, cp, e.ns, lockAndLedger)
	x := &actions.Executor{Observer: &actions.Observer{Engines: registry.Engines(), Client: testenv.Clientset(t, cfg), Dial: e.dialer.dial}}
	d, _, _, err := x.Decide(ctx, e.ns, "etcd", model.Intent{Action: model.ActionReplace, Member: target})
	if err != nil || d.Verb != model.VerbProceed {
		t.Fatalf("decide: %v %s", err, d.Verb)
	}
	before := len(e.voters())
	_, err = x.Execute(ctx, d, actions.ExecOptions{})
	if !errors.Is(err, status.ErrForbidden) || !strings.Contains(err.Error(), "delete") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("without delete: %v", err)
	}
	if after := len(e.voters()); after != before {
		t.Fatalf("members %d → %d: the member was removed although the delete was forbidden", before, after)
	}
	if p := e.pod(target); p.DeletionTimestamp != nil {
		t.Fatal("pod deleted")
	}
	f, _ := actions.ReadLock(ctx, e.cs, e.ns, "etcd")
	if f == nil || f.Holder != "" {
		t.Fatalf("lock left held: %+v", f)
	}

	full := append(append([]rbacv1.PolicyRule(nil), lockAndLedger...),
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods", "persistentvolumeclaims"}, Verbs: []string{"delete"}})
	_, cfg = testenv.RestrictedUser(t, cp, e.ns, full)
	x = &actions.Executor{Observer: &actions.Observer{Engines: registry.Engines(), Client: testenv.Clientset(t, cfg), Dial: e.dialer.dial}}
	d, _, _, err = x.Decide(ctx, e.ns, "etcd", model.Intent{Action: model.ActionReplace, Member: target})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Execute(ctx, d, actions.ExecOptions{DryRun: actions.DryRunServer}); err != nil {
		t.Fatalf("with the documented rules, a server dry run: %v", err)
	}
}

// TestRestoreRBAC: a restore needs update on the StatefulSet and create on
// pods; without either it stops before the members stop, naming what is
// missing, and releases the lock. With both, the server dry run passes.
func TestRestoreRBAC(t *testing.T) {
	spec := fixtures.DefaultSpec("etcd")
	spec.PodManagementPolicy = appsv1.ParallelPodManagement
	e := newEnvSpec(t, true, spec)
	ctx := context.Background()
	// The data directory inside the volume, as restore needs it.
	sts, err := e.cs.AppsV1().StatefulSets(e.ns).Get(ctx, "etcd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &sts.Spec.Template.Spec.Containers[0]
	for i, a := range c.Command {
		if strings.HasPrefix(a, "--data-dir=") {
			c.Command[i] = "--data-dir=/var/lib/etcd/data"
		}
	}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}}
	if _, err := e.cs.AppsV1().StatefulSets(e.ns).Update(ctx, sts, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, res, _, err := e.executor().Decide(ctx, e.ns, "etcd", model.Intent{Action: model.ActionRestore})
	if err != nil || res.Analysis.ClusterID == "" {
		t.Fatalf("observing: %v (cluster ID %q)", err, res.Analysis.ClusterID)
	}
	in := model.Intent{Action: model.ActionRestore, Options: model.ActionOptions{
		Generation: "g1", SeedStore: "file:///nonexistent", AgentImage: "hactl:test", Force: true,
		Source: &model.GenerationFacts{Generation: "g1", Engine: etcdengine.Name, ClusterID: res.Analysis.ClusterID, Revision: 1,
			Digest: "sha256:0000000000000000000000000000000000000000000000000000000000000000"}}}

	base := append(append([]rbacv1.PolicyRule(nil), statusRules...),
		rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	)
	updateSTS := rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"update"}}
	createPods := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "delete"}}
	for _, tc := range []struct {
		name    string
		rules   []rbacv1.PolicyRule
		missing string
	}{
		{"no update on statefulsets", append(slices.Clone(base), createPods), "statefulsets"},
		{"no create on pods", append(slices.Clone(base), updateSTS), "create on pods"},
	} {
		_, cfg := testenv.RestrictedUser(t, cp, e.ns, tc.rules)
		x := &actions.Executor{Observer: &actions.Observer{Engines: registry.Engines(), Client: testenv.Clientset(t, cfg), Dial: e.dialer.dial, ProbeTimeout: 2 * time.Second}}
		d, _, _, err := x.Decide(ctx, e.ns, "etcd", in)
		if err != nil || d.Verb != model.VerbProceed {
			t.Fatalf("%s: decide: %v %s %v", tc.name, err, d.Verb, d.Blockers)
		}
		_, err = x.Execute(ctx, d, actions.ExecOptions{})
		if !errors.Is(err, status.ErrForbidden) || !strings.Contains(err.Error(), tc.missing) || !strings.Contains(err.Error(), "nothing was changed") {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := e.cs.AppsV1().StatefulSets(e.ns).Get(ctx, "etcd", metav1.GetOptions{})
		if err != nil || *got.Spec.Replicas != 3 {
			t.Fatalf("%s: the StatefulSet was scaled although the restore was forbidden: %v", tc.name, err)
		}
		if f, _ := actions.ReadLock(ctx, e.cs, e.ns, "etcd"); f == nil || f.Holder != "" {
			t.Fatalf("%s: lock left held: %+v", tc.name, f)
		}
	}

	_, cfg := testenv.RestrictedUser(t, cp, e.ns, append(slices.Clone(base), updateSTS, createPods))
	x := &actions.Executor{Observer: &actions.Observer{Engines: registry.Engines(), Client: testenv.Clientset(t, cfg), Dial: e.dialer.dial, ProbeTimeout: 2 * time.Second}}
	d, _, _, err := x.Decide(ctx, e.ns, "etcd", in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Execute(ctx, d, actions.ExecOptions{DryRun: actions.DryRunServer}); err != nil {
		t.Fatalf("with the documented rules, a server dry run: %v", err)
	}
	if got, _ := e.cs.AppsV1().StatefulSets(e.ns).Get(ctx, "etcd", metav1.GetOptions{}); *got.Spec.Replicas != 3 {
		t.Fatal("a server dry run scaled the StatefulSet")
	}
}
