package classify

import (
	"cmp"
	"slices"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/model"
)

// recreatable are verdict rules handed in for an engine whose members
// rebuild themselves on a new volume (as the http engine's "replace:
// recreate"): the phases, lags and leader are what the test sets.
type recreatable struct {
	leader  string
	quorum  int
	phases  map[string]model.Phase
	lags    map[string]int64
	reasons []model.Reason
	says    bool
	// clusterID and ids: the reference cluster ID ("c1" when empty) and
	// how many the members answered with (1 when 0).
	clusterID string
	ids       int
}

func (r recreatable) Judge(in model.JudgeInput) model.Judgement {
	n := len(in.Observation.Members)
	j := model.Judgement{Phases: make([]model.Phase, n), Lags: make([]*int64, n), Formed: true, ClusterID: cmp.Or(r.clusterID, "c1"), ClusterIDs: max(r.ids, 1),
		Voters: n, Quorum: r.quorum, Tolerance: n - r.quorum, LeaderMember: r.leader, LeaderID: r.leader, Reasons: r.reasons}
	for i, m := range in.Observation.Members {
		j.Phases[i] = model.PhaseMember
		if ph, ok := r.phases[m.Name]; ok {
			j.Phases[i] = ph
		}
		lag := r.lags[m.Name]
		j.Lags[i] = &lag
		if in.PodPhases[i] != "" {
			j.Phases[i] = in.PodPhases[i]
		}
	}
	return j
}

func (recreatable) LagThreshold(model.Thresholds, model.ClusterFacts) uint64 { return 100 }

func (r recreatable) Recreates(model.ClusterFacts) (bool, string) {
	if r.says {
		return true, ""
	}
	return false, "its mapping does not say so"
}

// recreateObs is a 3-member cluster of the toy engine, each member
// answering its probe.
func recreateObs() model.Observation {
	obs := toyObs()
	obs.EngineProbed = true
	for i := range obs.Members {
		obs.Members[i].Engine = &model.EngineFacts{Reachable: true, MemberID: obs.Members[i].Name, ProbedAt: now}
	}
	return obs
}

func recreateIntent(member string, r recreatable) model.Intent {
	in := model.Intent{Action: model.ActionReplace, Member: member}
	in.Options.Verdict.Rules = map[model.Engine]model.VerdictRules{engineToy: r}
	return in
}

var recreatePlan = []model.StepKind{model.StepDeletePVC, model.StepDeletePod, model.StepAwaitPodGone, model.StepAwaitPodRecreated, model.StepAwaitCaughtUp}

