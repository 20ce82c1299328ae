package tui

import (
	"context"
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

// runnable: the decision proceeds and nothing blocks it.
func runnable(d model.Decision) bool {
	return d.Verb == model.VerbProceed && len(d.Blockers) == 0
}

// setOverride switches the option an override flag names; ok is false for
// a flag the TUI does not know.
func setOverride(o *model.ActionOptions, flag string, on bool) bool {
	switch flag {
	case model.FlagMoveLeader:
		o.MoveLeader = on
	case model.FlagSwitchoverFirst:
		o.SwitchoverFirst = on
	case model.FlagSupersede:
		o.Supersede = on
	case model.FlagForce:
		o.Force = on
	case model.FlagAcceptNoFailover:
		o.AcceptNoFailover = on
	case model.FlagAcceptWriteStall:
		o.AcceptWriteStall = on
	default:
		return false
	}
	return true
}

// overrideOn reports whether the option an override flag names is on.
func overrideOn(o model.ActionOptions, flag string) bool {
	switch flag {
	case model.FlagMoveLeader:
		return o.MoveLeader
	case model.FlagSwitchoverFirst:
		return o.SwitchoverFirst
	case model.FlagSupersede:
		return o.Supersede
	case model.FlagForce:
		return o.Force
	case model.FlagAcceptNoFailover:
		return o.AcceptNoFailover
	case model.FlagAcceptWriteStall:
		return o.AcceptWriteStall
	}
	return false
}

// decidedMsg carries a decision for the open dialog.
type decidedMsg struct {
	id       int
	decision model.Decision
	err      error
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

// runningAction is the action started from the dialog.
type runningAction struct {
	id       int
	req      Request
	decision model.Decision
	started  time.Time
	receipts []model.Receipt
	done     bool
	err      error
	updates  <-chan tea.Msg
}

func (a *runningAction) phase() model.ActionPhase {
	if len(a.receipts) == 0 {
		return model.ActionPhaseRequested
	}
	return a.receipts[len(a.receipts)-1].Phase
}

func (a *runningAction) title() string {
	s := a.req.Intent.Action.String()
	if a.req.Intent.Member != "" {
		s += " " + a.req.Intent.Member
	}
	if a.req.Intent.Action == model.ActionRestore && a.req.Intent.Options.Generation != "" {
		s += " from " + a.req.Intent.Options.Generation
	}
	return s
}

func (a *runningAction) summary() string {
	switch {
	case a.done && a.err != nil:
		return fmt.Sprintf("%s stopped in phase %s: %v", a.title(), a.phase(), a.err)
	case a.done:
		return fmt.Sprintf("%s finished (%s)", a.title(), a.phase())
	}
	if n := len(a.receipts); n > 0 && a.receipts[n-1].Detail != "" {
		return fmt.Sprintf("%s: %s: %s", a.title(), a.phase(), a.receipts[n-1].Detail)
	}
	return fmt.Sprintf("%s: %s…", a.title(), a.phase())
}

// fraction is the share of the planned steps done, for the progress bar.
func (a *runningAction) fraction() float64 {
	if a.done && a.err == nil {
		return 1
	}
	steps := a.decision.Steps
	if len(steps) == 0 || len(a.receipts) == 0 {
		return 0
	}
	done := 0
	for i, s := range steps {
		for _, r := range a.receipts {
			if r.Step == s.Kind && (r.Outcome == model.OutcomeDone || r.Outcome == model.OutcomeAlready) {
				done = i + 1
			}
		}
	}
	return float64(done) / float64(len(steps))
}

// decide asks the classifier in a Cmd.
func (m Model) decide(id int, req Request) tea.Cmd {
	acts, ctx := m.actions, m.ctx
	return func() tea.Msg {
		d, err := acts.Decide(ctx, req)
		return decidedMsg{id: id, decision: d, err: err}
	}
}

// execute returns the running action and the commands that run it (in a
// Cmd, like all I/O) and stream its receipts back as messages.
func (m Model) execute(id int, req Request, d model.Decision) (*runningAction, tea.Cmd) {
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
	a := &runningAction{id: id, req: req, decision: d, started: m.cfg.Now(), updates: ch}
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
	case !explain && m.action != nil && !m.action.done:
		m.setStatus(true, "an action is already running: %s", m.action.summary())
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
	if action == model.ActionRestore || (action == model.ActionSwitchover && !engineViews(m.cfg.Views).of(r.Observation.Cluster).Candidate(mem)) {
		mem = model.Member{}
	}
	c := r.Observation.Cluster
	req := Request{Namespace: c.Namespace, Cluster: c.Name, Intent: model.Intent{
		Action: action, Member: mem.Name,
		Options: model.ActionOptions{Verdict: m.cfg.Verdict, LockHolder: m.cfg.LockHolder},
	}}
	m.seq++
	d := newDialog(int(m.seq), req, explain, m.theme)
	d.kubeContext = m.cfg.Context
	d.SetSize(m.width, bodyHeight(m.height))
	m.dialog = &d
	m.clearStatus()
	switch d.state {
	case dialogAsking:
		return m, d.ask(defaultGeneration(c.Name, m.cfg.Now()))
	case dialogPicking:
		d.pick(m.cfg.Now, m.seed.source == nil)
		return m, m.loadGenerations()
	}
	return m, m.decide(d.id, req)
}

// updateDialog passes msg to the open dialog and does what it asks:
// close it, classify its request, or run its decision.
func (m Model) updateDialog(msg tea.Msg) (Model, tea.Cmd) {
	d, out, cmd := m.dialog.Update(msg)
	m.dialog = &d
	switch out {
	case dialogCancel:
		m.dialog = nil
		m.setStatus(false, "cancelled: nothing was changed")
	case dialogClose:
		m.dialog = nil
	case dialogDecide:
		cmd = m.decide(d.id, d.req)
	case dialogRedecide:
		m.seq++
		d.id = int(m.seq)
		cmd = m.decide(d.id, d.req)
	case dialogConfirm:
		m.dialog = nil
		a, run := m.execute(d.id, d.req, d.decision)
		m.action = a
		m.tab = tabSeed
		m.setStatus(false, "%s", a.summary())
		cmd = tea.Batch(run, m.loadGenerations())
	}
	return m, cmd
}

// actionMsg handles the running action's messages; ok is false for other
// messages.
func (m *Model) actionMsg(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case actionReceiptMsg:
		if m.action == nil || m.action.id != msg.id {
			return nil, true
		}
		a := *m.action
		a.receipts = append(append([]model.Receipt(nil), a.receipts...), msg.receipt)
		m.action = &a
		m.setStatus(msg.receipt.Outcome == model.OutcomeFailed || msg.receipt.Outcome == model.OutcomeConflict, "%s", a.summary())
		cmds := []tea.Cmd{waitAction(a.updates)}
		if !m.probing && m.backend != nil && msg.receipt.Step.Mutates() {
			// The step changed the cluster: look at the members now.
			m.probing = true
			cmds = append(cmds, m.observe(true))
		}
		return tea.Batch(cmds...), true
	case actionDoneMsg:
		if m.action == nil || m.action.id != msg.id {
			return nil, true
		}
		a := *m.action
		a.done, a.err = true, msg.err
		m.action = &a
		m.setStatus(msg.err != nil, "%s", a.summary())
		cmds := []tea.Cmd{m.loadGenerations()}
		if !m.probing && m.backend != nil {
			m.probing = true
			cmds = append(cmds, m.observe(true))
		}
		return tea.Batch(cmds...), true
	}
	return nil, false
}
