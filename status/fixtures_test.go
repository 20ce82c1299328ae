package status

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// clusterSpec describes one etcd cluster to create on the real API server.
type clusterSpec struct {
	name     string
	replicas int
	state    string // --initial-cluster-state in the template
	nodes    []string
	// pod mutates each pod's status before it is written.
	pod func(ordinal int, st *corev1.PodStatus)
	// pvcPhase per ordinal (default Bound).
	pvcPhase func(ordinal int) corev1.PersistentVolumeClaimPhase
	pdb      *intstr.IntOrString // maxUnavailable; nil = no PDB
	ready    int                 // ready client endpoints; -1 = all
}

func defaultSpec(name string) clusterSpec {
	one := intstr.FromInt32(1)
	return clusterSpec{name: name, replicas: 3, state: "existing", nodes: []string{"node-a", "node-b", "node-c"}, pdb: &one, ready: -1}
}

// createCluster writes a StatefulSet, its pods (with status), PVCs, a PDB,
// a client Service and its EndpointSlice, as a kubelet and controllers
// would have left them.
func createCluster(t testing.TB, c kubernetes.Interface, ns string, s clusterSpec) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	labels := map[string]string{"app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": s.name}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: map[string]string{LabelEngine: "etcd"}},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(int32(s.replicas)),
			ServiceName: s.name + "-headless",
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "etcd", Image: "registry.k8s.io/etcd:3.6.16-0",
					Command: []string{"etcd", "--name=$(POD_NAME)", "--initial-cluster-state=" + s.state, "--data-dir=/var/lib/etcd"},
					Ports:   []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}, {Name: "peer", ContainerPort: 2380}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
	sts, err := c.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create statefulset: %v", err)
	}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID, Controller: ptr.To(true)}
	for i := 0; i < s.replicas; i++ {
		name := fmt.Sprintf("%s-%d", s.name, i)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: corev1.PodSpec{
				NodeName:   s.nodes[i%len(s.nodes)],
				Containers: sts.Spec.Template.Spec.Containers,
			},
		}
		pod, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod: %v", err)
		}
		now := metav1.Now()
		pod.Status = corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
			},
			PodIP:  fmt.Sprintf("10.244.0.%d", i+10),
			PodIPs: []corev1.PodIP{{IP: fmt.Sprintf("10.244.0.%d", i+10)}},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "etcd", Ready: true, Started: ptr.To(true), Image: "registry.k8s.io/etcd:3.6.16-0",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			}},
		}
		if s.pod != nil {
			s.pod(i, &pod.Status)
		}
		if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update pod status: %v", err)
		}
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data-" + name, Labels: labels},
			Spec:       sts.Spec.VolumeClaimTemplates[0].Spec,
		}
		pvc, err = c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pvc: %v", err)
		}
		pvc.Status.Phase = corev1.ClaimBound
		if s.pvcPhase != nil {
			pvc.Status.Phase = s.pvcPhase(i)
		}
		if _, err := c.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update pvc status: %v", err)
		}
	}
	if s.pdb != nil {
		_, err := c.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: s.name},
			Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: s.pdb, Selector: &metav1.LabelSelector{MatchLabels: labels}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pdb: %v", err)
		}
	}
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: s.name + "-headless"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels,
			Ports: []corev1.ServicePort{{Name: "peer", Port: 2380}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: s.name}, Spec: corev1.ServiceSpec{Selector: labels,
			Ports: []corev1.ServicePort{{Name: "client", Port: 2379}}}},
	} {
		if _, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create service: %v", err)
		}
	}
	ready := s.ready
	if ready < 0 {
		ready = s.replicas
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: s.name + "-client", Labels: map[string]string{discoveryv1.LabelServiceName: s.name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("client"), Port: ptr.To(int32(2379))}},
	}
	for i := 0; i < s.replicas; i++ {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.244.0.%d", i+10)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(i < ready)},
		})
	}
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create endpointslice: %v", err)
	}
}
