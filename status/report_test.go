package status

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hactl-dev/hactl/model"
)

// TestClusterObjectsAreTheClustersOnly: of a namespace's objects, the
// cluster's StatefulSet, its members' pods, hactl's pod for it, the
// ConfigMaps its pods' labels cover and the Events about those, oldest
// first (and a pod the StatefulSet controls that is no member now);
// another cluster's pods (its own, or without a controller), ConfigMap
// and Event stay out.
func TestClusterObjectsAreTheClustersOnly(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "db", Labels: labels}
	}
	ev := func(kind, name string, m int) corev1.Event {
		return corev1.Event{ObjectMeta: meta(name+"-ev", nil), InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name},
			LastTimestamp: metav1.NewTime(t0.Add(time.Duration(m) * time.Minute))}
	}
	sts := appsv1.StatefulSet{ObjectMeta: meta("pg", nil)}
	sts.UID = "u-pg"
	sts.Spec.Template.Labels = map[string]string{"application": "patroni", "cluster-name": "pg", "role": "x"}
	objs := &Objects{
		StatefulSets: []appsv1.StatefulSet{sts, {ObjectMeta: meta("other", nil)}},
		Pods: []corev1.Pod{{ObjectMeta: meta("pg-0", nil)}, {ObjectMeta: meta("other-0", nil)}, ownedPod("pg-9", "u-pg"), ownedPod("other-1", "u-other"),
			{ObjectMeta: meta("capture", map[string]string{LabelCluster: "pg"})}},
		ConfigMaps: []corev1.ConfigMap{{ObjectMeta: meta("pg-leader", map[string]string{"application": "patroni", "cluster-name": "pg"})},
			{ObjectMeta: meta("other-leader", map[string]string{"application": "patroni", "cluster-name": "other"})}},
		Events: []corev1.Event{ev("Pod", "pg-0", 5), ev("Pod", "other-0", 1), ev("StatefulSet", "pg", 2), ev("ConfigMap", "pg-leader", 9)},
	}
	ob := model.Observation{Cluster: model.ClusterFacts{Name: "pg", Namespace: "db", UID: "u-pg"},
		Members: []model.Member{{Name: "pg-0", Pod: &model.PodFacts{Name: "pg-0"}}}}
	got := ClusterObjects(objs, ob)
	names := func(n int, name func(int) string) []string {
		var out []string
		for i := range n {
			out = append(out, name(i))
		}
		return out
	}
	check := func(what string, got, want []string) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", what, got, want)
			return
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: %v, want %v", what, got, want)
				return
			}
		}
	}
	check("statefulsets", names(len(got.StatefulSets), func(i int) string { return got.StatefulSets[i].Name }), []string{"pg"})
	check("pods", names(len(got.Pods), func(i int) string { return got.Pods[i].Name }), []string{"pg-0", "pg-9", "capture"})
	check("configmaps", names(len(got.ConfigMaps), func(i int) string { return got.ConfigMaps[i].Name }), []string{"pg-leader"})
	check("events", names(len(got.Events), func(i int) string { return got.Events[i].InvolvedObject.Name }), []string{"pg", "pg-0", "pg-leader"})
}

func ownedPod(name, owner string) corev1.Pod {
	yes := true
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "db"}}
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "StatefulSet", Name: "x", UID: types.UID(owner), Controller: &yes}}
	return p
}

// A Crunchy PGO cluster's report holds every instance StatefulSet its
// PostgresCluster controls (none is named as the cluster), the Events
// about them, and no other PostgresCluster's instance.
func TestClusterObjectsOfPGOInstances(t *testing.T) {
	yes := true
	inst := func(name, owner string) appsv1.StatefulSet {
		s := appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "db"}}
		s.OwnerReferences = []metav1.OwnerReference{{Kind: "PostgresCluster", Name: "x", UID: types.UID(owner), Controller: &yes}}
		return s
	}
	objs := &Objects{
		StatefulSets: []appsv1.StatefulSet{inst("hippo-instance1-a9kq", "pc-hippo"), inst("rhino-instance1-d4mn", "pc-rhino"), inst("hippo-instance1-b2zx", "pc-hippo")},
		Events: []corev1.Event{{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "db"},
			InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", Name: "hippo-instance1-b2zx"}}},
	}
	got := ClusterObjects(objs, model.Observation{Cluster: model.ClusterFacts{Name: "hippo", Namespace: "db", UID: "pc-hippo"}})
	var names []string
	for _, s := range got.StatefulSets {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"hippo-instance1-a9kq", "hippo-instance1-b2zx"}) || len(got.Events) != 1 {
		t.Errorf("statefulsets %v, %d events", names, len(got.Events))
	}
}
