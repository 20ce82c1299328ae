package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/model"
)

// dialogState is where a confirm dialog is.
type dialogState int

const (
	// dialogAsking: the dialog asks for an input the intent needs (the
	// generation ID of a seed) before the classifier runs.
	dialogAsking dialogState = iota
	// dialogPicking: the dialog lists the published seed generations for
	// a restore to pick one before the classifier runs.
	dialogPicking
	dialogDeciding
	dialogDecided
	dialogFailed
)

func (s dialogState) String() string {
	switch s {
	case dialogAsking:
		return "asking"
	case dialogPicking:
		return "picking"
	case dialogDeciding:
		return "deciding"
	case dialogDecided:
		return "decided"
	case dialogFailed:
		return "failed"
	}
	return "unknown"
}

// dialogOutcome is what a message to the dialog asks of the root.
type dialogOutcome int

const (
	// dialogKeep: the dialog stays open; nothing for the root to do.
	dialogKeep dialogOutcome = iota
	// dialogCancel: esc; nothing was changed.
	dialogCancel
	// dialogClose: the dialog is done (an explanation read, a failure
	// seen).
	dialogClose
	// dialogDecide: classify the dialog's request (its generation ID was
	// entered or picked).
	dialogDecide
	// dialogRedecide: classify the dialog's new request (another intent,
	// an override switched) under a new id.
	dialogRedecide
	// dialogConfirm: run the decision, confirmed.
	dialogConfirm
)

func (o dialogOutcome) String() string {
	switch o {
	case dialogKeep:
		return "keep"
	case dialogCancel:
		return "cancel"
	case dialogClose:
		return "close"
	case dialogDecide:
		return "decide"
	case dialogRedecide:
		return "redecide"
	case dialogConfirm:
		return "confirm"
	}
	return "unknown"
}

// dialog is the confirm dialog component: it shows the classifier's
// Decision for a request and, for a runnable decision, asks the root to
// start it once confirmed (typing the member name for a destructive one,
// the cluster name for a restore). A restore first picks its generation
// in the dialog's genPicker. Classifying and running are the root's:
// Update says what it asks for.
type dialog struct {
	id       int
	req      Request
	explain  bool
	state    dialogState
	decision model.Decision
	err      error
	input    textinput.Model
	picker   genPicker
	scroll   int
	hint     string
	// width and height are the area the dialog is centred in.
	width, height int
	theme         Theme
	// kubeContext is the kubeconfig context the action runs in, named in
	// the title (Config.Context).
	kubeContext string
}

func newDialog(id int, req Request, explain bool, th Theme) dialog {
	in := textinput.New()
	in.Prompt = "> "
	in.CharLimit = 253
	d := dialog{id: id, req: req, explain: explain, state: dialogDeciding, input: in, theme: th}
	if req.Intent.Options.Generation == "" && !explain {
		switch req.Intent.Action {
		case model.ActionSeed:
			d.state = dialogAsking
		case model.ActionRestore:
			d.state = dialogPicking
		}
	}
	return d
}

// SetSize sets the area the dialog is centred in; its text wraps to it.
func (d *dialog) SetSize(w, h int) { d.width, d.height = w, h }

// SetTheme sets the styles.
func (d *dialog) SetTheme(th Theme) {
	d.theme = th
	d.picker.SetTheme(th)
}

// pick readies the generation picker of a picking dialog; unlisted: no
// listing will come.
func (d *dialog) pick(now func() time.Time, unlisted bool) {
	d.picker = newGenPicker(d.theme, now, unlisted)
}

// clusterKey is the key of the dialog's cluster.
func (d *dialog) clusterKey() string { return d.req.Namespace + "/" + d.req.Cluster }

// ask proposes a generation ID in the input of an asking dialog.
func (d *dialog) ask(generation string) tea.Cmd {
	d.input.Placeholder = "generation ID"
	d.input.SetValue(generation)
	d.input.CursorEnd()
	return d.input.Focus()
}

// decided stores the classifier's answer.
func (d *dialog) decided(dec model.Decision, err error) {
	d.decision, d.err, d.scroll, d.hint = dec, err, 0, ""
	if err != nil {
		d.state = dialogFailed
		return
	}
	d.state = dialogDecided
	d.input.SetValue("")
}

// confirmName is the name to type to confirm the decision: the cluster's
// for a restore (it stops and restores every member), the member's for a
// decision that deletes or removes something, "" when none is needed.
func (d *dialog) confirmName() string {
	switch {
	case d.req.Intent.Action == model.ActionRestore:
		return d.req.Cluster
	case d.decision.Deletes():
		return d.req.Intent.Member
	}
	return ""
}

