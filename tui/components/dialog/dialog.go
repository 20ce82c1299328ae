// Package dialog is the confirm dialog: it shows the classifier's decision
// for a request exactly as the CLI prints it and, for a runnable decision,
// asks the root to run it once confirmed; a restore first picks its
// generation in the picker.
package dialog

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/tui/components/picker"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// State is where a confirm dialog is.
type State int

const (
	// Asking: the dialog asks for an input the intent needs (the
	// generation ID of a seed) before the classifier runs.
	Asking State = iota
	// Picking: the dialog lists the published seed generations for
	// a restore to pick one before the classifier runs.
	Picking
	// Deciding: the classifier is deciding the request.
	Deciding
	// Decided: the dialog shows the decision.
	Decided
	// Failed: the classifier could not decide.
	Failed
)

// String names the state.
func (s State) String() string {
	switch s {
	case Asking:
		return "asking"
	case Picking:
		return "picking"
	case Deciding:
		return "deciding"
	case Decided:
		return "decided"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// Outcome is what a message to the dialog asks of the root.
type Outcome int

const (
	// Keep: the dialog stays open; nothing for the root to do.
	Keep Outcome = iota
	// Cancel: esc; nothing was changed.
	Cancel
	// Close: the dialog is done (an explanation read, a failure
	// seen).
	Close
	// Decide: classify the dialog's request (its generation ID was
	// entered or picked).
	Decide
	// Redecide: classify the dialog's new request (another intent,
	// an override switched) under a new id.
	Redecide
	// Confirm: run the decision, confirmed.
	Confirm
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case Keep:
		return "keep"
	case Cancel:
		return "cancel"
	case Close:
		return "close"
	case Decide:
		return "decide"
	case Redecide:
		return "redecide"
	case Confirm:
		return "confirm"
	}
	return "unknown"
}

// Model is the confirm dialog component: it shows the classifier's
// Decision for a request and, for a runnable decision, asks the root to
// start it once confirmed (typing the member name for a destructive one,
// the cluster name for a restore). A restore first picks its generation
// in the dialog's picker. Classifying and running are the root's:
// Update says what it asks for.
type Model struct {
	id       int
	req      common.Request
	explain  bool
	state    State
	decision model.Decision
	err      error
	input    textinput.Model
	picker   picker.Model
	scroll   int
	hint     string
	// width and height are the area the dialog is centred in.
	width, height int
	theme         common.Theme
	// kubeContext is the kubeconfig context the action runs in, named in
	// the title (SetKubeContext).
	kubeContext string
}

// New returns the dialog with the id id for req (explain: show the
// decision only).
func New(id int, req common.Request, explain bool, th common.Theme) Model {
	in := textinput.New()
	in.Prompt = "> "
	in.CharLimit = 253
	d := Model{id: id, req: req, explain: explain, state: Deciding, input: in, theme: th}
	if req.Intent.Options.Generation == "" && !explain {
		switch req.Intent.Action {
		case model.ActionSeed:
			d.state = Asking
		case model.ActionRestore:
			d.state = Picking
		}
	}
	return d
}

// SetSize sets the area the dialog is centred in; its text wraps to it.
func (d *Model) SetSize(w, h int) { d.width, d.height = w, h }

// SetTheme sets the styles.
func (d *Model) SetTheme(th common.Theme) {
	d.theme = th
	d.picker.SetTheme(th)
}

// Pick readies the generation picker of a picking dialog; unlisted: no
// listing will come.
func (d *Model) Pick(now func() time.Time, unlisted bool) {
	d.picker = picker.New(d.theme, now, unlisted)
}

// clusterKey is the key of the dialog's cluster.
func (d *Model) clusterKey() string { return d.req.Namespace + "/" + d.req.Cluster }

// Ask proposes a generation ID in the input of an asking dialog.
func (d *Model) Ask(generation string) tea.Cmd {
	d.input.Placeholder = "generation ID"
	d.input.SetValue(generation)
	d.input.CursorEnd()
	return d.input.Focus()
}

// decided stores the classifier's answer.
func (d *Model) decided(dec model.Decision, err error) {
	d.decision, d.err, d.scroll, d.hint = dec, err, 0, ""
	if err != nil {
		d.state = Failed
		return
	}
	d.state = Decided
	d.input.SetValue("")
}

// confirmName is the name to type to confirm the decision: the cluster's
// for a restore (it stops and restores every member), the member's for a
// decision that deletes or removes something, "" when none is needed.
func (d *Model) confirmName() string {
	switch {
	case d.req.Intent.Action == model.ActionRestore:
		return d.req.Cluster
	case d.decision.Deletes():
		return d.req.Intent.Member
	}
	return ""
}

// needsName: the decision is runnable and needs a name typed to confirm.
func (d *Model) needsName() bool {
	return !d.explain && d.state == Decided && Runnable(d.decision) && d.confirmName() != ""
}

// typing: keys go to the text input.
func (d *Model) typing() bool { return d.state == Asking || d.needsName() }

// Update handles a message while the dialog is open: the decision for
// its id, keys, and whatever else its input takes (a paste, the cursor's
// blink).
func (d Model) Update(msg tea.Msg) (Model, Outcome, tea.Cmd) {
	switch msg := msg.(type) {
	case DecidedMsg:
		if msg.ID != d.id {
			return d, Keep, nil
		}
		d.decided(msg.Decision, msg.Err)
		if d.needsName() {
			return d, Keep, d.input.Focus()
		}
		return d, Keep, nil
	case common.GenerationsMsg:
		if d.state == Picking && msg.Key == d.clusterKey() {
			d.picker.SetGenerations(msg.Gens, msg.Err)
		}
		return d, Keep, nil
	case tea.KeyPressMsg:
		return d.updateKey(msg)
	}
	if d.typing() {
		var cmd tea.Cmd
		d.input, cmd = d.input.Update(msg)
		return d, Keep, cmd
	}
	return d, Keep, nil
}

func (d Model) updateKey(msg tea.KeyPressMsg) (Model, Outcome, tea.Cmd) {
	s := msg.String()
	switch {
	case s == "esc" || s == "ctrl+c":
		return d, Cancel, nil
	case d.state == Picking:
		return d.updatePicking(msg)
	case s == "pgdown" || s == "ctrl+d" || s == "pgup" || s == "ctrl+u" || ((s == "down" || s == "up") && !d.typing()):
		d.scrollBy(s)
		return d, Keep, nil
	}
	switch d.state {
	case Asking:
		return d.updateAsking(msg)
	case Deciding:
		return d, Keep, nil
	case Failed:
		if s == "enter" {
			return d, Close, nil
		}
		return d, Keep, nil
	}
	return d.updateDecided(msg)
}

// scrollBy scrolls the decision a line (up, down) or a page.
func (d *Model) scrollBy(s string) {
	room, n := d.room()
	step := max(1, room-1)
	if s == "down" || s == "up" {
		step = 1
	}
	if s == "pgup" || s == "ctrl+u" || s == "up" {
		step = -step
	}
	d.scroll = min(max(0, d.scroll+step), max(0, n-room))
}

// updateAsking takes the generation ID of a seed.
func (d Model) updateAsking(msg tea.KeyPressMsg) (Model, Outcome, tea.Cmd) {
	if msg.String() == "enter" {
		g := strings.TrimSpace(d.input.Value())
		if g == "" {
			d.hint = "a generation ID is required"
			return d, Keep, nil
		}
		d.req.Intent.Options.Generation = g
		d.state = Deciding
		d.input.Blur()
		return d, Decide, nil
	}
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(msg)
	d.hint = ""
	return d, Keep, cmd
}

// updatePicking moves the picker's cursor; enter picks the selected
// generation for the classifier.
func (d Model) updatePicking(msg tea.KeyPressMsg) (Model, Outcome, tea.Cmd) {
	if msg.String() != "enter" {
		d.picker = d.picker.Update(msg)
		return d, Keep, nil
	}
	g, ok := d.picker.Selected()
	if !ok {
		d.hint = "no generation to pick; esc closes"
		return d, Keep, nil
	}
	d.req.Intent.Options.Generation = g.ID
	d.state, d.hint = Deciding, ""
	return d, Decide, nil
}

// updateDecided handles keys on a decision: the next intent (explain),
// an override switched, the name typed, enter.
func (d Model) updateDecided(msg tea.KeyPressMsg) (Model, Outcome, tea.Cmd) {
	s := msg.String()
	if d.explain && s == "i" {
		next := map[model.Action]model.Action{model.ActionReplace: model.ActionReseed, model.ActionReseed: model.ActionSeed,
			model.ActionSeed: model.ActionSwitchover, model.ActionSwitchover: model.ActionReplace}
		req := d.req
		req.Intent.Action = next[req.Intent.Action]
		return d.restart(req), Redecide, nil
	}
	if len(s) == 1 && s >= "1" && s <= "9" && (!d.needsName() || d.input.Value() == "") {
		i := int(s[0] - '1')
		if i < len(d.decision.Blockers) && d.decision.Blockers[i].Override != "" {
			req := d.req
			flag := d.decision.Blockers[i].Override
			if setOverride(&req.Intent.Options, flag, !overrideOn(req.Intent.Options, flag)) {
				return d.restart(req), Redecide, nil
			}
		}
		if !d.needsName() {
			return d, Keep, nil
		}
	}
	if s == "enter" {
		return d.confirm()
	}
	if d.needsName() {
		var cmd tea.Cmd
		d.input, cmd = d.input.Update(msg)
		d.hint = ""
		return d, Keep, cmd
	}
	return d, Keep, nil
}

// confirm answers enter on a decision: an explanation closes, a refusal
// stays, a destructive decision or a restore needs its name (confirmName)
// typed exactly.
func (d Model) confirm() (Model, Outcome, tea.Cmd) {
	name := d.confirmName()
	switch {
	case d.explain:
		return d, Close, nil
	case !Runnable(d.decision):
		d.hint = "this decision cannot run; esc closes"
		return d, Keep, nil
	case name != "" && strings.TrimSpace(d.input.Value()) != name:
		d.hint = fmt.Sprintf("type %s exactly to confirm", name)
		return d, Keep, nil
	}
	return d, Confirm, nil
}

// restart is a fresh dialog, deciding req; the root gives it its id.
func (d Model) restart(req common.Request) Model {
	nd := New(0, req, d.explain, d.theme)
	nd.kubeContext = d.kubeContext
	nd.state = Deciding
	nd.SetSize(d.width, d.height)
	return nd
}

// parts renders the dialog at width w as a head (its title), a body that
// scrolls (the decision: exactly what the CLI prints before it asks) and a
// foot that always shows (the question, the input, the keys).
func (d *Model) parts(w int) (head, body, foot []string) {
	t := d.theme
	where := d.req.Namespace + "/" + d.req.Cluster
	if d.kubeContext != "" {
		where += ", context " + d.kubeContext
	}
	head = []string{t.DialogTitle.Render(d.title()) + t.Dim.Render(" ("+where+")"), ""}
	hint := func(foot []string) []string {
		if d.hint != "" {
			foot = append(foot, t.Warn.Render(d.hint))
		}
		return foot
	}
	switch d.state {
	case Asking:
		body = []string{"Generation ID for the new seed generation:"}
		return head, body, hint([]string{d.input.View(), "", t.Dim.Render("enter classifies · esc cancels")})
	case Picking:
		foot = hint([]string{"", t.Dim.Render("↑/↓ select · enter picks · esc cancels")})
		return head, d.picker.Lines(w, d.height-2-len(head)-len(foot), d.req.Cluster), foot
	case Deciding:
		return head, []string{t.Dim.Render("observing the cluster and classifying…")}, []string{"", t.Dim.Render("esc cancels")}
	case Failed:
		body = append([]string{t.Bad.Render("The classifier could not decide:")}, common.Wrap(d.err.Error(), w, "")...)
		return head, body, []string{"", t.Dim.Render("esc closes · nothing was changed")}
	}
	return head, decisionLines(t, d.decision, w), hint(d.decidedFoot(w))
}

// title names the dialog's intent: the action, its member, a restore's
// generation.
func (d *Model) title() string {
	in := d.req.Intent
	title := in.Action.String()
	if d.explain {
		title = "explain " + title
	}
	if in.Member != "" {
		title += " " + in.Member
	}
	if in.Action == model.ActionRestore && in.Options.Generation != "" {
		title += " from " + in.Options.Generation
	}
	return title
}

// decidedFoot is the foot under a decision: the overrides on, then what
// enter does (and the name to type first).
func (d *Model) decidedFoot(w int) []string {
	t := d.theme
	foot := []string{""}
	var on []string
	for _, f := range []string{model.FlagMoveLeader, model.FlagSwitchoverFirst, model.FlagSupersede, model.FlagForce, model.FlagAcceptNoFailover, model.FlagAcceptWriteStall} {
		if overrideOn(d.req.Intent.Options, f) {
			on = append(on, f)
		}
	}
	if len(on) > 0 {
		foot = append(foot, t.Warn.Render("overrides on: "+strings.Join(on, " ")))
	}
	switch name := d.confirmName(); {
	case d.explain:
		foot = append(foot, t.Dim.Render("explain only: nothing runs · i next intent · esc closes"))
	case !Runnable(d.decision):
		foot = append(foot, t.Bad.Render(refusal(d.decision)), t.Dim.Render("esc closes"+overrideHint(d.decision)))
	case name != "":
		foot = append(foot, common.Wrap(t.Danger.Render(d.danger()+" Type "+name+" to confirm:"), w, "")...)
		foot = append(foot, d.input.View(), t.Dim.Render("enter runs · esc cancels"+overrideHint(d.decision)))
	default:
		foot = append(foot, t.Dim.Render("enter runs · esc cancels"+overrideHint(d.decision)))
	}
	return foot
}

// danger says what a confirmed decision destroys.
func (d *Model) danger() string {
	if in := d.req.Intent; in.Action == model.ActionRestore {
		return "This stops every member of " + d.req.Cluster + " and restores each from generation " + in.Options.Generation + ": every write after it is lost."
	}
	return "This removes the member and deletes its data."
}

// refusal says why a decision does not run.
func refusal(d model.Decision) string {
	switch d.Verb {
	case model.VerbAwait:
		return "Await: the pod is being deleted by someone else; nothing will be done now."
	case model.VerbObserve:
		return "Observe: the pod never started from the current template; deleting it would not help."
	case model.VerbDone:
		return "Done: nothing is left to do."
	}
	return "Refused: nothing will be done."
}

// decisionLines renders a model.Decision as classify.Describe words
// it — the lines the CLI prints before it asks — wrapped to w, then the
// overrides the dialog can switch, each with its key.
func decisionLines(t common.Theme, d model.Decision, w int) []string {
	var out []string
	// The same lines as the CLI; the refusals (and the overrides that lift
	// them) come right after the first, so a small terminal shows them
	// without scrolling.
	lines := classify.Describe(d)
	var blocks, rest []string
	for i, l := range lines {
		if i > 0 && (strings.HasPrefix(l, "refused ") || strings.HasPrefix(l, "await ") || strings.HasPrefix(l, "observe ")) {
			blocks = append(blocks, l)
		} else if i > 0 {
			rest = append(rest, l)
		}
	}
	if len(lines) > 0 {
		lines = append(append(append([]string{lines[0]}, blocks...), overrideLines(d)...), rest...)
	}
	for i, l := range lines {
		st := lipgloss.NewStyle()
		switch {
		case i == 0 && !Runnable(d):
			st = t.Bad
		case i == 0:
			st = t.Bold
		case strings.HasPrefix(l, "refused "), strings.HasPrefix(l, "await "), strings.HasPrefix(l, "observe "):
			st = t.Bad
		case strings.HasPrefix(l, "quorum:") && strings.Contains(l, "would break"):
			st = t.Bad
		case strings.HasPrefix(l, "note "):
			st = t.Dim
		case strings.HasPrefix(l, "override: "):
			st = t.Warn
		}
		indent := "  "
		if strings.HasPrefix(l, "  ") {
			indent = "      "
		}
		for _, wl := range hangIndent(l, w, "", indent) {
			out = append(out, st.Render(wl))
		}
	}
	return out
}

// overrideLines offer the overrides of the decision's blockers, each on
// its key.
func overrideLines(d model.Decision) []string {
	var out []string
	for i, b := range d.Blockers {
		if b.Override == "" || i > 8 {
			continue
		}
		state := "off"
		if overrideOn(d.Intent.Options, b.Override) {
			state = "on"
		}
		out = append(out, fmt.Sprintf("override: key %d switches %s (%s), which lifts %s", i+1, b.Override, state, b.Code))
	}
	return out
}

// hangIndent wraps s with first-line and continuation prefixes.
func hangIndent(s string, w int, first, rest string) []string {
	lines := strings.Split(ansi.Wrap(s, max(10, w-len(first)), ""), "\n")
	out := []string{first + lines[0]}
	if len(lines) > 1 {
		out = append(out, common.Wrap(strings.Join(lines[1:], " "), w, rest)...)
	}
	return out
}

func overrideHint(d model.Decision) string {
	for _, b := range d.Blockers {
		if b.Override != "" {
			return " · 1-9 switch an override"
		}
	}
	return ""
}

// dialogWidth is the width of the dialog's text in a body w cells wide.
func dialogWidth(w int) int {
	if w-4 < 20 {
		return max(1, w-2)
	}
	return min(76, w-4)
}

// room is how many lines of the decision the dialog shows at once, and
// how many there are.
func (d *Model) room() (room, lines int) {
	head, body, foot := d.parts(dialogWidth(d.width))
	return max(1, d.height-2-len(head)-len(foot)), len(body)
}

// View draws the dialog centred in its area; the decision scrolls between
// the title and the question, which always show.
func (d Model) View() []string {
	t, w, h := d.theme, d.width, d.height
	innerW := dialogWidth(w)
	head, body, foot := d.parts(innerW)
	room := max(1, h-2-len(head)-len(foot))
	if len(body) > room {
		top := min(d.scroll, len(body)-room)
		view := append([]string(nil), body[top:top+room]...)
		if top+room < len(body) {
			view[len(view)-1] = t.Dim.Render(fmt.Sprintf("… %d more lines (pgdn)", len(body)-top-room))
		}
		if top > 0 {
			view[0] = t.Dim.Render(fmt.Sprintf("… %d lines above (pgup)", top))
		}
		body = view
	}
	content := append(append(append([]string(nil), head...), body...), foot...)
	for i, l := range content {
		if ansi.StringWidth(l) > innerW {
			content[i] = ansi.Truncate(l, innerW, "…")
		}
	}
	box := t.Dialog.Width(innerW + 4).Render(strings.Join(content, "\n"))
	placed := lipgloss.Place(w, h, lipgloss.Center, lipgloss.Center, box)
	return strings.Split(placed, "\n")
}

// shortHelp is the short help while a dialog is open (picking: while it
// lists the generations to restore from).
func shortHelp(picking bool) []key.Binding {
	if picking {
		return []key.Binding{
			key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑/↓", "select")),
			key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "pick")),
			key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		}
	}
	return []key.Binding{
		key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "confirm")),
		key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		key.NewBinding(key.WithKeys("pgup", "pgdown"), key.WithHelp("pgup/pgdn", "scroll")),
	}
}

