package classify

import (
	"slices"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/model"
)

type resumeRow struct {
	name   string
	mutate func(*model.Observation)
	verb   model.Verb
	steps  []model.StepKind
	codes  []model.Code
	check  func(*testing.T, model.Decision)
}

// The states a replace of etcd-1 passes through, as a rerun after a crash
// would observe them, each with the ledger entry the first run wrote.
func resumeRows() []resumeRow {
	ledger := func(o *model.Observation) { o.Ledger = []model.LedgerEntry{inProgress()} }
	removed := func(o *model.Observation) {
		ledger(o)
		down(o, 1)
		setPeers(o, withoutPeer(peers(3), memberIDs[1]))
	}
	learner := model.Peer{ID: learnerID, PeerURLs: []string{peerURL(1)}, IsLearner: true}
	learnerAdded := func(o *model.Observation) {
		removed(o)
		setPeers(o, append(withoutPeer(peers(3), memberIDs[1]), learner))
	}
	pvcMarked := func(o *model.Observation) { learnerAdded(o); o.Members[1].PVC.DeletionMarked = true }
	podMarked := func(o *model.Observation) { pvcMarked(o); o.Members[1].Pod.DeletionMarked = true }
	gone := func(o *model.Observation) { podMarked(o); o.Members[1].Pod = nil; o.Members[1].PVC = nil }
	newPod := func(o *model.Observation) {
		gone(o)
		m := &o.Members[1]
		m.Pod = &model.PodFacts{Name: "etcd-1", UID: "pod-uid-1b", ResourceVersion: "300", Node: "node-1", Phase: "Running",
			Started: true, Running: true, EverStarted: true, Revision: "etcd-rev1", CreatedAt: now}
		m.PVC = &model.PVCFacts{Name: "data-etcd-1", UID: "pvc-uid-1b", ResourceVersion: "301", Phase: "Bound"}
		m.Engine = &model.EngineFacts{Reachable: false, Failure: model.ProbeFailureConnect, Err: "connection refused", ProbedAt: now}
	}
	learnerRuns := func(applied uint64) func(o *model.Observation) {
		return func(o *model.Observation) {
			newPod(o)
			o.Members[1].Engine = &model.EngineFacts{Reachable: true, MemberID: learnerID, ClusterID: clusterID, LeaderID: memberIDs[0],
				RaftTerm: 4, RaftIndex: 5000, RaftApplied: applied, IsLearner: true, Version: "3.6.16", ProbedAt: now,
				PeersErr: "a learner does not serve the member list"}
			l := learner
			l.Name = "etcd-1"
			setPeers(o, append(withoutPeer(peers(3), memberIDs[1]), l))
		}
	}
	promoted := func(ready bool) func(o *model.Observation) {
		return func(o *model.Observation) {
			learnerRuns(5000)(o)
			e := o.Members[1].Engine
			e.IsLearner, e.PeersErr = false, ""
			l := learner
			l.Name, l.IsLearner = "etcd-1", false
			setPeers(o, append(withoutPeer(peers(3), memberIDs[1]), l))
			o.Members[1].Pod.Ready = ready
		}
	}
	afterRemove := []model.StepKind{model.StepAwaitPodRecreated, model.StepAwaitMemberStarted, model.StepAwaitCaughtUp, model.StepPromoteLearner, model.StepAwaitVoterReady}
	return []resumeRow{
		{name: "crashed after taking the lock", mutate: ledger, verb: model.VerbProceed, steps: fullPlan},
		{name: "crashed after removing the member", mutate: removed, verb: model.VerbProceed,
			steps: append([]model.StepKind{model.StepAddLearner, model.StepDeletePVC, model.StepDeletePod, model.StepAwaitPodGone}, afterRemove...)},
		{name: "crashed after adding the learner", mutate: learnerAdded, verb: model.VerbProceed,
			steps: append([]model.StepKind{model.StepDeletePVC, model.StepDeletePod, model.StepAwaitPodGone}, afterRemove...)},
		{name: "crashed after deleting the volume", mutate: pvcMarked, verb: model.VerbProceed,
			steps: append([]model.StepKind{model.StepDeletePod, model.StepAwaitPodGone}, afterRemove...)},
		{name: "crashed after deleting the pod", mutate: podMarked, verb: model.VerbProceed,
			steps: append([]model.StepKind{model.StepAwaitPodGone}, afterRemove...)},
		{name: "crashed while the pod was gone", mutate: gone, verb: model.VerbProceed, steps: afterRemove},
		{name: "crashed while the new pod started", mutate: newPod, verb: model.VerbProceed, steps: afterRemove[1:]},
		{name: "crashed while the learner caught up", mutate: learnerRuns(100), verb: model.VerbProceed, steps: afterRemove[2:]},
		{name: "crashed before promoting", mutate: learnerRuns(5000), verb: model.VerbProceed, steps: afterRemove[3:],
			check: func(t *testing.T, d model.Decision) {
				if d.Steps[0].MemberID != learnerID {
					t.Errorf("promote %q, want the learner %s", d.Steps[0].MemberID, learnerID)
				}
			}},
		{name: "crashed after promoting, pod not ready yet", mutate: promoted(false), verb: model.VerbProceed, steps: afterRemove[4:]},
		{name: "crashed after the member became ready", mutate: promoted(true), verb: model.VerbDone, steps: []model.StepKind{}},
		{name: "the new pod came back on the old volume", verb: model.VerbProceed,
			mutate: func(o *model.Observation) {
				newPod(o)
				o.Members[1].PVC = &model.PVCFacts{Name: "data-etcd-1", UID: "pvc-uid-1", ResourceVersion: "250", Phase: "Bound"}
			},
			steps: append([]model.StepKind{model.StepDeletePVC, model.StepDeletePod, model.StepAwaitPodGone}, afterRemove...),
			check: func(t *testing.T, d model.Decision) {
				if d.Fences[1].UID != "pod-uid-1b" || d.Fences[0].UID != "pvc-uid-1" || d.Fences[0].ResourceVersion != "250" {
					t.Errorf("fences %+v", d.Fences)
				}
			}},
		{name: "a voter holds the peer URL while the old pod runs", verb: model.VerbRefuse, codes: []model.Code{model.CodeUnexpectedMember},
			mutate: func(o *model.Observation) {
				removed(o)
				l := learner
				l.IsLearner = false
				setPeers(o, append(withoutPeer(peers(3), memberIDs[1]), l))
			}},
	}
}

