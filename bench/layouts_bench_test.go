package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/scenario"
	"github.com/hactl-dev/hactl/status"
)

// layoutClusters is how many clusters of each layout the mixed namespace
// holds (3 members each); the baseline holds as many members, all in
// StatefulSets.
const layoutClusters = 5

// BenchmarkLayouts: `status` of a namespace whose clusters are laid out
// four ways at once — StatefulSets, control-plane static pods, the
// cozystack etcd-operator's EtcdMembers (whose EtcdCluster and
// EtcdMembers are read beside) and etcd-druid's Etcds (whose Etcds and
// Leases are read beside) — against `status` of a namespace holding
// the same number of members in StatefulSets alone (the layout hactl read
// before), every member probed against real etcd members in both: goal
// ≤ 1.3×. It reports the API calls of each read too.
func BenchmarkLayouts(b *testing.B) {
	testenv.SkipShort(b)
	ctx := context.Background()
	admin := testenv.Clientset(b, cp.Admin)
	dyn, err := dynamic.NewForConfig(cp.Admin)
	if err != nil {
		b.Fatal(err)
	}
	if err := scenario.EnsureCozystackCRDs(ctx, dyn); err != nil {
		b.Fatal(err)
	}
	if err := scenario.EnsureDruidCRDs(ctx, dyn); err != nil {
		b.Fatal(err)
	}
	base := populate(b, 4*layoutClusters)
	mixed := testenv.Namespace(b, cp)
	for i := 0; i < layoutClusters; i++ {
		createCluster(b, admin, mixed, i)
		createStaticPods(b, admin, mixed, fmt.Sprintf("etcd-static-%03d", i))
		createCozystack(b, admin, dyn, mixed, fmt.Sprintf("cozy-%03d", i))
		createDruid(b, admin, dyn, mixed, fmt.Sprintf("druid-%03d", i))
	}
	dial := pool(b, 3)
	var baseCalls, mixedCalls atomic.Int64
	observer := func(c kubernetes.Interface) *status.Observer {
		return &status.Observer{
			Source: status.APISource{Client: c}, Dial: dial, ProbeTimeout: 2 * time.Second,
			Engines: map[model.Engine]engine.Engine{etcdengine.Name: etcdengine.New()},
		}
	}
	bo, mo := observer(counting(cp.Admin, &baseCalls)), observer(counting(cp.Admin, &mixedCalls))
	var baseWall, mixedWall time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		rs, _, err := bo.Observe(ctx, base, "")
		if err != nil || len(rs) != 4*layoutClusters {
			b.Fatalf("baseline: %d clusters, %v", len(rs), err)
		}
		baseWall += time.Since(start)
		start = time.Now()
		rs, _, err = mo.Observe(ctx, mixed, "")
		if err != nil || len(rs) != 4*layoutClusters {
			b.Fatalf("mixed layouts: %d clusters, %v", len(rs), err)
		}
		mixedWall += time.Since(start)
		for _, r := range rs {
			if l := r.Observation.Cluster.Layout; (l == "cozystack etcd-operator" || l == "etcd-druid") && (r.Observation.Cluster.Operator == nil || r.Observation.Cluster.Operator.Err != "") {
				b.Fatalf("%s: the operator's resources were not read: %+v", r.Observation.Cluster.Name, r.Observation.Cluster.Operator)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(mixedWall)/float64(baseWall), "wall-ratio")
	b.ReportMetric(float64(mixedCalls.Load())/float64(b.N), "mixed-calls/op")
	b.ReportMetric(float64(baseCalls.Load())/float64(b.N), "statefulset-calls/op")
}

// runningStatus is a running, ready etcd container's pod status at ip.
func runningStatus(ip string) corev1.PodStatus {
	started := true
	return corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
		},
		PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "etcd", Ready: true, Started: &started,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}},
	}
}

// createPod creates p running on node, its status as the kubelet reports
// it.
func createPod(b *testing.B, c kubernetes.Interface, ns string, p *corev1.Pod, node string, n int) {
	ctx := context.Background()
	p.Spec.NodeName = node
	p, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		b.Fatalf("create pod %s: %v", p.Name, err)
	}
	p.Status = runningStatus(fmt.Sprintf("10.245.0.%d", n+10))
	if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		b.Fatalf("update pod status: %v", err)
	}
}

// createStaticPods creates the mirror pods of component on three nodes,
// as the kubelet mirrors a control plane's static pods (plaintext
// members: the probe's cost, not a certificate's, is measured).
func createStaticPods(b *testing.B, c kubernetes.Interface, ns, component string) {
	for i, node := range []string{"node-1", "node-2", "node-3"} {
		createPod(b, c, ns, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: component + "-" + node,
				Labels:      map[string]string{"component": component, "tier": "control-plane"},
				Annotations: map[string]string{"kubernetes.io/config.mirror": "hash", "kubernetes.io/config.source": "file"}},
			Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "etcd", Image: "registry.k8s.io/etcd:3.6.16-0",
				Command: []string{"etcd", "--name=" + node, "--data-dir=/var/lib/etcd", "--initial-cluster-state=existing"}}}},
		}, node, i)
	}
}

