package pgadversarial

import (
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/model"
)

// The checks themselves, on observations written by hand: each check
// passes a clean run and reports the violation planted in it (the mutant).
// The lock discipline's and the audit reader's own cases are e2esuite's.

var t0 = time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

const (
	holderA = "hactl/h/p/1/aa"
	holderB = "hactl/h/p/2/bb"
	m0      = cluster + "-0"
	m1      = cluster + "-1"
	m2      = cluster + "-2"
)

// event is a hand-written write in the suite's namespace
// (e2esuite.NewAuditEvent); one by another client than hactl is
// Patroni's (its service account).
func event(verb, resource, name, holder string, when time.Time, body string) e2esuite.AuditEvent {
	e := e2esuite.NewAuditEvent(namespace, verb, resource, name, holder, when, body)
	if holder == "" {
		e.User.Username = "system:serviceaccount:" + namespace + ":" + cluster
	}
	return e
}

func leaseWrite(holder string, when time.Time) e2esuite.AuditEvent {
	return e2esuite.NewLockWrite(namespace, cluster, holder, when)
}

func failoverWrite(leader, cand string, when time.Time) e2esuite.AuditEvent {
	return event("patch", "configmaps", failoverCM, "", when, `{"metadata":{"annotations":{"leader":"`+leader+`","member":"`+cand+`"}}}`)
}

// stable is a timeline in which m0 is the primary and m1, m2 replicas from
// 0 s to 100 s, answering every second.
func stable() *timeline {
	tl := &timeline{}
	for i := 0; i <= 100; i++ {
		tl.add(sample{At: at(float64(i)), Member: m0, Role: "master", State: "running", PodUID: "p0"})
		tl.add(sample{At: at(float64(i)), Member: m1, Role: "replica", State: "running", PodUID: "p1"})
		tl.add(sample{At: at(float64(i)), Member: m2, Role: "replica", State: "running", PodUID: "p2"})
	}
	return tl
}

func receipt(id, holder string, step model.StepKind, o model.Outcome, member string, when time.Time) model.Receipt {
	return model.Receipt{ActionID: id, Holder: holder, Step: step, Outcome: o, Member: member, At: when, Detail: "d"}
}

func entry(id string, a model.Action, member string, st model.EntryState, rs ...model.Receipt) model.LedgerEntry {
	return model.LedgerEntry{ID: id, Action: a, Member: member, State: st, UpdatedAt: at(99), Receipts: rs}
}

func TestRowsCheck(t *testing.T) {
	want := []string{"a", "b"}
	all := map[string]bool{"a": true, "b": true}
	e2esuite.WantViolation(t, "all rows", checkRows(want, map[string]map[string]bool{m0: all, m1: all, m2: all}), "")
	e2esuite.WantViolation(t, "a row lost", checkRows(want, map[string]map[string]bool{m0: all, m1: {"a": true}, m2: all}), m1+" lost 1 committed rows: b")
}

func TestPrimaryDeleteCheck(t *testing.T) {
	leases := []e2esuite.AuditEvent{leaseWrite(holderA, at(10))}
	pvc := func(m string, s float64) e2esuite.AuditEvent {
		return event("delete", "persistentvolumeclaims", "pgdata-"+m, holderA, at(s), `{"preconditions":{"uid":"v"}}`)
	}
	pod := func(m string, s float64) e2esuite.AuditEvent {
		return event("delete", "pods", m, holderA, at(s), `{"preconditions":{"uid":"u"}}`)
	}
	clean := &evidence{tl: stable(), events: append(leases, pvc(m1, 20), pod(m1, 21))}
	e2esuite.WantViolation(t, "replica's volume and pod", checkPrimaryDeletes(clean), "")
	bad := &evidence{tl: stable(), events: append(leases, pod(m0, 21))}
	e2esuite.WantViolation(t, "primary's pod", checkPrimaryDeletes(bad), m0+" was the primary")
	bad = &evidence{tl: stable(), events: append(leases, pvc(m0, 20))}
	e2esuite.WantViolation(t, "primary's volume", checkPrimaryDeletes(bad), m0+" was the primary")
	// a member that became the primary after the suite's own switchover
	tl := stable()
	tl.add(sample{At: at(100.5), Member: m1, Role: "master", State: "running"})
	bad = &evidence{tl: tl, events: append(leases, pod(m1, 101))}
	e2esuite.WantViolation(t, "pod of a replica promoted since", checkPrimaryDeletes(bad), m1+" was the primary")
}