func TestClassifyResumes(t *testing.T) {
	for _, r := range resumeRows() {
		t.Run(r.name, func(t *testing.T) {
			obs := healthy()
			r.mutate(&obs)
			d := judgedClassify(obs, replace1, now)
			if d.Verb != r.verb {
				t.Fatalf("verb = %s, want %s\n%s", d.Verb, r.verb, strings.Join(Describe(d), "\n"))
			}
			if r.steps != nil {
				got := kinds(d)
				if got == nil {
					got = []model.StepKind{}
				}
				if !slices.Equal(got, r.steps) {
					t.Errorf("steps = %v, want %v", got, r.steps)
				}
			}
			var codes []model.Code
			for _, b := range d.Blockers {
				codes = append(codes, b.Code)
			}
			if !slices.Equal(codes, r.codes) {
				t.Errorf("blockers = %v, want %v", codes, r.codes)
			}
			if d.Resume != inProgress().ID {
				t.Errorf("resume = %q", d.Resume)
			}
			if !reflectEqualReplaced(d.Replaced, inProgress().Replaced) {
				t.Errorf("replaced = %+v, want the ledger's", d.Replaced)
			}
			assertFencesObserved(t, obs, d)
			if r.check != nil {
				r.check(t, d)
			}
		})
	}
}