// DecidedMsg carries the classifier's decision (or why it could not
// decide) for the dialog with the id ID.
type DecidedMsg struct {
	ID       int
	Decision model.Decision
	Err      error
}

// Runnable: the decision proceeds and nothing blocks it.
func Runnable(d model.Decision) bool {
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

// ShortHelp is the one-line help while the dialog is open.
func (d Model) ShortHelp() []key.Binding { return shortHelp(d.state == Picking) }

// ID is the dialog's id: the decision it takes carries it (DecidedMsg).
func (d Model) ID() int { return d.id }

// SetID gives the dialog a new id (a restarted dialog's, Redecide).
func (d *Model) SetID(id int) { d.id = id }

// SetKubeContext names the kubeconfig context the action runs in, in the
// title.
func (d *Model) SetKubeContext(c string) { d.kubeContext = c }

// Request is the request the dialog decides, with what it asked for.
func (d Model) Request() common.Request { return d.req }

// Decision is the classifier's decision the dialog shows.
func (d Model) Decision() model.Decision { return d.decision }

// State is where the dialog is.
func (d Model) State() State { return d.state }

// Explain: the dialog shows a decision only.
func (d Model) Explain() bool { return d.explain }

// Input is the text typed in the dialog's input.
func (d Model) Input() string { return d.input.Value() }

// Hint is what the dialog last said about a key (a name to type).
func (d Model) Hint() string { return d.hint }

// NeedsName: the decision is runnable and needs a name typed to confirm.
func (d Model) NeedsName() bool { return d.needsName() }

// Offered are the generations the restore's picker offers, newest first.
func (d Model) Offered() []common.Generation { return d.picker.Offered() }
