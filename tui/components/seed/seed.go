// Package seed is a cluster's seed-phase tab: the cluster's seed
// generations, the actions (the one run from the TUI, live, and those its
// ledger records) with their receipts and progress, and every member's
// bootstrap phase.
package seed

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/components/table"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// genState is what the view knows of one cluster's generations.
type genState struct {
	loading bool
	gens    []common.Generation
	err     error
}

// actionPhases are the phases each action passes, in order
// (ARCHITECTURE.md).
var actionPhases = map[model.Action][]model.ActionPhase{
	model.ActionReplace:    {model.ActionPhaseRequested, model.ActionPhaseFencing, model.ActionPhaseRemoving, model.ActionPhaseRestoring, model.ActionPhaseBootstrapping, model.ActionPhaseCatchingUp, model.ActionPhaseReady},
	model.ActionReseed:     {model.ActionPhaseRequested, model.ActionPhaseFencing, model.ActionPhaseRemoving, model.ActionPhaseRestoring, model.ActionPhaseBootstrapping, model.ActionPhaseCatchingUp, model.ActionPhaseReady},
	model.ActionSeed:       {model.ActionPhaseRequested, model.ActionPhaseCapturing, model.ActionPhaseUploading, model.ActionPhasePublished},
	model.ActionRestore:    {model.ActionPhaseRequested, model.ActionPhaseFencing, model.ActionPhaseRemoving, model.ActionPhaseRestoring, model.ActionPhaseBootstrapping, model.ActionPhaseReady},
	model.ActionSwitchover: {model.ActionPhaseRequested, model.ActionPhaseFencing, model.ActionPhaseReady},
}

// phaseFraction places phase in action's sequence, 0 to 1.
func phaseFraction(action model.Action, phase model.ActionPhase) float64 {
	ps := actionPhases[action]
	for i, p := range ps {
		if p == phase && len(ps) > 1 {
			return float64(i) / float64(len(ps)-1)
		}
	}
	return 0
}

// Model is a cluster's seed-phase tab: the cluster's seed
// generations, the actions (the one run from here, live, and those its
// ledger records) with their receipts and progress, and every member's
// bootstrap phase. It scrolls as a whole.
type Model struct {
	// top is the first line shown.
	top           int
	width, height int
	theme         common.Theme
	keys          common.KeyMap
	now           func() time.Time
	// source lists generations (nil: not listed here); gens is what is
	// known of each cluster's, by cluster key.
	source common.Generations
	gens   map[string]genState
	// key and result are the cluster shown, action the action run from
	// here.
	key    string
	result status.Result
	action *common.RunningAction
	// views are the engines' views.
	views common.EngineViews
}

// New returns the seed-phase tab; source lists generations (nil: not
// listed here), views are the engines' views.
func New(th common.Theme, keys common.KeyMap, now func() time.Time, source common.Generations, views common.EngineViews) Model {
	return Model{theme: th, keys: keys, now: now, source: source, gens: map[string]genState{}, views: views}
}

// SetSize sets the tab's size.
func (v *Model) SetSize(w, h int) { v.width, v.height = w, h }

// SetTheme sets the styles.
func (v *Model) SetTheme(th common.Theme) { v.theme = th }

// SetData sets the cluster shown and the action run from here.
func (v *Model) SetData(k string, r status.Result, a *common.RunningAction) {
	v.key, v.result, v.action = k, r, a
}

// Update scrolls the tab and takes in listed generations.
func (v Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case common.GenerationsMsg:
		v.gens[msg.Key] = genState{gens: msg.Gens, err: msg.Err}
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, v.keys.ScrollUp):
			v.top = max(0, v.top-5)
		case key.Matches(msg, v.keys.ScrollDown):
			v.top = min(v.top+5, max(0, len(v.lines())-1))
		}
	}
	return v, nil
}

// Load lists the generations of cluster c (key k) in a Cmd, unless a
// listing is under way.
func (v *Model) Load(ctx context.Context, k string, c model.ClusterFacts) tea.Cmd {
	if v.source == nil {
		return nil
	}
	if st := v.gens[k]; st.loading {
		return nil
	}
	v.gens[k] = genState{loading: true, gens: v.gens[k].gens}
	g, ns, name := v.source, c.Namespace, c.Name
	return func() tea.Msg {
		gens, err := g.List(ctx, ns, name)
		return common.GenerationsMsg{Key: k, Gens: gens, Err: err}
	}
}

