package patroni

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// Rules plan actions on Patroni clusters (model.ClassifyRules). A
// Patroni cluster has no membership to edit: a member is a pod running
// Patroni, which bootstraps from the primary by itself on an empty
// volume. The repairs are Patroni's own:
//
//   - reseed: POST /reinitialize on a replica (the member wipes its data
//     and copies it again from the primary), then wait until it streams
//     within the WAL lag threshold of the primary's position;
//   - replace: the fenced delete of the member's volume and pod; the
//     StatefulSet recreates both and Patroni copies the data from the
//     primary (basebackup); then the same wait;
//   - switchover: POST /switchover {"leader": observed primary,
//     "candidate": chosen} sent to the observed primary, which Patroni
//     refuses (412) when the primary changed; done when the members' own
//     answers show the candidate as the writable primary and the old one
//     as a replica.
//
// Every action needs exactly one writable primary, agreed by the leader
// lock; reseed and replace of the primary need --switchover-first. They
// live in plan.go.
var _ model.ClassifyRules = Rules{}

func (Rules) PlanReplace(c model.Plan)    { planning(c).replace() }
func (Rules) PlanSwitchover(c model.Plan) { planning(c).switchover() }

func (Rules) ReadyMeaning(d model.Decision) string {
	return "streaming from the primary " + d.Leader + " within the lag threshold"
}

func (Rules) PlanSeed(c model.Plan) {
	c.Block(model.CodeActionUnsupported, c.Intent().Member, "", "seed generations of Patroni clusters are not supported yet (Patroni copies replicas from the primary by itself)")
}

func (Rules) PlanRestore(c model.Plan) {
	c.Block(model.CodeActionUnsupported, c.Intent().Member, "", "restore of Patroni clusters is not supported yet")
}

// holdsRecorded: a Patroni member is its pod; the recorded pod and volume
// are checked by replaceNotResumable itself. A member that answers under
// the recorded name is the replacement a resume waits for.
func (Rules) HoldsRecorded(c model.Plan, e *model.LedgerEntry) bool {
	m := c.Member(e.Member)
	return m != nil && m.Engine != nil && m.Engine.Reachable && m.Engine.Patroni != nil
}

// SwitchoverSettleAfter is how long after Patroni answered a switchover
// its old primary may still be the primary before the switchover counts
// as one that can no longer complete (Patroni answers once the
// candidate is promoted; a primary that is the old one again a while
// later means it was undone).
const SwitchoverSettleAfter = 2 * time.Minute

// staleWait: a switchover entry waits for a member other than its old
// primary to hold the leader lock as the one writable primary. It can no
// longer come true once the old primary leads again well after Patroni
// answered, or when nothing of it was answered and nobody touched it
// for StaleEntryAfter; with finished, a switchover that has happened
// counts too. An entry of this very process is left to its own waits.
func (Rules) StaleWait(p model.Plan, e *model.LedgerEntry, finished bool) string {
	c := planning(p)
	if e.Action != model.ActionSwitchover || (e.Holder != "" && e.Holder == c.Options().LockHolder) {
		return ""
	}
	var rec *model.Receipt
	for i := range e.Receipts {
		r := &e.Receipts[i]
		if r.Step == model.StepSwitchover && r.DryRun == "" && r.From != "" && (r.Outcome == model.OutcomeDone || r.Outcome == model.OutcomeAlready) {
			rec = r
		}
	}
	prim := c.lockedPrimary()
	age := c.Now().Sub(e.UpdatedAt)
	switch {
	case rec != nil && prim != nil && prim.Name != rec.From && finished:
		return fmt.Sprintf("its switchover from %s has happened (%s is the primary holding the leader lock)", rec.From, prim.Name)
	case rec != nil && prim != nil && prim.Name == rec.From && !rec.At.IsZero() && c.Now().Sub(rec.At) > SwitchoverSettleAfter:
		return fmt.Sprintf("Patroni answered its switchover from %s to %s %s ago, yet %s is the primary holding the leader lock again: it can no longer complete, it is stale",
			rec.From, rec.MemberID, c.Now().Sub(rec.At).Round(time.Second), rec.From)
	case !e.UpdatedAt.IsZero() && age > c.Options().StaleEntryAfter:
		return fmt.Sprintf("it was last updated %s ago and its switchover has not completed: it is stale", age.Round(time.Second))
	}
	return ""
}

// patroni is a decision on a Patroni cluster: the classifier with
// Patroni's rules and helpers.
type patroni struct{ model.Plan }

func planning(p model.Plan) patroni { return patroni{p} }

// pg is what member m's Patroni reported, nil when it did not answer.
func pg(m *model.Member) *model.PatroniFacts {
	if m == nil || m.Engine == nil || !m.Engine.Reachable {
		return nil
	}
	return m.Engine.Patroni
}

