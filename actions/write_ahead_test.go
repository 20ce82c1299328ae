package actions_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
)

// ledgerWitness is MemberOps that, as each request reaches the engine,
// reads the ledger on its own and notes whether it already says the
// request is being sent; then it sends it for real.
type ledgerWitness struct {
	etcdengine.Ops
	e       *env
	mu      sync.Mutex
	missing []string
	seen    int
}

func (w *ledgerWitness) check(step model.StepKind, id string) {
	l, err := actions.ReadLedger(context.Background(), w.e.cs, w.e.ns, "etcd")
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen++
	if err != nil {
		w.missing = append(w.missing, fmt.Sprintf("%s %s: reading the ledger: %v", step, id, err))
		return
	}
	for _, e := range l.Entries {
		if n := len(e.Receipts); n > 0 {
			last := e.Receipts[n-1]
			if last.Step == step && last.Outcome == model.OutcomeSending && (id == "" || last.MemberID == id) {
				return
			}
		}
	}
	w.missing = append(w.missing, fmt.Sprintf("%s %s reached the engine before the ledger recorded it", step, id))
}

func (w *ledgerWitness) RemoveMember(ctx context.Context, via engine.Target, id string) error {
	w.check(model.StepRemoveMember, id)
	return w.Ops.RemoveMember(ctx, via, id)
}

func (w *ledgerWitness) AddLearner(ctx context.Context, via engine.Target, peerURLs []string) (model.Peer, error) {
	w.check(model.StepAddLearner, "")
	return w.Ops.AddLearner(ctx, via, peerURLs)
}

func (w *ledgerWitness) PromoteLearner(ctx context.Context, via engine.Target, id string) error {
	w.check(model.StepPromoteLearner, id)
	return w.Ops.PromoteLearner(ctx, via, id)
}

// Every member change is in the ledger (outcome sending) before the
// request reaches the engine, so a holder killed before the answer's
// receipt leaves the change on record ("may have changed").
func TestLedgerRecordsAChangeBeforeItIsSent(t *testing.T) {
	e := newEnv(t, true)
	e.startKubelet()
	target := e.follower()
	x := e.executor()
	w := &ledgerWitness{Ops: etcdengine.Ops{Dial: e.dialer.dial}, e: e}
	x.Members = w
	d := e.decide(x, target)
	if d.Verb != model.VerbProceed {
		t.Fatalf("decision:\n%s", strings.Join(classify.Describe(d), "\n"))
	}
	res, err := x.Execute(context.Background(), d, actions.ExecOptions{})
	if err != nil {
		t.Fatalf("execute: %v\nreceipts: %s", err, receiptsText(res.Receipts))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen < 3 {
		t.Fatalf("%d member changes reached the engine, want remove, add and promote", w.seen)
	}
	for _, m := range w.missing {
		t.Error(m)
	}
	// The screen and the result show how each step ended, not the
	// write-ahead records.
	for _, r := range res.Receipts {
		if r.Outcome == model.OutcomeSending {
			t.Errorf("the result holds a write-ahead receipt: %+v", r)
		}
	}
}
