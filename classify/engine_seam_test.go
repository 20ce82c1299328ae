package classify

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	patroniengine "github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/model"
)

// engineToy is an engine only these tests know.
const engineToy model.Engine = "toy"

// toyRules are the rules of a test engine, built from the common helpers
// only: a replace deletes the target's volume and pod and waits for the
// StatefulSet to recreate it; toy-0 leads and is replaced only with
// --move-leader. holds is what HoldsRecorded answers. Its clusters are
// judged by the verdict rules it embeds (etcd's, handed in by judgedToy).
type toyRules struct {
	model.VerdictRules
	holds bool
}

func (toyRules) PlanReplace(c model.Plan) {
	in := c.Intent()
	m := c.Member(in.Member)
	if m == nil {
		c.Block(model.CodeMemberNotFound, in.Member, "", "no member %q (members: %s)", in.Member, c.MemberNames())
		return
	}
	if m.Pod != nil && m.Pod.DeletionMarked {
		c.AwaitForeignDelete(m.Name, m.Pod)
		return
	}
	if c.ObserveNeverStarted(m.Name, m.Pod) {
		return
	}
	if m.Name == "toy-0" && !c.Options().MoveLeader {
		c.Block(model.CodeTargetIsLeader, m.Name, model.FlagMoveLeader, "%s leads", m.Name)
	}
	c.DeleteBoth(m, m.PVC, true)
	c.Step(model.Step{Kind: model.StepAwaitPodRecreated, Member: m.Name, Detail: "wait for " + m.Name})
}

func (toyRules) PlanSeed(c model.Plan) {
	c.Block(model.CodeNoSeedSource, "", "", "toy clusters have no seed source")
}

func (toyRules) PlanRestore(c model.Plan) {
	c.Block(model.CodeRestoreUnsupported, "", "", "toy clusters are not restored")
}

func (toyRules) PlanSwitchover(c model.Plan) {
	c.Block(model.CodeActionUnsupported, "", "", "toy clusters have no switchover")
}

func (r toyRules) HoldsRecorded(model.Plan, *model.LedgerEntry) bool { return r.holds }

func (toyRules) StaleWait(model.Plan, *model.LedgerEntry, bool) string { return "" }

func (toyRules) ReadyMeaning(model.Decision) string { return "toy-ready" }

// judgedToy is Classify with the rules of the engines hactl ships and
// the toy engine's r handed in, the toy's clusters (etcd's facts under
// another name) judged by etcd's verdict rules.
func judgedToy(r toyRules, obs model.Observation, in model.Intent, now time.Time) model.Decision {
	in = judgedIntent(in)
	r.VerdictRules = in.Options.Verdict.Rules[etcdengine.Name]
	in.Options.Verdict.Rules[engineToy] = r
	return Classify(obs, in, now)
}

// toyObs is a 3-member toy cluster. Nothing in it satisfies etcd's rules
// (no probes, no member list, an unknown shape): any etcd rule that ran
// would add a blocker.
func toyObs() model.Observation {
	obs := model.Observation{
		At: now,
		Cluster: model.ClusterFacts{Namespace: "db", Name: "toy", Engine: engineToy, UID: "sts-uid", ResourceVersion: "500",
			Replicas: 3, ReadyReplicas: 3, Shape: model.ShapeUnknown, UpdateRevision: "toy-rev1"},
	}
	for i := range 3 {
		name := fmt.Sprintf("toy-%d", i)
		obs.Members = append(obs.Members, model.Member{
			Name: name, Ordinal: i,
			Pod: &model.PodFacts{Name: name, UID: fmt.Sprintf("pod-uid-%d", i), ResourceVersion: fmt.Sprintf("10%d", i),
				Phase: "Running", Started: true, Running: true, Ready: true, EverStarted: true, Revision: "toy-rev1"},
			PVC: &model.PVCFacts{Name: "data-" + name, UID: fmt.Sprintf("pvc-uid-%d", i), ResourceVersion: fmt.Sprintf("20%d", i), Phase: "Bound"},
		})
	}
	return obs
}

