package classify

import (
	"slices"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// engineRules are one engine's rules: what an engine must provide for
// Classify to act on its clusters.
//
// Classify runs the common gates first (freshness of the observation, the
// lock, resuming and superseding ledger entries) and derives the verb, the
// phase and the fences from the plan afterwards (finish). In between, the
// engine's rules plan the action: they add the engine's own blockers
// (each with the flag that overrides it, if any), notes and steps, and set
// what the action needs on c.d (Flow, Quorum, PeerURLs, Replaced,
// MemberFence, Replicas). They read the observation (c.obs, c.a), the
// intent (c.in, c.o) and the ledger state the common gates found
// (c.resume, c.superseded), may set c.verb (await, observe) or c.done, and
// use the shared helpers for Kubernetes objects (deleteBoth, deletePVC,
// the pod gates). An engine keeps its rules, shapes and helpers in its own
// files (etcd: etcd*.go), never in another engine's.
type engineRules interface {
	// replace plans replace and reseed of member c.in.Member.
	replace(c *classifier)
	// seed plans capturing a seed generation from member c.in.Member,
	// or from a member the rules choose when it is empty.
	seed(c *classifier)
	// restore plans restoring the whole cluster from generation
	// c.o.Generation.
	restore(c *classifier)
	// switchover plans handing the primary role to member c.in.Member,
	// or to a member the rules choose when it is empty.
	switchover(c *classifier)
	// holdsRecorded reports whether the engine still lists what the
	// in-progress replace or reseed e recorded: the member it replaces,
	// or the replacement it brings back. Such an entry is never stale
	// (see notResumable).
	holdsRecorded(c *classifier, e *model.LedgerEntry) bool
	// staleWait says why the in-progress entry e waits on a condition
	// that can no longer come true ("" when it may still come true, or
	// when the engine has no such waits). With finished, an entry whose
	// action has completed without recording so counts too: another
	// action may then supersede it instead of waiting for a rerun.
	staleWait(c *classifier, e *model.LedgerEntry, finished bool) string
	// ready says what a replaced or reseeded member being ready means in
	// the engine's words, for the action's last receipt (d is done).
	ready(d model.Decision) string
}

// rulesOf are the rules of engine e among the verdict rules r handed in:
// its own ClassifyRules, the recreate rules for an engine hactl reads and
// judges but sends nothing (whose rules are only VerdictRules), or nil
// when no rules for e were handed in.
func rulesOf(r map[model.Engine]model.VerdictRules, e model.Engine) engineRules {
	v, ok := r[e]
	switch {
	case !ok || v == nil:
		return nil
	case isClassify(v):
		return handed{v.(model.ClassifyRules)}
	}
	return recreateRules{v}
}

func isClassify(v model.VerdictRules) bool {
	_, ok := v.(model.ClassifyRules)
	return ok
}

// ReadyMeaning says what the replaced or reseeded member of done decision
// d being ready means, in its engine's words ("a healthy voter again",
// "streaming from the primary …"), as the rules d was decided with say.
func ReadyMeaning(d model.Decision) string {
	if r := rulesOf(d.Intent.Options.Verdict.Rules, d.Cluster.Engine); r != nil {
		return r.ready(d)
	}
	return noRules{}.ready(d)
}

// engineGate picks the rules of the cluster's engine from those handed
// in with the verdict's options, or refuses the cluster and returns
// noRules.
func (c *classifier) engineGate() engineRules {
	cl := c.obs.Cluster
	if r := rulesOf(c.o.Verdict.Rules, cl.Engine); r != nil {
		return r
	}
	if engineNames(c.o.Verdict.Rules) == "" {
		c.Block(model.CodeEngineUnsupported, "", "", "hactl was handed no engine's rules, so it can neither judge nor act on %s/%s (a build without engines)", cl.Namespace, cl.Name)
		return noRules{}
	}
	c.Block(model.CodeEngineUnsupported, "", "", "hactl acts on %s clusters only; %s/%s runs %q (diagnose with status)", engineNames(c.o.Verdict.Rules), cl.Namespace, cl.Name, cl.Engine)
	return noRules{}
}

// engineNames lists the engines of r, sorted.
func engineNames(r map[model.Engine]model.VerdictRules) string {
	var names []string
	for e, v := range r {
		if v != nil {
			names = append(names, e.String())
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// handed are the ClassifyRules an engine keeps in its own package.
type handed struct{ r model.ClassifyRules }

func (h handed) replace(c *classifier)    { h.r.PlanReplace(c) }
func (h handed) seed(c *classifier)       { h.r.PlanSeed(c) }
func (h handed) restore(c *classifier)    { h.r.PlanRestore(c) }
func (h handed) switchover(c *classifier) { h.r.PlanSwitchover(c) }
func (h handed) ready(d model.Decision) string {
	return h.r.ReadyMeaning(d)
}

func (h handed) holdsRecorded(c *classifier, e *model.LedgerEntry) bool {
	return h.r.HoldsRecorded(c, e)
}

func (h handed) staleWait(c *classifier, e *model.LedgerEntry, finished bool) string {
	return h.r.StaleWait(c, e, finished)
}

// noRules stand for an engine hactl has no rules for: they plan nothing,
// and engineGate has refused the cluster already.
type noRules struct{}

func (noRules) replace(*classifier) {}
func (noRules) seed(*classifier)    {}
func (noRules) restore(*classifier) {}

func (noRules) switchover(*classifier) {}

// holdsRecorded: without rules nothing can be read from the engine, so an
// entry is kept (the decision is refused anyway).
func (noRules) holdsRecorded(*classifier, *model.LedgerEntry) bool { return true }

func (noRules) staleWait(*classifier, *model.LedgerEntry, bool) string { return "" }

func (noRules) ready(model.Decision) string { return "its members say it is" }