// threshold is the replay lag in bytes a replica may have and count as
// caught up.
func (c patroni) threshold() uint64 { return c.LagThreshold() }

// primaries are the members that answer as a running, writable primary.
func (c patroni) primaries() []*model.Member {
	var out []*model.Member
	for i := range c.Observation().Members {
		m := &c.Observation().Members[i]
		if p := pg(m); p.Writable() && p.State == "running" {
			out = append(out, m)
		}
	}
	return out
}

// primary is the one writable primary, nil when there is not exactly one.
func (c patroni) primary() *model.Member {
	if p := c.primaries(); len(p) == 1 {
		return p[0]
	}
	return nil
}

// gates refuse a cluster hactl cannot act on: not probed, no answer,
// more than one system identifier (other than target's own: reseeding or
// replacing the member that diverged is the repair), not exactly one
// writable primary agreed by the leader lock. It returns the primary, nil
// when refused.
func (c patroni) gates(target string) *model.Member {
	if !c.Observation().EngineProbed {
		c.Block(model.CodeNotProbed, "", "", "the members were not probed (--no-probe?): hactl acts only on what the members themselves say")
		return nil
	}
	answered := false
	for i := range c.Observation().Members {
		answered = answered || pg(&c.Observation().Members[i]) != nil
	}
	if !answered {
		c.Block(model.CodeClusterUnreachable, "", "", "no member's Patroni answered%s", c.ProbeFailures())
		return nil
	}
	c.systemIDGate(target)
	if cl := c.Observation().Cluster.Patroni; cl != nil && cl.FailoverPending {
		c.Block(model.CodeActionInProgress, "", "", "a switchover or failover is pending in %s %s-failover (someone else asked Patroni for one): wait until Patroni has carried it out or it is cancelled (patronictl flush %s switchover)", dcsKind(cl), cl.Scope, cl.Scope)
	}
	prim := c.primary()
	var why []string
	for _, r := range c.Decision().Verdict {
		switch r.Code {
		case model.ReasonPrimarySplit, model.ReasonPrimaryMissing, model.ReasonLeaderLockStale, model.ReasonLeaderMismatch, model.ReasonLeaderLockUnknown:
			why = append(why, fmt.Sprintf("%s: %s", r.Code, r.Detail))
		}
	}
	if prim == nil && len(why) == 0 {
		why = append(why, fmt.Sprintf("%d members answer as a running writable primary", len(c.primaries())))
	}
	if cl := c.Observation().Cluster.Patroni; prim != nil && cl != nil && cl.ObjectsErr == "" && cl.LockFound && cl.LockHolder != prim.Name && len(why) == 0 {
		why = append(why, fmt.Sprintf("the leader lock names %q, %s answers as the primary", cl.LockHolder, prim.Name))
	}
	if len(why) > 0 {
		c.Block(model.CodePrimaryUnknown, "", "", "there is not exactly one writable primary agreed by the leader lock (%s): hactl acts only on a cluster whose primary is known; wait for Patroni to settle, or repair that first", strings.Join(why, "; "))
		return nil
	}
	c.Decision().Leader = prim.Name
	return prim
}

// paused reports whether the cluster is in maintenance mode: its
// dynamic configuration says pause, or a member reports it.
func (c patroni) paused() bool {
	if cl := c.Observation().Cluster.Patroni; cl != nil && cl.Paused {
		return true
	}
	for i := range c.Observation().Members {
		if p := pg(&c.Observation().Members[i]); p != nil && p.Paused {
			return true
		}
	}
	return false
}

// pauseGate refuses every action while the cluster is in maintenance
// mode: each relies on Patroni to act (a replaced member bootstraps from
// the primary, a reinitialized one copies and restarts, a switchover's
// candidate is promoted), and a paused Patroni leaves an empty data
// directory empty and fails nothing over.
func (c patroni) pauseGate() bool {
	if !c.paused() {
		return true
	}
	scope := c.Observation().Cluster.Name
	if cl := c.Observation().Cluster.Patroni; cl != nil && cl.Scope != "" {
		scope = cl.Scope
	}
	c.Block(model.CodeMaintenancePaused, "", "", "the cluster is in maintenance mode (pause): Patroni neither fails over nor bootstraps a member on an empty data directory, and hactl relies on it for every action; resume it first (patronictl resume %s) or repair by hand", scope)
	return false
}

