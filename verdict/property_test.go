package verdict

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// randomObservation perturbs the healthy base at random: every field the
// verdict reads may be missing, flipped or skewed.
func randomObservation(r *rand.Rand) model.Observation {
	o := healthy()
	n := r.IntN(6)
	o.Cluster.Replicas = r.IntN(6)
	o.Members = nil
	for i := range n {
		m := newMember(i, max(n, 1))
		o.Members = append(o.Members, m)
	}
	pick := func(k int) bool { return r.IntN(k) == 0 }
	for i := range o.Members {
		m := &o.Members[i]
		if pick(8) {
			m.Pod = nil
		} else {
			p := m.Pod
			p.Running, p.Ready, p.EverStarted, p.Started = !pick(5), !pick(4), !pick(6), !pick(6)
			p.DeletionMarked = pick(10)
			p.Node = []string{"", "kwok-node-0", "kwok-node-1", "kwok-node-2"}[r.IntN(4)]
			p.Waiting = []model.WaitingKind{model.WaitingNone, model.WaitingCrashLoop, model.WaitingPullFailure, model.WaitingUnscheduled, model.WaitingOther}[r.IntN(5)]
		}
		if pick(8) {
			m.PVC = nil
		} else if pick(8) {
			m.PVC.Phase = "Pending"
		}
		switch r.IntN(8) {
		case 0:
			m.Engine = nil
		case 1:
			m.Engine = &model.EngineFacts{Failure: model.AllProbeFailures[r.IntN(len(model.AllProbeFailures))]}
		}
		e := m.Engine
		if e == nil || !e.Reachable {
			continue
		}
		if pick(6) {
			e.ClusterID = []string{"", otherID}[r.IntN(2)]
		}
		if pick(5) {
			e.LeaderID = []string{"", "0", memberID(r.IntN(6)), e.MemberID}[r.IntN(4)]
		}
		if pick(6) {
			e.Peers = peers(r.IntN(5))
		}
		if pick(6) && len(e.Peers) > 0 {
			e.Peers[r.IntN(len(e.Peers))].IsLearner = true
		}
		e.IsLearner = pick(8)
		e.RaftIndex = uint64(r.IntN(10000))
		e.RaftApplied = uint64(r.IntN(10000))
		if pick(6) {
			e.Version = "3.5.21"
		}
		if pick(10) {
			e.Alarms = []model.Alarm{{Type: []string{"NOSPACE", "CORRUPT", "OTHER"}[r.IntN(3)], MemberID: memberID(r.IntN(4))}}
		}
		e.DBSize = int64(r.IntN(3 << 30))
	}
	if pick(5) {
		o.PDB = nil
	} else {
		o.PDB.MaxUnavailable, o.PDB.MinAvailable = r.IntN(4)-1, r.IntN(4)-1
	}
	if pick(6) {
		o.ClientEndpoints = nil
	}
	o.EngineProbed = !pick(5)
	o.At = now.Add(-time.Duration(r.IntN(60)) * time.Second)
	o.Cluster.CreatedAt = now.Add(-time.Duration(r.IntN(30)) * time.Minute)
	if pick(4) {
		o.Cluster.Template.InitialClusterState = "new"
	}
	o.Cluster.Shape = model.AllShapes[r.IntN(len(model.AllShapes))]
	if pick(5) {
		o.Cluster.KnownClusterID = clusterID
	}
	return o
}

func TestInvariantsOnRandomObservations(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	codes := model.AllReasonCodes()
	for i := range 5000 {
		obs := randomObservation(r)
		d, v := Evaluate(obs, now, judged(model.VerdictOptions{}))
		a := Analyze(obs, now, judged(model.VerdictOptions{}))
		if d2, v2, a2 := EvaluateAll(obs, now, judged(model.VerdictOptions{})); !reflect.DeepEqual(d2, d) || !reflect.DeepEqual(v2, v) || !reflect.DeepEqual(a2, a) {
			t.Fatalf("#%d: EvaluateAll differs from Evaluate and Analyze:\n%+v\n%+v\n%+v\nagainst\n%+v\n%+v\n%+v", i, d2, v2, a2, d, v, a)
		}

		control, failover := true, true
		for j, x := range v.Reasons {
			if !slices.Contains(codes, x.Code) {
				t.Fatalf("#%d: unknown code %s", i, x.Code)
			}
			if x.Detail == "" {
				t.Fatalf("#%d: %s without detail", i, x.Code)
			}
			switch x.Code.Impact() {
			case model.ImpactControl:
				control, failover = false, false
			case model.ImpactFailover:
				failover = false
			}
			if j > 0 && v.Reasons[j-1].Code.Impact() < x.Code.Impact() {
				t.Fatalf("#%d: reasons not sorted by impact", i)
			}
		}
		if control != v.ControlReady || failover != v.FailoverReady {
			t.Fatalf("#%d: readiness does not follow from the reasons", i)
		}
		if !obs.EngineProbed && v.FailoverReady {
			t.Fatalf("#%d: failover-ready without probes", i)
		}
		if a.Quorum != a.Voters/2+1 || a.Tolerance != a.Voters-a.Quorum {
			t.Fatalf("#%d: quorum arithmetic %+v", i, a)
		}
		for _, m := range d.Members {
			if !slices.Contains(model.AllPhases, m.Phase) {
				t.Fatalf("#%d: %s phase %q", i, m.Name, m.Phase)
			}
			if m.Lag != nil && (a.Frontier == nil || *m.Lag < 0) {
				t.Fatalf("#%d: %s lag %d without a frontier or negative", i, m.Name, *m.Lag)
			}
			if m.Phase == model.PhaseMember && m.Lag == nil {
				t.Fatalf("#%d: %s is a member without a known lag", i, m.Name)
			}
		}
	}
}
