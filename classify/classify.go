package classify

import (
	"fmt"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/verdict"
)

// Classify decides what to do about intent on the cluster obs describes,
// at now. It is a pure function of its arguments: no client, no clock, no
// logging. The rules, in order:
//
//   - the cluster's engine picks its rules (see engineRules); an engine
//     hactl has no rules for is refused;
//   - a cluster whose members' pods are another's (static pods) is
//     refused before anything else, and no plan is drawn: the decision
//     carries that one's own steps when following them now is safe
//     (managedGate, handOver);
//   - a stale observation, a lock held by someone else or another action
//     in progress refuse, whatever the engine (the common gates);
//   - the engine's rules plan the action: for etcd, the bootstrap shape
//     picks the flow (static-existing: learner; self-registering:
//     delegate) or refuses (static-new, operator-owned, unknown); an
//     engine that was not asked, no agreed leader or a split cluster
//     refuse; removing a voter is refused when the healthy voters without
//     the target are fewer than quorum, and when the target leads (unless
//     --move-leader plans a leadership transfer first);
//   - a deletion-marked pod means await, a never-started pod created from
//     the current template means observe: neither ever deletes;
//   - the plan is derived from what is observed (the member list, the
//     pod's and volume's identity against those the ledger recorded), so
//     a rerun after a crash resumes where the world stands and never
//     deletes the same object twice.
//
// Pod waiting reasons, pull errors and event messages are never read here:
// only verified facts (identities, the member list, phases derived from
// engine answers) can lead to a delete.
func Classify(obs model.Observation, in model.Intent, now time.Time) model.Decision {
	o := withDefaults(in.Options)
	derived, v, a := verdict.EvaluateAll(obs, now, o.Verdict)
	c := &classifier{
		obs: derived,
		a:   a,
		in:  in,
		o:   o,
		now: now,
	}
	c.d = model.Decision{
		Intent: in,
		Cluster: model.ClusterRef{Namespace: obs.Cluster.Namespace, Name: obs.Cluster.Name,
			UID: obs.Cluster.UID, Engine: obs.Cluster.Engine, OwnerKind: obs.Cluster.OwnerKind, OwnerAPIVersion: obs.Cluster.OwnerAPIVersion},
		Shape:      obs.Cluster.Shape,
		Flow:       model.FlowNone,
		Steps:      []model.Step{},
		Fences:     []model.Fence{},
		Notes:      []model.Note{},
		Blockers:   []model.Blocker{},
		Verdict:    v.Reasons,
		ObservedAt: obs.At,
		DecidedAt:  now,
		Leader:     c.a.LeaderMember,
	}
	c.rules = c.engineGate()
	if c.managedGate() {
		c.handOver()
	} else {
		c.common()
		c.plan()
	}
	c.finish()
	return c.d
}

// classifier is the state of one decision: what was observed, what was
// asked, and the decision as the rules build it.
type classifier struct {
	obs model.Observation // with derived phases and lag
	a   model.Analysis
	in  model.Intent
	o   model.ActionOptions
	now time.Time
	d   model.Decision

	// rules are the cluster's engine's rules (noRules when hactl has
	// none for it).
	rules engineRules
	// resume is the in-progress ledger entry this decision continues.
	resume *model.LedgerEntry
	// superseded are the in-progress entries this decision supersedes.
	superseded []*model.LedgerEntry
	// verb is set by the await and observe rules.
	verb model.Verb
	// done: the rules found nothing left to do.
	done bool
}

func (c *classifier) Block(code model.Code, member, override, format string, args ...any) {
	c.d.Blockers = append(c.d.Blockers, model.Blocker{Code: code, Member: member, Detail: fmt.Sprintf(format, args...), Override: override})
}

func (c *classifier) Note(code model.Code, member, format string, args ...any) {
	c.d.Notes = append(c.d.Notes, model.Note{Code: code, Member: member, Detail: fmt.Sprintf(format, args...)})
}

func (c *classifier) Step(s model.Step) {
	s.Phase = s.Kind.PhaseOf()
	c.d.Steps = append(c.d.Steps, s)
}

// plan hands the action to the engine's rules.
func (c *classifier) plan() {
	switch c.in.Action {
	case model.ActionReplace, model.ActionReseed:
		c.rules.replace(c)
	case model.ActionSeed:
		c.rules.seed(c)
	case model.ActionRestore:
		c.rules.restore(c)
	case model.ActionSwitchover:
		c.rules.switchover(c)
	default:
		c.Block(model.CodeEngineUnsupported, "", "", "hactl knows no action %q (known: replace, reseed, seed, restore, switchover)", c.in.Action)
	}
}

func (c *classifier) Member(name string) *model.Member {
	for i := range c.obs.Members {
		if c.obs.Members[i].Name == name {
			return &c.obs.Members[i]
		}
	}
	return nil
}

func (c *classifier) MemberNames() string {
	var n []string
	for _, m := range c.obs.Members {
		n = append(n, m.Name)
	}
	return strings.Join(n, ", ")
}

// The classifier is the model.Plan an engine's rules plan with.
var _ model.Plan = (*classifier)(nil)

func (c *classifier) Observation() *model.Observation  { return &c.obs }
func (c *classifier) Analysis() *model.Analysis        { return &c.a }
func (c *classifier) Intent() model.Intent             { return c.in }
func (c *classifier) Options() model.ActionOptions     { return c.o }
func (c *classifier) Now() time.Time                   { return c.now }
func (c *classifier) Decision() *model.Decision        { return &c.d }
func (c *classifier) Resume() *model.LedgerEntry       { return c.resume }
func (c *classifier) Superseded() []*model.LedgerEntry { return c.superseded }
func (c *classifier) Done()                            { c.done = true }
func (c *classifier) LagThreshold() uint64             { return verdict.LagThreshold(c.o.Verdict, c.obs.Cluster) }

// finish sets the verb, the phase and the fences.
func (c *classifier) finish() {
	d := &c.d
	d.ClusterID = c.a.ClusterID
	for _, s := range d.Steps {
		// Fences lists what the plan deletes; a restore's scale steps
		// carry the StatefulSet's own fence, which the executor checks
		// when it scales.
		if s.Fence != nil && s.Fence.Kind != "StatefulSet" {
			d.Fences = append(d.Fences, *s.Fence)
		}
	}
	hard := false
	for _, b := range d.Blockers {
		if b.Code != model.CodePodTerminating && b.Code != model.CodePodNeverStarted {
			hard = true
		}
	}
	switch {
	case hard:
		d.Verb = model.VerbRefuse
	case c.verb != "":
		d.Verb = c.verb
	case c.done || len(d.Steps) == 0:
		d.Verb = model.VerbDone
	default:
		d.Verb = model.VerbProceed
	}
	switch {
	case d.Verb == model.VerbDone:
		d.Phase = model.ActionPhaseReady
		if d.Intent.Action == model.ActionSeed {
			d.Phase = model.ActionPhasePublished
		}
	case len(d.Steps) > 0:
		d.Phase = d.Steps[0].Phase
	default:
		d.Phase = model.ActionPhaseRequested
	}
}
