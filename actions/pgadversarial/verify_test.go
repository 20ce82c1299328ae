package pgadversarial

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/model"
)

// The checks: plain functions of what the suite observed on its own (the
// audit log, the probe's timeline, Patroni's log, rows read on each
// member) and of what the ledger says. Each returns the violations it
// found; checks_test.go plants one for each and shows it reported.

// leaseDuration is the lock's lease (hactl has no flag to change it).
const leaseDuration = actions.DefaultLockDuration

// memberOf names the member a pod or PVC of the cluster belongs to ("" for
// any other object): pods are named after the member, volumes
// pgdata-<member>.
func memberOf(resource, name string) string {
	switch resource {
	case "pods":
		if strings.HasPrefix(name, cluster+"-") {
			return name
		}
	case "persistentvolumeclaims":
		if m, ok := strings.CutPrefix(name, "pgdata-"); ok && strings.HasPrefix(m, cluster+"-") {
			return m
		}
	}
	return ""
}

// externalSwitch is a switchover the suite itself asked Patroni for (an
// operator acting beside hactl), between From and To.
type externalSwitch struct {
	From, To  time.Time
	Candidate string
	// Accepted: Patroni answered 200.
	Accepted bool
}

// logEvent is one line of a member's Patroni log the checks read.
type logEvent struct {
	At     time.Time
	Member string
	Line   string
}

// evidence is what a window of the run (a round, or the whole run)
// observed.
type evidence struct {
	// since bounds the window: receipts and observations before it
	// belong to earlier rounds.
	since    time.Time
	events   []e2esuite.AuditEvent
	tl       *timeline
	entries  []model.LedgerEntry
	external []externalSwitch
	// removals are Patroni's "Removing data directory" lines that
	// wiped a member's data: a reinitialize carried out (removalsIn
	// leaves out the cleanup of a failed copy).
	removals []logEvent
	// frozenOrKilled are the identities of hactl processes the suite
	// SIGKILLed or froze: only they may leave "sending" as the last
	// word of a change.
	frozenOrKilled map[string]bool
}

