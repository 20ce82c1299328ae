package tui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/tui/components/dialog"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// Request is one intent about one cluster, as an action key or the
// explain key asks for it.
type Request = common.Request

// Actions decides and runs repairs for the TUI through the same
// classifier and executor as the CLI verbs. Every method may block: the
// model calls them only inside a tea.Cmd.
type Actions interface {
	// Decide observes the cluster afresh and classifies req.
	Decide(ctx context.Context, req Request) (model.Decision, error)
	// Execute carries out exactly decision d (shown to and confirmed by
	// the user), calling progress with every receipt, and returns when
	// the action finished or stopped.
	Execute(ctx context.Context, req Request, d model.Decision, progress func(model.Receipt)) error
}

// actionReceiptMsg carries one receipt of the running action.
type actionReceiptMsg struct {
	id      int
	receipt model.Receipt
}

// actionDoneMsg says the running action ended.
type actionDoneMsg struct {
	id  int
	err error
}

// decide asks the classifier in a Cmd.
func (m Model) decide(id int, req Request) tea.Cmd {
	acts, ctx := m.actions, m.ctx
	return func() tea.Msg {
		d, err := acts.Decide(ctx, req)
		return dialog.DecidedMsg{ID: id, Decision: d, Err: err}
	}
}

// execute returns the running action and the commands that run it (in a
// Cmd, like all I/O) and stream its receipts back as messages.
func (m Model) execute(id int, req Request, d model.Decision) (*common.RunningAction, tea.Cmd) {
	acts, ctx := m.actions, m.ctx
	ch := make(chan tea.Msg, 64)
	run := func() tea.Msg {
		defer close(ch)
		send := func(msg tea.Msg) {
			select {
			case ch <- msg:
			case <-ctx.Done():
			}
		}
		err := acts.Execute(ctx, req, d, func(r model.Receipt) { send(actionReceiptMsg{id: id, receipt: r}) })
		send(actionDoneMsg{id: id, err: err})
		return nil
	}
	a := &common.RunningAction{ID: id, Req: req, Decision: d, Started: m.cfg.Now(), Updates: ch}
	return a, tea.Batch(run, waitAction(ch))
}

// waitAction reads the next message of a running action.
func waitAction(ch <-chan tea.Msg) tea.Cmd {
	return func() tea.Msg {
		msg, ok := <-ch
		if !ok {
			return nil
		}
		return msg
	}
}

// openDialog starts a dialog for action on the selected member, or on the
// cluster for a seed or a restore (explain: show the decision only). A
// restore's dialog first lists the generations to pick from.
func (m Model) openDialog(action model.Action, explain bool) (Model, tea.Cmd) {
	switch {
	case m.actions == nil:
		m.setStatus(true, "%s", noActionsWhy(m.cfg))
		return m, nil
	case !explain && m.cfg.ReadOnly:
		m.setStatus(true, "read-only: actions are disabled (%s)", m.cfg.ReadOnlyReason)
		return m, nil
	case !explain && m.action != nil && !m.action.Done:
		m.setStatus(true, "an action is already running: %s", m.action.Summary())
		return m, nil
	}
	r, mem, ok := m.selectedMember()
	wholeCluster := action == model.ActionSeed || action == model.ActionRestore || action == model.ActionSwitchover
	if _, focused := m.focused(); !focused {
		m.setStatus(true, "the cluster is not in scope")
		return m, nil
	}
	if !ok && !wholeCluster {
		m.setStatus(true, "select a member first")
		return m, nil
	}
	if action == model.ActionRestore || (action == model.ActionSwitchover && !common.EngineViews(m.cfg.Views).Of(r.Observation.Cluster).Candidate(mem)) {
		mem = model.Member{}
	}
	c := r.Observation.Cluster
	req := Request{Namespace: c.Namespace, Cluster: c.Name, Intent: model.Intent{
		Action: action, Member: mem.Name,
		Options: model.ActionOptions{Verdict: m.cfg.Verdict, LockHolder: m.cfg.LockHolder},
	}}
	m.dialogSeq++
	d := dialog.New(m.dialogSeq, req, explain, m.theme)
	d.SetKubeContext(m.cfg.Context)
	d.SetSize(m.width, bodyHeight(m.height))
	m.dialog = &d
	m.clearStatus()
	switch d.State() {
	case dialog.Asking:
		return m, d.Ask(defaultGeneration(c.Name, m.cfg.Now()))
	case dialog.Picking:
		d.Pick(m.cfg.Now, !m.seed.Listed())
		cmd := m.loadGenerations()
		return m, cmd
	}
	return m, m.decide(d.ID(), req)
}

// updateDialog passes msg to the open dialog and does what it asks:
// close it, classify its request, or run its decision.
func (m Model) updateDialog(msg tea.Msg) (Model, tea.Cmd) {
	d, out, cmd := m.dialog.Update(msg)
	m.dialog = &d
	switch out {
	case dialog.Cancel:
		m.dialog = nil
		m.setStatus(false, "cancelled: nothing was changed")
	case dialog.Close:
		m.dialog = nil
	case dialog.Decide:
		cmd = m.decide(d.ID(), d.Request())
	case dialog.Redecide:
		m.dialogSeq++
		d.SetID(m.dialogSeq)
		cmd = m.decide(d.ID(), d.Request())
	case dialog.Confirm:
		m.dialog = nil
		a, run := m.execute(d.ID(), d.Request(), d.Decision())
		m.action = a
		m.tab = tabSeed
		m.setStatus(false, "%s", a.Summary())
		cmd = tea.Batch(run, m.loadGenerations())
	}
	return m, cmd
}

// actionMsg handles the running action's messages; ok is false for other
// messages.
func (m *Model) actionMsg(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case actionReceiptMsg:
		if m.action == nil || m.action.ID != msg.id {
			return nil, true
		}
		a := *m.action
		a.Receipts = append(append([]model.Receipt(nil), a.Receipts...), msg.receipt)
		m.action = &a
		m.setStatus(msg.receipt.Outcome == model.OutcomeFailed || msg.receipt.Outcome == model.OutcomeConflict, "%s", a.Summary())
		cmds := []tea.Cmd{waitAction(a.Updates)}
		if msg.receipt.Step.Mutates() {
			// The step changed the cluster: look at the members now.
			var probe tea.Cmd
			if m.feed, probe = m.feed.Probe(); probe != nil {
				cmds = append(cmds, probe)
			}
		}
		return tea.Batch(cmds...), true
	case actionDoneMsg:
		if m.action == nil || m.action.ID != msg.id {
			return nil, true
		}
		a := *m.action
		a.Done, a.Err = true, msg.err
		m.action = &a
		m.setStatus(msg.err != nil, "%s", a.Summary())
		cmds := []tea.Cmd{m.loadGenerations()}
		var probe tea.Cmd
		if m.feed, probe = m.feed.Probe(); probe != nil {
			cmds = append(cmds, probe)
		}
		return tea.Batch(cmds...), true
	}
	return nil, false
}

// defaultGeneration proposes a generation ID: the cluster and the time.
func defaultGeneration(cluster string, now time.Time) string {
	return cluster + "-" + now.UTC().Format("20060102-150405")
}