func reflectEqualReplaced(a, b model.Replaced) bool {
	return a.PodUID == b.PodUID && a.PVCUID == b.PVCUID && a.MemberID == b.MemberID && slices.Equal(a.PeerURLs, b.PeerURLs)
}

// TestResumeNeverDeletesTwice walks the states of one replace in order:
// once an object is deletion-marked or gone, no later decision names it,
// and the member is removed only while it is listed.
func TestResumeNeverDeletesTwice(t *testing.T) {
	deleted := map[string]bool{}
	removed := false
	for _, r := range resumeRows() {
		if r.verb == model.VerbRefuse || r.name == "the new pod came back on the old volume" {
			continue // not a state of this walk
		}
		obs := healthy()
		r.mutate(&obs)
		d := judgedClassify(obs, replace1, now)
		for _, f := range d.Fences {
			if deleted[f.UID] {
				t.Errorf("%s: deletes %s %s again", r.name, f.Kind, f.UID)
			}
		}
		if d.MemberFence != nil && removed {
			t.Errorf("%s: removes member %s again", r.name, d.MemberFence.ID)
		}
		// What this state shows as done.
		m := obs.Members[1]
		if m.Pod == nil || m.Pod.UID != "pod-uid-1" || m.Pod.DeletionMarked {
			deleted["pod-uid-1"] = true
		}
		if m.PVC == nil || m.PVC.UID != "pvc-uid-1" || m.PVC.DeletionMarked {
			deleted["pvc-uid-1"] = true
		}
		if !slices.ContainsFunc(obs.Members[0].Engine.Peers, func(p model.Peer) bool { return p.ID == memberIDs[1] }) {
			removed = true
		}
	}
	if !deleted["pod-uid-1"] || !removed {
		t.Fatal("the walk never passed the delete; the test proves nothing")
	}
}

// assertFencesObserved checks that every delete names an object exactly as
// observed (UID and resourceVersion), not deletion-marked, and every
// removal names a listed member.
func assertFencesObserved(t *testing.T, obs model.Observation, d model.Decision) {
	t.Helper()
	for _, s := range d.Steps {
		switch s.Kind {
		case model.StepDeletePod, model.StepDeletePVC:
			if s.Fence == nil {
				t.Fatalf("%s without a fence", s.Kind)
			}
			found := false
			for _, m := range obs.Members {
				if p := m.Pod; p != nil && s.Kind == model.StepDeletePod && p.UID == s.Fence.UID {
					found = p.ResourceVersion == s.Fence.ResourceVersion && p.Fingerprint == s.Fence.Fingerprint && !p.DeletionMarked && p.Name == s.Fence.Name
				}
				if c := m.PVC; c != nil && s.Kind == model.StepDeletePVC && c.UID == s.Fence.UID {
					found = c.ResourceVersion == s.Fence.ResourceVersion && c.Fingerprint == s.Fence.Fingerprint && !c.DeletionMarked && c.Name == s.Fence.Name
				}
			}
			if !found {
				t.Errorf("%s fence %+v does not match an observed, undeleted object", s.Kind, *s.Fence)
			}
			if !slices.Contains(d.Fences, *s.Fence) {
				t.Errorf("%s fence %+v missing from model.Decision.Fences", s.Kind, *s.Fence)
			}
		case model.StepRemoveMember:
			if d.MemberFence == nil || d.MemberFence.ID != s.MemberID {
				t.Errorf("remove %s without the member fence %+v", s.MemberID, d.MemberFence)
			}
			listed := false
			for _, m := range obs.Members {
				if m.Engine != nil && slices.ContainsFunc(m.Engine.Peers, func(p model.Peer) bool { return p.ID == s.MemberID }) {
					listed = true
				}
			}
			if !listed {
				t.Errorf("removes member %s, which no member lists", s.MemberID)
			}
		}
	}
}
