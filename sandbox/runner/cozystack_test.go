package runner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsOperatorMember(t *testing.T) {
	yes, no := true, false
	pod := func(refs ...metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: refs}}
	}
	for i, c := range []struct {
		pod  *corev1.Pod
		want bool
	}{
		{pod(metav1.OwnerReference{APIVersion: "etcd-operator.cozystack.io/v1alpha2", Kind: "EtcdMember", Controller: &yes}), true},
		{pod(metav1.OwnerReference{APIVersion: "etcd-operator.cozystack.io/v1alpha2", Kind: "EtcdMember", Controller: &no}), false},
		{pod(metav1.OwnerReference{APIVersion: "etcd-operator.cozystack.io/v1alpha2", Kind: "EtcdMember"}), false},
		{pod(metav1.OwnerReference{APIVersion: "other.io/v1", Kind: "EtcdMember", Controller: &yes}), false},
		{pod(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Controller: &yes}), false},
		{pod(), false},
	} {
		if got := IsOperatorMember(c.pod); got != c.want {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
		if got := runs(c.pod); got != c.want {
			t.Errorf("case %d: runs %v, want %v", i, got, c.want)
		}
	}
}

func TestResolveSubdomainDNS(t *testing.T) {
	pods := []Subdomain{{Namespace: "ns", Pod: "c-x7k2q", Hostname: "c-x7k2q", Subdomain: "c"}}
	for host, want := range map[string]string{
		"c-x7k2q.c":                        "ns/c-x7k2q",
		"c-x7k2q.c.ns":                     "ns/c-x7k2q",
		"c-x7k2q.c.ns.svc":                 "ns/c-x7k2q",
		"c-x7k2q.c.ns.svc.cluster.local.":  "ns/c-x7k2q",
		"c-x7k2q.c.other.svc":              "",
		"c-x7k2q.d.ns.svc":                 "",
		"c-abcde.c.ns.svc":                 "",
		"c-x7k2q.c.ns.svc.cluster.example": "",
	} {
		ns, pod, ok := ResolveSubdomainDNS(host, "ns", pods)
		got := ""
		if ok {
			got = ns + "/" + pod
		}
		if got != want {
			t.Errorf("ResolveSubdomainDNS(%q) = %q, want %q", host, got, want)
		}
	}
}