// systemIDGate refuses members answering for another system identifier
// than the cluster's, target excepted.
func (c patroni) systemIDGate(target string) {
	var others []string
	for i := range c.Observation().Members {
		m := &c.Observation().Members[i]
		if p := pg(m); p != nil && p.SystemID != "" && c.Analysis().ClusterID != "" && p.SystemID != c.Analysis().ClusterID && m.Name != target {
			others = append(others, fmt.Sprintf("%s answers for %s", m.Name, p.SystemID))
		}
	}
	if len(others) > 0 {
		c.Block(model.CodeClusterIDSplit, "", "", "members answer for more than one PostgreSQL system identifier (the cluster's is %s; %s): resolve that first", c.Analysis().ClusterID, strings.Join(others, "; "))
	}
}

// streamingWell says why m is not a replica streaming from prim within
// the threshold with a ready pod ("" when it is).
func (c patroni) streamingWell(m, prim *model.Member) string {
	p := pg(m)
	switch {
	case m.Pod == nil:
		return "it has no pod"
	case m.Pod.DeletionMarked:
		return "its pod is being deleted"
	case p == nil:
		return "its Patroni did not answer"
	case prim == nil:
		return "no primary is known"
	case m.Name == prim.Name:
		return "it is the primary"
	case p.Writable():
		return "it answers as a writable primary"
	case p.State != "running":
		return fmt.Sprintf("its state is %q", p.State)
	case m.Phase == model.PhaseDiverged:
		return "its history diverged from the primary's"
	}
	if _, ok := pg(prim).Streaming(m.Name); !ok {
		return "it is not streaming from the primary " + prim.Name
	}
	switch {
	case m.Lag == nil:
		return "its replay position is unknown"
	case *m.Lag > 0 && uint64(*m.Lag) > c.threshold():
		return fmt.Sprintf("its replay is %d bytes behind the primary, more than the threshold of %d", *m.Lag, c.threshold())
	case !m.Pod.Ready:
		return "its pod is not ready"
	}
	return ""
}

// candidateWhyNot says why m cannot take over from prim ("" when it can):
// a running replica streaming within the threshold, not tagged
// nofailover, not diverged.
func (c patroni) candidateWhyNot(m, prim *model.Member) string {
	if why := c.streamingWell(m, prim); why != "" {
		return why
	}
	if pg(m).NoFailover {
		return "it is tagged nofailover"
	}
	return ""
}

// isSync reports whether m is the synchronous standby.
func (c patroni) isSync(m, prim *model.Member) bool {
	if p := pg(m); p != nil && p.SyncStandby {
		return true
	}
	if cl := c.Observation().Cluster.Patroni; cl != nil && cl.SyncStandby == m.Name {
		return true
	}
	r, ok := pg(prim).Streaming(m.Name)
	return ok && (r.SyncState == "sync" || r.SyncState == "quorum")
}

// candidate chooses who takes over from prim: the named member (which
// must be a healthy candidate), else the healthy candidate other than
// exclude with the least lag, the synchronous standby first in
// synchronous mode, the lowest ordinal on a tie. It blocks and returns
// nil when there is none.
func (c patroni) candidate(prim *model.Member, named, exclude string) *model.Member {
	if named != "" {
		m := c.Member(named)
		if m == nil {
			c.Block(model.CodeMemberNotFound, named, "", "%s/%s has no member %q (members: %s)", c.Observation().Cluster.Namespace, c.Observation().Cluster.Name, named, c.MemberNames())
			return nil
		}
		if why := c.candidateWhyNot(m, prim); why != "" {
			c.Block(model.CodeNoSwitchoverCandidate, named, "", "%s cannot take over from the primary %s: %s", named, prim.Name, why)
			return nil
		}
		return m
	}
	ok, not := c.candidates(prim, exclude)
	if len(ok) == 0 {
		detail := "no replica is running, streaming from the primary " + prim.Name + " within the lag threshold, without nofailover"
		if len(not) > 0 {
			detail += " (" + strings.Join(not, "; ") + ")"
		}
		c.Block(model.CodeNoSwitchoverCandidate, "", "", "%s", detail)
		return nil
	}
	return c.Member(ok[0])
}

// candidates are the members other than prim and exclude that could
// take over from prim, best first (the synchronous standby first in
// synchronous mode, then the least lag, then the lowest ordinal), and
// why each other one could not.
func (c patroni) candidates(prim *model.Member, exclude string) (ok, not []string) {
	var ms []*model.Member
	for i := range c.Observation().Members {
		m := &c.Observation().Members[i]
		if m.Name == prim.Name || m.Name == exclude {
			continue
		}
		if why := c.candidateWhyNot(m, prim); why != "" {
			not = append(not, m.Name+": "+why)
			continue
		}
		ms = append(ms, m)
	}
	syncMode := c.Observation().Cluster.Patroni != nil && c.Observation().Cluster.Patroni.SynchronousMode
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if syncMode && c.isSync(a, prim) != c.isSync(b, prim) {
			return c.isSync(a, prim)
		}
		if a.SortLag() != b.SortLag() {
			return a.SortLag() < b.SortLag()
		}
		return a.Ordinal < b.Ordinal
	})
	for _, m := range ms {
		ok = append(ok, m.Name)
	}
	return ok, not
}

