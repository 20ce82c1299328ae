package status

import (
	"context"
	"errors"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/source"
)

// toyLayoutLabel groups bare pods into a cluster in toyLayout.
const toyLayoutLabel = "toy.example/cluster"

// toyLayout is a member source of another kind than StatefulSets, as an
// operator's members or static pods are: every pod labelled
// toyLayoutLabel=<c> is a member of cluster <c>, named by its pod, its
// claim data-<pod>; no StatefulSet, no ordinals in the names.
type toyLayout struct{}

func (toyLayout) Workloads(objs source.Objects, detect source.Detect) []source.Workload {
	byCluster := map[string][]*corev1.Pod{}
	for i := range objs.Pods {
		p := &objs.Pods[i]
		if c := p.Labels[toyLayoutLabel]; c != "" {
			byCluster[p.Namespace+"/"+c] = append(byCluster[p.Namespace+"/"+c], p)
		}
	}
	var out []source.Workload
	for _, pods := range byCluster {
		sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
		first := pods[0]
		t := model.PodTemplate{Namespace: first.Namespace, Labels: first.Labels}
		for i := range first.Spec.Containers {
			t.Containers = append(t.Containers, source.Container(&first.Spec.Containers[i]))
		}
		eng, ok := detect(first.Labels, t)
		if !ok {
			continue
		}
		owner := &metav1.ObjectMeta{Namespace: first.Namespace, Name: first.Labels[toyLayoutLabel], Labels: first.Labels}
		ready := 0
		for _, p := range pods {
			if source.DecodePod(p, time.Time{}).Ready {
				ready++
			}
		}
		out = append(out, source.Workload{Kind: "ToyCluster", Owner: owner, Engine: eng, Template: t,
			PodLabels: labels.Set{toyLayoutLabel: owner.Name}, Replicas: len(pods), Ready: ready,
			List: func(ix *source.Index, at time.Time) []model.Member {
				var ms []model.Member
				for i, p := range pods {
					ms = append(ms, model.Member{Name: p.Name, Ordinal: i, Pod: source.DecodePod(p, at), PVC: ix.PVC(p.Namespace, "data-"+p.Name, at)})
				}
				return ms
			}})
	}
	return out
}

// raftByPod answers every probe as a healthy etcd member named by its
// pod, the pod named leader leading; it dials nothing.
type raftByPod struct {
	etcdengine.Engine
	leader string
	names  []string
	mu     sync.Mutex
	asked  []string
}

// askedOf is who was asked so far.
func (e *raftByPod) askedOf() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.asked)
}

func (e *raftByPod) Probe(_ context.Context, ts []engine.Target, _ engine.ProbeOptions) []model.EngineFacts {
	var out []model.EngineFacts
	for _, t := range ts {
		e.mu.Lock()
		e.asked = append(e.asked, t.Namespace+"/"+t.Pod)
		e.mu.Unlock()
		out = append(out, model.EngineFacts{Reachable: true, MemberID: "id-" + t.Pod, ClusterID: "c1", LeaderID: "id-" + e.leader,
			RaftTerm: 2, RaftIndex: 100, RaftApplied: 100, Version: "3.6.16",
			Peers: e.peers()})
	}
	return out
}

// peers are the member list every member answers with: the pods named
// in names, kv-a to kv-c by default.
func (e *raftByPod) peers() []model.Peer {
	var ps []model.Peer
	for _, n := range e.names {
		ps = append(ps, model.Peer{ID: "id-" + n, Name: n})
	}
	return ps
}

