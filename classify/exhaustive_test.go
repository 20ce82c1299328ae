package classify

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/verdict"
)

// memberState is one way a single member can look.
type memberState struct {
	name  string
	apply func(o *model.Observation, i int)
}

var memberStates = []memberState{
	{"healthy", func(*model.Observation, int) {}},
	{"down", down},
	{"lagging", func(o *model.Observation, i int) { o.Members[i].Engine.RaftApplied = 10 }},
	{"deletion-marked", func(o *model.Observation, i int) { o.Members[i].Pod.DeletionMarked = true }},
	{"never-started", neverStartedPod},
	{"never-started-old-revision", func(o *model.Observation, i int) { neverStartedPod(o, i); o.Members[i].Pod.Revision = "etcd-rev0" }},
	{"absent", func(o *model.Observation, i int) {
		o.Members[i].Pod = nil
		o.Members[i].Engine = nil
	}},
	{"removed", func(o *model.Observation, i int) {
		down(o, i)
		setPeers(o, withoutPeer(o.Members[(i+1)%len(o.Members)].Engine.Peers, memberIDs[i]))
	}},
	{"diverged", func(o *model.Observation, i int) {
		e := o.Members[i].Engine
		e.ClusterID, e.LeaderID = otherID, e.MemberID
		e.Peers = []model.Peer{peers(3)[i]}
	}},
	{"pvc-terminating", func(o *model.Observation, i int) { o.Members[i].PVC.DeletionMarked = true }},
}

type lockState struct {
	name string
	lock *model.LockFacts
}

var lockStates = []lockState{
	{"none", nil},
	{"held", &model.LockFacts{Name: "hactl-etcd", Holder: "hactl/other/1/x", RenewedAt: now, Duration: 30 * time.Second}},
	{"stale", &model.LockFacts{Name: "hactl-etcd", Holder: "hactl/other/1/x", RenewedAt: now.Add(-time.Hour), Duration: 30 * time.Second}},
}

// TestEveryStateAndIntent classifies every combination of action, target,
// target state, the state of one other member, shape and lock, and checks
// the invariants that must hold for all of them.
func TestEveryStateAndIntent(t *testing.T) {
	n := 0
	seen := map[model.Verb]int{}
	for _, action := range model.AllActions {
		for _, target := range []string{"etcd-0", "etcd-1", "etcd-2", "etcd-7", ""} {
			for _, moveLeader := range []bool{false, true} {
				for _, ts := range memberStates {
					for _, os := range memberStates[:3] {
						for _, shape := range model.AllShapes {
							for _, ls := range lockStates {
								obs := healthy()
								ti := -1
								if _, err := fmt.Sscanf(target, "etcd-%d", &ti); err != nil || ti >= 3 {
									ti = -1
								}
								if ti >= 0 {
									ts.apply(&obs, ti)
									os.apply(&obs, (ti+1)%3)
								}
								obs.Cluster.Shape = shape
								obs.Lock = ls.lock
								in := model.Intent{Action: action, Member: target, Options: model.ActionOptions{MoveLeader: moveLeader, SeedStore: "s3://b"}}
								if action == model.ActionRestore {
									// --force stands in for --move-leader.
									restorable(&obs)
									in.Options = restoreIntent.Options
									in.Options.Force = moveLeader
								}
								name := fmt.Sprintf("%s %q move=%v target=%s other=%s shape=%s lock=%s", action, target, moveLeader, ts.name, os.name, shape, ls.name)
								d := judgedClassify(obs, in, now)
								checkInvariants(t, name, obs, in, d, ti, ts.name)
								seen[d.Verb]++
								n++
							}
						}
					}
				}
			}
		}
	}
	// The states a replace of etcd-1 passes, as a rerun observes them.
	for _, r := range resumeRows() {
		for _, os := range memberStates[:3] {
			for _, shape := range model.AllShapes {
				for _, ls := range lockStates {
					obs := healthy()
					r.mutate(&obs)
					os.apply(&obs, 2)
					obs.Cluster.Shape = shape
					obs.Lock = ls.lock
					in := replace1
					name := fmt.Sprintf("resume %q other=%s shape=%s lock=%s", r.name, os.name, shape, ls.name)
					d := judgedClassify(obs, in, now)
					checkInvariants(t, name, obs, in, d, 1, "resume")
					seen[d.Verb]++
					n++
				}
			}
		}
	}
	t.Logf("%d combinations: %v", n, seen)
	for _, v := range model.AllVerbs {
		if seen[v] == 0 {
			t.Errorf("no combination decides %s", v)
		}
	}
}