func TestReinitTargetCheck(t *testing.T) {
	ok := &evidence{tl: stable(), entries: []model.LedgerEntry{entry("r1", model.ActionReseed, m1, model.EntryDone,
		receipt("r1", holderA, model.StepReinitialize, model.OutcomeSending, m1, at(30)),
		receipt("r1", holderA, model.StepReinitialize, model.OutcomeDone, m1, at(31)))},
		removals: []logEvent{{At: at(35), Member: m1, Line: "INFO: Removing data directory"}}}
	e2esuite.WantViolation(t, "reinitialize of a replica", checkReinitTargets(ok), "")
	bad := &evidence{tl: stable(), entries: []model.LedgerEntry{entry("r1", model.ActionReseed, m0, model.EntryDone,
		receipt("r1", holderA, model.StepReinitialize, model.OutcomeSending, m0, at(30)))}}
	e2esuite.WantViolation(t, "reinitialize sent to the primary", checkReinitTargets(bad), "reinitialize of "+m0)
	bad = &evidence{tl: stable(), removals: []logEvent{{At: at(35), Member: m0, Line: "INFO: Removing data directory"}}}
	e2esuite.WantViolation(t, "the primary rebuilt", checkReinitTargets(bad), m0+" removed its data directory")
}

func TestEngineRequestCheck(t *testing.T) {
	sw := func(id, h string, o model.Outcome, s float64) model.Receipt {
		r := receipt(id, h, model.StepSwitchover, o, m1, at(s))
		r.MemberID, r.From = m1, m0
		return r
	}
	leases := []e2esuite.AuditEvent{leaseWrite(holderA, at(10)), leaseWrite("", at(40)), leaseWrite(holderB, at(50))}
	ok := &evidence{tl: stable(), events: append(leases, failoverWrite(m0, m1, at(21))),
		entries: []model.LedgerEntry{entry("s1", model.ActionSwitchover, m1, model.EntryDone, sw("s1", holderA, model.OutcomeSending, 20), sw("s1", holderA, model.OutcomeDone, 22))}}
	e2esuite.WantViolation(t, "the holder's switchover", checkEngineRequests(ok), "")
	bad := &evidence{tl: stable(), events: append(leases, failoverWrite(m0, m1, at(21)))}
	e2esuite.WantViolation(t, "a switchover nobody wrote ahead", checkEngineRequests(bad), "no switchover to "+m1+" was written ahead")
	bad = &evidence{tl: stable(), events: append(leases, failoverWrite(m0, m1, at(45))),
		entries: []model.LedgerEntry{entry("s1", model.ActionSwitchover, m1, model.EntryDone, sw("s1", holderB, model.OutcomeSending, 44))}}
	e2esuite.WantViolation(t, "a switchover sent without the lock", checkEngineRequests(bad), "while the lock named another holder")
	bad = &evidence{tl: stable(), events: append(leases, failoverWrite(m0, m1, at(55))),
		entries: []model.LedgerEntry{entry("s1", model.ActionSwitchover, m1, model.EntryFailed, sw("s1", holderA, model.OutcomeSending, 20))}}
	e2esuite.WantViolation(t, "a switchover landing under another action", checkEngineRequests(bad), "which was not resuming it")
	resumed := &evidence{tl: stable(), events: append(leases, failoverWrite(m0, m1, at(55))),
		entries: []model.LedgerEntry{entry("s1", model.ActionSwitchover, m1, model.EntryDone, sw("s1", holderA, model.OutcomeSending, 20), sw("s1", holderB, model.OutcomeDone, 56))}}
	e2esuite.WantViolation(t, "a switchover landing under its own rerun", checkEngineRequests(resumed), "")
	ext := &evidence{tl: stable(), events: append(leases, failoverWrite(m0, m1, at(21))), external: []externalSwitch{{From: at(20), To: at(30), Candidate: m1}}}
	e2esuite.WantViolation(t, "the suite's own switchover", checkEngineRequests(ext), "")

	ri := func(h string, s float64) model.Receipt {
		return receipt("r1", h, model.StepReinitialize, model.OutcomeSending, m2, at(s))
	}
	rm := []logEvent{{At: at(25), Member: m2, Line: "Removing data directory"}}
	ok = &evidence{tl: stable(), events: leases, removals: rm, entries: []model.LedgerEntry{entry("r1", model.ActionReseed, m2, model.EntryDone, ri(holderA, 20))}}
	e2esuite.WantViolation(t, "the holder's reinitialize", checkEngineRequests(ok), "")
	bad = &evidence{tl: stable(), events: leases, removals: rm}
	e2esuite.WantViolation(t, "a reinitialize nobody recorded", checkEngineRequests(bad), "with no reinitialize of it in the ledger")
	bad = &evidence{tl: stable(), events: leases, removals: rm, entries: []model.LedgerEntry{entry("r1", model.ActionReseed, m2, model.EntryDone, ri(holderB, 20))}}
	e2esuite.WantViolation(t, "a reinitialize sent without the lock", checkEngineRequests(bad), "while the lock named another holder")
}