// switchoverSteps plans handing the primary role from prim to cand.
func (c patroni) switchoverSteps(prim, cand *model.Member) {
	c.Step(model.Step{Kind: model.StepSwitchover, Member: cand.Name, MemberID: cand.Name, From: prim.Name,
		Detail: fmt.Sprintf("switch over from the primary %s to %s (POST /switchover to %s; Patroni refuses it if %s no longer leads)", prim.Name, cand.Name, prim.Name, prim.Name)})
	c.awaitSwitchover(prim.Name, cand.Name)
}

func (c patroni) awaitSwitchover(from, to string) {
	c.Step(model.Step{Kind: model.StepAwaitSwitchover, Member: to, MemberID: to, From: from,
		Detail: fmt.Sprintf("wait until %s answers as the one writable primary holding the leader lock (%s rejoins as a replica by itself)", to, from)})
}

// lockedPrimary is the one running writable primary when the leader
// lock names it (or the lock could not be read), nil otherwise.
func (c patroni) lockedPrimary() *model.Member {
	prim := c.primary()
	if prim == nil {
		return nil
	}
	if cl := c.Observation().Cluster.Patroni; cl != nil && cl.ObjectsErr == "" && (!cl.LockFound || cl.LockHolder != prim.Name || cl.LockStale(c.Now())) {
		return nil
	}
	return prim
}

// switchedOver reports whether the switchover from from has happened: a
// member other than from is the one running writable primary and holds
// the leader lock. It does not wait for the old primary: Patroni rejoins
// it by itself (see switchoverNotes).
func (c patroni) switchedOver(from string) bool {
	prim := c.lockedPrimary()
	return prim != nil && prim.Name != from
}

// switchoverNotes say who took over from from when Patroni chose another
// member than to, and how the old primary stands.
func (c patroni) switchoverNotes(from, to string) {
	if prim := c.primary(); prim != nil && prim.Name != to {
		c.Note(model.CodeSwitchoverOther, prim.Name, "Patroni made %s the primary, not %s as asked: the switchover from %s is done", prim.Name, to, from)
	}
	c.rejoinNote(from)
}

// PatroniSettleAfterStart is how long a member's PostgreSQL must have run
// since it (re)started before a reinitialize is sent to it: one Patroni
// loop (loop_wait's default). Patroni 3.0 accepts a reinitialize that
// arrives while it still starts PostgreSQL (right after a switchover
// demoted the member), then times out stopping it and never rebuilds.
const PatroniSettleAfterStart = 10 * time.Second

// startSkew is how far ahead of this machine's clock a member's reported
// start may be and still count as just now.
const startSkew = 2 * time.Second

// justStarted reports whether m's PostgreSQL started less than
// PatroniSettleAfterStart ago, and how long ago. The start is the
// member's own clock (postmaster_start_time) read against this one: a
// start up to startSkew ahead counts as just now; one further ahead, or
// one that does not parse, cannot be judged and does not hold the
// reinitialize back (as before this rule).
func (c patroni) justStarted(m *model.Member) (time.Duration, bool) {
	p := pg(m)
	if p == nil || p.PostmasterStart == "" {
		return 0, false
	}
	start, err := parsePostmasterStart(p.PostmasterStart)
	if err != nil {
		return 0, false
	}
	age := c.Now().Sub(start)
	if age < -startSkew {
		return 0, false
	}
	return max(age, 0), age < PatroniSettleAfterStart
}

// parsePostmasterStart reads Patroni's postmaster_start_time
// ("2026-12-06 11:00:56.406+00:00", fractions optional).
func parsePostmasterStart(v string) (time.Time, error) {
	return time.Parse("2006-01-02 15:04:05.999999999-07:00", v)
}

// demoting reports whether m, an old primary, is still on its way down:
// it answers as demoted or writable, or its PostgreSQL is stopping. A
// reinitialize sent then is never carried out.
func (c patroni) demoting(m *model.Member) bool {
	p := pg(m)
	return p != nil && (p.Writable() || p.Role == "demoted" || p.State == "stopping")
}