// createCozystack creates an EtcdCluster of three EtcdMembers, each with
// its pod and claim, and the operator's two Services, as the cozystack
// etcd-operator lays them out (without TLS: plaintext members).
func createCozystack(b *testing.B, c kubernetes.Interface, dyn dynamic.Interface, ns, name string) {
	ctx := context.Background()
	labels := scenario.CozystackLabels(name)
	ec, err := dyn.Resource(scenario.EtcdClusterGVR).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": scenario.CozystackAPIVersion, "kind": scenario.CozystackClusterKind,
		"metadata": map[string]any{"name": name, "labels": toAny(labels)},
		"spec":     map[string]any{"replicas": int64(3), "version": "3.6.16"},
	}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ec.Object["status"] = map[string]any{"readyMembers": int64(3), "clusterID": "00000000000000c1",
		"conditions": []any{map[string]any{"type": "Available", "status": "True", "reason": "QuorumHealthy", "message": "All members are ready", "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}}}
	if _, err := dyn.Resource(scenario.EtcdClusterGVR).Namespace(ns).UpdateStatus(ctx, ec, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	for i, node := range []string{"node-1", "node-2", "node-3"} {
		em, err := dyn.Resource(scenario.EtcdMemberGVR).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": scenario.CozystackAPIVersion, "kind": scenario.CozystackMemberKind,
			"metadata": map[string]any{"generateName": name + "-", "labels": toAny(labels), "ownerReferences": []any{map[string]any{
				"apiVersion": scenario.CozystackAPIVersion, "kind": scenario.CozystackClusterKind, "name": name, "uid": string(ec.GetUID()), "controller": true}}},
			"spec": map[string]any{"clusterName": name, "bootstrap": i == 0},
		}}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		member := em.GetName()
		em.Object["status"] = map[string]any{"memberID": fmt.Sprintf("%016x", i+1), "podName": member, "isVoter": true, "pvcName": "data-" + member}
		if _, err := dyn.Resource(scenario.EtcdMemberGVR).Namespace(ns).UpdateStatus(ctx, em, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		owner := metav1.OwnerReference{APIVersion: scenario.CozystackAPIVersion, Kind: scenario.CozystackMemberKind, Name: member, UID: types.UID(em.GetUID()), Controller: new(true)}
		podLabels := scenario.CozystackLabels(name)
		podLabels["app.kubernetes.io/component"] = member
		podLabels[scenario.CozystackRoleLabel] = scenario.CozystackRoleVoter
		createPod(b, c, ns, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: member, Labels: podLabels, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: corev1.PodSpec{Hostname: member, Subdomain: name, Containers: []corev1.Container{{Name: "etcd", Image: scenario.CozystackEtcdImage,
				Command: []string{"etcd", "--name=" + member, "--data-dir=/var/lib/etcd", "--initial-cluster-state=existing", "--listen-client-urls=http://0.0.0.0:2379"}}}},
		}, node, i)
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-" + member, Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	sel := map[string]string{scenario.CozystackClusterLabel: name}
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: sel, Ports: []corev1.ServicePort{{Name: "peer", Port: 2380}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: name + "-client"}, Spec: corev1.ServiceSpec{Selector: sel, Ports: []corev1.ServicePort{{Name: "client", Port: 2379}}}},
	} {
		if _, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// createDruid creates an etcd-druid Etcd with its status, the StatefulSet
// it controls (pods, claims; plaintext members: the probe's cost, not a
// certificate's, is measured) and its member and snapshot Leases, renewed
// as the backup-restore sidecars renew them.
func createDruid(b *testing.B, c kubernetes.Interface, dyn dynamic.Interface, ns, name string) {
	ctx := context.Background()
	now := metav1.Now().UTC().Format(time.RFC3339)
	e, err := dyn.Resource(scenario.EtcdGVR).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": scenario.DruidAPIVersion, "kind": "Etcd",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"replicas": int64(3), "labels": toAny(scenario.DruidLabels(name)),
			"etcd": map[string]any{}, "backup": map[string]any{"store": map[string]any{"provider": "Local", "container": name}}},
	}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var members []any
	for i := range 3 {
		members = append(members, map[string]any{"name": fmt.Sprintf("%s-%d", name, i), "id": fmt.Sprintf("%x", i+1), "role": "Member", "status": "Ready", "reason": "LeaseSucceeded", "lastTransitionTime": now})
	}
	e.Object["status"] = map[string]any{"readyReplicas": int64(3), "members": members, "conditions": []any{
		map[string]any{"type": "Ready", "status": "True", "reason": "Quorate", "message": "The majority of ETCD members is ready", "lastTransitionTime": now, "lastUpdateTime": now},
		map[string]any{"type": "BackupReady", "status": "True", "reason": "BackupSucceeded", "message": "Snapshot backup succeeded", "lastTransitionTime": now, "lastUpdateTime": now}}}
	if _, err := dyn.Resource(scenario.EtcdGVR).Namespace(ns).UpdateStatus(ctx, e, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	spec := fixtures.DefaultSpec(name)
	spec.Owner = &metav1.OwnerReference{APIVersion: scenario.DruidAPIVersion, Kind: "Etcd", Name: name, UID: e.GetUID(), Controller: new(true)}
	fixtures.CreateCluster(b, c, ns, spec)
	renew := metav1.NewMicroTime(time.Now())
	lease := func(n, holder string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: scenario.DruidLabels(name)},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renew}}
	}
	for _, l := range []*coordinationv1.Lease{lease(name+"-0", "1:c1:Leader"), lease(name+"-1", "2:c1:Member"), lease(name+"-2", "3:c1:Member"),
		lease(scenario.DruidFullSnapLease(name), "10"), lease(scenario.DruidDeltaSnapLease(name), "12")} {
		if _, err := c.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// toAny is m as an unstructured object's map.
func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}
