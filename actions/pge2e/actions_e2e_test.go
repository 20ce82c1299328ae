package pge2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/engine"
	patroniengine "github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/fault"
)

// realOps are the Patroni member operations the executor uses,
// dialled through loopDial.
func realOps() engine.MemberOps {
	return patroniengine.New().(engine.Actioner).Actions(engine.ProbeOptions{Dial: loopDial, Timeout: 3 * time.Second})
}

func memberTarget(pod string) engine.Target {
	return engine.Target{Member: pod, Namespace: namespace, Pod: pod, Port: 8008}
}

// hookOps wrap the real operations: before runs ahead of a switchover
// (another operator acting first); after runs once, when the first
// switchover was answered; lostReply sends the switchover for real and
// then reports its answer lost.
type hookOps struct {
	engine.MemberOps
	before    func(ctx context.Context)
	after     func()
	lostReply bool
}

func (h *hookOps) Reinitialize(ctx context.Context, m engine.Target) error {
	return h.MemberOps.(engine.Reinitializer).Reinitialize(ctx, m)
}

func (h *hookOps) MoveLeader(ctx context.Context, via engine.Target, to string) error {
	if h.before != nil {
		h.before(ctx)
	}
	err := h.MemberOps.MoveLeader(ctx, via, to)
	if after := h.after; after != nil && err == nil {
		h.after = nil
		after()
	}
	if h.lostReply && err == nil {
		return fmt.Errorf("%w: the reply was lost (test)", engine.ErrOutcomeUnknown)
	}
	return err
}

// switchDirectly hands the primary role from prim to to, as another
// operator would, and waits until the members answer so.
func switchDirectly(t *testing.T, prim, to string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := realOps().MoveLeader(ctx, memberTarget(prim), to); err != nil {
		t.Fatalf("switching over from %s to %s directly: %v", prim, to, err)
	}
	poll.Until(t, time.Minute, to+" to answer as the one primary", func() error {
		p, r := roles(t)
		if len(p) != 1 || p[0] != to || !slices.Contains(r, prim) {
			return fmt.Errorf("primaries %v, replicas %v", p, r)
		}
		return nil
	}, poll.Every(500*time.Millisecond))
}

// TestReseedReplica: reinitialize a replica; a row written before is on
// every member after, read on each one's own PostgreSQL.
func TestReseedReplica(t *testing.T) {
	skipShort(t)
	waitFailoverReady(t)
	prim, reps := primary(t)
	row := writeRow(t, prim, "reseed")
	target := reps[0]
	d, res, err, took := run(t, model.Intent{Action: model.ActionReseed, Member: target})
	if err != nil {
		t.Fatalf("reseed %s: %v", target, err)
	}
	t.Logf("reseed of %s (plan %v) done in %s", target, stepKinds(d), took.Round(100*time.Millisecond))
	if res.Final.Verb != model.VerbDone || !hasOutcome(res, model.StepReinitialize, model.OutcomeDone) || !hasOutcome(res, model.StepAwaitRebuild, model.OutcomeDone) {
		t.Errorf("final %s, receipts %v", res.Final.Verb, receiptKinds(res))
	}
	assertRowEverywhere(t, row)
	if p, _ := primary(t); p != prim {
		t.Errorf("the primary moved: %s, was %s", p, prim)
	}
	end := time.Now()
	waitFailoverReady(t)
	t.Logf("failover-ready again %s after the reseed ended", time.Since(end).Round(100*time.Millisecond))
}

// TestReplaceReplica: delete a replica's volume and pod, fenced; Patroni
// copies it again from the primary.
func TestReplaceReplica(t *testing.T) {
	skipShort(t)
	waitFailoverReady(t)
	prim, reps := primary(t)
	row := writeRow(t, prim, "replace")
	target := reps[1]
	old := podUID(t, target)
	d, res, err, took := run(t, model.Intent{Action: model.ActionReplace, Member: target})
	if err != nil {
		t.Fatalf("replace %s: %v", target, err)
	}
	t.Logf("replace of %s (plan %v) done in %s", target, stepKinds(d), took.Round(100*time.Millisecond))
	if res.Final.Verb != model.VerbDone || podUID(t, target) == old {
		t.Errorf("final %s, pod uid %s (was %s)", res.Final.Verb, podUID(t, target), old)
	}
	assertRowEverywhere(t, row)
	waitFailoverReady(t)
}

// TestSwitchover: hand the primary role to the replica hactl chooses;
// done only once the members themselves answer so.
func TestSwitchover(t *testing.T) {
	skipShort(t)
	waitFailoverReady(t)
	prim, _ := primary(t)
	row := writeRow(t, prim, "switchover")
	d, res, err, took := run(t, model.Intent{Action: model.ActionSwitchover})
	if err != nil {
		t.Fatalf("switchover: %v", err)
	}
	cand := d.Steps[0].MemberID
	t.Logf("switchover from %s to %s done in %s", prim, cand, took.Round(100*time.Millisecond))
	p, r, ok := awaitRejoined(t, cand, prim)
	if !ok || res.Final.Leader != cand {
		t.Errorf("primaries %v replicas %v (final leader %s), want %s primary and %s a replica", p, r, res.Final.Leader, cand, prim)
	}
	assertRowEverywhere(t, row)
	waitFailoverReady(t)
}