// View draws the lines from the scroll.
func (v Model) View() []string {
	out := v.lines()
	if v.height <= 0 {
		return out
	}
	top := min(v.top, max(0, len(out)-v.height))
	return out[top:]
}

// lines are the whole tab.
func (v Model) lines() []string {
	t, w := v.theme, v.width
	c := v.result.Observation.Cluster
	var out []string
	out = append(out, t.Section.Render("Seed generations"))
	switch st, ok := v.gens[v.key]; {
	case v.source == nil:
		out = append(out, common.Wrap("Not listed here; kubectl hactl generations list "+c.Name+" lists them.", w, "  ")...)
	case !ok || (st.loading && st.gens == nil):
		out = append(out, "  "+t.Dim.Render("listing…"))
	case st.err != nil:
		out = append(out, common.Wrap(t.Warn.Render("cannot list generations: ")+st.err.Error(), w, "  ")...)
	case len(st.gens) == 0:
		out = append(out, "  "+t.Dim.Render("none yet: s takes one (kubectl hactl seed "+c.Name+" --generation G)"))
	default:
		out = append(out, v.generationLines(st.gens)...)
	}
	out = append(out, "", t.Section.Render("Actions"))
	out = append(out, v.actions()...)
	out = append(out, "", t.Section.Render("Member phases"))
	ev := v.views.Of(v.result.Observation.Cluster)
	for _, mem := range v.result.Observation.Members {
		out = append(out, "  "+common.Fit(mem.Name, 18)+" "+t.Phase(mem.Phase).Render(common.Fit(mem.Phase.String(), 13))+" "+t.Dim.Render(phaseNote(ev, mem)))
	}
	return out
}

// actions are the action run from here, live, then what the ledger
// records: every action in progress and the latest others, up to three.
func (v Model) actions() []string {
	c := v.result.Observation.Cluster
	var out []string
	shown := 0
	a := v.action
	var liveID string
	if a != nil && a.Req.Cluster == c.Name && a.Req.Namespace == c.Namespace {
		out = append(out, v.actionLines(a)...)
		shown++
		if n := len(a.Receipts); n > 0 {
			liveID = a.Receipts[n-1].ActionID
		}
	}
	ledger := v.result.Observation.Ledger
	for i := len(ledger) - 1; i >= 0; i-- {
		e := ledger[i]
		if e.ID == liveID || (e.State != model.EntryInProgress && shown >= 3) {
			continue
		}
		out = append(out, v.ledgerLines(e)...)
		shown++
	}
	if shown == 0 {
		out = append(out, "  "+v.theme.Dim.Render("none recorded for this cluster"))
	}
	return out
}

func (v Model) generationLines(gens []common.Generation) []string {
	t := v.theme
	tb := table.New(t, v.keys,
		table.Column{Title: "GENERATION", Min: 8, Max: 30},
		table.Column{Title: "AGE", Max: 5},
		table.Column{Title: "SOURCE", Min: 6, Max: 20, Drop: 2},
		table.Column{Title: "REVISION", Max: 12, Drop: 3},
		table.Column{Title: "SIZE", Max: 9},
		table.Column{Title: "STATE", Min: 8, Max: 24},
	)
	tb.SetStatic(true)
	var rows [][]table.Cell
	for _, g := range gens {
		state := table.Styled("complete", t.Good)
		if !g.Complete {
			state = table.Styled("partial (unused)", t.Warn)
		}
		if g.InUse != "" {
			state = table.Styled("in use by "+g.InUse, t.Bold)
		}
		rows = append(rows, []table.Cell{
			table.Plain(g.ID), table.Plain(format.Age(g.Created, v.now())), table.Plain(format.Dash(g.SourceMember)),
			table.Plain(fmt.Sprint(g.Revision)), table.Plain(format.Size(g.Bytes)), state,
		})
	}
	tb.SetRows(rows)
	tb.SetSize(v.width, len(rows)+1)
	return tb.View()
}

// progressLines are a bar and the phase chain of an action.
func (v Model) progressLines(action model.Action, phase model.ActionPhase, frac float64) []string {
	t, w := v.theme, v.width
	barW := max(10, min(50, w-12))
	out := []string{fmt.Sprintf("  %s %3.0f%%", common.Bar(frac, barW), frac*100)}
	var ps []string
	for _, p := range actionPhases[action] {
		if p == phase {
			ps = append(ps, t.Bold.Render("["+p.String()+"]"))
		} else {
			ps = append(ps, t.Dim.Render(p.String()))
		}
	}
	if len(ps) > 0 {
		out = append(out, common.Wrap(strings.Join(ps, " → "), w, "  ")...)
	}
	return out
}