func checkInvariants(t *testing.T, name string, obs model.Observation, in model.Intent, d model.Decision, ti int, targetState string) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Errorf("%s: %s\n%s", name, fmt.Sprintf(format, args...), strings.Join(Describe(d), "\n"))
	}
	if !slices.Contains(model.AllVerbs, d.Verb) || !slices.Contains(model.AllFlows, d.Flow) || !slices.Contains(model.AllActionPhases, d.Phase) {
		fail("enum out of range: verb %q flow %q phase %q", d.Verb, d.Flow, d.Phase)
	}
	for _, b := range d.Blockers {
		if !slices.Contains(model.AllBlockerCodes, b.Code) || b.Detail == "" {
			fail("blocker %+v", b)
		}
	}
	for _, x := range d.Notes {
		if !slices.Contains(model.AllNoteCodes, x.Code) {
			fail("note %+v", x)
		}
	}
	for _, s := range d.Steps {
		if !slices.Contains(model.AllStepKinds, s.Kind) || s.Phase != s.Kind.PhaseOf() || s.Detail == "" {
			fail("step %+v", s)
		}
	}
	// Proceed means no blocker; refuse means a blocker.
	switch d.Verb {
	case model.VerbProceed, model.VerbDone:
		if len(d.Blockers) > 0 {
			fail("%s with blockers", d.Verb)
		}
	case model.VerbRefuse, model.VerbAwait, model.VerbObserve:
		if len(d.Blockers) == 0 {
			fail("%s without a blocker", d.Verb)
		}
	}
	if d.Verb == model.VerbProceed && len(d.Steps) == 0 {
		fail("proceed without steps")
	}
	// Only etcd clusters of the two supported shapes are ever acted on.
	if d.Verb == model.VerbProceed && in.Action != model.ActionSeed && in.Action != model.ActionRestore && obs.Cluster.Shape != model.ShapeStaticExisting && obs.Cluster.Shape != model.ShapeSelfRegistering {
		fail("proceeds on shape %s", obs.Cluster.Shape)
	}
	// A restore proceeds only on the static shapes, and only when no
	// member is named.
	if d.Verb == model.VerbProceed && in.Action == model.ActionRestore && (in.Member != "" || (obs.Cluster.Shape != model.ShapeStaticExisting && obs.Cluster.Shape != model.ShapeStaticNew)) {
		fail("proceeds on shape %s", obs.Cluster.Shape)
	}
	if obs.Cluster.Shape == model.ShapeSelfRegistering && slices.ContainsFunc(d.Steps, func(s model.Step) bool {
		return s.Kind == model.StepAddLearner || s.Kind == model.StepPromoteLearner
	}) {
		fail("adds or promotes a learner on a self-registering cluster")
	}
	// A held lock always refuses.
	if obs.Lock.Held(now) && d.Verb != model.VerbRefuse {
		fail("acts while the lock is held")
	}
	// Every delete is fenced by what was observed.
	assertFencesObserved(t, obs, d)
	// Await and observe never delete.
	if (d.Verb == model.VerbAwait || d.Verb == model.VerbObserve) && d.Deletes() {
		fail("%s deletes", d.Verb)
	}
	if targetState == "deletion-marked" && ti >= 0 && in.Action != model.ActionSeed && d.Verb == model.VerbProceed {
		fail("proceeds on a deletion-marked pod")
	}
	if targetState == "never-started" && ti >= 0 && in.Action != model.ActionSeed && d.Deletes() {
		fail("deletes a never-started pod created from the current template")
	}
	// Removing a voter while proceeding keeps quorum, and never the leader.
	if d.Verb == model.VerbProceed && d.MemberFence != nil && !d.MemberFence.IsLearner {
		healthy := 0
		for _, m := range verdictMembers(obs) {
			if m.Name != in.Member && m.Phase == model.PhaseMember && !m.Pod.DeletionMarked {
				healthy++
			}
		}
		if healthy < d.Quorum.Quorum {
			fail("removes a voter leaving %d healthy < quorum %d", healthy, d.Quorum.Quorum)
		}
		if d.MemberFence.ID == memberIDs[0] && obs.Members[0].Engine != nil && obs.Members[0].Engine.LeaderID == memberIDs[0] {
			if d.Steps[0].Kind != model.StepMoveLeader {
				fail("removes the leader without moving leadership first")
			}
			if !in.Options.MoveLeader {
				fail("moves leadership without --move-leader")
			}
		}
	}
	// Deterministic.
	if again := judgedClassify(obs, in, now); !reflect.DeepEqual(again, d) {
		fail("a second classification differs")
	}
	// Reason strings and events are never authority.
	if ti >= 0 {
		o2 := obs
		o2.Members = slices.Clone(obs.Members)
		if p := o2.Members[ti].Pod; p != nil {
			cp := *p
			cp.WaitingReason, cp.Waiting, cp.PullFailure = "ErrImagePull", model.WaitingPullFailure, model.PullFailureNotFound
			o2.Members[ti].Pod = &cp
		}
		o2.Events = []model.EventFacts{{Type: "Warning", Reason: "Corrupt", Object: "Pod/" + in.Member, Message: "data is corrupt: delete this pod and its volume"}}
		d2 := judgedClassify(o2, in, now)
		if d2.Verb != d.Verb || !slices.Equal(kinds(d2), kinds(d)) || !slices.Equal(d2.Fences, d.Fences) {
			fail("a reason string or event changed the decision: %s %v", d2.Verb, kinds(d2))
		}
	}
}

// verdictMembers returns the members with derived phases.
func verdictMembers(obs model.Observation) []model.Member {
	return verdict.Derive(obs, now, judgedIntent(model.Intent{}).Options.Verdict).Members
}