// rejoinNote reports the old primary from when it is not a running
// replica streaming from the primary.
func (c patroni) rejoinNote(from string) {
	m := c.Member(from)
	if m == nil {
		return
	}
	p := pg(m)
	why := ""
	switch {
	case p == nil:
		why = "its Patroni does not answer"
	case p.Role != "replica" || p.State != "running":
		why = fmt.Sprintf("it answers role %q, state %q", p.Role, p.State)
	default:
		if prim := c.primary(); prim != nil {
			if _, ok := pg(prim).Streaming(from); !ok {
				why = "it does not stream from the primary " + prim.Name
			}
		}
	}
	if why != "" {
		c.Note(model.CodeRejoinPending, from, "%s, the old primary, has not rejoined as a streaming replica yet (%s): Patroni rejoins it by itself (pg_rewind or a fresh copy); if it stays so, reseed it", from, why)
	}
}

// recordedSwitchover is the switchover the resumed entry sent (its
// receipt done, already or unanswered), nil when none.
func (c patroni) recordedSwitchover() *model.Receipt {
	if c.Resume() == nil {
		return nil
	}
	var out *model.Receipt
	for i := range c.Resume().Receipts {
		r := &c.Resume().Receipts[i]
		if r.Step == model.StepSwitchover && r.DryRun == "" && (r.Outcome == model.OutcomeDone || r.Outcome == model.OutcomeAlready || r.Outcome == model.OutcomeUnknown || r.Outcome == model.OutcomeSending) {
			out = r
		}
	}
	return out
}

// switchover plans the switchover action: c.Intent().Member names the
// candidate (--to), or is empty to let the rules choose.
func (c patroni) switchover() {
	if rec := c.recordedSwitchover(); rec != nil && rec.MemberID != "" && rec.From != "" {
		// Resume: the request was sent; judge by the members' answers.
		if c.switchedOver(rec.From) {
			c.switchoverNotes(rec.From, rec.MemberID)
			c.Decision().Leader = c.primary().Name
			c.Done()
			return
		}
		if prim := c.primary(); prim != nil && prim.Name == rec.From && !c.awaitingSent(rec) {
			// Still the old primary, and the request took no effect:
			// ask again, through the gates.
			c.freshSwitchover()
			return
		}
		c.awaitSwitchover(rec.From, rec.MemberID)
		return
	}
	c.freshSwitchover()
}

// awaitingSent reports whether the recorded switchover was answered (done
// or already): Patroni moved the lock, the members follow.
func (c patroni) awaitingSent(rec *model.Receipt) bool {
	return rec.Outcome == model.OutcomeDone || rec.Outcome == model.OutcomeAlready
}

func (c patroni) freshSwitchover() {
	named := c.Intent().Member
	if named != "" && c.Member(named) == nil {
		c.Block(model.CodeMemberNotFound, named, "", "%s/%s has no member %q (members: %s)", c.Observation().Cluster.Namespace, c.Observation().Cluster.Name, named, c.MemberNames())
		return
	}
	prim := c.gates("")
	if prim == nil || !c.pauseGate() {
		return
	}
	if named == prim.Name {
		c.Done() // already the primary: nothing to do
		return
	}
	cand := c.candidate(prim, named, "")
	if cand == nil {
		return
	}
	c.switchoverSteps(prim, cand)
}

// replace plans replace and reseed of c.Intent().Member.
func (c patroni) replace() {
	name := c.Intent().Member
	m := c.replaceTarget(name)
	if m == nil {
		return
	}
	resumePrim, handedOver, stop := c.resumeGates(m)
	if stop || c.resumed(m, resumePrim, handedOver) {
		return
	}
	if pod := m.Pod; pod != nil && pod.DeletionMarked {
		c.AwaitForeignDelete(name, pod)
		return
	}
	if c.ObserveNeverStarted(name, m.Pod) {
		return
	}
	prim := c.gates(name)
	if prim == nil {
		return
	}
	if !handedOver && !c.pauseGate() {
		return
	}
	switch {
	case handedOver:
	case prim.Name == name:
		if !c.Options().SwitchoverFirst {
			c.Block(model.CodeTargetIsPrimary, name, model.FlagSwitchoverFirst, "%s is the primary: %s it would stop the cluster's writes", name, map[model.Action]string{model.ActionReseed: "reinitializing", model.ActionReplace: "replacing"}[c.Intent().Action])
			return
		}
		if !c.riskGates(m, prim, true) {
			return
		}
		if !c.handOver(prim, name) {
			return
		}
	default:
		if !c.riskGates(m, prim, false) {
			return
		}
		if rec := c.recordedSwitchover(); rec != nil && rec.From == name && (!c.switchedOver(name) || c.demoting(m)) {
			// The switchover this action made has not settled yet, or
			// the old primary is still demoting: Patroni does not carry
			// out a reinitialize that arrives while it stops.
			c.awaitSwitchover(name, rec.MemberID)
		}
	}
	if c.Intent().Action == model.ActionReseed {
		c.planReinitialize(m, prim)
		return
	}
	c.DeleteBoth(m, m.PVC, m.PVC != nil)
	c.recreated(name)
}

