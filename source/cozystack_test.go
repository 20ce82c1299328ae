package source

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// cozyPod is member's pod in cluster as the cozystack etcd-operator
// makes it: named like its EtcdMember, which controls it.
func cozyPod(ns, cluster, member, state string, created time.Time) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: member, UID: types.UID("pod-" + member), CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{LabelCozystackCluster: cluster, LabelCozystackRole: CozystackRoleVoter, "app.kubernetes.io/component": member},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: CozystackGroup + "/" + CozystackVersion, Kind: "EtcdMember", Name: member,
				UID: types.UID("em-" + member), Controller: new(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-1", Hostname: member, Subdomain: cluster,
			Containers: []corev1.Container{{Name: "etcd", Command: []string{"etcd", "--name=" + member, "--initial-cluster-state=" + state}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// cozyMember is an EtcdMember of cluster.
func cozyMember(ns, cluster, name, id string, seed bool, created time.Time) EtcdMember {
	m := EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)}}
	m.Spec.ClusterName, m.Spec.Bootstrap = cluster, seed
	m.Status.MemberID, m.Status.IsVoter = id, true
	return m
}

// A cozystack cluster is found from its pods, named by their cluster
// label; its members are its EtcdMembers in the order the operator made
// them (a member whose pod is gone too), each with its own pod template
// and claim data-<member>; the operator's word comes beside, its IDs as
// etcd spells them; TLS follows the EtcdCluster's Secret references.
func TestCozystackClusters(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ns := "db"
	// The seed is made first; its pod was recreated last.
	pods := []corev1.Pod{
		cozyPod(ns, "etcd", "etcd-b2c3d", "existing", t0.Add(2*time.Minute)),
		cozyPod(ns, "etcd", "etcd-x9k2p", "new", t0.Add(5*time.Minute)),
		// Labelled, but a StatefulSet's: no member of the operator's.
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-0", Labels: map[string]string{LabelCozystackCluster: "etcd"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "other", Controller: new(true)}}}},
	}
	ec := EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd", UID: "ec-uid"}}
	three := int32(3)
	ec.Spec.Replicas = &three
	if err := jsonInto(`{"client":{"serverSecretRef":{"name":"etcd-server-tls"},"operatorClientSecretRef":{"name":"etcd-operator-client-tls"}}}`, &ec.Spec.TLS); err != nil {
		t.Fatal(err)
	}
	ec.Status.ClusterID, ec.Status.ReadyMembers = "0a1b2c3d4e5f6071", 3
	ec.Status.Conditions = []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue, Reason: "QuorumHealthy"}}
	cz := &Cozystack{Clusters: []EtcdCluster{ec}, Members: []EtcdMember{
		cozyMember(ns, "etcd", "etcd-b2c3d", "00000000000000b2", false, t0.Add(time.Minute)),
		cozyMember(ns, "etcd", "etcd-x9k2p", "00000000000000a1", true, t0),
		cozyMember(ns, "etcd", "etcd-q7w8e", "00000000000000c3", false, t0.Add(3*time.Minute)),
		cozyMember(ns, "other", "other-aaaaa", "1", true, t0),
	}}
	pvcs := []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-etcd-x9k2p", UID: "pvc-1"}}}
	o := Objects{Pods: pods, PVCs: pvcs, Cozystack: cz}
	ws := CozystackClusters{}.Workloads(o, detectEtcd)
	if len(ws) != 1 {
		t.Fatalf("%d workloads, want 1: %+v", len(ws), ws)
	}
	w := ws[0]
	if w.Owner.Name != "etcd" || w.Owner.UID != "ec-uid" || w.Kind != "EtcdCluster" || w.Service != "etcd" || w.Replicas != 3 || w.Ready != 2 {
		t.Errorf("workload %s/%s uid %s kind %s service %s replicas %d ready %d", w.Owner.Namespace, w.Owner.Name, w.Owner.UID, w.Kind, w.Service, w.Replicas, w.Ready)
	}
	if w.ManagedBy != CozystackOperator || w.Layout != CozystackLayout || w.Template.Owner != "EtcdCluster/etcd" {
		t.Errorf("managed by %v, layout %q, template owner %q", w.ManagedBy, w.Layout, w.Template.Owner)
	}
	if w.TLSSecret != "etcd-operator-client-tls" || w.TLSCASecret != "etcd-server-tls" || w.TLSSecretFrom == "" {
		t.Errorf("TLS %q CA %q from %q", w.TLSSecret, w.TLSCASecret, w.TLSSecretFrom)
	}
	ms := w.Members(NewIndex(o), t0)
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	if want := []string{"etcd-x9k2p", "etcd-b2c3d", "etcd-q7w8e"}; !slices.Equal(names, want) {
		t.Fatalf("members %v, want %v (the operator's order)", names, want)
	}
	if ms[0].Pod == nil || ms[0].PVC == nil || ms[0].PVC.UID != "pvc-1" || ms[2].Pod != nil {
		t.Errorf("seed pod %v claim %v; the podless member's pod %v", ms[0].Pod, ms[0].PVC, ms[2].Pod)
	}
	if pt, ok := w.Templates["etcd-x9k2p"]; !ok || pt.Containers[0].Command[2] != "--initial-cluster-state=new" {
		t.Errorf("the seed's own template: %+v", pt)
	}
	op := w.Operator
	if op == nil || op.Err != "" || op.ClusterID != "a1b2c3d4e5f6071" || op.Available == nil || !*op.Available || op.ReadyMembers != 3 {
		t.Fatalf("operator facts %+v", op)
	}
	if m := op.Member("etcd-x9k2p"); m == nil || m.MemberID != "a1" || !m.Seed || !m.Voter {
		t.Errorf("the seed's record %+v", m)
	}
	if got := hexID("\x1b]0;x\a"); got != `"\x1b]0;x\a"` {
		t.Errorf("a recorded ID that is no hex number: %q, want it quoted", got)
	}
	if op.Member("other-aaaaa") != nil {
		t.Error("another cluster's member is recorded as this one's")
	}
}

