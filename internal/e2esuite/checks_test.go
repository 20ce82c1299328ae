package e2esuite

import (
	"testing"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// The adversarial suites' shared checks, on audit events written by hand:
// each passes a clean run and reports the violation planted in it.

const (
	ns      = "ns"
	cluster = "db"
	holderA = "hactl/h/p/1/aa"
	holderB = "hactl/h/p/2/bb"
)

var t0 = time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func lease(holder string, sec int) AuditEvent { return NewLockWrite(ns, cluster, holder, at(sec)) }

func del(holder string, sec int) AuditEvent {
	return NewAuditEvent(ns, "delete", "pods", cluster+"-1", holder, at(sec), `{"preconditions":{"uid":"u1"}}`)
}

func TestLockDisciplineCheck(t *testing.T) {
	anonymous := del("", 1)
	anonymous.UserAgent = "kubectl-hactl/v0 (linux/amd64) kubernetes/x"
	cases := []struct {
		name   string
		events []AuditEvent
		since  int
		want   string // "": no violation
	}{
		{"holder writes", []AuditEvent{lease(holderA, 0), del(holderA, 1), lease("", 2), lease(holderB, 3), del(holderB, 4)}, 0, ""},
		{"renewed holder writes late", []AuditEvent{lease(holderA, 0), lease(holderA, 10), lease(holderA, 20), del(holderA, 45)}, 0, ""},
		{"a write after the lock was taken over", []AuditEvent{lease(holderA, 0), del(holderA, 1), lease(holderB, 40), del(holderA, 41)}, 0, `left it to "` + holderB},
		{"a write after release", []AuditEvent{lease(holderA, 0), lease("", 2), del(holderA, 3)}, 0, `left it to ""`},
		{"a write without the lock", []AuditEvent{del(holderA, 1)}, 0, "never taken"},
		{"a write past the lease (woken from a freeze)", []AuditEvent{lease(holderA, 0), del(holderA, 31)}, 0, "past its lease"},
		{"overlapping holders", []AuditEvent{lease(holderA, 0), del(holderA, 1), lease(holderB, 2), del(holderB, 3), lease(holderA, 4), del(holderA, 5)}, 0, "overlap"},
		{"other clients are not checked", []AuditEvent{del("", 1)}, 0, ""},
		{"a hactl request naming no identity", []AuditEvent{anonymous}, 0, "names no lock identity"},
		{"a write before the window is not checked", []AuditEvent{del(holderA, 1), lease(holderA, 10), del(holderA, 11)}, 5, ""},
	}
	for _, c := range cases {
		v, checked := CheckLockDiscipline(c.events, ns, cluster, at(c.since))
		WantViolation(t, c.name, v, c.want)
		if c.name == "holder writes" && checked != 2 {
			t.Errorf("%s: %d writes checked, want 2", c.name, checked)
		}
	}
}

func TestDeleteReceiptsCheck(t *testing.T) {
	fenced := func(step model.StepKind, o model.Outcome) model.Receipt {
		return model.Receipt{Step: step, Outcome: o, Fences: []model.Fence{{Kind: "Pod", Name: cluster + "-1", UID: "u1"}}}
	}
	pvc := NewAuditEvent(ns, "delete", "persistentvolumeclaims", "data-"+cluster+"-1", holderA, at(1), `{"preconditions":{"uid":"u1"}}`)
	both := IndexDeletes([]model.Receipt{fenced(model.StepDeletePod, model.OutcomeSending), fenced(model.StepDeletePod, model.OutcomeDone)})
	sending := IndexDeletes([]model.Receipt{fenced(model.StepDeletePod, model.OutcomeSending)})
	for _, c := range []struct {
		name     string
		receipts DeleteReceipts
		e        AuditEvent
		stopped  bool
		want     string
	}{
		{"a delete with both its receipts", both, del(holderA, 1), false, ""},
		{"a delete with no UID", both, NewAuditEvent(ns, "delete", "pods", cluster+"-1", holderA, at(1), `{}`), false, "had no UID precondition"},
		{"a delete with no receipt", IndexDeletes(nil), del(holderA, 1), false, "has no delete-pod receipt"},
		{"a PVC delete with a pod's receipts", both, pvc, false, "has no delete-pvc receipt"},
		{"only sending, process alive", sending, del(holderA, 1), false, "only that it was being sent"},
		{"only sending, process stopped", sending, del(holderA, 1), true, ""},
		{"a refused delete's receipt", IndexDeletes([]model.Receipt{fenced(model.StepDeletePod, model.OutcomeConflict)}), del(holderA, 1), false, "has no delete-pod receipt"},
	} {
		var got []string
		if v := c.receipts.Check(c.e, c.stopped); v != "" {
			got = []string{v}
		}
		WantViolation(t, c.name, got, c.want)
	}
}

func TestCheckChanged(t *testing.T) {
	WantViolation(t, "nothing changed", CheckChanged("delete", 0), "observed no delete")
	WantViolation(t, "something changed", CheckChanged("delete", 1), "")
}
