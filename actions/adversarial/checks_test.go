package adversarial

import (
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/model"
)

// The checks themselves, on audit events, outputs and member lists
// written by hand: each passes a clean run and reports the violation
// planted in it (the mutant). The lock discipline's own cases are
// e2esuite's.

const (
	holderA = "hactl/h/p/1/aa"
	holderB = "hactl/h/p/2/bb"
	// uidA and uidB are pod UIDs as the API server makes them (the plan's
	// fences are read by their form).
	uidA = "0f8e4c1a-1b2c-4d5e-8f90-a1b2c3d4e5f6"
	uidB = "7a6b5c4d-3e2f-4a1b-9c8d-f6e5d4c3b2a1"
)

var t0 = time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// planOutput is what a replace of healthy-1 prints with --yes: the
// fences and the plan naming the pod's UID uid, then its receipts under
// holder.
func planOutput(holder, uid string) string {
	return strings.Join([]string{
		"replace healthy-1: proceed",
		"fences (what was observed; a change stops the action):",
		"  Pod " + namespace + "/" + cluster + "-1 uid=" + uid + " resourceVersion=5",
		"plan:",
		"  1. [removing] remove member 8e9e05c52164694d (healthy-1) from the cluster",
		"  2. [removing] delete pod " + cluster + "-1 (uid " + uid + ", resourceVersion 5)",
		"  [requested] acquire-lock done: took lease " + namespace + "/hactl-" + cluster + " as " + holder,
		"  [removing] delete-pod done: deleted pod " + cluster + "-1",
	}, "\n")
}

// cleanRun is a run in which holderA took the lock, deleted a member's
// pod the plan it showed named, with both its receipts, and released the
// lock; the probe saw the members change once.
func cleanRun() ([]e2esuite.AuditEvent, *history) {
	events := []e2esuite.AuditEvent{
		e2esuite.NewLockWrite(namespace, cluster, holderA, at(0)),
		e2esuite.NewAuditEvent(namespace, "delete", "pods", cluster+"-1", holderA, at(2), `{"preconditions":{"uid":"`+uidA+`"}}`),
		e2esuite.NewLockWrite(namespace, cluster, "", at(4)),
	}
	fence := []model.Fence{{Kind: "Pod", Name: cluster + "-1", UID: uidA}}
	h := &history{outputs: []string{planOutput(holderA, uidA)}, changes: 1, receipts: map[string]model.Receipt{
		"x/1": {Step: model.StepDeletePod, Outcome: model.OutcomeSending, Fences: fence},
		"x/2": {Step: model.StepDeletePod, Outcome: model.OutcomeDone, Fences: fence},
	}}
	return events, h
}

func TestAuditCheck(t *testing.T) {
	check := func(events []e2esuite.AuditEvent, h *history) []string {
		v, _, _ := checkAudit(events, h)
		return v
	}
	events, h := cleanRun()
	v, checked, deletes := checkAudit(events, h)
	e2esuite.WantViolation(t, "a clean run", v, "")
	if checked != 1 || deletes != 1 {
		t.Errorf("%d guarded writes checked, %d deletes; want 1 and 1", checked, deletes)
	}

	events, h = cleanRun()
	h.outputs = []string{planOutput(holderA, uidB)}
	e2esuite.WantViolation(t, "a delete the plan did not show", check(events, h), "which the plan its process showed did not name")
	h.outputs = []string{planOutput(holderB, uidA)}
	e2esuite.WantViolation(t, "a plan another process showed", check(events, h), "which the plan its process showed did not name")

	events, h = cleanRun()
	h.receipts = nil
	e2esuite.WantViolation(t, "a delete with no receipt", check(events, h), "has no delete-pod receipt")
	h.failed = true
	e2esuite.WantViolation(t, "a delete with no receipt after a failed round", check(events, h), "")

	events, h = cleanRun()
	delete(h.receipts, "x/2")
	e2esuite.WantViolation(t, "only sending, process alive", check(events, h), "only that it was being sent")
	h.killed = map[string]bool{holderA: true}
	e2esuite.WantViolation(t, "only sending, process killed", check(events, h), "")

	events, _ = cleanRun()
	events[1] = e2esuite.NewAuditEvent(namespace, "delete", "pods", cluster+"-1", holderA, at(2), `{}`)
	e2esuite.WantViolation(t, "a delete without its UID", check(events, h), "had no UID precondition")

	events, h = cleanRun()
	other := e2esuite.NewAuditEvent(namespace, "delete", "pods", cluster+"-2", holderB, at(3), `{"preconditions":{"uid":"`+uidB+`"}}`)
	e2esuite.WantViolation(t, "a delete under another's lock", check(append(events, other), h), "lock discipline: ")
	capture := e2esuite.NewAuditEvent(namespace, "delete", "pods", "hactl-capture-"+cluster+"-1", holderA, at(3), `{}`)
	e2esuite.WantViolation(t, "a capture pod deleted without its UID", check([]e2esuite.AuditEvent{events[0], capture, events[2]}, &history{changes: 1}), "had no UID precondition")
}

// TestNothingChangedFails: a run that deleted nothing, or in which the
// probe saw no member change, proved nothing and fails.
func TestNothingChangedFails(t *testing.T) {
	ledger := e2esuite.NewAuditEvent(namespace, "update", "configmaps", "hactl-"+cluster, holderA, at(1), `{}`)
	events := []e2esuite.AuditEvent{e2esuite.NewLockWrite(namespace, cluster, holderA, at(0)), ledger}
	v, checked, _ := checkAudit(events, &history{})
	if checked != 1 {
		t.Errorf("%d guarded writes checked, want the ledger's", checked)
	}
	e2esuite.WantViolation(t, "a run that deleted nothing", v, "observed no delete")
	e2esuite.WantViolation(t, "a run that changed no member", v, "observed no member change")
	events, h := cleanRun()
	h.changes = 0
	v, _, _ = checkAudit(events, h)
	e2esuite.WantViolation(t, "a run that deleted but changed no member", v, "observed no member change")
	v, _, _ = checkAudit(nil, &history{})
	e2esuite.WantViolation(t, "an empty audit log", v, "holds no write by a hactl process")
}

func TestMemberChanges(t *testing.T) {
	p := &probe{lists: [][]model.Peer{
		{{ID: "a"}, {ID: "b"}, {ID: "c"}},
		{{ID: "a"}, {ID: "b"}},
		{{ID: "a"}, {ID: "b"}, {ID: "d", IsLearner: true}},
		{{ID: "a"}, {ID: "b"}, {ID: "d"}},
	}}
	var got []string
	for _, c := range p.changes() {
		got = append(got, string(c.step)+" "+c.id)
	}
	want := []string{string(model.StepRemoveMember) + " c", string(model.StepAddLearner) + " d", string(model.StepPromoteLearner) + " d"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("changes %v, want %v", got, want)
	}
}