func TestReinitCarriedOutCheck(t *testing.T) {
	done := []model.LedgerEntry{entry("r1", model.ActionReseed, m1, model.EntryDone, receipt("r1", holderA, model.StepReinitialize, model.OutcomeDone, m1, at(30)))}
	ok := &evidence{entries: done, removals: []logEvent{{At: at(31), Member: m1}}}
	e2esuite.WantViolation(t, "a reinitialize Patroni carried out", checkReinitCarriedOut(ok), "")
	bad := &evidence{entries: done, removals: []logEvent{{At: at(31), Member: m2}}}
	e2esuite.WantViolation(t, "a reinitialize the log does not show", checkReinitCarriedOut(bad), "shows no data directory removed")
}

func TestSwitchoverSeenCheck(t *testing.T) {
	r := receipt("s1", holderA, model.StepSwitchover, model.OutcomeDone, m1, at(30))
	r.MemberID = m1
	done := []model.LedgerEntry{entry("s1", model.ActionSwitchover, m1, model.EntryDone, r)}
	ok := &evidence{entries: done, events: []e2esuite.AuditEvent{failoverWrite(m0, m1, at(29))}}
	e2esuite.WantViolation(t, "a switchover Patroni wrote down", checkSwitchoverSeen(ok), "")
	bad := &evidence{entries: done, events: []e2esuite.AuditEvent{failoverWrite(m0, m2, at(29))}}
	e2esuite.WantViolation(t, "a switchover the audit log does not show", checkSwitchoverSeen(bad), "shows no failover ConfigMap")
	ext := []externalSwitch{{From: at(40), To: at(100), Candidate: m2, Accepted: true}}
	ok = &evidence{external: ext, events: []e2esuite.AuditEvent{failoverWrite(m1, m2, at(41))}}
	e2esuite.WantViolation(t, "the suite's switchover written down", checkSwitchoverSeen(ok), "")
	bad = &evidence{external: ext, events: []e2esuite.AuditEvent{failoverWrite(m1, m2, at(39))}}
	e2esuite.WantViolation(t, "the suite's switchover the audit log does not show", checkSwitchoverSeen(bad), "the suite's own switchover to "+m2)
}

