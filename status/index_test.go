package status

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// A cluster's members are the pods it controls and the pods no one
// controls that carry its name and labels, in its own namespace: not a
// pod another object controls, nor a pod of another namespace that names
// the StatefulSet's UID as its controller. Each cluster takes the PDB and
// client Service that select its pods, however many others the namespace
// holds.
func TestIndexPicksEachClustersOwnObjects(t *testing.T) {
	labels := func(name string) map[string]string { return map[string]string{"app": name} }
	sts := func(ns, name, uid string) appsv1.StatefulSet {
		return appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), Labels: map[string]string{"hactl.dev/engine": "etcd"}},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: labels(name)},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels(name)}}},
		}
	}
	pod := func(ns, name, app, controller string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), Labels: labels(app)}}
		if controller != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: app, UID: types.UID(controller), Controller: ptr.To(true)}}
		}
		return p
	}
	objs := &Objects{
		StatefulSets: []appsv1.StatefulSet{sts("a", "etcd", "uid-etcd"), sts("a", "other", "uid-other")},
		Pods: []corev1.Pod{
			pod("a", "etcd-0", "etcd", "uid-etcd"), // its own
			pod("a", "etcd-1", "etcd", ""),         // no controller: taken by name and labels
			pod("a", "etcd-2", "etcd", "uid-rs"),   // another object's
			pod("b", "etcd-2", "etcd", "uid-etcd"), // another namespace's
			pod("a", "other-0", "other", "uid-other"),
		},
	}
	for i := 0; i < 50; i++ {
		name := fmt.Sprintf("x%d", i)
		objs.PDBs = append(objs.PDBs, policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels(name)}}})
		objs.Services = append(objs.Services, corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name},
			Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1", Selector: labels(name)}})
	}
	objs.PDBs = append(objs.PDBs,
		policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "everything"}, // an empty selector: no cluster's
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{}}},
		policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "etcd-pdb"},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels("etcd")}}})
	objs.Services = append(objs.Services, corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "etcd-client"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.2", Selector: labels("etcd")}})

	ix := newIndex(objs)
	obs := decodeStatefulSet(&objs.StatefulSets[0], ix, time.Now(), parts)
	var got []string
	for _, m := range obs.Members {
		if m.Pod != nil {
			got = append(got, m.Pod.Name+"@"+m.Pod.UID)
		}
	}
	if want := []string{"etcd-0@a/etcd-0", "etcd-1@a/etcd-1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("etcd's member pods %v, want %v", got, want)
	}
	if obs.PDB == nil || obs.PDB.Name != "etcd-pdb" {
		t.Errorf("etcd's PDB %+v, want etcd-pdb", obs.PDB)
	}
	if obs.ClientEndpoints == nil || obs.ClientEndpoints.Service != "etcd-client" {
		t.Errorf("etcd's client Service %+v, want etcd-client", obs.ClientEndpoints)
	}
	other := decodeStatefulSet(&objs.StatefulSets[1], ix, time.Now(), parts)
	if other.PDB != nil || other.ClientEndpoints != nil {
		t.Errorf("other has PDB %+v and Service %+v, want none", other.PDB, other.ClientEndpoints)
	}
	if len(other.Members) != 3 || other.Members[0].Pod == nil || other.Members[0].Pod.Name != "other-0" || other.Members[1].Pod != nil {
		t.Errorf("other's members %+v, want other-0 only", other.Members)
	}
}