// needsName: the decision is runnable and needs a name typed to confirm.
func (d *dialog) needsName() bool {
	return !d.explain && d.state == dialogDecided && runnable(d.decision) && d.confirmName() != ""
}

// typing: keys go to the text input.
func (d *dialog) typing() bool { return d.state == dialogAsking || d.needsName() }

// actionFor maps an action key to its model.Action.
func actionFor(k KeyMap, msg tea.KeyPressMsg) (model.Action, bool) {
	switch msg.String() {
	case k.Replace.Keys()[0]:
		return model.ActionReplace, true
	case k.Reseed.Keys()[0]:
		return model.ActionReseed, true
	case k.Seed.Keys()[0]:
		return model.ActionSeed, true
	case k.Restore.Keys()[0]:
		return model.ActionRestore, true
	case k.Switchover.Keys()[0]:
		return model.ActionSwitchover, true
	}
	return "", false
}

// Update handles a message while the dialog is open: the decision for
// its id, keys, and whatever else its input takes (a paste, the cursor's
// blink).
func (d dialog) Update(msg tea.Msg) (dialog, dialogOutcome, tea.Cmd) {
	switch msg := msg.(type) {
	case decidedMsg:
		if msg.id != d.id {
			return d, dialogKeep, nil
		}
		d.decided(msg.decision, msg.err)
		if d.needsName() {
			return d, dialogKeep, d.input.Focus()
		}
		return d, dialogKeep, nil
	case generationsMsg:
		if d.state == dialogPicking && msg.key == d.clusterKey() {
			d.picker.setGenerations(msg.gens, msg.err)
		}
		return d, dialogKeep, nil
	case tea.KeyPressMsg:
		return d.updateKey(msg)
	}
	if d.typing() {
		var cmd tea.Cmd
		d.input, cmd = d.input.Update(msg)
		return d, dialogKeep, cmd
	}
	return d, dialogKeep, nil
}

func (d dialog) updateKey(msg tea.KeyPressMsg) (dialog, dialogOutcome, tea.Cmd) {
	s := msg.String()
	switch {
	case s == "esc" || s == "ctrl+c":
		return d, dialogCancel, nil
	case d.state == dialogPicking:
		return d.updatePicking(msg)
	case s == "pgdown" || s == "ctrl+d" || s == "pgup" || s == "ctrl+u" || ((s == "down" || s == "up") && !d.typing()):
		d.scrollBy(s)
		return d, dialogKeep, nil
	}
	switch d.state {
	case dialogAsking:
		return d.updateAsking(msg)
	case dialogDeciding:
		return d, dialogKeep, nil
	case dialogFailed:
		if s == "enter" {
			return d, dialogClose, nil
		}
		return d, dialogKeep, nil
	}
	return d.updateDecided(msg)
}

