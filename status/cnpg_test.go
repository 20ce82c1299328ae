package status

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
)

// TestCNPGClusterFromItsPods: CloudNativePG's instances, pods its Cluster
// controls (no StatefulSet in the namespace, no hactl label), are one
// cluster named as the Cluster, its members by serial with the roles the
// operator labelled; a pooler's pod of the same Cluster is none of them;
// where the Cluster cannot be read (its resource is not installed) the
// cluster is still shown, and says why.
func TestCNPGClusterFromItsPods(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner := metav1.OwnerReference{APIVersion: "postgresql.cnpg.io/v1", Kind: "Cluster", Name: "ex", UID: "cl-ex", Controller: ptr.To(true)}
	pod := func(name, role, podRole string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{owner}, Labels: map[string]string{
				"cnpg.io/cluster": "ex", "cnpg.io/instanceName": name, "cnpg.io/instanceRole": role, "role": role, "cnpg.io/podRole": podRole}},
			Spec: corev1.PodSpec{NodeName: "node-" + name, Containers: []corev1.Container{{
				Name: "postgres", Image: "ghcr.io/cloudnative-pg/postgresql:15", Command: []string{"/controller/manager", "instance", "run"},
				Ports: []corev1.ContainerPort{{Name: "postgresql", ContainerPort: 5432}, {Name: "status", ContainerPort: 8000}},
			}}},
		}
	}
	for _, p := range []*corev1.Pod{pod("ex-10", "replica", "instance"), pod("ex-2", "replica", "instance"), pod("ex-1", "primary", "instance"), pod("ex-pooler-rw-0", "", "pooler")} {
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// CloudNativePG's two budgets (pkg/specs/poddisruptionbudget.go):
	// the replicas', minAvailable 1 of them, and the primary's.
	one := intstr.FromInt32(1)
	for name, role := range map[string]string{"ex": "replica", "ex-primary": "primary"} {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"cnpg.io/cluster": "ex", "cnpg.io/instanceRole": role}}}}
		if _, err := admin.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	o := &Observer{Source: APISource{Client: admin, Engines: registry.Engines()}, Engines: registry.Engines(), Secrets: SecretsFrom(admin), Verdict: judged(model.VerdictOptions{})}
	rs, _, err := o.Observe(ctx, ns, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("%d clusters, want ex alone", len(rs))
	}
	c := rs[0].Observation.Cluster
	if c.Name != "ex" || c.Engine != "cnpg" || c.UID != "cl-ex" || c.Layout != "CloudNativePG instances" || c.Shape != model.ShapeOperatorOwned || c.Replicas != 3 {
		t.Errorf("cluster %s engine %s uid %s layout %q shape %s replicas %d", c.Name, c.Engine, c.UID, c.Layout, c.Shape, c.Replicas)
	}
	if op := c.Operator; op == nil || op.Kind != "Cluster" || !strings.Contains(op.Err, "clusters.postgresql.cnpg.io") {
		t.Errorf("the Cluster's word: %+v", op)
	}
	var names, roles []string
	for _, m := range rs[0].Observation.Members {
		names = append(names, m.Name)
		roles = append(roles, m.Pod.RoleLabel)
	}
	if !slices.Equal(names, []string{"ex-1", "ex-2", "ex-10"}) || !slices.Equal(roles, []string{"primary", "replica", "replica"}) {
		t.Errorf("members %v, roles %v", names, roles)
	}
	// Together the budgets let one replica go at a time, never the
	// primary: what a primary and one candidate need.
	if p := rs[0].Observation.PDB; p == nil || p.MaxUnavailable != 1 || p.Role != "" || !strings.Contains(p.Name, "ex-primary") || !strings.Contains(p.Name, "ex") {
		t.Errorf("budget %+v, want the primary's and the replicas' together, one at a time", p)
	}
	for _, r := range rs[0].Verdict.Reasons {
		if r.Code == model.ReasonPDBAllowsQuorumLoss || r.Code == model.ReasonPDBMissing {
			t.Errorf("%s: %s", r.Code, r.Detail)
		}
	}
}