// A cluster whose members no StatefulSet lays out is found, decoded,
// probed and judged through the layout seam alone: its members are its
// pods by name, each probed at its own pod, its budget and Events matched
// through the pods' labels and names; a StatefulSet cluster read
// alongside is found as before.
func TestClustersFromAnotherLayout(t *testing.T) {
	created := goldenNow.Add(-time.Hour)
	var objs Objects
	for _, n := range []string{"kv-c", "kv-a", "kv-b"} {
		objs.Pods = append(objs.Pods, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: n, UID: types.UID("uid-" + n), CreationTimestamp: metav1.NewTime(created),
				Labels: map[string]string{toyLayoutLabel: "kv", LabelEngine: "etcd"}},
			Spec: corev1.PodSpec{NodeName: "node-" + n, Containers: []corev1.Container{{Name: "etcd", Image: "registry.k8s.io/etcd:3.6.16-0"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "etcd", Ready: true, Started: ptr.To(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
		})
		objs.PVCs = append(objs.PVCs, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "data-" + n, UID: types.UID("pvc-" + n)},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}})
	}
	objs.PDBs = []policyv1.PodDisruptionBudget{{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "kv"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{toyLayoutLabel: "kv"}}}}}
	objs.Events = []corev1.Event{{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "e1"}, Reason: "Pulled", Message: "pulled on kv-b",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "kv-b"}, LastTimestamp: metav1.NewTime(created)}}
	objs.Services = []corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "kv-client"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.9", Selector: map[string]string{toyLayoutLabel: "kv"}}}}
	slice := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "kv-client-x", Labels: map[string]string{discoveryv1.LabelServiceName: "kv-client"}}}
	for _, n := range []string{"kv-a", "kv-b", "kv-c"} {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: n}})
	}
	objs.EndpointSlices = []discoveryv1.EndpointSlice{slice}
	lbl := map[string]string{"app": "etcd"}
	objs.StatefulSets = []appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "db", UID: "sts", Labels: map[string]string{LabelEngine: "etcd"}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "registry.k8s.io/etcd:3.6.16-0"}}}}}}}

	eng := &raftByPod{leader: "kv-b", names: []string{"kv-a", "kv-b", "kv-c"}}
	o := &Observer{Source: staticSource{&objs}, Engines: map[model.Engine]engine.Engine{etcdengine.Name: eng},
		Dial:    func(context.Context, string, string, int) (net.Conn, error) { return nil, errors.New("not dialled") },
		Now:     func() time.Time { return goldenNow },
		Layouts: []source.Layout{source.StatefulSets{}, toyLayout{}}}
	res, _, err := o.Observe(context.Background(), "db", "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range res {
		names = append(names, r.Observation.Cluster.Name)
	}
	if !slices.Equal(names, []string{"etcd", "kv"}) {
		t.Fatalf("clusters %q, want the StatefulSet's and the layout's, sorted", names)
	}
	kv := res[1]
	var members []string
	for _, m := range kv.Observation.Members {
		members = append(members, m.Name)
		if m.Pod == nil || m.PVC == nil || m.Engine == nil || m.Engine.MemberID != "id-"+m.Name {
			t.Errorf("member %s: pod %v, claim %v, probe %+v", m.Name, m.Pod, m.PVC, m.Engine)
		}
	}
	if !slices.Equal(members, []string{"kv-a", "kv-b", "kv-c"}) {
		t.Errorf("members %q, want the pods by name", members)
	}
	asked := eng.askedOf()
	sort.Strings(asked)
	if !slices.Equal(asked, []string{"db/kv-a", "db/kv-b", "db/kv-c"}) {
		t.Errorf("probed %q, want each member at its own pod (the StatefulSet's pod does not run)", asked)
	}
	if kv.Observation.PDB == nil || kv.Observation.PDB.Name != "kv" {
		t.Errorf("budget %+v, want kv's, matched by the pods' labels", kv.Observation.PDB)
	}
	if len(kv.Observation.Events) != 1 || kv.Observation.Events[0].Object != "Pod/kv-b" {
		t.Errorf("events %+v, want kv-b's", kv.Observation.Events)
	}
	if ce := kv.Observation.ClientEndpoints; ce == nil || ce.Service != "kv-client" || ce.Ready != 3 {
		t.Errorf("client endpoints %+v, want kv-client's three, matched by the pods' labels", ce)
	}
	if kv.Analysis.LeaderMember != "kv-b" || !kv.Verdict.ControlReady || !kv.Verdict.FailoverReady {
		t.Errorf("leader %q, control-ready %v, failover-ready %v (reasons %v)", kv.Analysis.LeaderMember, kv.Verdict.ControlReady, kv.Verdict.FailoverReady, kv.Verdict.Reasons)
	}
	if _, _, err := o.Observe(context.Background(), "db", "nope"); err == nil || !strings.Contains(err.Error(), "etcd") || !strings.Contains(err.Error(), "kv") {
		t.Errorf("an unknown name: %v, want both layouts' clusters named", err)
	}
}
