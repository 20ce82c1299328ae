package status

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
)

// memoryObs is a three-member cluster observed at at: probed (each
// member answering) or read from the caches alone.
func memoryObs(name string, at time.Time, probed bool) model.Observation {
	o := model.Observation{At: at, EngineProbed: probed, Cluster: model.ClusterFacts{Namespace: "db", Name: name}}
	for _, n := range []string{"0", "1", "2"} {
		m := model.Member{Name: name + "-" + n, Pod: &model.PodFacts{Name: name + "-" + n, UID: "uid-" + n}}
		if probed {
			m.Engine = &model.EngineFacts{Reachable: true, MemberID: "id-" + n + "@" + at.Format(time.TimeOnly)}
		}
		o.Members = append(o.Members, m)
	}
	return o
}

// A read between probes carries each member's last answer only for the
// pod incarnation that gave it; a cluster never probed is left unasked,
// and a probe that began earlier never replaces a later one's answers.
func TestProbeMemoryGraftsByPodIncarnation(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	var p probeMemory
	p.remember([]model.Observation{memoryObs("etcd", t0, true), memoryObs("cold", t0, false)}, true)

	cached := []model.Observation{memoryObs("etcd", t0.Add(time.Minute), false), memoryObs("cold", t0.Add(time.Minute), false)}
	cached[0].Members[2].Pod.UID = "recreated"
	p.graft(cached, true)
	ms := cached[0].Members
	if !cached[0].EngineProbed || ms[0].Engine == nil || ms[1].Engine == nil {
		t.Fatalf("facts of unchanged pods not grafted: probed %v, %+v %+v", cached[0].EngineProbed, ms[0].Engine, ms[1].Engine)
	}
	if ms[2].Engine != nil {
		t.Error("facts of a replaced pod were reused for its successor")
	}
	if cached[1].EngineProbed || cached[1].Members[0].Engine != nil {
		t.Error("a cluster that was never probed was marked probed")
	}

	// A slow probe that began before the one remembered finishes last.
	p.remember([]model.Observation{memoryObs("etcd", t0.Add(-time.Minute), true)}, false)
	again := []model.Observation{memoryObs("etcd", t0.Add(2*time.Minute), false)}
	p.graft(again, false)
	if got, want := again[0].Members[0].Engine.MemberID, "id-0@"+t0.Format(time.TimeOnly); got != want {
		t.Errorf("member answer %q, want the later probe's %q", got, want)
	}

	// The cluster recreated under the same name (another UID): not
	// probed until its own first probe, though its pods keep their names.
	recreated := []model.Observation{memoryObs("etcd", t0.Add(3*time.Minute), false)}
	recreated[0].Cluster.UID = "uid-recreated"
	p.graft(recreated, false)
	if recreated[0].EngineProbed || recreated[0].Members[0].Engine != nil {
		t.Error("a cluster recreated under the same name inherited its predecessor's probe")
	}

	// A read of one cluster forgets no other; a read of every cluster in
	// scope forgets those that are gone.
	p.remember([]model.Observation{memoryObs("other", t0, true)}, false)
	if len(p.clusters) != 2 {
		t.Fatalf("%d clusters remembered after a read of one, want 2", len(p.clusters))
	}
	p.graft([]model.Observation{memoryObs("other", t0.Add(time.Minute), false)}, true)
	if len(p.clusters) != 1 {
		t.Errorf("%d clusters remembered after a read of every cluster without etcd, want 1 (etcd is gone)", len(p.clusters))
	}
}

// A watcher's read between probes (a watch event) is judged with the
// members' last answers: the verdict sees both the pod that lost its
// readiness and the leader the members named, without asking anyone; the
// direct read's probe carries into the watches' first read the same way.
func TestWatcherJudgesWatchEventsWithTheLastProbe(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-g"))
	eng := &raftByPod{leader: "etcd-g-0", names: []string{"etcd-g-0", "etcd-g-1", "etcd-g-2"}}
	obs := Observer{Engines: map[model.Engine]engine.Engine{etcdengine.Name: eng},
		Dial: func(context.Context, string, string, int) (net.Conn, error) { return nil, errors.New("not dialled") }}

	w := NewWatcher(admin, ns, WatchOptions{Observer: obs})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(func() { cancel(); w.Stop() })
	w.ExpectDirect()
	if rs, _, err := w.ObserveDirect(ctx, "", true); err != nil || len(rs) != 1 || rs[0].Analysis.LeaderMember != "etcd-g-0" {
		t.Fatalf("direct read: %v %+v", err, rs)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	asked := len(eng.askedOf())
	rs, _, err := w.Observe(ctx, "etcd-g", false)
	if err != nil || len(rs) != 1 {
		t.Fatalf("cache read: %v (%d)", err, len(rs))
	}
	if r := rs[0]; !r.Observation.EngineProbed || r.Analysis.LeaderMember != "etcd-g-0" || !r.Verdict.FailoverReady {
		t.Fatalf("the first cache read lacks the direct read's answers: probed %v, leader %q, reasons %v",
			r.Observation.EngineProbed, r.Analysis.LeaderMember, r.Verdict.Reasons)
	}

	fixtures.MarkNotReady(t, admin, ns, "etcd-g-1")
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		rs, _, err = w.Observe(ctx, "etcd-g", false)
		return err == nil && len(rs) == 1 && hasReason(rs[0], model.ReasonPodNotReady, "etcd-g-1"), err
	})
	r := rs[0]
	if r.Analysis.LeaderMember != "etcd-g-0" || r.Observation.Members[1].Engine == nil || r.Observation.Members[1].Engine.MemberID != "id-etcd-g-1" {
		t.Errorf("the watch event was judged without the members' answers: leader %q, etcd-g-1 %+v", r.Analysis.LeaderMember, r.Observation.Members[1].Engine)
	}
	if n := len(eng.askedOf()); n != asked {
		t.Errorf("reads between probes asked the members (%d asks, %d before)", n, asked)
	}

	// The pod recreated: its predecessor's answer is not its own.
	if err := admin.CoreV1().Pods(ns).Delete(ctx, "etcd-g-2", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		rs, _, err = w.Observe(ctx, "etcd-g", false)
		return err == nil && len(rs) == 1 && rs[0].Observation.Members[2].Pod == nil, err
	})
	if e := rs[0].Observation.Members[2].Engine; e != nil {
		t.Errorf("a deleted member's pod still carries its answer: %+v", e)
	}
	if !slices.Contains(eng.askedOf(), ns+"/etcd-g-2") {
		t.Error("etcd-g-2 was never asked")
	}
}