// TestReplaceByRecreate: an engine whose verdict rules are handed in and
// say its members rebuild themselves is replaced by the fenced delete of
// the member's volume and pod, then a wait until it is caught up; the
// leader, a paused cluster, a broken quorum and an engine that does not
// say so are refused.
func TestReplaceByRecreate(t *testing.T) {
	ok := recreatable{leader: "toy-0", quorum: 2, says: true}
	d := judgedClassify(recreateObs(), recreateIntent("toy-1", ok), now)
	if d.Verb != model.VerbProceed || !slices.Equal(kinds(d), recreatePlan) {
		t.Fatalf("verb %s, steps %v, blockers %v; want %v", d.Verb, kinds(d), d.Blockers, recreatePlan)
	}
	if len(d.Fences) != 2 || d.Fences[0].UID != "pvc-uid-1" || d.Fences[1].UID != "pod-uid-1" || d.Leader != "toy-0" {
		t.Errorf("fences %+v, leader %q", d.Fences, d.Leader)
	}
	if det := d.Steps[4].Detail; !strings.Contains(det, "within 100") {
		t.Errorf("the wait does not name the engine's threshold: %q", det)
	}
	lagging := ok
	lagging.phases = map[string]model.Phase{"toy-2": model.PhaseCatchingUp}
	paused := ok
	paused.reasons = []model.Reason{{Code: model.ReasonMaintenancePaused, Detail: "the documents say paused"}}
	leaderless := ok
	leaderless.leader = ""
	silent := ok
	silent.says = false
	for _, c := range []struct {
		name   string
		member string
		r      recreatable
		want   model.Code
		says   string
	}{
		{"the leader", "toy-0", ok, model.CodeTargetIsLeader, "toy-0 is the leader"},
		{"the quorum", "toy-1", lagging, model.CodeQuorumWouldBreak, "1 caught-up member(s) would remain (toy-0)"},
		{"paused", "toy-1", paused, model.CodeMaintenancePaused, "the documents say paused"},
		{"no leader", "toy-1", leaderless, model.CodeLeaderUnknown, "agree on no leader"},
		{"not said", "toy-1", silent, model.CodeActionUnsupported, "its mapping does not say so"},
		{"no such member", "toy-7", ok, model.CodeMemberNotFound, "no member"},
	} {
		d := judgedClassify(recreateObs(), recreateIntent(c.member, c.r), now)
		if d.Verb != model.VerbRefuse || !slices.Contains(blockerCodes(d), c.want) || len(d.Steps) > 0 {
			t.Errorf("%s: verb %s, blockers %v, steps %v; want %s", c.name, d.Verb, blockerCodes(d), kinds(d), c.want)
			continue
		}
		for _, b := range d.Blockers {
			if b.Code == c.want && !strings.Contains(b.Detail, c.says) {
				t.Errorf("%s: %q does not say %q", c.name, b.Detail, c.says)
			}
		}
	}
	// The lagging member itself may be replaced: the others keep quorum.
	if d := judgedClassify(recreateObs(), recreateIntent("toy-2", lagging), now); d.Verb != model.VerbProceed {
		t.Errorf("replacing the lagging member: %s %v", d.Verb, d.Blockers)
	}
	for _, a := range []model.Action{model.ActionReseed, model.ActionSwitchover, model.ActionSeed} {
		in := recreateIntent("toy-1", ok)
		in.Action = a
		if d := judgedClassify(recreateObs(), in, now); !slices.Equal(blockerCodes(d), []model.Code{model.CodeActionUnsupported}) {
			t.Errorf("%s: blockers %v, want action_unsupported", a, blockerCodes(d))
		}
	}
}

// TestReplaceByRecreateResumes: a rerun after the deletes waits for the
// recreated member, is done once it answers caught up, and deletes a
// volume the new pod came back on; it never names a deleted object.
func TestReplaceByRecreateResumes(t *testing.T) {
	ok := recreatable{leader: "toy-0", quorum: 2, says: true}
	entry := toyEntry(model.ActionReplace, "toy-1")
	entry.Receipts = []model.Receipt{{Seq: 1, Step: model.StepDeletePVC, Outcome: model.OutcomeDone, At: now.Add(-20e9)},
		{Seq: 2, Step: model.StepDeletePod, Outcome: model.OutcomeDone, At: now.Add(-19e9)}}
	recreated := func(ready bool) model.Observation {
		obs := recreateObs()
		obs.Ledger = []model.LedgerEntry{entry}
		m := &obs.Members[1]
		m.Pod.UID, m.PVC.UID, m.Pod.Ready = "pod-uid-new", "pvc-uid-new", ready
		return obs
	}
	behind := ok
	behind.lags = map[string]int64{"toy-1": 5000}
	behind.phases = map[string]model.Phase{"toy-1": model.PhaseCatchingUp}
	if d := judgedClassify(recreated(true), recreateIntent("toy-1", behind), now); d.Verb != model.VerbProceed || !slices.Equal(kinds(d), []model.StepKind{model.StepAwaitCaughtUp}) {
		t.Errorf("catching up: verb %s, steps %v, blockers %v", d.Verb, kinds(d), d.Blockers)
	}
	if d := judgedClassify(recreated(false), recreateIntent("toy-1", ok), now); d.Verb != model.VerbProceed || !slices.Equal(kinds(d), []model.StepKind{model.StepAwaitCaughtUp}) {
		t.Errorf("pod not ready: verb %s, steps %v", d.Verb, kinds(d))
	}
	if d := judgedClassify(recreated(true), recreateIntent("toy-1", ok), now); d.Verb != model.VerbDone {
		t.Errorf("caught up: verb %s, steps %v, blockers %v", d.Verb, kinds(d), d.Blockers)
	}
	back := recreated(true)
	back.Members[1].PVC.UID = "pvc-uid-1" // the new pod came back on the old volume
	d := judgedClassify(back, recreateIntent("toy-1", ok), now)
	if d.Verb != model.VerbProceed || !slices.Equal(kinds(d), recreatePlan) || d.Fences[1].UID != "pod-uid-new" {
		t.Errorf("old volume: verb %s, steps %v, fences %+v", d.Verb, kinds(d), d.Fences)
	}
}