// TestSwitchoverReplyLost: Patroni acted but its answer never came: the
// receipt says unknown (never "nothing changed") and the next
// observations tell it took effect.
func TestSwitchoverReplyLost(t *testing.T) {
	skipShort(t)
	waitFailoverReady(t)
	prim, reps := primary(t)
	x := executor()
	x.Members = &hookOps{MemberOps: realOps(), lostReply: true}
	d := decide(t, x, model.Intent{Action: model.ActionSwitchover, Member: reps[0]})
	res, err := x.Execute(context.Background(), d, actions.ExecOptions{OnReceipt: func(r model.Receipt) { t.Logf("  %s %s: %s", r.Step, r.Outcome, r.Detail) }})
	if err != nil {
		t.Fatalf("switchover with a lost reply: %v", err)
	}
	if !hasOutcome(res, model.StepSwitchover, model.OutcomeUnknown) || hasOutcome(res, model.StepReleaseLock, model.OutcomeFailed) {
		t.Errorf("receipts %v: want the switchover unknown, then observed", receiptKinds(res))
	}
	if p, r, ok := awaitRejoined(t, reps[0], prim); !ok {
		t.Errorf("primaries %v, replicas %v", p, r)
	}
	waitFailoverReady(t)
}

// TestSwitchoverPrimaryChangedUnderTheAction: another member became the
// primary after hactl verified its plan under the lock and before the
// request: Patroni refuses (412), hactl reports a fence conflict and
// changed nothing; every member, probed on its own, says so.
func TestSwitchoverPrimaryChangedUnderTheAction(t *testing.T) {
	skipShort(t)
	waitFailoverReady(t)
	prim, reps := primary(t)
	want, other := reps[0], reps[1]
	x := executor()
	d := decide(t, x, model.Intent{Action: model.ActionSwitchover, Member: want})
	x.Members = &hookOps{MemberOps: realOps(), before: func(context.Context) { switchDirectly(t, prim, other) }}
	res, err := x.Execute(context.Background(), d, actions.ExecOptions{OnReceipt: func(r model.Receipt) { t.Logf("  %s %s: %s", r.Step, r.Outcome, r.Detail) }})
	var fc *actions.FenceConflictError
	if !errors.As(err, &fc) || !strings.Contains(err.Error(), "412") {
		t.Fatalf("err = %v, want a fence conflict from Patroni's 412", err)
	}
	if !hasOutcome(res, model.StepSwitchover, model.OutcomeConflict) || !hasOutcome(res, model.StepReleaseLock, model.OutcomeFailed) {
		t.Errorf("receipts %v: want the switchover a conflict and the action stopped before changing anything", receiptKinds(res))
	}
	// Nothing hactl asked for happened: other (the other operator's
	// choice) leads, want and prim are replicas.
	for range 3 {
		p, r := roles(t)
		if len(p) != 1 || p[0] != other || !slices.Contains(r, want) || !slices.Contains(r, prim) {
			t.Fatalf("primaries %v, replicas %v: want %s alone primary", p, r, other)
		}
	}
	waitFailoverReady(t)
}

// TestSwitchoverPrimaryChangedBeforeTheLock: the primary changed between
// the dialog and enter: the decision under the lock names another
// primary, exit 6 before anything is sent.
func TestSwitchoverPrimaryChangedBeforeTheLock(t *testing.T) {
	skipShort(t)
	waitFailoverReady(t)
	prim, reps := primary(t)
	x := executor()
	d := decide(t, x, model.Intent{Action: model.ActionSwitchover, Member: reps[0]})
	switchDirectly(t, prim, reps[1])
	waitFailoverReady(t)
	res, err := x.Execute(context.Background(), d, actions.ExecOptions{})
	if !errors.Is(err, actions.ErrFenceConflict) || slices.ContainsFunc(res.Receipts, func(r model.Receipt) bool { return r.Step == model.StepSwitchover }) {
		t.Fatalf("err = %v, receipts %v: want a fence conflict before any switchover", err, receiptKinds(res))
	}
	if p, _ := primary(t); p != reps[1] {
		t.Errorf("primary %s, want %s", p, reps[1])
	}
}