func TestReceiptsCheck(t *testing.T) {
	leases := []e2esuite.AuditEvent{leaseWrite(holderA, at(10))}
	delPod := event("delete", "pods", m1, holderA, at(20), `{"preconditions":{"uid":"u1"}}`)
	fenced := func(o model.Outcome, s float64) model.Receipt {
		r := receipt("x1", holderA, model.StepDeletePod, o, m1, at(s))
		r.Fences = []model.Fence{{Kind: "Pod", Name: m1, UID: "u1"}}
		return r
	}
	ok := &evidence{tl: stable(), events: append(leases, delPod),
		entries: []model.LedgerEntry{entry("x1", model.ActionReplace, m1, model.EntryDone, fenced(model.OutcomeSending, 19), fenced(model.OutcomeDone, 21))}}
	v, n := checkReceipts(ok)
	e2esuite.WantViolation(t, "a delete with its receipts", v, "")
	if n != 1 {
		t.Errorf("%d changes counted, want 1", n)
	}
	v, _ = checkReceipts(&evidence{tl: stable(), events: append(leases, delPod)})
	e2esuite.WantViolation(t, "a delete with no receipt", v, "has no delete-pod receipt")
	half := &evidence{tl: stable(), events: append(leases, delPod),
		entries: []model.LedgerEntry{entry("x1", model.ActionReplace, m1, model.EntryDone, fenced(model.OutcomeSending, 19))}}
	v, _ = checkReceipts(half)
	e2esuite.WantViolation(t, "only sending, process alive", v, "only that it was being sent")
	half.frozenOrKilled = map[string]bool{holderA: true}
	v, _ = checkReceipts(half)
	e2esuite.WantViolation(t, "only sending, process killed", v, "")

	moved := stable()
	moved.add(sample{At: at(101), Member: m0, Role: "replica", State: "running"})
	moved.add(sample{At: at(101), Member: m2, Role: "master", State: "running"})
	v, n = checkReceipts(&evidence{tl: moved})
	e2esuite.WantViolation(t, "a primary change with no switchover", v, "the primary moved from "+m0+" to "+m2)
	if n != 1 {
		t.Errorf("%d changes counted, want 1", n)
	}
	sw := receipt("s1", holderA, model.StepSwitchover, model.OutcomeDone, m2, at(100))
	sw.MemberID = m2
	v, _ = checkReceipts(&evidence{tl: moved, entries: []model.LedgerEntry{entry("s1", model.ActionSwitchover, m2, model.EntryDone, sw)}})
	e2esuite.WantViolation(t, "a primary change with its switchover", v, "")

	rebuilt := stable()
	rebuilt.add(sample{At: at(101), Member: m1, Role: "uninitialized", State: "creating replica"})
	v, _ = checkReceipts(&evidence{tl: rebuilt})
	e2esuite.WantViolation(t, "a rebuild with no receipt", v, m1+" rebuilt its data")
	ri := receipt("r1", holderA, model.StepReinitialize, model.OutcomeDone, m1, at(100))
	v, _ = checkReceipts(&evidence{tl: rebuilt, entries: []model.LedgerEntry{entry("r1", model.ActionReseed, m1, model.EntryDone, ri)}})
	e2esuite.WantViolation(t, "a rebuild with its reinitialize", v, "")
}

func TestSettledCheck(t *testing.T) {
	done := entry("a", model.ActionReseed, m1, model.EntryDone, receipt("a", holderA, model.StepReleaseLock, model.OutcomeDone, m1, at(10)))
	refused := entry("b", model.ActionReplace, m0, model.EntryFailed, receipt("b", holderA, model.StepVerifyFences, model.OutcomeRefused, m0, at(10)))
	e2esuite.WantViolation(t, "finished entries", checkSettled(&evidence{entries: []model.LedgerEntry{done, refused}}), "")
	open := entry("c", model.ActionSwitchover, m1, model.EntryInProgress, receipt("c", holderA, model.StepAwaitSwitchover, model.OutcomeUnknown, m1, at(10)))
	e2esuite.WantViolation(t, "an entry left waiting", checkSettled(&evidence{entries: []model.LedgerEntry{done, open}}), "still in progress")
	mute := entry("d", model.ActionReseed, m1, model.EntryFailed, model.Receipt{ActionID: "d", Step: model.StepReinitialize, Outcome: model.OutcomeFailed, At: at(10)})
	e2esuite.WantViolation(t, "a failure without a reason", checkSettled(&evidence{entries: []model.LedgerEntry{mute}}), "failed without a reason")
}

func TestNothingChangedFails(t *testing.T) {
	_, n := checkReceipts(&evidence{tl: stable()})
	e2esuite.WantViolation(t, "a run that changed nothing", checkChanged(n), "observed no change")
	e2esuite.WantViolation(t, "a run that changed something", checkChanged(1), "")
}

func TestTimelineChangesAndRebuilds(t *testing.T) {
	tl := stable()
	// m0 frozen: no answers after 100 s; it still counts as the primary
	if _, ok := tl.primaryAt(m0, at(150)); !ok {
		t.Error("a primary that stopped answering no longer counts as one")
	}
	tl.add(sample{At: at(160), Member: m1, Role: "master", State: "running"})
	tl.add(sample{At: at(161), Member: m0, Role: "replica", State: "stopping"})
	tl.add(sample{At: at(170), Member: m2, Role: "replica", State: "stopping"})
	tl.add(sample{At: at(171), Member: m2, Role: "uninitialized", State: "creating replica"})
	tl.add(sample{At: at(172), Member: m2, Role: "replica", State: "creating replica"})
	tl.add(sample{At: at(175), Member: m2, Role: "replica", State: "running"})
	if c := tl.changes(); len(c) != 1 || c[0].From != m0 || c[0].To != m1 {
		t.Errorf("changes %+v", c)
	}
	if b := tl.rebuilds(); len(b) != 1 || b[0].Member != m2 || !b[0].At.Equal(at(171)) {
		t.Errorf("rebuilds %+v", b)
	}
	if _, ok := tl.primaryAt(m0, at(162)); ok {
		t.Error("a demoted primary still counts as one")
	}
}