// toyEntry is an in-progress ledger entry of action on member.
func toyEntry(action model.Action, member string) model.LedgerEntry {
	return model.LedgerEntry{ID: string(action) + "." + member, Action: action, Member: member, Holder: "hactl/other/1/x",
		State: model.EntryInProgress, Phase: model.ActionPhaseRemoving, StartedAt: now.Add(-time.Minute), UpdatedAt: now.Add(-30 * time.Second),
		Replaced: model.Replaced{PodUID: "pod-uid-1", PVCUID: "pvc-uid-1"}}
}

var (
	toyReplace = model.Intent{Action: model.ActionReplace, Member: "toy-1"}
	toyPlan    = []model.StepKind{model.StepDeletePVC, model.StepDeletePod, model.StepAwaitPodGone, model.StepAwaitPodRecreated}
)

func blockerCodes(d model.Decision) []model.Code {
	out := []model.Code{}
	for _, b := range d.Blockers {
		out = append(out, b.Code)
	}
	return out
}

// TestEngineRulesPlan: Classify hands the action to the rules of the
// cluster's engine, and derives the verb, phase and fences from their
// plan (finish) whatever the engine.
func TestEngineRulesPlan(t *testing.T) {
	d := judgedToy(toyRules{}, toyObs(), toyReplace, now)
	if d.Verb != model.VerbProceed || len(d.Blockers) > 0 || !slices.Equal(kinds(d), toyPlan) {
		t.Fatalf("verb %s, blockers %v, steps %v:\n%s", d.Verb, blockerCodes(d), kinds(d), strings.Join(Describe(d), "\n"))
	}
	if d.Phase != model.ActionPhaseRemoving || len(d.Fences) != 2 || d.Fences[0].UID != "pvc-uid-1" || d.Fences[1].UID != "pod-uid-1" {
		t.Errorf("phase %s, fences %+v", d.Phase, d.Fences)
	}
	for action, want := range map[model.Action]model.Code{model.ActionSeed: model.CodeNoSeedSource, model.ActionRestore: model.CodeRestoreUnsupported, "explode": model.CodeEngineUnsupported} {
		d := judgedToy(toyRules{}, toyObs(), model.Intent{Action: action}, now)
		if d.Verb != model.VerbRefuse || !slices.Equal(blockerCodes(d), []model.Code{want}) {
			t.Errorf("%s: verb %s, blockers %v, want refuse %s", action, d.Verb, blockerCodes(d), want)
		}
	}
}