// TestRefusals: reseed and replace of the primary without
// --switchover-first, and a switchover with no healthy candidate, are
// refused (exit 5) and change nothing.
func TestRefusals(t *testing.T) {
	skipShort(t)
	waitFailoverReady(t)
	prim, reps := primary(t)
	x := executor()
	for _, a := range []model.Action{model.ActionReseed, model.ActionReplace} {
		d := decide(t, x, model.Intent{Action: a, Member: prim})
		if d.Verb != model.VerbRefuse || !d.Blocked(model.CodeTargetIsPrimary) || d.Blockers[0].Override != model.FlagSwitchoverFirst {
			t.Errorf("%s of the primary: %s %+v", a, d.Verb, d.Blockers)
		}
		if _, err := x.Execute(context.Background(), d, actions.ExecOptions{}); !errors.Is(err, actions.ErrRefused) {
			t.Errorf("%s of the primary executed: %v", a, err)
		}
	}
	uid := podUID(t, prim)
	// Both replicas frozen: no candidate answers.
	ctx := context.Background()
	for _, r := range reps {
		if err := s.SB.Break(ctx, namespace+"/"+r, fault.Pause); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, r := range reps {
			if err := s.SB.Break(ctx, namespace+"/"+r, fault.Resume); err != nil {
				t.Errorf("resuming %s: %v", r, err)
			}
		}
		waitFailoverReady(t)
	}()
	d := decide(t, x, model.Intent{Action: model.ActionSwitchover})
	if d.Verb != model.VerbRefuse || !d.Blocked(model.CodeNoSwitchoverCandidate) {
		t.Errorf("switchover with both replicas frozen: %s %+v", d.Verb, d.Blockers)
	}
	if _, err := x.Execute(ctx, d, actions.ExecOptions{}); !errors.Is(err, actions.ErrRefused) {
		t.Errorf("switchover with no candidate executed: %v", err)
	}
	if p, _ := roles(t); len(p) != 1 || p[0] != prim || podUID(t, prim) != uid {
		t.Errorf("primaries %v (pod %s, was %s): something changed", p, podUID(t, prim), uid)
	}
}

func stepKinds(d model.Decision) []model.StepKind {
	var out []model.StepKind
	for _, s := range d.Steps {
		out = append(out, s.Kind)
	}
	return out
}

func receiptKinds(res actions.Result) []string {
	var out []string
	for _, r := range res.Receipts {
		out = append(out, string(r.Step)+":"+string(r.Outcome))
	}
	return out
}

// TestReseedPrimarySwitchingOverFirst: with --switchover-first the
// primary hands over to a healthy replica, then is reinitialized as a
// replica; the row written before is everywhere after.
func TestReseedPrimarySwitchingOverFirst(t *testing.T) {
	skipShort(t)
	waitFailoverReady(t)
	prim, _ := primary(t)
	row := writeRow(t, prim, "reseed-primary")
	d, res, err, took := run(t, model.Intent{Action: model.ActionReseed, Member: prim, Options: model.ActionOptions{SwitchoverFirst: true}})
	if err != nil {
		t.Fatalf("reseed of the primary %s with --switchover-first: %v", prim, err)
	}
	cand := d.Steps[0].MemberID
	t.Logf("reseed of the primary %s, switching over to %s first (plan %v), done in %s", prim, cand, stepKinds(d), took.Round(100*time.Millisecond))
	if !hasOutcome(res, model.StepSwitchover, model.OutcomeDone) || !hasOutcome(res, model.StepReinitialize, model.OutcomeDone) {
		t.Errorf("receipts %v", receiptKinds(res))
	}
	if p, r, ok := awaitRejoined(t, cand, prim); !ok {
		t.Errorf("primaries %v, replicas %v: want %s primary, %s a replica", p, r, cand, prim)
	}
	assertRowEverywhere(t, row)
	waitFailoverReady(t)
}

// TestReseedResumesFromTheLedger: the run stops right after the
// reinitialize was recorded (the process interrupted); a rerun continues
// the same ledger entry and only waits: it never sends the reinitialize
// again.
func TestReseedResumesFromTheLedger(t *testing.T) {
	skipShort(t)
	waitFailoverReady(t)
	prim, reps := primary(t)
	row := writeRow(t, prim, "resume")
	target := reps[0]
	x := executor()
	d := decide(t, x, model.Intent{Action: model.ActionReseed, Member: target})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, err := x.Execute(ctx, d, actions.ExecOptions{OnReceipt: func(r model.Receipt) {
		if r.Step == model.StepReinitialize && r.Outcome == model.OutcomeDone {
			cancel() // interrupted right after the receipt
		}
	}})
	if err == nil || !hasOutcome(first, model.StepReinitialize, model.OutcomeDone) {
		t.Fatalf("first run: %v, receipts %v: want it stopped after the reinitialize", err, receiptKinds(first))
	}
	x2 := executor()
	d2 := decide(t, x2, model.Intent{Action: model.ActionReseed, Member: target})
	if d2.Resume != first.EntryID || slices.Contains(stepKinds(d2), model.StepReinitialize) {
		t.Fatalf("rerun decision: resume %q (want %s), steps %v: want only waits", d2.Resume, first.EntryID, stepKinds(d2))
	}
	begin := time.Now()
	second, err := x2.Execute(context.Background(), d2, actions.ExecOptions{})
	if err != nil {
		t.Fatalf("rerun: %v", err)
	}
	t.Logf("rerun (plan %v) done in %s", stepKinds(d2), time.Since(begin).Round(100*time.Millisecond))
	if second.EntryID != first.EntryID || slices.ContainsFunc(second.Receipts, func(r model.Receipt) bool { return r.Step == model.StepReinitialize }) {
		t.Errorf("rerun entry %s (first %s), receipts %v", second.EntryID, first.EntryID, receiptKinds(second))
	}
	assertRowEverywhere(t, row)
	waitFailoverReady(t)
}
