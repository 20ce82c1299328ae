package pge2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/fault"
)

// failoverTo asks Patroni itself for a failover to candidate (POST
// /failover on the candidate's own REST API, as patronictl failover
// does) and waits until the members answer with candidate as the one
// primary.
func failoverTo(t *testing.T, candidate string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return loopDial(ctx, namespace, candidate, 8008)
	}}}
	body := fmt.Sprintf(`{"candidate":%q}`, candidate)
	poll.Until(t, time.Minute, "Patroni to accept a failover to "+candidate, func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+candidate+":8008/failover", bytes.NewBufferString(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("POST /failover: %d %s", resp.StatusCode, b)
		}
		return nil
	}, poll.Every(2*time.Second))
	poll.Until(t, time.Minute, candidate+" to answer as the one primary", func() error {
		if p, _ := roles(t); len(p) != 1 || p[0] != candidate {
			return fmt.Errorf("primaries %v", p)
		}
		return nil
	}, poll.Every(500*time.Millisecond))
}

func pvcUID(t *testing.T, name string) (string, bool) {
	t.Helper()
	p, err := s.KC.CoreV1().PersistentVolumeClaims(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(p.UID), p.DeletionTimestamp != nil
}

// TestReplaceResumeNeverDeletesAPromotedMember: a replace stops right
// after it deleted the member's volume (the claim stays Terminating
// while the pod mounts it); Patroni then fails over to that very member.
// The rerun resumes the entry and is refused (target_promoted): the
// member's pod and its data survive, as the members themselves and the
// API server say. With --switchover-first the rerun hands the primary
// role away first and only then finishes the replace.
func TestReplaceResumeNeverDeletesAPromotedMember(t *testing.T) {
	skipShort(t)
	waitFailoverReady(t)
	prim, reps := primary(t)
	target := reps[0]
	row := writeRow(t, prim, "promoted-resume")
	podBefore := podUID(t, target)
	pvcName := "pgdata-" + target

	x := executor()
	d := decide(t, x, model.Intent{Action: model.ActionReplace, Member: target})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, err := x.Execute(ctx, d, actions.ExecOptions{OnReceipt: func(r model.Receipt) {
		t.Logf("  first run: %s %s", r.Step, r.Outcome)
		if r.Step == model.StepDeletePVC && r.Outcome == model.OutcomeDone {
			cancel() // the run stops right after the volume's delete
		}
	}})
	if err == nil || !hasOutcome(first, model.StepDeletePVC, model.OutcomeDone) || hasOutcome(first, model.StepDeletePod, model.OutcomeDone) {
		t.Fatalf("first run: %v, receipts %v: want it stopped after delete-pvc, before the pod", err, receiptKinds(first))
	}
	if _, terminating := pvcUID(t, pvcName); !terminating {
		t.Fatalf("claim %s is not Terminating after its delete", pvcName)
	}

	failoverTo(t, target)
	row2 := writeRow(t, target, "after-failover")

	x2 := executor()
	d2 := decide(t, x2, model.Intent{Action: model.ActionReplace, Member: target})
	t.Logf("rerun decision: %s, blockers %+v, steps %v", d2.Verb, d2.Blockers, stepKinds(d2))
	if d2.Verb != model.VerbRefuse || !d2.Blocked(model.CodeTargetPromoted) || d2.Resume != "" && d2.Resume != first.EntryID {
		t.Errorf("rerun after %s was promoted: %s %+v (resume %q): want refused with target_promoted", target, d2.Verb, d2.Blockers, d2.Resume)
	}
	if _, err := x2.Execute(context.Background(), d2, actions.ExecOptions{}); !errors.Is(err, actions.ErrRefused) {
		t.Errorf("the refused rerun executed: %v", err)
	}
	// Independent observations: the pod is the same object, the member
	// is still the primary and has every row.
	for range 3 {
		if got := podUID(t, target); got != podBefore {
			t.Fatalf("pod %s was replaced (uid %s, was %s): hactl deleted the primary's pod", target, got, podBefore)
		}
		if p, _ := roles(t); len(p) != 1 || p[0] != target {
			t.Fatalf("primaries %v, want %s", p, target)
		}
	}
	assertRowEverywhere(t, row)
	assertRowEverywhere(t, row2)

	// With --switchover-first the rerun hands over first, then finishes
	// the replace of the member as a replica.
	x3 := executor()
	d3 := decide(t, x3, model.Intent{Action: model.ActionReplace, Member: target, Options: model.ActionOptions{SwitchoverFirst: true}})
	if d3.Verb != model.VerbProceed || len(d3.Steps) == 0 || d3.Steps[0].Kind != model.StepSwitchover || d3.Steps[0].From != target {
		t.Fatalf("rerun with --switchover-first: %s %v %+v: want a switchover from %s first", d3.Verb, stepKinds(d3), d3.Blockers, target)
	}
	res, err := x3.Execute(context.Background(), d3, actions.ExecOptions{OnReceipt: func(r model.Receipt) { t.Logf("  third run: %s %s: %s", r.Step, r.Outcome, r.Detail) }})
	if err != nil {
		t.Fatalf("rerun with --switchover-first: %v", err)
	}
	if !hasOutcome(res, model.StepSwitchover, model.OutcomeDone) || podUID(t, target) == podBefore {
		t.Errorf("receipts %v, pod uid %s (was %s)", receiptKinds(res), podUID(t, target), podBefore)
	}
	if p, r := roles(t); len(p) != 1 || p[0] == target || !slices.Contains(r, target) {
		t.Errorf("primaries %v, replicas %v: want %s a replica", p, r, target)
	}
	assertRowEverywhere(t, row)
	assertRowEverywhere(t, row2)
	waitFailoverReady(t)
}

// TestSwitchoverDoneWhenTheOldPrimaryCannotRejoin: Patroni hands the
// primary role over, then the old primary stops answering before it
// rejoins. The switchover is done once the candidate holds the leader
// lock as the one writable primary (the old primary's state is a note,
// rejoin_pending), never a wait that blocks every other action.
func TestSwitchoverDoneWhenTheOldPrimaryCannotRejoin(t *testing.T) {
	skipShort(t)
	waitFailoverReady(t)
	prim, reps := primary(t)
	ctx := context.Background()
	x := executor()
	x.WaitTimeout = 90 * time.Second
	d := decide(t, x, model.Intent{Action: model.ActionSwitchover, Member: reps[0]})
	frozen := false
	x.Members = &hookOps{MemberOps: realOps(), after: func() {
		if err := s.SB.Break(ctx, namespace+"/"+prim, fault.Pause); err != nil {
			t.Errorf("freezing %s: %v", prim, err)
			return
		}
		frozen = true
	}}
	defer func() {
		if frozen {
			if err := s.SB.Break(ctx, namespace+"/"+prim, fault.Resume); err != nil {
				t.Errorf("resuming %s: %v", prim, err)
			}
		}
		waitFailoverReady(t)
	}()
	res, err := x.Execute(ctx, d, actions.ExecOptions{OnReceipt: func(r model.Receipt) { t.Logf("  %s %s: %s", r.Step, r.Outcome, r.Detail) }})
	if err != nil {
		t.Fatalf("switchover whose old primary froze after the hand-over: %v (receipts %v)", err, receiptKinds(res))
	}
	if res.Final.Verb != model.VerbDone || res.Final.Leader != reps[0] || !slices.ContainsFunc(res.Final.Notes, func(n model.Note) bool { return n.Code == model.CodeRejoinPending && n.Member == prim }) {
		t.Errorf("final %s leader %s notes %+v: want done, %s primary, rejoin_pending for %s", res.Final.Verb, res.Final.Leader, res.Final.Notes, reps[0], prim)
	}
	// Nothing is left in progress: another action decides without
	// action_in_progress.
	d2 := decide(t, executor(), model.Intent{Action: model.ActionReseed, Member: prim})
	if d2.Blocked(model.CodeActionInProgress) {
		t.Errorf("a reseed of %s after the switchover: %+v", prim, d2.Blockers)
	}
	if p, _ := roles(t); len(p) != 1 || p[0] != reps[0] {
		t.Errorf("primaries %v, want %s", p, reps[0])
	}
}
