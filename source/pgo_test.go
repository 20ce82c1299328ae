package source

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hactl-dev/hactl/model"
)

// A Crunchy PGO instance's StatefulSet (one per instance) is no cluster
// of its own: the StatefulSets layout leaves it out, by its label or its
// PostgresCluster controller.
func TestPGOInstancesAreNoClusters(t *testing.T) {
	yes := func(l map[string]string, refs ...metav1.OwnerReference) bool {
		return IsPGOInstance(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Labels: l, OwnerReferences: refs}})
	}
	ctl := true
	if !yes(map[string]string{LabelPGOInstance: "hippo-00-abcd"}) ||
		!yes(nil, metav1.OwnerReference{Kind: "PostgresCluster", Controller: &ctl}) || yes(map[string]string{"app": "pg"}) {
		t.Error("a PGO instance is known by its instance label or its PostgresCluster controller, and nothing else is one")
	}
	detect := func(map[string]string, model.PodTemplate) (model.Engine, bool) { return "patroni", true }
	o := Objects{StatefulSets: []appsv1.StatefulSet{
		{ObjectMeta: metav1.ObjectMeta{Name: "hippo-00-abcd", Labels: map[string]string{LabelPGOInstance: "hippo-00-abcd"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "pg"}},
	}}
	if ws := (StatefulSets{}).Workloads(o, detect); len(ws) != 1 || ws[0].Owner.Name != "pg" {
		t.Errorf("workloads %d, want pg alone", len(ws))
	}
}

// pgoInstance is instance name of PostgresCluster cluster (uid cuid) as
// PGO lays it out, created at minute min.
func pgoInstance(cluster, cuid, name string, minute int) appsv1.StatefulSet {
	ctl, one := true, int32(1)
	sel := map[string]string{LabelPGOCluster: cluster, "postgres-operator.crunchydata.com/instance-set": "instance1", LabelPGOInstance: name}
	tl := map[string]string{"postgres-operator.crunchydata.com/data": "postgres", "postgres-operator.crunchydata.com/patroni": cluster + "-ha"}
	for k, v := range sel {
		tl[k] = v
	}
	s := appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "db", UID: types.UID("sts-" + name),
		CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 7, 10, minute, 0, 0, time.UTC)),
		Labels:            map[string]string{LabelPGOCluster: cluster, LabelPGOInstance: name, "team": "payments"},
		Annotations:       map[string]string{"hactl.dev/rest-auth-secret": "x"},
		OwnerReferences:   []metav1.OwnerReference{{APIVersion: "postgres-operator.crunchydata.com/v1beta1", Kind: "PostgresCluster", Name: cluster, UID: types.UID(cuid), Controller: &ctl}},
	}}
	s.Spec.Replicas = &one
	s.Spec.ServiceName = cluster + "-pods"
	s.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
	s.Spec.Template.Labels = tl
	s.Spec.Template.Spec.Containers = []corev1.Container{{Name: "database"}}
	s.Status.ReadyReplicas = 1
	return s
}