// TestReplaceByRecreateNeverEndsOnAnUnmeasuredMember: a resumed replace is
// done only when the rebuilt member follows the one agreed leader of the
// same cluster, within the threshold of its frontier: never when the
// member leads, answers for a cluster of its own, follows another
// leader, lags, still sits on the old volume, or when the cluster has no
// quorum or was not probed.
func TestReplaceByRecreateNeverEndsOnAnUnmeasuredMember(t *testing.T) {
	ok := recreatable{leader: "toy-0", quorum: 2, says: true}
	entry := toyEntry(model.ActionReplace, "toy-1")
	entry.Receipts = []model.Receipt{{Seq: 1, Step: model.StepDeletePVC, Outcome: model.OutcomeDone, At: now.Add(-20e9)},
		{Seq: 2, Step: model.StepDeletePod, Outcome: model.OutcomeDone, At: now.Add(-19e9)}}
	rebuilt := func() model.Observation {
		obs := recreateObs()
		obs.Ledger = []model.LedgerEntry{entry}
		m := &obs.Members[1]
		m.Pod.UID, m.PVC.UID = "pod-uid-new", "pvc-uid-new"
		for i := range obs.Members {
			obs.Members[i].Engine.LeaderID = "toy-0"
		}
		return obs
	}
	if d := judgedClassify(rebuilt(), recreateIntent("toy-1", ok), now); d.Verb != model.VerbDone {
		t.Fatalf("the reference: verb %s, steps %v, blockers %v", d.Verb, kinds(d), d.Blockers)
	}
	leads := ok
	leads.leader = "toy-1"
	ownCluster := ok
	ownCluster.ids = 2
	behind := ok
	behind.lags = map[string]int64{"toy-1": 5000} // the member phase, yet 5000 behind a threshold of 100
	noQuorum := ok
	noQuorum.reasons = []model.Reason{{Code: model.ReasonQuorumUnavailable, Detail: "1 of 3 voters answered"}}
	for _, c := range []struct {
		name   string
		r      recreatable
		mutate func(*model.Observation)
		want   model.Code // "" : a wait, no blocker
	}{
		{"it leads", leads, nil, model.CodeTargetIsLeader},
		{"two cluster IDs", ownCluster, nil, model.CodeClusterIDSplit},
		{"another cluster than recorded", ok, func(o *model.Observation) { o.Cluster.KnownClusterID = "c0" }, model.CodeClusterIDSplit},
		{"no quorum", noQuorum, nil, model.CodeLeaderUnknown},
		{"not probed", ok, func(o *model.Observation) { o.EngineProbed = false }, model.CodeNotProbed},
		{"lagging", behind, nil, ""},
		{"following another leader", ok, func(o *model.Observation) { o.Members[1].Engine.LeaderID = "toy-2" }, ""},
		{"the old volume still going", ok, func(o *model.Observation) {
			o.Members[1].PVC.UID, o.Members[1].PVC.DeletionMarked = "pvc-uid-1", true
		}, ""},
	} {
		obs := rebuilt()
		if c.mutate != nil {
			c.mutate(&obs)
		}
		d := judgedClassify(obs, recreateIntent("toy-1", c.r), now)
		switch {
		case d.Verb == model.VerbDone:
			t.Errorf("%s: done", c.name)
		case c.want == "" && (d.Verb != model.VerbProceed || d.Deletes()):
			t.Errorf("%s: verb %s, steps %v, blockers %v; want a wait", c.name, d.Verb, kinds(d), d.Blockers)
		case c.want != "" && (d.Verb != model.VerbRefuse || !slices.Contains(blockerCodes(d), c.want) || len(d.Steps) > 0):
			t.Errorf("%s: verb %s, steps %v, blockers %v; want %s", c.name, d.Verb, kinds(d), blockerCodes(d), c.want)
		}
	}
}