// TestCommonGatesApplyToEveryEngine: the lock, the ledger (resume,
// supersede, stale entries), the freshness of the observation, the pod
// gates and the override flags work for an engine whose rules are not
// etcd's.
func TestCommonGatesApplyToEveryEngine(t *testing.T) {
	supersede := withOpts(toyReplace, func(o *model.ActionOptions) { o.Supersede = true })
	for _, r := range []struct {
		name   string
		rules  toyRules
		intent model.Intent
		mutate func(*model.Observation)
		verb   model.Verb
		codes  []model.Code
		check  func(*testing.T, model.Decision)
	}{
		{name: "lock held by another holder", intent: toyReplace, verb: model.VerbRefuse, codes: []model.Code{model.CodeLockHeld},
			mutate: func(o *model.Observation) { o.Lock = lockStates[1].lock }},
		{name: "lock held by the caller", intent: withOpts(toyReplace, func(o *model.ActionOptions) { o.LockHolder = lockStates[1].lock.Holder }), verb: model.VerbProceed,
			mutate: func(o *model.Observation) { o.Lock = lockStates[1].lock }},
		{name: "stale lock", intent: toyReplace, verb: model.VerbProceed,
			mutate: func(o *model.Observation) { o.Lock = lockStates[2].lock },
			check:  wantNote(model.CodeLockStale)},
		{name: "stale observation", intent: toyReplace, verb: model.VerbRefuse, codes: []model.Code{model.CodeObservationStale},
			mutate: func(o *model.Observation) { o.At = now.Add(-time.Hour) }},
		{name: "another action in progress", intent: toyReplace, verb: model.VerbRefuse, codes: []model.Code{model.CodeActionInProgress},
			mutate: func(o *model.Observation) { o.Ledger = []model.LedgerEntry{toyEntry(model.ActionReplace, "toy-2")} },
			check: func(t *testing.T, d model.Decision) {
				if d.Blockers[0].Override != model.FlagSupersede {
					t.Errorf("override %q, want %s", d.Blockers[0].Override, model.FlagSupersede)
				}
			}},
		{name: "another action superseded", intent: supersede, verb: model.VerbProceed,
			mutate: func(o *model.Observation) { o.Ledger = []model.LedgerEntry{toyEntry(model.ActionReplace, "toy-2")} },
			check:  wantSupersedes("replace.toy-2")},
		{name: "same action resumed", intent: toyReplace, verb: model.VerbProceed,
			mutate: func(o *model.Observation) { o.Ledger = []model.LedgerEntry{toyEntry(model.ActionReplace, "toy-1")} },
			check:  wantResume("replace.toy-1")},
		{name: "stale entry superseded", intent: toyReplace, verb: model.VerbProceed, mutate: staleToyEntry,
			check: wantSupersedes("replace.toy-1")},
		{name: "stale entry the engine still holds resumed", rules: toyRules{holds: true}, intent: toyReplace, verb: model.VerbProceed, mutate: staleToyEntry,
			check: wantResume("replace.toy-1")},
		{name: "the engine's blocker", intent: model.Intent{Action: model.ActionReplace, Member: "toy-0"}, verb: model.VerbRefuse, codes: []model.Code{model.CodeTargetIsLeader},
			check: func(t *testing.T, d model.Decision) {
				if d.Blockers[0].Override != model.FlagMoveLeader {
					t.Errorf("override %q, want %s", d.Blockers[0].Override, model.FlagMoveLeader)
				}
			}},
		{name: "the engine's blocker overridden", intent: model.Intent{Action: model.ActionReplace, Member: "toy-0", Options: model.ActionOptions{MoveLeader: true}}, verb: model.VerbProceed},
		{name: "pod being deleted", intent: toyReplace, verb: model.VerbAwait, codes: []model.Code{model.CodePodTerminating},
			mutate: func(o *model.Observation) { o.Members[1].Pod.DeletionMarked = true }},
		{name: "pod never started", intent: toyReplace, verb: model.VerbObserve, codes: []model.Code{model.CodePodNeverStarted},
			mutate: func(o *model.Observation) {
				p := o.Members[1].Pod
				p.Started, p.Running, p.Ready, p.EverStarted = false, false, false, false
			}},
	} {
		t.Run(r.name, func(t *testing.T) {
			obs := toyObs()
			if r.mutate != nil {
				r.mutate(&obs)
			}
			d := judgedToy(r.rules, obs, r.intent, now)
			if d.Verb != r.verb || !slices.Equal(blockerCodes(d), append([]model.Code{}, r.codes...)) {
				t.Errorf("verb %s, blockers %v; want %s, %v\n%s", d.Verb, blockerCodes(d), r.verb, r.codes, strings.Join(Describe(d), "\n"))
			}
			if r.check != nil {
				r.check(t, d)
			}
		})
	}
}

func staleToyEntry(o *model.Observation) {
	e := toyEntry(model.ActionReplace, "toy-1")
	e.UpdatedAt = now.Add(-2 * time.Hour)
	e.Replaced = model.Replaced{PodUID: "pod-uid-gone", PVCUID: "pvc-uid-gone", MemberID: "gone"}
	o.Ledger = []model.LedgerEntry{e}
}

