package actions_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/classify"
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
	obs := &actions.Observer{Client: testenv.Clientset(t, cfg), Dial: e.dialer.dial}
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
	x := &actions.Executor{Observer: &actions.Observer{Client: testenv.Clientset(t, cfg), Dial: e.dialer.dial}}
	d, _, _, err := x.Decide(ctx, e.ns, "etcd", classify.Intent{Action: model.ActionReplace, Member: target})
	if err != nil || d.Verb != classify.VerbProceed {
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
	x = &actions.Executor{Observer: &actions.Observer{Client: testenv.Clientset(t, cfg), Dial: e.dialer.dial}}
	d, _, _, err = x.Decide(ctx, e.ns, "etcd", classify.Intent{Action: model.ActionReplace, Member: target})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Execute(ctx, d, actions.ExecOptions{DryRun: actions.DryRunServer}); err != nil {
		t.Fatalf("with the documented rules, a server dry run: %v", err)
	}
}
