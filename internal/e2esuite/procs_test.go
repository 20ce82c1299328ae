package e2esuite

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// Progress lines as kubectl-hactl prints them: the plan (before it asks,
// or before it acts with --yes) and the receipts of what it did.
const (
	planLine    = "  2. [removing] reinitialize pg-healthy-2: it throws its data away and copies it again from the primary (POST /reinitialize to pg-healthy-2)"
	receiptLine = "  [removing] reinitialize done: reinitialize pg-healthy-2: started"
	lockLine    = "  [requested] acquire-lock done: took lease ns/hactl-db as hactl/h/p/1/aa"
)

// TestStepLineIsAReceiptNotAPlanStep: a step's matcher takes the receipt
// of that step, never the plan's line of the same step (planned is not
// done), nor another step's receipt.
func TestStepLineIsAReceiptNotAPlanStep(t *testing.T) {
	if StepLine(model.StepReinitialize)(planLine) {
		t.Errorf("the plan line %q reads as the step's receipt", planLine)
	}
	if !StepLine(model.StepReinitialize)(receiptLine) {
		t.Errorf("the receipt %q does not read as one", receiptLine)
	}
	if StepLine(model.StepAcquireLock)(receiptLine) || !StepLine(model.StepAcquireLock)(lockLine) {
		t.Error("the acquire-lock matcher takes another step's receipt, or misses its own")
	}
	if !StepLine(model.StepAcquireLock, model.OutcomeSending, model.OutcomeDone)(lockLine) || StepLine(model.StepAcquireLock, model.OutcomeSending)(lockLine) {
		t.Error("the matcher of some outcomes of a step misses one of them, or takes another")
	}
	if step, o, ok := ReceiptLine(receiptLine); !ok || step != model.StepReinitialize || o != model.OutcomeDone {
		t.Errorf("receipt line read as %q %q %v", step, o, ok)
	}
	for _, l := range []string{planLine, "plan:", "  Pod ns/db-1 uid=u1 resourceVersion=5", "warning: [x] y z: w", ""} {
		if _, _, ok := ReceiptLine(l); ok {
			t.Errorf("%q reads as a receipt", l)
		}
	}
}

func TestIdentityAndLastLine(t *testing.T) {
	if id := Identity("plan:\n" + lockLine + "\n  [removing] delete-pod done: x"); id != holderA {
		t.Errorf("identity %q, want %q", id, holderA)
	}
	if id := Identity("plan:\n" + planLine); id != "" {
		t.Errorf("identity %q of a process that never took the lock", id)
	}
	if l := LastLine("a\nb\n\n"); l != "b" {
		t.Errorf("last line %q", l)
	}
}

// TestLoopStops: the loop ticks until stopped, and not after Stop
// returned; only the first Stop stops it.
func TestLoopStops(t *testing.T) {
	var ticks atomic.Int64
	ticked := make(chan struct{}, 1)
	l := StartLoop(time.Millisecond, func() {
		ticks.Add(1)
		select {
		case ticked <- struct{}{}:
		default:
		}
	})
	for i := 0; i < 2; i++ {
		select {
		case <-ticked:
		case <-time.After(time.Minute):
			t.Fatal("the loop did not tick")
		}
	}
	if !l.Stop() {
		t.Error("the first Stop did not stop the loop")
	}
	n := ticks.Load()
	if l.Stop() {
		t.Error("a second Stop says it stopped the loop")
	}
	if m := ticks.Load(); m != n {
		t.Errorf("the loop ticked after Stop returned (%d ticks, then %d)", n, m)
	}
}