func wantNote(code model.Code) func(*testing.T, model.Decision) {
	return func(t *testing.T, d model.Decision) {
		if !slices.ContainsFunc(d.Notes, func(n model.Note) bool { return n.Code == code }) {
			t.Errorf("note %s missing: %+v", code, d.Notes)
		}
	}
}

func wantSupersedes(id string) func(*testing.T, model.Decision) {
	return func(t *testing.T, d model.Decision) {
		if d.Resume != "" || !slices.Equal(d.Supersedes, []string{id}) {
			t.Errorf("resume %q, supersedes %v; want %s superseded", d.Resume, d.Supersedes, id)
		}
		wantNote(model.CodeSuperseding)(t, d)
	}
}

func wantResume(id string) func(*testing.T, model.Decision) {
	return func(t *testing.T, d model.Decision) {
		if d.Resume != id || len(d.Supersedes) > 0 {
			t.Errorf("resume %q, supersedes %v; want %s resumed", d.Resume, d.Supersedes, id)
		}
		wantNote(model.CodeResuming)(t, d)
	}
}

// TestEngineWithoutRulesIsRefused: a cluster whose engine has no rules is
// refused with engine_unsupported (documented in docs/actions.md), plans
// nothing and still passes through the common gates.
func TestEngineWithoutRulesIsRefused(t *testing.T) {
	for _, engine := range []model.Engine{engineToy, ""} {
		for _, action := range model.AllActions {
			obs := healthy()
			obs.Cluster.Engine = engine
			in := model.Intent{Action: action, Member: "etcd-1"}
			if action == model.ActionRestore {
				in = restoreIntent
			}
			d := judgedClassify(obs, in, now)
			name := fmt.Sprintf("%q %s", engine, action)
			if d.Verb != model.VerbRefuse || !slices.Equal(blockerCodes(d), []model.Code{model.CodeEngineUnsupported}) || len(d.Steps) > 0 || d.Flow != model.FlowNone || d.Deletes() {
				t.Errorf("%s: verb %s, blockers %v, flow %s, steps %v\n%s", name, d.Verb, blockerCodes(d), d.Flow, kinds(d), strings.Join(Describe(d), "\n"))
				continue
			}
			if want := fmt.Sprintf("hactl acts on cnpg, etcd, http, patroni clusters only; db/etcd runs %q (diagnose with status)", engine); d.Blockers[0].Detail != want {
				t.Errorf("%s: detail %q, want %q", name, d.Blockers[0].Detail, want)
			}
		}
	}
	// The common gates still apply: the lock is reported too.
	obs := healthy()
	obs.Cluster.Engine = engineToy
	obs.Lock = lockStates[1].lock
	if d := judgedClassify(obs, replace1, now); !slices.Equal(blockerCodes(d), []model.Code{model.CodeEngineUnsupported, model.CodeLockHeld}) {
		t.Errorf("blockers %v, want engine_unsupported and lock_held", blockerCodes(d))
	}
	// The registry decides: without etcd's entry an etcd cluster is
	// refused the same way, and the refusal names the engines there are.
	in := replace1
	in.Options.Verdict.Rules = map[model.Engine]model.VerdictRules{engineToy: toyRules{VerdictRules: judgedIntent(replace1).Options.Verdict.Rules[etcdengine.Name]}}
	d := Classify(healthy(), in, now)
	if d.Verb != model.VerbRefuse || !slices.Equal(blockerCodes(d), []model.Code{model.CodeEngineUnsupported}) || !strings.Contains(d.Blockers[0].Detail, "acts on toy clusters only") {
		t.Errorf("etcd without rules: verb %s, blockers %+v", d.Verb, d.Blockers)
	}
}

