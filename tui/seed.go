package tui

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
)

// Generation is one seed generation of a cluster, as the seed-phase view
// lists it.
type Generation struct {
	ID           string
	Created      time.Time
	SourceMember string
	Revision     int64
	Term         uint64
	Bytes        int64
	Files        int
	// Complete: the manifest was published (a generation without one is
	// partial and never used).
	Complete bool
	// InUse names an action that references the generation.
	InUse string
}

// Generations lists a cluster's seed generations. Every method may block.
type Generations interface {
	List(ctx context.Context, namespace, cluster string) ([]Generation, error)
}

// generationsMsg carries a cluster's generations.
type generationsMsg struct {
	key  string
	gens []Generation
	err  error
}

// genState is what the view knows of one cluster's generations.
type genState struct {
	loading bool
	gens    []Generation
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

// defaultGeneration proposes a generation ID: the cluster and the time.
func defaultGeneration(cluster string, now time.Time) string {
	return cluster + "-" + now.UTC().Format("20060102-150405")
}

// seedView is a cluster's seed-phase tab: the cluster's seed
// generations, the actions (the one run from here, live, and those its
// ledger records) with their receipts and progress, and every member's
// bootstrap phase. It scrolls as a whole.
type seedView struct {
	// top is the first line shown.
	top           int
	width, height int
	theme         Theme
	keys          KeyMap
	now           func() time.Time
	// source lists generations (nil: not listed here); gens is what is
	// known of each cluster's, by cluster key.
	source Generations
	gens   map[string]genState
	// key and result are the cluster shown, action the action run from
	// here.
	key    string
	result status.Result
	action *runningAction
	// views are the engines' views.
	views engineViews
}

func newSeedView(th Theme, keys KeyMap, now func() time.Time, source Generations, views engineViews) seedView {
	return seedView{theme: th, keys: keys, now: now, source: source, gens: map[string]genState{}, views: views}
}

// SetSize sets the tab's size.
func (v *seedView) SetSize(w, h int) { v.width, v.height = w, h }

// SetTheme sets the styles.
func (v *seedView) SetTheme(th Theme) { v.theme = th }

// setData sets the cluster shown and the action run from here.
func (v *seedView) setData(k string, r status.Result, a *runningAction) {
	v.key, v.result, v.action = k, r, a
}

// Update scrolls the tab and takes in listed generations.
func (v seedView) Update(msg tea.Msg) (seedView, tea.Cmd) {
	switch msg := msg.(type) {
	case generationsMsg:
		v.gens[msg.key] = genState{gens: msg.gens, err: msg.err}
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

// load lists the generations of cluster c (key k) in a Cmd, unless a
// listing is under way.
func (v *seedView) load(ctx context.Context, k string, c model.ClusterFacts) tea.Cmd {
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
		return generationsMsg{key: k, gens: gens, err: err}
	}
}

// View draws the lines from the scroll.
func (v seedView) View() []string {
	out := v.lines()
	if v.height <= 0 {
		return out
	}
	top := min(v.top, max(0, len(out)-v.height))
	return out[top:]
}

// lines are the whole tab.
func (v seedView) lines() []string {
	t, w := v.theme, v.width
	c := v.result.Observation.Cluster
	var out []string
	out = append(out, t.Section.Render("Seed generations"))
	switch st, ok := v.gens[v.key]; {
	case v.source == nil:
		out = append(out, wrap("Not listed here; kubectl hactl generations list "+c.Name+" lists them.", w, "  ")...)
	case !ok || (st.loading && st.gens == nil):
		out = append(out, "  "+t.Dim.Render("listing…"))
	case st.err != nil:
		out = append(out, wrap(t.Warn.Render("cannot list generations: ")+st.err.Error(), w, "  ")...)
	case len(st.gens) == 0:
		out = append(out, "  "+t.Dim.Render("none yet: s takes one (kubectl hactl seed "+c.Name+" --generation G)"))
	default:
		out = append(out, v.generationLines(st.gens)...)
	}
	out = append(out, "", t.Section.Render("Actions"))
	out = append(out, v.actions()...)
	out = append(out, "", t.Section.Render("Member phases"))
	ev := v.views.of(v.result.Observation.Cluster)
	for _, mem := range v.result.Observation.Members {
		out = append(out, "  "+fit(mem.Name, 18)+" "+t.phase(mem.Phase).Render(fit(mem.Phase.String(), 13))+" "+t.Dim.Render(phaseNote(ev, mem)))
	}
	return out
}

// actions are the action run from here, live, then what the ledger
// records: every action in progress and the latest others, up to three.
func (v seedView) actions() []string {
	c := v.result.Observation.Cluster
	var out []string
	shown := 0
	a := v.action
	var liveID string
	if a != nil && a.req.Cluster == c.Name && a.req.Namespace == c.Namespace {
		out = append(out, v.actionLines(a)...)
		shown++
		if n := len(a.receipts); n > 0 {
			liveID = a.receipts[n-1].ActionID
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

func (v seedView) generationLines(gens []Generation) []string {
	t := v.theme
	tb := newTable(t, v.keys,
		column{title: "GENERATION", min: 8, max: 30},
		column{title: "AGE", max: 5},
		column{title: "SOURCE", min: 6, max: 20, drop: 2},
		column{title: "REVISION", max: 12, drop: 3},
		column{title: "SIZE", max: 9},
		column{title: "STATE", min: 8, max: 24},
	)
	tb.static = true
	var rows [][]cell
	for _, g := range gens {
		state := styled("complete", t.Good)
		if !g.Complete {
			state = styled("partial (unused)", t.Warn)
		}
		if g.InUse != "" {
			state = styled("in use by "+g.InUse, t.Bold)
		}
		rows = append(rows, []cell{
			plain(g.ID), plain(format.Age(g.Created, v.now())), plain(format.Dash(g.SourceMember)),
			plain(fmt.Sprint(g.Revision)), plain(format.Size(g.Bytes)), state,
		})
	}
	tb.SetRows(rows)
	tb.SetSize(v.width, len(rows)+1)
	return tb.View()
}

// progressLines are a bar and the phase chain of an action.
func (v seedView) progressLines(action model.Action, phase model.ActionPhase, frac float64) []string {
	t, w := v.theme, v.width
	barW := max(10, min(50, w-12))
	out := []string{fmt.Sprintf("  %s %3.0f%%", bar(frac, barW), frac*100)}
	var ps []string
	for _, p := range actionPhases[action] {
		if p == phase {
			ps = append(ps, t.Bold.Render("["+p.String()+"]"))
		} else {
			ps = append(ps, t.Dim.Render(p.String()))
		}
	}
	if len(ps) > 0 {
		out = append(out, wrap(strings.Join(ps, " → "), w, "  ")...)
	}
	return out
}

// receiptLine is one receipt.
func (v seedView) receiptLine(r model.Receipt) string {
	s := timeOfDay(r.At, v.now()) + " " + fit(r.Phase.String(), 13) + " " + r.Step.String() + " " + r.Outcome.String()
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// actionLines draw the action run from this TUI: its phase, a progress
// bar and its receipts as they stream in.
func (v seedView) actionLines(a *runningAction) []string {
	t := v.theme
	state := t.Warn.Render(a.phase().String())
	switch {
	case a.done && a.err != nil:
		state = t.Bad.Render("stopped in " + a.phase().String())
	case a.done:
		state = t.Good.Render("finished: " + a.phase().String())
	}
	out := []string{"  " + t.Bold.Render(a.title()) + " · " + state + t.Dim.Render(" · started here "+timeOfDay(a.started, v.now()))}
	frac := a.fraction()
	if frac == 0 {
		frac = phaseFraction(a.req.Intent.Action, a.phase())
	}
	out = append(out, v.progressLines(a.req.Intent.Action, a.phase(), frac)...)
	if a.err != nil {
		out = append(out, wrap(t.Bad.Render("error: ")+a.err.Error(), v.width, "  ")...)
	}
	return append(out, v.receiptLines(a.receipts, 8)...)
}

// receiptLines are the last n receipts, one line each (the CLI's -o json
// and the ledger hold them whole).
func (v seedView) receiptLines(rs []model.Receipt, n int) []string {
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
func (v seedView) ledgerLines(e model.LedgerEntry) []string {
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
			return "answers for cluster " + shortID(e.ClusterID, 16)
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
