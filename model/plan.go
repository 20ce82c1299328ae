package model

import (
	"fmt"
	"time"
)

// ClassifyRules are the action rules of an engine: how replace, reseed,
// seed, restore and switchover are planned on its clusters. An engine
// keeps them in its own package and offers them on its VerdictRules value
// (as it offers Recreatable); the classifier runs the common gates (the
// observation's age, the lock, the ledger's resumes) and asks the
// cluster's rules for the rest. The rules are pure: they read the Plan
// and nothing else.
type ClassifyRules interface {
	// PlanReplace plans replace and reseed of member p.Intent().Member.
	PlanReplace(p Plan)
	// PlanSeed plans capturing a seed generation from member
	// p.Intent().Member, or from a member the rules choose when it is
	// empty.
	PlanSeed(p Plan)
	// PlanRestore plans restoring the whole cluster from generation
	// p.Options().Generation.
	PlanRestore(p Plan)
	// PlanSwitchover plans handing the primary role to member
	// p.Intent().Member, or to a member the rules choose when it is
	// empty.
	PlanSwitchover(p Plan)
	// HoldsRecorded reports whether the engine still lists what the
	// in-progress replace or reseed e recorded: the member it replaces,
	// or the replacement it brings back. Such an entry is never stale.
	HoldsRecorded(p Plan, e *LedgerEntry) bool
	// StaleWait says why the in-progress entry e waits on a condition
	// that can no longer come true ("" when it may still come true, or
	// when the engine has no such waits). With finished, an entry whose
	// action has completed without recording so counts too.
	StaleWait(p Plan, e *LedgerEntry, finished bool) string
	// ReadyMeaning says what a replaced or reseeded member being ready
	// means in the engine's words, for the action's last receipt (d is
	// done).
	ReadyMeaning(d Decision) string
}

// Plan is one decision being planned, as the classifier hands it to an
// engine's ClassifyRules: what was observed and asked, the decision as
// the rules build it, and the helpers every engine's clusters share (a
// StatefulSet's pods and volume claims, the fenced deletes).
type Plan interface {
	// Observation is the cluster as observed, its members carrying their
	// derived phases and lags; Analysis is the verdict's picture of it.
	// Both are read only.
	Observation() *Observation
	Analysis() *Analysis
	// Intent is what was asked; Options are its options with every
	// default filled in.
	Intent() Intent
	Options() ActionOptions
	Now() time.Time
	// LagThreshold is the lag a member may have and count as caught up,
	// in the engine's unit, under the options' thresholds.
	LagThreshold() uint64
	// Decision is the decision being built: the rules set Flow, Quorum,
	// PeerURLs, Replaced, MemberFence, Replicas and Leader on it, and add
	// steps, notes and blockers through Step, Note and Block.
	Decision() *Decision
	// Resume is the in-progress ledger entry this decision continues,
	// nil when none; Superseded are the entries it supersedes.
	Resume() *LedgerEntry
	Superseded() []*LedgerEntry

	// Block refuses the action for code (override names the flag that
	// lifts it, "" when none may); Note adds a fact worth showing; Step
	// appends a step of the plan.
	Block(code Code, member, override, format string, args ...any)
	Note(code Code, member, format string, args ...any)
	Step(s Step)
	// Done says the rules found nothing left to do.
	Done()
	// Member is the observed member called name, nil when none;
	// MemberNames lists the members' names for a message.
	Member(name string) *Member
	MemberNames() string
	// ProbeFailures summarises why members did not answer ("" when all
	// did), for a blocker's detail.
	ProbeFailures() string

	// AwaitForeignDelete turns the decision into await: member's pod is
	// being deleted, not by this action.
	AwaitForeignDelete(member string, pod *PodFacts)
	// ObserveNeverStarted turns a fresh decision into observe, and
	// reports so, when member's pod never started and was created from
	// the StatefulSet's current template.
	ObserveNeverStarted(member string, pod *PodFacts) bool
	// DeletePVC appends the fenced delete of member's volume claim.
	DeletePVC(member string, pvc *PVCFacts)
	// DeleteBoth appends the fenced deletes of m's volume claim pvc
	// (first, when pvcOrig and not already going) and pod, and the wait
	// for the pod to go.
	DeleteBoth(m *Member, pvc *PVCFacts, pvcOrig bool)
	// ReplacedOf is what a replace of m replaces: recorded by the
	// resumed entry, or m's pod and volume now.
	ReplacedOf(m *Member) Replaced
	// RecreatedThen appends the wait for the StatefulSet to recreate pod
	// name with a new volume (how says what fills it), then await's.
	RecreatedThen(name, how string, await func(string))
	// RecreateResume plans a resumed replace by delete-and-recreate once
	// its first delete was recorded or m's pod or volume is no longer the
	// original, and reports whether it planned (false: plan afresh).
	RecreateResume(m *Member, w Rebuilt) bool
}

// Rebuilt is how an engine whose members rebuild themselves on a new
// volume waits for one, in its own terms (Plan.RecreateResume).
type Rebuilt struct {
	// Leader names the leader (the primary) the rebuilt member follows.
	Leader func() string
	// CaughtUp reports whether m answers rebuilt and caught up.
	CaughtUp func(m *Member) bool
	// Await plans the wait until member name is caught up; Recreated
	// plans the waits after its pod was deleted (the pod recreated, then
	// Await).
	Await, Recreated func(name string)
}

// HasReceipt reports whether e records step k as done.
func (e *LedgerEntry) HasReceipt(k StepKind) bool {
	for _, r := range e.Receipts {
		if r.Step == k && (r.Outcome == OutcomeDone || r.Outcome == OutcomeAlready) {
			return true
		}
	}
	return false
}

// Fence fences the delete of restore pod p of cluster cl as observed.
func (p RestorePodFacts) Fence(cl ClusterFacts) *Fence {
	return &Fence{Kind: "Pod", Namespace: cl.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion, Fingerprint: p.Fingerprint}
}

// OrdinalName is the name of StatefulSet sts's pod with ordinal i.
func OrdinalName(sts string, i int) string { return fmt.Sprintf("%s-%d", sts, i) }

// SortLag is m's lag for ordering members by it: an unknown lag sorts
// after every known one.
func (m *Member) SortLag() int64 {
	if m.Lag == nil {
		return 1 << 62
	}
	return *m.Lag
}