// Without the operator's resources (not installed, forbidden) the
// cluster is still found from its pods; the operator's word is unknown,
// and says why.
func TestCozystackUnread(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	o := Objects{Pods: []corev1.Pod{cozyPod("db", "etcd", "etcd-x9k2p", "existing", t0)}, Cozystack: &Cozystack{Err: errors.New("forbidden")}}
	ws := CozystackClusters{}.Workloads(o, detectEtcd)
	if len(ws) != 1 || ws[0].Owner.Name != "etcd" || ws[0].Replicas != 1 {
		t.Fatalf("workloads %+v", ws)
	}
	if op := ws[0].Operator; op == nil || op.Err != "forbidden" || op.Available != nil {
		t.Errorf("operator facts %+v", op)
	}
	if ws[0].TLSSecret != "" || ws[0].TLSCASecret != "" {
		t.Errorf("TLS %q %q from no EtcdCluster", ws[0].TLSSecret, ws[0].TLSCASecret)
	}
	// Server TLS only: the server Secret's CA alone, never its key pair.
	ec := EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "etcd"}}
	if err := jsonInto(`{"client":{"serverSecretRef":{"name":"etcd-server-tls"}}}`, &ec.Spec.TLS); err != nil {
		t.Fatal(err)
	}
	if s, ca, _ := cozystackTLS(&ec); s != "" || ca != "etcd-server-tls" {
		t.Errorf("server TLS only: client Secret %q, CA Secret %q", s, ca)
	}
	if err := jsonInto(`{"client":{"certManager":{"serverIssuerRef":{"name":"ca"},"operatorClientIssuerRef":{"name":"ca"}}}}`, &ec.Spec.TLS); err != nil {
		t.Fatal(err)
	}
	if s, ca, _ := cozystackTLS(&ec); s != "etcd-operator-client-tls" || ca != "etcd-server-tls" {
		t.Errorf("cert-manager: client Secret %q, CA Secret %q", s, ca)
	}
}

// jsonInto decodes s into v.
func jsonInto(s string, v any) error { return json.Unmarshal([]byte(s), v) }
