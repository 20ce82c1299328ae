package status

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/model"
)

// TestPodFingerprintPatroniKeys: for a Patroni cluster the pod
// fingerprint ignores exactly the annotation "status" and the role label
// Patroni rewrites on every loop; any other edit still changes it, and
// other engines' pods are fingerprinted whole.
func TestPodFingerprintPatroniKeys(t *testing.T) {
	pod := func(mut func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pg-1",
			Labels:      map[string]string{"application": "patroni", "role": "replica"},
			Annotations: map[string]string{"status": `{"state":"running","xlog_location":1}`, "team": "db"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "patroni", Image: "patroni:3.0.2"}}}}
		if mut != nil {
			mut(p)
		}
		return p
	}
	pc := &model.SelfWritten{Labels: []string{"role"}, Annotations: []string{"status"}}
	base := PodFingerprint(pod(nil), pc)
	same := map[string]func(*corev1.Pod){
		"status rewritten":   func(p *corev1.Pod) { p.Annotations["status"] = `{"state":"running","xlog_location":2}` },
		"role flipped":       func(p *corev1.Pod) { p.Labels["role"] = "master" },
		"role label removed": func(p *corev1.Pod) { delete(p.Labels, "role") },
		"status removed":     func(p *corev1.Pod) { delete(p.Annotations, "status") },
	}
	for name, mut := range same {
		if got := PodFingerprint(pod(mut), pc); got != base {
			t.Errorf("%s: fingerprint %s, want %s (Patroni's own key)", name, got, base)
		}
	}
	changed := map[string]func(*corev1.Pod){
		"other label":      func(p *corev1.Pod) { p.Labels["tier"] = "x" },
		"other annotation": func(p *corev1.Pod) { p.Annotations["team"] = "ops" },
		"finalizer":        func(p *corev1.Pod) { p.Finalizers = []string{"example.com/keep"} },
		"spec":             func(p *corev1.Pod) { p.Spec.Containers[0].Image = "patroni:4" },
	}
	for name, mut := range changed {
		if got := PodFingerprint(pod(mut), pc); got == base {
			t.Errorf("%s: fingerprint unchanged", name)
		}
	}
	// Another role label name: that one is Patroni's, "role" is not.
	other := &model.SelfWritten{Labels: []string{"spilo-role"}, Annotations: []string{"status"}}
	if PodFingerprint(pod(func(p *corev1.Pod) { p.Labels["role"] = "master" }), other) == PodFingerprint(pod(nil), other) {
		t.Error("role label spilo-role: a change of label role was ignored")
	}
	if PodFingerprint(pod(func(p *corev1.Pod) { p.Labels["spilo-role"] = "master" }), other) != PodFingerprint(pod(nil), other) {
		t.Error("role label spilo-role: its change was not ignored")
	}
	// etcd (no Patroni facts): unchanged behaviour, every key counts.
	p := pod(nil)
	if PodFingerprint(p, nil) != Fingerprint(&p.ObjectMeta, p.Spec) {
		t.Error("without Patroni facts the pod fingerprint differs from Fingerprint")
	}
	for name, mut := range same {
		if PodFingerprint(pod(mut), nil) == PodFingerprint(pod(nil), nil) {
			t.Errorf("etcd: %s did not change the fingerprint", name)
		}
	}
	// The original pod's maps are not modified.
	q := pod(nil)
	_ = PodFingerprint(q, pc)
	if q.Labels["role"] != "replica" || q.Annotations["status"] == "" {
		t.Error("PodFingerprint modified the pod")
	}
}