// resumeGates are a resume's gates: it passes the same ones as a fresh
// decision, so whatever the entry recorded, the member is never deleted,
// reinitialized or replaced while it is the primary. prim is the primary
// they found (nil when no resume), handedOver that --switchover-first
// had the primary m hand over first, stop that the decision is made.
func (c patroni) resumeGates(m *model.Member) (prim *model.Member, handedOver, stop bool) {
	if c.Resume() == nil {
		return nil, false, false
	}
	name := m.Name
	if prim = c.gates(name); prim == nil {
		return nil, false, true
	}
	switch {
	case prim.Name != name:
		return prim, false, false
	case !c.Options().SwitchoverFirst:
		c.promoted(m)
		return prim, false, true
	}
	// --switchover-first: the primary hands over before the rest
	if ok := c.pauseGate(); !c.riskGates(m, prim, true) || !ok || !c.handOver(prim, name) {
		return prim, false, true
	}
	return prim, true, false
}

// resumed continues the recorded replace or reseed of m, reporting
// whether it did. The pause and risk gates hold while the resumed plan
// still takes the member down; its waits and its end are never refused by
// them (the member rebuilt is a candidate again).
func (c patroni) resumed(m, resumePrim *model.Member, handedOver bool) bool {
	a := c.Intent().Action
	if !(a == model.ActionReplace && c.replaceResume(m)) && !(a == model.ActionReseed && c.reseedResume(m)) {
		return false
	}
	if !handedOver && c.Decision().Mutates() {
		if ok := c.pauseGate(); !c.riskGates(m, resumePrim, false) || !ok {
			c.Decision().Steps = c.Decision().Steps[:0]
		}
	}
	return true
}

// replaceTarget is the member a replace or reseed names, with the
// refusals that need nothing but the member and the template; nil when
// there is no such member.
func (c patroni) replaceTarget(name string) *model.Member {
	m := c.Member(name)
	if m == nil {
		c.Block(model.CodeMemberNotFound, name, "", "%s/%s has no member %q (members: %s)", c.Observation().Cluster.Namespace, c.Observation().Cluster.Name, name, c.MemberNames())
		return nil
	}
	if m.Ordinal >= c.Observation().Cluster.Replicas {
		c.Block(model.CodeMemberNotWanted, name, "", "%s has ordinal %d but the StatefulSet wants %d replicas: it would not be recreated", name, m.Ordinal, c.Observation().Cluster.Replicas)
	}
	if c.Intent().Action == model.ActionReseed && c.Options().Generation != "" {
		c.Block(model.CodeGenerationUnsupported, name, "", "reseeding a Patroni member from seed generation %q is not supported; reseed without a generation copies the data from the primary", c.Options().Generation)
	}
	if t := c.Observation().Cluster.Template; c.Intent().Action == model.ActionReplace && c.Observation().Cluster.Shape == model.ShapeOperatorOwned {
		if strings.HasPrefix(t.OperatorOwner, "PostgresCluster/") {
			c.Block(model.CodeShapeOperatorOwned, name, "", "the cluster is Crunchy PGO's %s, which owns each instance's StatefulSet and its claim <instance>-pgdata and recreates them as its spec.instances say: hactl deletes neither; rebuild %s's data from the primary with reseed (Patroni's reinitialize, what `patronictl reinit` in the instance's database container does), or change the instance set in the PostgresCluster", t.OperatorOwner, name)
		} else {
			c.Block(model.CodeShapeOperatorOwned, name, "", "the cluster is managed by %s, which owns its pods and volumes; replace the member through the operator (reseed and switchover use Patroni's own REST actions and are allowed)", cmp.Or(t.OperatorOwner, "an operator"))
		}
	}
	c.Decision().Replaced = c.ReplacedOf(m)
	return m
}

// planReinitialize plans a reseed's reinitialize of m (prim is the
// primary): sent to the member itself, once its PostgreSQL has settled.
func (c patroni) planReinitialize(m, prim *model.Member) {
	name := m.Name
	if pg(m) == nil && prim.Name != name {
		c.Block(model.CodeMemberUnreachable, name, "", "%s's Patroni did not answer: a reinitialize is sent to the member itself; replace it instead", name)
		return
	}
	if age, recent := c.justStarted(m); recent {
		c.Step(model.Step{Kind: model.StepAwaitSettled, Member: name, MemberID: name,
			Detail: fmt.Sprintf("wait until %s's PostgreSQL has run %s since it started (it started %s ago): Patroni does not carry out a reinitialize sent while it is still starting", name, PatroniSettleAfterStart, age.Round(100*time.Millisecond))})
	}
	c.reinitialize(m)
}