// PGO's instance StatefulSets of one PostgresCluster are one cluster
// named as it (answering to its UID, with the labels and annotations
// PGO copies onto each instance), whose members are the instances' pods
// in the order the instances were created, each with its own claim
// <instance>-pgdata; its REST API is dialled with the first instance's
// certificates. Another PostgresCluster is a cluster of its own, a pod
// of the same name another StatefulSet owns is not the member's, and
// neither pgBackRest's repo host (controlled by the PostgresCluster too)
// nor an instance PGO shut down is a member.
func TestPGOInstancesAreOneCluster(t *testing.T) {
	b, a, c := pgoInstance("hippo", "pc-1", "hippo-instance1-b2zx", 2), pgoInstance("hippo", "pc-1", "hippo-instance1-a9kq", 1), pgoInstance("hippo", "pc-1", "hippo-instance1-c7tw", 3)
	other := pgoInstance("rhino", "pc-2", "rhino-instance1-d4mn", 1)
	// pgBackRest's repo host: the PostgresCluster's too, created first,
	// no instance.
	repo := pgoInstance("hippo", "pc-1", "hippo-repo-host", 0)
	delete(repo.Labels, LabelPGOInstance)
	// An instance PGO shut down (replicas 0, no pod).
	stopped := pgoInstance("hippo", "pc-1", "hippo-instance1-zzzz", 4)
	zero := int32(0)
	stopped.Spec.Replicas, stopped.Status.ReadyReplicas = &zero, 0
	pod := func(sts appsv1.StatefulSet, owner types.UID) corev1.Pod {
		ctl := true
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: sts.Name + "-0", Namespace: "db", Labels: sts.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: sts.Name, UID: owner, Controller: &ctl}}}}
	}
	o := Objects{
		StatefulSets: []appsv1.StatefulSet{b, other, repo, a, stopped, c},
		Pods:         []corev1.Pod{pod(a, a.UID), pod(b, b.UID), pod(c, "someone-else")},
		PVCs:         []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "hippo-instance1-a9kq-pgdata", Namespace: "db", UID: "claim-a"}}},
	}
	detect := func(map[string]string, model.PodTemplate) (model.Engine, bool) { return "patroni", true }
	ws := PGOClusters{}.Workloads(o, detect)
	Sort(ws)
	if len(ws) != 2 || ws[0].Owner.Name != "hippo" || ws[1].Owner.Name != "rhino" {
		t.Fatalf("workloads %d, want hippo and rhino", len(ws))
	}
	w := ws[0]
	if w.Kind != "PostgresCluster" || w.Owner.UID != "pc-1" || w.Owner.Labels["team"] != "payments" || w.Owner.Labels[LabelPGOInstance] != "" ||
		w.Owner.Annotations["hactl.dev/rest-auth-secret"] != "x" || w.Service != "hippo-pods" || w.Replicas != 3 || w.Ready != 3 || w.Layout != PGOLayout {
		t.Errorf("cluster %+v", w)
	}
	if w.PodLabels[LabelPGOCluster] != "hippo" || w.PodLabels["postgres-operator.crunchydata.com/instance-set"] != "instance1" || w.PodLabels[LabelPGOInstance] != "" {
		t.Errorf("pod labels %v: the cluster's and its instance set's, not one instance's", w.PodLabels)
	}
	if w.TLSSecret != "hippo-instance1-a9kq-certs" || w.TLSCASecret != w.TLSSecret || w.TLSCAKey != "patroni.ca-roots" ||
		w.TLSCertKey != "patroni.crt-combined" || w.TLSKeyKey != "patroni.crt-combined" {
		t.Errorf("TLS %q %q %q %q %q", w.TLSSecret, w.TLSCASecret, w.TLSCAKey, w.TLSCertKey, w.TLSKeyKey)
	}
	ms := w.Members(NewIndex(o), time.Now())
	want := []string{"hippo-instance1-a9kq-0", "hippo-instance1-b2zx-0", "hippo-instance1-c7tw-0"}
	if len(ms) != 3 {
		t.Fatalf("members %v", ms)
	}
	for i, m := range ms {
		if m.Name != want[i] || m.Ordinal != i {
			t.Errorf("member %d: %s (ordinal %d), want %s", i, m.Name, m.Ordinal, want[i])
		}
		if _, ok := w.Templates[m.Name]; !ok {
			t.Errorf("%s has no template of its own", m.Name)
		}
	}
	if ms[0].Pod == nil || ms[1].Pod == nil || ms[2].Pod != nil {
		t.Errorf("pods: %v %v %v (the third is another's)", ms[0].Pod, ms[1].Pod, ms[2].Pod)
	}
	if ms[0].PVC == nil || ms[0].PVC.UID != "claim-a" || ms[1].PVC != nil {
		t.Errorf("claims %v %v", ms[0].PVC, ms[1].PVC)
	}
}