// scrollBy scrolls the decision a line (up, down) or a page.
func (d *dialog) scrollBy(s string) {
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
func (d dialog) updateAsking(msg tea.KeyPressMsg) (dialog, dialogOutcome, tea.Cmd) {
	if msg.String() == "enter" {
		g := strings.TrimSpace(d.input.Value())
		if g == "" {
			d.hint = "a generation ID is required"
			return d, dialogKeep, nil
		}
		d.req.Intent.Options.Generation = g
		d.state = dialogDeciding
		d.input.Blur()
		return d, dialogDecide, nil
	}
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(msg)
	d.hint = ""
	return d, dialogKeep, cmd
}

// updatePicking moves the picker's cursor; enter picks the selected
// generation for the classifier.
func (d dialog) updatePicking(msg tea.KeyPressMsg) (dialog, dialogOutcome, tea.Cmd) {
	if msg.String() != "enter" {
		d.picker = d.picker.Update(msg)
		return d, dialogKeep, nil
	}
	g, ok := d.picker.selected()
	if !ok {
		d.hint = "no generation to pick; esc closes"
		return d, dialogKeep, nil
	}
	d.req.Intent.Options.Generation = g.ID
	d.state, d.hint = dialogDeciding, ""
	return d, dialogDecide, nil
}

// updateDecided handles keys on a decision: the next intent (explain),
// an override switched, the name typed, enter.
func (d dialog) updateDecided(msg tea.KeyPressMsg) (dialog, dialogOutcome, tea.Cmd) {
	s := msg.String()
	if d.explain && s == "i" {
		next := map[model.Action]model.Action{model.ActionReplace: model.ActionReseed, model.ActionReseed: model.ActionSeed,
			model.ActionSeed: model.ActionSwitchover, model.ActionSwitchover: model.ActionReplace}
		req := d.req
		req.Intent.Action = next[req.Intent.Action]
		return d.restart(req), dialogRedecide, nil
	}
	if len(s) == 1 && s >= "1" && s <= "9" && (!d.needsName() || d.input.Value() == "") {
		i := int(s[0] - '1')
		if i < len(d.decision.Blockers) && d.decision.Blockers[i].Override != "" {
			req := d.req
			flag := d.decision.Blockers[i].Override
			if setOverride(&req.Intent.Options, flag, !overrideOn(req.Intent.Options, flag)) {
				return d.restart(req), dialogRedecide, nil
			}
		}
		if !d.needsName() {
			return d, dialogKeep, nil
		}
	}
	if s == "enter" {
		return d.confirm()
	}
	if d.needsName() {
		var cmd tea.Cmd
		d.input, cmd = d.input.Update(msg)
		d.hint = ""
		return d, dialogKeep, cmd
	}
	return d, dialogKeep, nil
}

// confirm answers enter on a decision: an explanation closes, a refusal
// stays, a destructive decision or a restore needs its name (confirmName)
// typed exactly.
func (d dialog) confirm() (dialog, dialogOutcome, tea.Cmd) {
	name := d.confirmName()
	switch {
	case d.explain:
		return d, dialogClose, nil
	case !runnable(d.decision):
		d.hint = "this decision cannot run; esc closes"
		return d, dialogKeep, nil
	case name != "" && strings.TrimSpace(d.input.Value()) != name:
		d.hint = fmt.Sprintf("type %s exactly to confirm", name)
		return d, dialogKeep, nil
	}
	return d, dialogConfirm, nil
}

// restart is a fresh dialog, deciding req; the root gives it its id.
func (d dialog) restart(req Request) dialog {
	nd := newDialog(0, req, d.explain, d.theme)
	nd.kubeContext = d.kubeContext
	nd.state = dialogDeciding
	nd.SetSize(d.width, d.height)
	return nd
}

// parts renders the dialog at width w as a head (its title), a body that
// scrolls (the decision: exactly what the CLI prints before it asks) and a
// foot that always shows (the question, the input, the keys).
func (d *dialog) parts(w int) (head, body, foot []string) {
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
	case dialogAsking:
		body = []string{"Generation ID for the new seed generation:"}
		return head, body, hint([]string{d.input.View(), "", t.Dim.Render("enter classifies · esc cancels")})
	case dialogPicking:
		foot = hint([]string{"", t.Dim.Render("↑/↓ select · enter picks · esc cancels")})
		return head, d.picker.lines(w, d.height-2-len(head)-len(foot), d.req.Cluster), foot
	case dialogDeciding:
		return head, []string{t.Dim.Render("observing the cluster and classifying…")}, []string{"", t.Dim.Render("esc cancels")}
	case dialogFailed:
		body = append([]string{t.Bad.Render("The classifier could not decide:")}, wrap(d.err.Error(), w, "")...)
		return head, body, []string{"", t.Dim.Render("esc closes · nothing was changed")}
	}
	return head, decisionLines(t, d.decision, w), hint(d.decidedFoot(w))
}

// title names the dialog's intent: the action, its member, a restore's
// generation.
func (d *dialog) title() string {
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
func (d *dialog) decidedFoot(w int) []string {
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
	case !runnable(d.decision):
		foot = append(foot, t.Bad.Render(refusal(d.decision)), t.Dim.Render("esc closes"+overrideHint(d.decision)))
	case name != "":
		foot = append(foot, wrap(t.Danger.Render(d.danger()+" Type "+name+" to confirm:"), w, "")...)
		foot = append(foot, d.input.View(), t.Dim.Render("enter runs · esc cancels"+overrideHint(d.decision)))
	default:
		foot = append(foot, t.Dim.Render("enter runs · esc cancels"+overrideHint(d.decision)))
	}
	return foot
}

// danger says what a confirmed decision destroys.
func (d *dialog) danger() string {
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
func decisionLines(t Theme, d model.Decision, w int) []string {
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
		case i == 0 && !runnable(d):
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
		out = append(out, wrap(strings.Join(lines[1:], " "), w, rest)...)
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
func (d *dialog) room() (room, lines int) {
	head, body, foot := d.parts(dialogWidth(d.width))
	return max(1, d.height-2-len(head)-len(foot)), len(body)
}

// View draws the dialog centred in its area; the decision scrolls between
// the title and the question, which always show.
func (d dialog) View() []string {
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
