package common

import (
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/model"
)

// Request is one intent about one cluster, as an action key or the
// explain key asks for it.
type Request struct {
	Namespace string
	Cluster   string
	Intent    model.Intent
}

// RunningAction is the action started from the dialog: the root runs it
// and the seed view shows it.
type RunningAction struct {
	ID       int
	Req      Request
	Decision model.Decision
	Started  time.Time
	Receipts []model.Receipt
	Done     bool
	Err      error
	// Updates delivers the action's receipts and its end, as messages.
	Updates <-chan tea.Msg
}

// Phase is the phase of the last receipt.
func (a *RunningAction) Phase() model.ActionPhase {
	if len(a.Receipts) == 0 {
		return model.ActionPhaseRequested
	}
	return a.Receipts[len(a.Receipts)-1].Phase
}

// Title names the action, its member and a restore's generation.
func (a *RunningAction) Title() string {
	s := a.Req.Intent.Action.String()
	if a.Req.Intent.Member != "" {
		s += " " + a.Req.Intent.Member
	}
	if a.Req.Intent.Action == model.ActionRestore && a.Req.Intent.Options.Generation != "" {
		s += " from " + a.Req.Intent.Options.Generation
	}
	return s
}

// Summary says where the action is, for the status line.
func (a *RunningAction) Summary() string {
	switch {
	case a.Done && a.Err != nil:
		return fmt.Sprintf("%s stopped in phase %s: %v", a.Title(), a.Phase(), a.Err)
	case a.Done:
		return fmt.Sprintf("%s finished (%s)", a.Title(), a.Phase())
	}
	if n := len(a.Receipts); n > 0 && a.Receipts[n-1].Detail != "" {
		return fmt.Sprintf("%s: %s: %s", a.Title(), a.Phase(), a.Receipts[n-1].Detail)
	}
	return fmt.Sprintf("%s: %s…", a.Title(), a.Phase())
}

// Fraction is the share of the planned steps done, for the progress bar.
func (a *RunningAction) Fraction() float64 {
	if a.Done && a.Err == nil {
		return 1
	}
	steps := a.Decision.Steps
	if len(steps) == 0 || len(a.Receipts) == 0 {
		return 0
	}
	done := 0
	for i, s := range steps {
		for _, r := range a.Receipts {
			if r.Step == s.Kind && (r.Outcome == model.OutcomeDone || r.Outcome == model.OutcomeAlready) {
				done = i + 1
			}
		}
	}
	return float64(done) / float64(len(steps))
}