func (ev *evidence) receipts() []model.Receipt {
	var out []model.Receipt
	for _, e := range ev.entries {
		for _, r := range e.Receipts {
			if !r.At.Before(ev.since) {
				out = append(out, r)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

func (ev *evidence) hactlWrites() []e2esuite.AuditEvent {
	var out []e2esuite.AuditEvent
	for _, e := range ev.events {
		if !e.RequestReceived.Before(ev.since) && e.Holder() != "" {
			out = append(out, e)
		}
	}
	return out
}

// checkRows: every row committed (and seen on every member) before a
// round is on every member after it, read on each one's own PostgreSQL.
func checkRows(want []string, have map[string]map[string]bool) []string {
	var out []string
	var members []string
	for m := range have {
		members = append(members, m)
	}
	sort.Strings(members)
	for _, m := range members {
		var missing []string
		for _, v := range want {
			if !have[m][v] {
				missing = append(missing, v)
			}
		}
		if len(missing) > 0 {
			out = append(out, fmt.Sprintf("member %s lost %d committed rows: %s", m, len(missing), strings.Join(missing, ", ")))
		}
	}
	return out
}

// checkPrimaryDeletes: hactl deleted no pod or volume of the member that
// was the primary at that moment (by the member's own last answer).
func checkPrimaryDeletes(ev *evidence) []string {
	var out []string
	for _, e := range ev.hactlWrites() {
		if e.Verb != "delete" {
			continue
		}
		m := memberOf(e.ObjectRef.Resource, e.ObjectRef.Name)
		if m == "" {
			continue
		}
		if smp, ok := ev.tl.primaryAt(m, e.RequestReceived); ok {
			out = append(out, fmt.Sprintf("%s: %s was the primary (it answered role %s, state %s, timeline %d at %s)",
				e, m, smp.Role, smp.State, smp.Timeline, smp.At.Format("15:04:05.000")))
		}
	}
	return out
}

// checkReinitTargets: no reinitialize was sent to the member that was the
// primary (by its last answer before the write-ahead receipt, or any
// answer until the receipt of how it ended), and no member rebuilt its
// data while it was the primary.
func checkReinitTargets(ev *evidence) []string {
	var out []string
	rs := ev.receipts()
	for i, r := range rs {
		if r.Step != model.StepReinitialize || r.Outcome != model.OutcomeSending {
			continue
		}
		end := r.At.Add(10 * time.Second)
		for _, n := range rs[i+1:] {
			if n.ActionID == r.ActionID && n.Step == model.StepReinitialize {
				end = n.At
				break
			}
		}
		if smp, ok := ev.tl.primaryDuring(r.Member, r.At, end); ok {
			out = append(out, fmt.Sprintf("reinitialize of %s (action %s) sent at %s while %s answered as the primary (at %s)",
				r.Member, r.ActionID, r.At.Format("15:04:05.000"), r.Member, smp.At.Format("15:04:05.000")))
		}
	}
	for _, l := range ev.removals {
		if l.At.Before(ev.since) {
			continue
		}
		if smp, ok := ev.tl.primaryAt(l.Member, l.At); ok {
			out = append(out, fmt.Sprintf("%s removed its data directory at %s, its last answer before being the primary's (at %s): %s",
				l.Member, l.At.Format("15:04:05.000"), smp.At.Format("15:04:05.000"), l.Line))
		}
	}
	return out
}

// checkLockDiscipline: every write a hactl process made in the window
// names its lock identity; every one to the cluster's objects (pods,
// volumes, StatefulSet, ledger) was received while the lock Lease's last
// completed write named that process, within a lease of that process's
// last renewal; no two processes' changing spans overlap
// (e2esuite.CheckLockDiscipline). It returns the violations and how many
// writes it checked.
func checkLockDiscipline(ev *evidence) (violations []string, checked int) {
	return e2esuite.CheckLockDiscipline(ev.events, namespace, cluster, ev.since)
}

// checkEngineRequests: every switchover Patroni accepted (its failover
// ConfigMap written with a candidate) came from the process the lock named
// at that moment, which had written its switchover to that candidate
// ahead to the ledger; every reinitialize Patroni carried out (its
// "Removing data directory") follows a reinitialize of that member the
// ledger records, written ahead by the process the lock named then. The
// members cannot say who sent a request: the switchover is tied to the
// lock by the moment Patroni wrote it down, the reinitialize (carried out
// on Patroni's next loop, up to loop_wait later) by its write-ahead
// receipt.
func checkEngineRequests(ev *evidence) []string {
	var out []string
	leases := e2esuite.LockWrites(ev.events, namespace, cluster)
	rs := ev.receipts()
	for _, e := range ev.events {
		if e.RequestReceived.Before(ev.since) {
			continue
		}
		leader, cand, ok := failoverRequest(e)
		if !ok {
			continue
		}
		if ev.externalAt(cand, e.RequestReceived) {
			continue
		}
		// the latest switchover to that candidate written ahead before
		// Patroni wrote it down: its process must have held the lock
		// when it wrote it, and whoever holds the lock when Patroni acts
		// on it must be that process or a rerun of the same action
		var src *model.Receipt
		for i := range rs {
			r := rs[i]
			if r.Step == model.StepSwitchover && r.MemberID == cand && e2esuite.Changed(r.Outcome) && !r.At.After(e.StageTimestamp) {
				src = &rs[i]
			}
		}
		h := ""
		if last := e2esuite.HolderAt(leases, e.RequestReceived); last != nil {
			h = last.LeaseHolder()
		}
		switch {
		case src == nil:
			out = append(out, fmt.Sprintf("Patroni accepted a switchover from %s to %s (%s) while the lock named %q; no switchover to %s was written ahead in the ledger",
				leader, cand, e, h, cand))
		case !e2esuite.HeldBy(leases, src.Holder, src.At):
			out = append(out, fmt.Sprintf("Patroni accepted a switchover from %s to %s (%s); the ledger's switchover to it (action %s, %s) was written by %s while the lock named another holder",
				leader, cand, e, src.ActionID, src.At.Format("15:04:05.000"), src.Holder))
		case h != "" && h != src.Holder && !ev.sameAction(src.ActionID, h):
			out = append(out, fmt.Sprintf("Patroni carried out the switchover from %s to %s of action %s (sent by %s at %s) at %s, while the lock named %q, which was not resuming it",
				leader, cand, src.ActionID, src.Holder, src.At.Format("15:04:05.000"), e.RequestReceived.Format("15:04:05.000"), h))
		}
	}
	for _, l := range ev.removals {
		if l.At.Before(ev.since) {
			continue
		}
		var src *model.Receipt
		for i := range rs {
			r := rs[i]
			if r.Step == model.StepReinitialize && r.Member == l.Member && e2esuite.Changed(r.Outcome) &&
				!r.At.After(l.At) && l.At.Sub(r.At) < 45*time.Second {
				src = &rs[i]
			}
		}
		switch {
		case src == nil:
			out = append(out, fmt.Sprintf("%s removed its data directory at %s (a reinitialize carried out) with no reinitialize of it in the ledger: %s",
				l.Member, l.At.Format("15:04:05.000"), l.Line))
		case !e2esuite.HeldBy(leases, src.Holder, src.At):
			out = append(out, fmt.Sprintf("the reinitialize of %s recorded at %s by %s was sent while the lock named another holder",
				l.Member, src.At.Format("15:04:05.000"), src.Holder))
		}
	}
	return out
}

func (ev *evidence) externalAt(cand string, t time.Time) bool {
	for _, x := range ev.external {
		if x.Candidate == cand && !t.Before(x.From) && !t.After(x.To) {
			return true
		}
	}
	return false
}

// checkReceipts: every change has its receipt in the ledger: each delete
// hactl made (a receipt for its UID, and one saying how it ended unless
// its process was killed or frozen in between), each change of the
// primary (a switchover to that member, or one the suite made itself) and
// each rebuild a member went through (a reinitialize of it, or its pod
// deleted by a replace). It also returns how many changes it saw.
func checkReceipts(ev *evidence) (out []string, changes int) {
	rs := ev.receipts()
	deletes := e2esuite.IndexDeletes(rs)
	deletedPods := map[string][]time.Time{}
	for _, e := range ev.hactlWrites() {
		if e.Verb != "delete" || !e.Guarded(namespace, cluster) {
			continue
		}
		m := memberOf(e.ObjectRef.Resource, e.ObjectRef.Name)
		if m == "" {
			continue
		}
		changes++
		if e.ObjectRef.Resource == "pods" {
			deletedPods[m] = append(deletedPods[m], e.RequestReceived)
		}
		if v := deletes.Check(e, ev.frozenOrKilled[e.Holder()]); v != "" {
			out = append(out, v)
		}
	}
	for _, c := range ev.tl.changes() {
		if c.At.Before(ev.since) {
			continue
		}
		changes++
		if ev.externalAt(c.To, c.At) {
			continue
		}
		found := false
		for _, r := range rs {
			if r.Step == model.StepSwitchover && r.MemberID == c.To && e2esuite.Changed(r.Outcome) && !r.At.After(c.At) {
				found = true
			}
		}
		if !found {
			out = append(out, fmt.Sprintf("the primary moved from %s to %s at %s (the members answered so) but the ledger has no switchover to %s",
				c.From, c.To, c.At.Format("15:04:05.000"), c.To))
		}
	}
	for _, b := range ev.tl.rebuilds() {
		if b.At.Before(ev.since) {
			continue
		}
		changes++
		found := false
		for _, r := range rs {
			if r.Step == model.StepReinitialize && r.Member == b.Member && e2esuite.Changed(r.Outcome) && !r.At.After(b.At) {
				found = true
			}
		}
		for _, t := range deletedPods[b.Member] {
			found = found || !t.After(b.At)
		}
		if !found {
			out = append(out, fmt.Sprintf("%s rebuilt its data from %s (pod %s; it answered so) with neither a reinitialize of it in the ledger nor its pod deleted by hactl",
				b.Member, b.At.Format("15:04:05.000"), b.PodUID))
		}
	}
	return out, changes
}

// sameAction reports whether holder h wrote a receipt of action id (a
// rerun resuming it).
func (ev *evidence) sameAction(id, h string) bool {
	for _, e := range ev.entries {
		for _, r := range e.Receipts {
			if r.ActionID == id && r.Holder == h {
				return true
			}
		}
	}
	return false
}

// checkReinitCarriedOut: every reinitialize the ledger says Patroni
// accepted (done) shows in that member's Patroni log as its data directory
// removed: the ledger does not claim what did not happen, and the log the
// engine-request check reads is really read.
func checkReinitCarriedOut(ev *evidence) []string {
	var out []string
	for _, r := range ev.receipts() {
		if r.Step != model.StepReinitialize || r.Outcome != model.OutcomeDone {
			continue
		}
		found := false
		for _, l := range ev.removals {
			found = found || l.Member == r.Member && l.At.After(r.At.Add(-30*time.Second)) && l.At.Before(r.At.Add(time.Minute))
		}
		if !found {
			out = append(out, fmt.Sprintf("the ledger says the reinitialize of %s was done at %s (action %s), but its Patroni log shows no data directory removed around then",
				r.Member, r.At.Format("15:04:05.000"), r.ActionID))
		}
	}
	return out
}

// checkSwitchoverSeen: every switchover the ledger says Patroni accepted
// (done) left its failover ConfigMap write in the audit log: the ledger
// does not claim what did not happen, and the trace the engine-request
// check reads is really recorded.
func checkSwitchoverSeen(ev *evidence) []string {
	var out []string
	for _, r := range ev.receipts() {
		if r.Step != model.StepSwitchover || r.Outcome != model.OutcomeDone {
			continue
		}
		found := false
		for _, e := range ev.events {
			if _, cand, ok := failoverRequest(e); ok && cand == r.MemberID && e.StageTimestamp.After(r.At.Add(-time.Minute)) && !e.RequestReceived.After(r.At) {
				found = true
			}
		}
		if !found {
			out = append(out, fmt.Sprintf("the ledger says Patroni accepted the switchover to %s at %s (action %s), but the audit log shows no failover ConfigMap written for it",
				r.MemberID, r.At.Format("15:04:05.000"), r.ActionID))
		}
	}
	for _, x := range ev.external {
		if !x.Accepted || x.From.Before(ev.since) {
			continue
		}
		found := false
		for _, e := range ev.events {
			if _, cand, ok := failoverRequest(e); ok && cand == x.Candidate && !e.RequestReceived.Before(x.From) && !e.RequestReceived.After(x.To) {
				found = true
			}
		}
		if !found {
			out = append(out, fmt.Sprintf("Patroni accepted the suite's own switchover to %s at %s, but the audit log shows no failover ConfigMap written for it",
				x.Candidate, x.From.Format("15:04:05.000")))
		}
	}
	return out
}

// checkChanged: a run in which nothing changed (no delete, switchover or
// rebuild) proves nothing.
func checkChanged(changes int) []string {
	return e2esuite.CheckChanged("change (a delete, a switchover or a rebuild)", changes)
}

// checkSettled: no action is left waiting: every ledger entry of the
// window is finished, and one that failed says why.
func checkSettled(ev *evidence) []string {
	var out []string
	for _, e := range ev.entries {
		if e.UpdatedAt.Before(ev.since) && e.State != model.EntryInProgress {
			continue
		}
		switch e.State {
		case model.EntryInProgress:
			out = append(out, fmt.Sprintf("%s %s (%s) is still in progress, phase %s, last receipt %s", e.Action, e.Member, e.ID, e.Phase, lastReceipt(e)))
		case model.EntryFailed:
			reason := ""
			for _, r := range e.Receipts {
				if (r.Outcome == model.OutcomeRefused || r.Outcome == model.OutcomeConflict || r.Outcome == model.OutcomeFailed) && r.Detail != "" {
					reason = r.Detail
				}
			}
			if reason == "" {
				out = append(out, fmt.Sprintf("%s %s (%s) failed without a reason: %s", e.Action, e.Member, e.ID, lastReceipt(e)))
			}
		}
	}
	return out
}

func lastReceipt(e model.LedgerEntry) string {
	if len(e.Receipts) == 0 {
		return "none"
	}
	r := e.Receipts[len(e.Receipts)-1]
	return fmt.Sprintf("%s %s at %s: %s", r.Step, r.Outcome, r.At.Format("15:04:05.000"), r.Detail)
}
