package source

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hactl-dev/hactl/model"
)

// mirrorPod is a control-plane static pod as the kubelet mirrors it.
func mirrorPod(ns, component, node, image string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: component + "-" + node, UID: types.UID("uid-" + component + "-" + node),
			Labels:          map[string]string{LabelComponent: component, LabelTier: TierControlPlane},
			Annotations:     map[string]string{AnnotationMirror: "h", "kubernetes.io/config.source": "file", AnnotationAdvertiseClientURLs: "https://10.0.0.1:2379"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: "node-uid-" + "node", Controller: new(true)}}},
		Spec: corev1.PodSpec{NodeName: node, HostNetwork: true,
			Containers: []corev1.Container{{Name: component, Image: image, Command: []string{component, "--data-dir=/var/lib/etcd"}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// detectEtcd recognises containers named etcd, as the etcd decoder does.
func detectEtcd(_ map[string]string, t model.PodTemplate) (model.Engine, bool) {
	for _, c := range t.Containers {
		if c.Name == "etcd" {
			return "etcd", true
		}
	}
	return "", false
}

// kubeadm's etcd is found among the control plane's mirror pods, one
// member per node by pod name, owned by the kubelet; the API server's own
// static pods, a pod that is no mirror pod, and a mirror pod of another
// namespace's cluster are not its members.
func TestStaticPodsAreKubeadmsEtcd(t *testing.T) {
	o := Objects{Pods: []corev1.Pod{
		mirrorPod("kube-system", "etcd", "cp-2", "registry.k8s.io/etcd:3.6.4-0"),
		mirrorPod("kube-system", "etcd", "cp-1", "registry.k8s.io/etcd:3.6.4-0"),
		mirrorPod("kube-system", "kube-apiserver", "cp-1", "registry.k8s.io/kube-apiserver:v1.35.0"),
		mirrorPod("other", "etcd", "cp-9", "registry.k8s.io/etcd:3.6.4-0"),
	}}
	notMirror := mirrorPod("kube-system", "etcd", "cp-3", "registry.k8s.io/etcd:3.6.4-0")
	delete(notMirror.Annotations, AnnotationMirror)
	o.Pods = append(o.Pods, notMirror)
	// A StatefulSet's pod dressed as a mirror pod is none.
	dressed := mirrorPod("kube-system", "etcd", "cp-4", "registry.k8s.io/etcd:3.6.4-0")
	dressed.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "etcd", UID: "sts", Controller: new(true)}}
	o.Pods = append(o.Pods, dressed)
	// Another installer's static etcd (no kubeadm annotation): the
	// kubelet's, without kubeadm's steps.
	rke := mirrorPod("rke", "etcd", "cp-1", "rancher/hardened-etcd:v3.5")
	delete(rke.Annotations, AnnotationAdvertiseClientURLs)
	o.Pods = append(o.Pods, rke)
	o.Pods[1].Status.Conditions = nil // cp-1 not ready

	ws := StaticPods{}.Workloads(o, detectEtcd)
	Sort(ws)
	if len(ws) != 3 || ws[2].Owner.Namespace != "rke" {
		t.Fatalf("%d workloads, want kube-system/etcd, other/etcd and rke/etcd", len(ws))
	}
	if m := ws[2].ManagedBy; m == nil || len(m.Runbook) != 0 || !m.Unevictable || ws[2].Layout != OtherStaticPodsLayout {
		t.Errorf("another installer's static pods: managed by %+v, want the kubelet without kubeadm's runbook", m)
	}
	w := ws[0]
	if w.Owner.Namespace != "kube-system" || w.Owner.Name != "etcd" || w.Engine != "etcd" || w.Layout != StaticPodsLayout {
		t.Fatalf("workload %s/%s engine %s layout %q", w.Owner.Namespace, w.Owner.Name, w.Engine, w.Layout)
	}
	if w.ManagedBy == nil || !w.ManagedBy.Unevictable || len(w.ManagedBy.Runbook) == 0 || w.ServerName != "localhost" {
		t.Errorf("managed by %+v, server name %q: want the kubelet with kubeadm's runbook, localhost", w.ManagedBy, w.ServerName)
	}
	if w.Replicas != 2 || w.Ready != 1 || w.Template.Owner != model.OwnerKubelet {
		t.Errorf("replicas %d ready %d owner %q", w.Replicas, w.Ready, w.Template.Owner)
	}
	ms := w.Members(NewIndex(o), time.Now())
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
		if m.Pod == nil || m.PVC != nil || m.Pod.Node != m.Name[len("etcd-"):] {
			t.Errorf("member %s: pod %+v claim %+v", m.Name, m.Pod, m.PVC)
		}
	}
	if !slices.Equal(names, []string{"etcd-cp-1", "etcd-cp-2"}) {
		t.Errorf("members %q, want the two mirror pods of kube-system by name", names)
	}
	if !HasStaticPods(o.Pods) || HasStaticPods([]corev1.Pod{notMirror}) {
		t.Error("HasStaticPods: a mirror pod is one, a pod without the mirror annotation is not")
	}
}