// handOver plans the switchover from the primary prim (the target name)
// to the best candidate, blocking when there is none. It reports whether
// it planned.
func (c patroni) handOver(prim *model.Member, name string) bool {
	cand := c.candidate(prim, "", name)
	if cand == nil {
		return false
	}
	c.Note(model.CodeSwitchoverFirst, name, "%s is the primary: it hands over to %s first", name, cand.Name)
	c.switchoverSteps(prim, cand)
	return true
}

// promoted refuses a resumed replace or reseed whose member answers as
// the primary now: Patroni promoted it since the entry began (or the
// entry's own switchover has not happened yet). --switchover-first hands
// the primary role over first instead.
func (c patroni) promoted(m *model.Member) {
	e := c.Resume()
	tl := ""
	if p := pg(m); p != nil && p.Timeline > 0 {
		tl = fmt.Sprintf(" on timeline %d", p.Timeline)
	}
	c.Block(model.CodeTargetPromoted, m.Name, model.FlagSwitchoverFirst, "%s is the primary now%s, holding the leader lock: Patroni promoted it after %s ledger entry %s began (phase %s, started %s); a resume never deletes, reinitializes or replaces the primary. Rerun with --switchover-first to hand the primary role to a healthy replica first, or --supersede to drop the entry",
		m.Name, tl, e.Action, e.ID, e.Phase, e.StartedAt.UTC().Format(time.RFC3339))
}

// riskGates refuse taking down m (a replica now, or the primary handing
// over first) when it leaves the cluster without a failover candidate
// while m rebuilds (--accept-no-failover), or when m is the synchronous
// standby under synchronous_mode_strict, so the primary would stop
// committing (--accept-write-stall). They report whether the decision
// goes on.
func (c patroni) riskGates(m, prim *model.Member, handingOver bool) bool {
	ok := true
	if !c.Options().AcceptNoFailover {
		// The candidates left while m rebuilds: those that can take over
		// now, less m and, when m hands over first, the one that becomes
		// the primary (with none, the hand-over itself is refused).
		capable, not := c.candidates(prim, m.Name)
		losing := c.candidateWhyNot(m, prim) == ""
		switch {
		case handingOver && len(capable) == 1:
			c.Block(model.CodeLastFailoverReplica, m.Name, model.FlagAcceptNoFailover, "%s hands the primary role to %s first: while %s rebuilds, no other member could take over from %s, and losing it would leave no member to fail over to (%s)",
				m.Name, capable[0], m.Name, capable[0], cmp.Or(strings.Join(not, "; "), "no other replica"))
			ok = false
		case !handingOver && losing && len(capable) == 0:
			c.Block(model.CodeLastFailoverReplica, m.Name, model.FlagAcceptNoFailover, "%s is the last member that could take over from the primary %s: while it rebuilds, losing the primary would leave no member to fail over to (%s)",
				m.Name, prim.Name, cmp.Or(strings.Join(not, "; "), "no other replica"))
			ok = false
		}
	}
	if cl := c.Observation().Cluster.Patroni; !c.Options().AcceptWriteStall && cl != nil && cl.SynchronousModeStrict && m.Name != prim.Name && c.isSync(m, prim) {
		c.Block(model.CodeSyncStandbyStrict, m.Name, model.FlagAcceptWriteStall, "%s is the synchronous standby and synchronous_mode_strict is on: while it rebuilds, the primary %s commits no writes until another replica becomes synchronous", m.Name, prim.Name)
		ok = false
	}
	return ok
}

// reinitialize plans the reinitialize of m and the waits after it.
func (c patroni) reinitialize(m *model.Member) {
	var f *model.Fence
	if p := m.Pod; p != nil {
		f = &model.Fence{Kind: "Pod", Namespace: c.Observation().Cluster.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion, Fingerprint: p.Fingerprint, Role: p.RoleLabel}
	}
	since := ""
	if p := pg(m); p != nil {
		since = p.PostmasterStart
	}
	c.Step(model.Step{Kind: model.StepReinitialize, Member: m.Name, MemberID: m.Name, Fence: f, Since: since,
		Detail: fmt.Sprintf("reinitialize %s: it throws its data away and copies it again from the primary (POST /reinitialize to %s)", m.Name, m.Name)})
	c.Step(model.Step{Kind: model.StepAwaitRebuild, Member: m.Name, MemberID: m.Name,
		Detail: fmt.Sprintf("wait until %s is seen rebuilding (no longer streaming)", m.Name)})
	c.awaitStreaming(m.Name)
}

func (c patroni) awaitStreaming(name string) {
	c.Step(model.Step{Kind: model.StepAwaitStreaming, Member: name, MemberID: name,
		Detail: fmt.Sprintf("wait until %s streams from the primary with its replay within %d bytes of the primary's WAL position and its pod is ready", name, c.threshold())})
}