// receiptLine is one receipt.
func (v Model) receiptLine(r model.Receipt) string {
	s := common.TimeOfDay(r.At, v.now()) + " " + common.Fit(r.Phase.String(), 13) + " " + r.Step.String() + " " + r.Outcome.String()
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// actionLines draw the action run from this TUI: its phase, a progress
// bar and its receipts as they stream in.
func (v Model) actionLines(a *common.RunningAction) []string {
	t := v.theme
	state := t.Warn.Render(a.Phase().String())
	switch {
	case a.Done && a.Err != nil:
		state = t.Bad.Render("stopped in " + a.Phase().String())
	case a.Done:
		state = t.Good.Render("finished: " + a.Phase().String())
	}
	out := []string{"  " + t.Bold.Render(a.Title()) + " · " + state + t.Dim.Render(" · started here "+common.TimeOfDay(a.Started, v.now()))}
	frac := a.Fraction()
	if frac == 0 {
		frac = phaseFraction(a.Req.Intent.Action, a.Phase())
	}
	out = append(out, v.progressLines(a.Req.Intent.Action, a.Phase(), frac)...)
	if a.Err != nil {
		out = append(out, common.Wrap(t.Bad.Render("error: ")+a.Err.Error(), v.width, "  ")...)
	}
	return append(out, v.receiptLines(a.Receipts, 8)...)
}

// receiptLines are the last n receipts, one line each (the CLI's -o json
// and the ledger hold them whole).
func (v Model) receiptLines(rs []model.Receipt, n int) []string {
	var out []string
	if len(rs) > n {
		out = append(out, "  "+v.theme.Dim.Render(fmt.Sprintf("… %d earlier receipts", len(rs)-n)))
		rs = rs[len(rs)-n:]
	}
	for _, r := range rs {
		line := "  " + v.receiptLine(r)
		if r.Outcome == model.OutcomeFailed || r.Outcome == model.OutcomeConflict {
			line = v.theme.Bad.Render(line)
		}
		out = append(out, line)
	}
	return out
}

// ledgerLines draw one action the cluster's ledger records.
func (v Model) ledgerLines(e model.LedgerEntry) []string {
	t := v.theme
	title := strings.TrimSpace(e.Action.String() + " " + e.Member)
	if e.Generation != "" {
		title += " " + e.Generation
	}
	st := t.Dim
	switch e.State {
	case model.EntryInProgress:
		st = t.Warn
	case model.EntryFailed:
		st = t.Bad
	case model.EntryDone:
		st = t.Good
	}
	out := []string{"  " + t.Bold.Render(title) + " · " + st.Render(e.State.String()+" ("+e.Phase.String()+")") +
		t.Dim.Render(fmt.Sprintf(" · by %s · updated %s ago", format.Dash(e.Holder), format.Age(e.UpdatedAt, v.now())))}
	if e.State == model.EntryInProgress {
		out = append(out, v.progressLines(e.Action, e.Phase, phaseFraction(e.Action, e.Phase))...)
		out = append(out, v.receiptLines(e.Receipts, 5)...)
	}
	return out
}

// phaseNote explains a member's phase in a few words, in its engine's
// (ev's) roles and unit of lag.
func phaseNote(ev model.EngineView, mem model.Member) string {
	e := mem.Engine
	switch mem.Phase {
	case model.PhaseJoining, model.PhaseCatchingUp:
		if mem.Lag == nil {
			return ev.Role(mem) + ", lag unknown"
		}
		return ev.Role(mem) + ", " + ev.LagText(mem.Lag) + " behind"
	case model.PhaseDiverged:
		if e != nil {
			return "answers for cluster " + common.ShortID(e.ClusterID, 16)
		}
	case model.PhaseUnknown:
		if e != nil && e.Err != "" {
			return e.Err
		}
	case model.PhasePending:
		if mem.Pod != nil && mem.Pod.WaitingReason != "" {
			return mem.Pod.WaitingReason
		}
	}
	return ""
}

// ResetScroll shows the tab from the top.
func (v *Model) ResetScroll() { v.top = 0 }

// Listed reports whether generations are listed here (New had a source).
func (v Model) Listed() bool { return v.source != nil }