func TestAuditParsing(t *testing.T) {
	if l, c, ok := failoverRequest(failoverWrite(m0, m1, at(1))); !ok || l != m0 || c != m1 {
		t.Errorf("failover write: %q %q %v", l, c, ok)
	}
	clear := event("patch", "configmaps", failoverCM, "", at(1), `{"metadata":{"annotations":{"leader":null,"member":null}}}`)
	if _, _, ok := failoverRequest(clear); ok {
		t.Error("clearing the failover key reads as a request")
	}
	if memberOf("persistentvolumeclaims", "pgdata-"+m2) != m2 || memberOf("pods", m1) != m1 || memberOf("pods", "hactl-capture-x") != "" {
		t.Error("memberOf")
	}
	l := "2026-12-06T07:00:08.245452692Z stderr F 2026-12-06 07:00:08,245 INFO: Removing data directory: /v/pgroot/data"
	if e, ok := removalLine(m1, l); !ok || e.Member != m1 || !e.At.Equal(time.Date(2026, 12, 6, 7, 0, 8, 245452692, time.UTC)) {
		t.Errorf("removal line: %+v %v", e, ok)
	}
	if _, ok := removalLine(m1, "2026-12-06T07:00:08.5Z stderr F 2026-12-06 07:00:08,524 INFO: replica has been created using basebackup"); ok {
		t.Error("a bootstrap line reads as a removal")
	}
}

// TestRemovalsSkipAFailedCopysCleanup: a replaced member whose first copy
// failed (its leader's PostgreSQL down) has Patroni remove only what the
// copy left; a reinitialize's removal of a running member's data, and one
// after a later copy succeeded, still count.
func TestRemovalsSkipAFailedCopysCleanup(t *testing.T) {
	line := func(s int, msg string) string {
		ts := time.Date(2026, 12, 6, 14, 8, s, 0, time.UTC)
		return ts.Format(time.RFC3339Nano) + " stderr F " + ts.Format("2006-01-02 15:04:05") + ",000 " + msg
	}
	fresh := strings.Join([]string{
		line(30, "INFO: trying to bootstrap from leader 'pg-healthy-0'"),
		line(31, "pg_basebackup: error: connection to server at \"10.0.0.1\", port 5432 failed: Connection refused"),
		line(31, "ERROR: Error when fetching backup: pg_basebackup exited with code=1"),
		line(31, "WARNING: Trying again in 5 seconds"),
		line(36, "ERROR: Error when fetching backup: pg_basebackup exited with code=1"),
		line(36, "ERROR: failed to bootstrap from leader 'pg-healthy-0'"),
		line(36, "INFO: Removing data directory: /v/pgroot/data"),
		line(40, "INFO: trying to bootstrap from leader 'pg-healthy-0'"),
		line(42, "INFO: replica has been created using basebackup"),
		line(42, "INFO: bootstrapped from leader 'pg-healthy-0'"),
	}, "\n")
	if got, err := removalsIn(m2, []byte(fresh)); len(got) != 0 || err != nil {
		t.Errorf("a failed copy's cleanup read as a reinitialize: %+v %v", got, err)
	}
	reinit := fresh + "\n" + strings.Join([]string{
		line(50, "INFO: Removing data directory: /v/pgroot/data"),
		line(51, "ERROR: Error when fetching backup: pg_basebackup exited with code=1"),
		line(51, "WARNING: Trying again in 5 seconds"),
		line(56, "INFO: Removing data directory: /v/pgroot/data"),
	}, "\n")
	got, _ := removalsIn(m2, []byte(reinit))
	if len(got) != 1 || got[0].Member != m2 || got[0].At.Second() != 50 {
		t.Errorf("removals %+v, want one of %s at :50 (the reinitialize's, not its failed copy's)", got, m2)
	}
	// A failure whose cleanup line never came does not hide a later
	// reinitialize.
	lost := strings.Join([]string{
		line(10, "ERROR: Error when fetching backup: pg_basebackup exited with code=1"),
		line(40, "INFO: Removing data directory: /v/pgroot/data"),
	}, "\n")
	if got, _ := removalsIn(m2, []byte(lost)); len(got) != 1 || got[0].At.Second() != 40 {
		t.Errorf("removals %+v, want the one at :40", got)
	}
}