// recreated appends the steps after the pod was deleted.
func (c patroni) recreated(name string) {
	c.RecreatedThen(name, "Patroni copies the data from the primary", c.awaitStreaming)
}

// streamingNow reports whether m streams from the one primary within the
// threshold with a ready pod.
func (c patroni) streamingNow(m *model.Member) bool {
	prim := c.primary()
	return prim != nil && c.streamingWell(m, prim) == ""
}

// RebuildSeenAfter is how long after a reinitialize was answered the
// member counts as having rebuilt even when no wait saw it down: Patroni
// stops the member within a second of answering, so a member streaming
// that long after is its rebuilt self (a rerun after a crash may come
// after the whole rebuild).
const RebuildSeenAfter = 30 * time.Second

// lastReceiptAt is when e last recorded step k as done (zero when never).
func lastReceiptAt(e *model.LedgerEntry, k model.StepKind) time.Time {
	var at time.Time
	for _, r := range e.Receipts {
		if r.Step == k && (r.Outcome == model.OutcomeDone || r.Outcome == model.OutcomeAlready) && r.At.After(at) {
			at = r.At
		}
	}
	return at
}

// reseedResume plans a resumed reseed whose reinitialize the member
// answered (done, or already in progress): it only waits. It reports
// whether it planned.
func (c patroni) reseedResume(m *model.Member) bool {
	e := c.Resume()
	if e == nil {
		return false
	}
	// The member's own PostgreSQL start time, against the one observed
	// before the reinitialize, tells whether it restarted (the rebuild)
	// whatever the clocks say; without both, fall back to the waits seen
	// and the time since the answer.
	since, now := reinitSince(e), ""
	if p := pg(m); p != nil {
		now = p.PostmasterStart
	}
	known := since != "" && now != ""
	restarted := known && now != since
	if !e.HasReceipt(model.StepReinitialize) {
		// Only a reinitialize the member answered counts: after a
		// request sent without an answer, a restart may be anything (a
		// crash, Patroni restarting PostgreSQL), so the reinitialize is
		// planned again (a member already rebuilding answers so).
		return false
	}
	if known {
		c.Decision().Leader = c.primaryName()
		switch {
		case restarted && c.streamingNow(m):
			c.Done()
		case restarted:
			c.awaitStreaming(m.Name)
		default:
			c.Step(model.Step{Kind: model.StepAwaitRebuild, Member: m.Name, MemberID: m.Name,
				Detail: fmt.Sprintf("wait until %s's PostgreSQL restarts (it started %s before the reinitialize)", m.Name, since)})
			c.awaitStreaming(m.Name)
		}
		return true
	}
	rebuilding := e.HasReceipt(model.StepAwaitRebuild) || c.Now().Sub(lastReceiptAt(e, model.StepReinitialize)) > RebuildSeenAfter
	switch {
	case rebuilding && c.streamingNow(m):
		c.Decision().Leader = c.primaryName()
		c.Done()
	case rebuilding || !c.streamingNow(m):
		// Seen rebuilding (now, or by an earlier wait): streaming is next.
		c.Decision().Leader = c.primaryName()
		c.awaitStreaming(m.Name)
	default:
		c.Decision().Leader = c.primaryName()
		c.Step(model.Step{Kind: model.StepAwaitRebuild, Member: m.Name, MemberID: m.Name,
			Detail: fmt.Sprintf("wait until %s is seen rebuilding (no longer streaming)", m.Name)})
		c.awaitStreaming(m.Name)
	}
	return true
}

// reinitSince is the PostgreSQL start time the last answered
// reinitialize of e observed before it was sent ("" when none was
// recorded): after a reinitialize sent again, the rebuild that counts is
// the one after it.
func reinitSince(e *model.LedgerEntry) string {
	since := ""
	for _, r := range e.Receipts {
		if r.Step == model.StepReinitialize && r.Since != "" && (r.Outcome == model.OutcomeDone || r.Outcome == model.OutcomeAlready) {
			since = r.Since
		}
	}
	return since
}

func (c patroni) primaryName() string {
	if p := c.primary(); p != nil {
		return p.Name
	}
	return c.Analysis().LeaderMember
}

// replaceResume plans a resumed replace once its first delete was
// recorded or its pod or volume is no longer the original (see
// recreateResume). It reports whether it planned.
func (c patroni) replaceResume(m *model.Member) bool {
	return c.RecreateResume(m, model.Rebuilt{Leader: c.primaryName, CaughtUp: c.streamingNow, Await: c.awaitStreaming, Recreated: c.recreated})
}