// A face that hands in no rules gets every cluster refused: its members'
// phases and lags would be unknown, and no plan may rest on that.
func TestNoRulesHandedInIsRefused(t *testing.T) {
	for _, obs := range []model.Observation{healthy(), pgHealthy()} {
		// None at all, and an entry for the engine without rules.
		for _, rules := range []map[model.Engine]model.VerdictRules{nil, {obs.Cluster.Engine: nil}} {
			in := model.Intent{Action: model.ActionReplace, Member: obs.Members[1].Name}
			in.Options.Verdict.Rules = rules
			d := Classify(obs, in, now)
			if d.Verb != model.VerbRefuse || !slices.Equal(blockerCodes(d), []model.Code{model.CodeEngineUnsupported}) || !strings.Contains(d.Blockers[0].Detail, "was handed no engine's rules") {
				t.Errorf("%s with rules %v: verb %s, blockers %+v", obs.Cluster.Engine, rules, d.Verb, d.Blockers)
			}
		}
	}
}

// TestEtcdIsRegistered: etcd clusters are planned by etcd's rules.
func TestEtcdIsRegistered(t *testing.T) {
	if r := judgedIntent(replace1).Options.Verdict.Rules[etcdengine.Name]; !isClassify(r) {
		t.Fatalf("etcd's rules %T plan no actions (model.ClassifyRules)", r)
	}
	if d := judgedClassify(healthy(), replace1, now); d.Verb != model.VerbProceed || !slices.Equal(kinds(d), fullPlan) {
		t.Errorf("verb %s, steps %v, want the learner flow", d.Verb, kinds(d))
	}
}

// The last receipt says what ready means in the cluster's engine's words.
func TestReadyMeaningByEngine(t *testing.T) {
	for eng, want := range map[model.Engine]string{
		etcdengine.Name:    "a healthy voter again",
		patroniengine.Name: "streaming from the primary pg-0 within the lag threshold",
		"http":             "answering, ready and within the lag threshold of the frontier of the leader pg-0",
	} {
		d := model.Decision{Cluster: model.ClusterRef{Engine: eng}, Leader: "pg-0"}
		d.Intent = judgedIntent(d.Intent)
		if got := ReadyMeaning(d); got != want {
			t.Errorf("%s: %q, want %q", eng, got, want)
		}
	}
}

// observedOnly are verdict rules handed in for an engine that has no
// classify rules (the http engine): hactl judges its clusters but has no
// fenced operations for them.
type observedOnly struct{}

func (observedOnly) Judge(in model.JudgeInput) model.Judgement {
	n := len(in.Observation.Members)
	return model.Judgement{Phases: make([]model.Phase, n), Lags: make([]*int64, n), Formed: true}
}
func (observedOnly) LagThreshold(t model.Thresholds, _ model.ClusterFacts) uint64 { return t.Lag }

// TestObservedOnlyEngineIsRefusedAsUnsupportedAction: a cluster whose
// engine has verdict rules but no classify rules, and does not say its
// members rebuild themselves (model.Recreatable), is refused every action
// with action_unsupported (not engine_unsupported: hactl does read it),
// plans nothing and names why.
func TestObservedOnlyEngineIsRefusedAsUnsupportedAction(t *testing.T) {
	for _, action := range model.AllActions {
		obs := healthy()
		obs.Cluster.Engine = engineToy
		in := model.Intent{Action: action, Member: "etcd-1"}
		if action == model.ActionRestore {
			in = restoreIntent
		}
		in.Options.Verdict.Rules = map[model.Engine]model.VerdictRules{engineToy: observedOnly{}}
		d := judgedClassify(obs, in, now)
		if d.Verb != model.VerbRefuse || !slices.Equal(blockerCodes(d), []model.Code{model.CodeActionUnsupported}) || len(d.Steps) > 0 || d.Deletes() {
			t.Errorf("%s: verb %s, blockers %v, steps %v", action, d.Verb, blockerCodes(d), kinds(d))
			continue
		}
		if det := d.Blockers[0].Detail; !strings.Contains(det, "no fenced "+string(action)+" for toy clusters") {
			t.Errorf("%s: detail %q does not say why", action, det)
		}
		for _, r := range d.Verdict {
			if r.Code == model.ReasonEngineUnsupported {
				t.Errorf("%s: the verdict calls a judged engine unsupported: %v", action, d.Verdict)
			}
		}
	}
}
