package status

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	etcdengine "github.com/hactl-dev/hactl/engine/etcd"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/model"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Pods that match the selector with a huge ordinal or one written with a
// leading zero are no members: status neither loops up to the huge
// ordinal nor maps etcd-01 onto etcd-1.
func TestDecodeOddOrdinals(t *testing.T) {
	lbl := map[string]string{"app": "etcd"}
	sts := appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "db", UID: "sts"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}}}}
	pod := func(name string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "db", Labels: lbl, UID: types.UID("uid-" + name)}}
	}
	objs := &Objects{StatefulSets: []appsv1.StatefulSet{sts},
		Pods: []corev1.Pod{pod("etcd-0"), pod("etcd-01"), pod("etcd-99999999999"), pod("etcd-4096"), pod("etcd-+2"), pod("etcd-")}}
	done := make(chan struct{})
	var names []string
	go func() {
		defer close(done)
		obs := decodeStatefulSet(&sts, newIndex(objs), time.Now(), parts)
		for _, m := range obs.Members {
			names = append(names, m.Name)
			if m.Name == "etcd-1" && m.Pod != nil {
				t.Errorf("etcd-1 mapped to pod %s", m.Pod.Name)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("decoding did not finish: it loops over the huge ordinal")
	}
	want := []string{"etcd-0", "etcd-1", "etcd-2", "etcd-4096"}
	if len(names) != len(want) {
		t.Fatalf("%d members (first %v), want %v", len(names), names[:min(len(names), 6)], want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("members %v, want %v", names, want)
		}
	}
}

type staticSource struct{ objs *Objects }

func (s staticSource) Read(context.Context, string) (*Objects, error) { return s.objs, nil }

// The observation's time is when it began, not when it ended: a slow
// read or probe never makes the facts look fresher than they are.
func TestObservationTimeIsItsStart(t *testing.T) {
	lbl := map[string]string{"app": "etcd"}
	sts := appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "db", UID: "sts"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "registry.k8s.io/etcd:3.6.16-0"}}}}}}
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	calls := 0
	o := &Observer{Source: staticSource{&Objects{StatefulSets: []appsv1.StatefulSet{sts}}}, Engines: registry.Engines(), Verdict: judged(model.VerdictOptions{}),
		Now: func() time.Time { calls++; return start.Add(time.Duration(calls-1) * 10 * time.Second) }}
	res, _, err := o.Observe(context.Background(), "db", "")
	if err != nil || len(res) != 1 {
		t.Fatalf("observe: %v (%d results)", err, len(res))
	}
	if got := res[0].Observation.At; !got.Equal(start) {
		t.Errorf("observation time %s, want its start %s", got, start)
	}
}

// gatedEngine answers a probe of any pod but slow at once, and of slow
// only once released is closed (or after 10 s).
type gatedEngine struct {
	// Engine decodes as etcd does: the clusters are found by their
	// containers, without a label.
	etcdengine.Engine
	slow     string
	released chan struct{}
	waited   atomic.Bool // slow's probe gave up waiting
}

func (*gatedEngine) Members(engine.ProbeOptions) engine.MemberOps { return nil }
func (e *gatedEngine) Probe(_ context.Context, ts []engine.Target, _ engine.ProbeOptions) []model.EngineFacts {
	if ts[0].Pod == e.slow {
		select {
		case <-e.released:
		case <-time.After(10 * time.Second):
			e.waited.Store(true)
		}
	}
	return []model.EngineFacts{{Reachable: true, MemberID: ts[0].Pod}}
}

// A cluster whose members have all answered is evaluated while another
// cluster's probe is still out: the verdicts add no time after the last
// answer but the last cluster's.
func TestClusterEvaluatedOnceItsMembersAnswered(t *testing.T) {
	var objs Objects
	for _, name := range []string{"fast", "slow"} {
		lbl := map[string]string{"app": name}
		objs.StatefulSets = append(objs.StatefulSets, appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "db", UID: types.UID(name)},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: lbl},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "registry.k8s.io/etcd:3.6.16-0"}}}}}})
		objs.Pods = append(objs.Pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Namespace: "db", Labels: lbl, UID: types.UID(name + "-0")},
			Spec: corev1.PodSpec{NodeName: "node-0"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	eng := &gatedEngine{slow: "slow-0", released: make(chan struct{})}
	var once sync.Once
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var calls atomic.Int32
	o := &Observer{Source: staticSource{&objs}, Engines: map[model.Engine]engine.Engine{etcdengine.Name: eng},
		Dial: func(context.Context, string, string, int) (net.Conn, error) { return nil, errors.New("not dialled") },
		Now: func() time.Time {
			// The first call starts the observation; the next is an
			// evaluation, which only fast can be ready for.
			if calls.Add(1) == 2 {
				once.Do(func() { close(eng.released) })
			}
			return start
		}}
	res, _, err := o.Observe(context.Background(), "db", "")
	if err != nil || len(res) != 2 {
		t.Fatalf("observe: %v (%d results)", err, len(res))
	}
	if eng.waited.Load() {
		t.Error("slow's probe was still out and fast was not evaluated: verdicts wait for every cluster's probes")
	}
	for _, r := range res {
		m := r.Observation.Members
		if len(m) != 1 || m[0].Engine == nil || m[0].Engine.MemberID != r.Observation.Cluster.Name+"-0" {
			t.Errorf("%s: members %+v, want its own probe's answer", r.Observation.Cluster.Name, m)
		}
	}
}
