package actions

import (
	"testing"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// An earlier request counts as possibly taken effect only while no answer
// of its kind follows it: a switchover written ahead and then refused
// (401, a missing Secret) is no reason to read a later 412 as "may have
// taken effect"; one never answered, or an unknown outcome, is.
func TestSentUnanswered(t *testing.T) {
	rc := func(o model.Outcome) model.Receipt { return model.Receipt{Step: model.StepSwitchover, Outcome: o} }
	for _, c := range []struct {
		name     string
		receipts []model.Receipt
		want     bool
	}{
		{"none", nil, false},
		{"sending, no answer", []model.Receipt{rc(model.OutcomeSending)}, true},
		{"sending, then failed", []model.Receipt{rc(model.OutcomeSending), rc(model.OutcomeFailed)}, false},
		{"sending, then refused", []model.Receipt{rc(model.OutcomeSending), rc(model.OutcomeRefused)}, false},
		{"failed, then sending again", []model.Receipt{rc(model.OutcomeSending), rc(model.OutcomeFailed), rc(model.OutcomeSending)}, true},
		{"unknown, then failed", []model.Receipt{rc(model.OutcomeUnknown), rc(model.OutcomeFailed)}, true},
		{"another kind sending", []model.Receipt{{Step: model.StepReinitialize, Outcome: model.OutcomeSending}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &run{entryID: "e1", unknown: map[model.StepKind]int{}}
			r.last = status.Result{Observation: model.Observation{Ledger: []model.LedgerEntry{
				{ID: "other", Receipts: []model.Receipt{rc(model.OutcomeSending)}},
				{ID: "e1", Receipts: c.receipts},
			}}}
			if got := r.sentUnanswered(model.StepSwitchover); got != c.want {
				t.Fatalf("sentUnanswered = %v, want %v", got, c.want)
			}
		})
	}
}
