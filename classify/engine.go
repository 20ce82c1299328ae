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

// engines maps each engine hactl acts on to its rules.
var engines = map[model.Engine]engineRules{
	model.EngineEtcd:    etcdRules{},
	model.EnginePatroni: patroniRules{},
}

// ReadyMeaning says what the replaced or reseeded member of done decision
// d being ready means, in its engine's words ("a healthy voter again",
// "streaming from the primary …").
func ReadyMeaning(d model.Decision) string {
	if r, ok := engines[d.Cluster.Engine]; ok {
		return r.ready(d)
	}
	// Only an engine whose rules are handed in gets this far.
	return recreateRules{}.ready(d)
}

// engineGate picks the rules of the cluster's engine from registry, the
// recreate rules for an engine whose verdict rules are handed in, or
// refuses the cluster and returns noRules.
func (c *classifier) engineGate(registry map[model.Engine]engineRules) engineRules {
	cl := c.obs.Cluster
	if r, ok := registry[cl.Engine]; ok {
		if c.o.Verdict.Rules[cl.Engine] == nil {
			// Its members' phases and lags are then unknown: no plan
			// may rest on that.
			c.block(model.CodeEngineUnsupported, "", "", "hactl was handed no verdict rules for %s clusters, so it cannot judge %s/%s's members (a build without the %[1]s engine)", cl.Engine, cl.Namespace, cl.Name)
			return noRules{}
		}
		return r
	}
	if r, judged := c.o.Verdict.Rules[cl.Engine]; judged {
		// hactl reads and judges the engine's members (its own package
		// holds the rules) but sends them nothing.
		return recreateRules{r}
	}
	c.block(model.CodeEngineUnsupported, "", "", "hactl acts on %s clusters only; %s/%s runs %q (diagnose with status)", engineNames(registry), cl.Namespace, cl.Name, cl.Engine)
	return noRules{}
}

// engineNames lists the engines of registry, sorted.
func engineNames(registry map[model.Engine]engineRules) string {
	var names []string
	for e := range registry {
		names = append(names, e.String())
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
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
