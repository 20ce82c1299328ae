package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
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

// loadGenerations lists the focused cluster's generations in a Cmd.
func (m *Model) loadGenerations() tea.Cmd {
	r, ok := m.focused()
	if m.generations == nil || !ok {
		return nil
	}
	key := m.focus
	if st := m.gens[key]; st.loading {
		return nil
	}
	m.gens[key] = genState{loading: true, gens: m.gens[key].gens}
	g, ctx := m.generations, m.ctx
	ns, name := r.Observation.Cluster.Namespace, r.Observation.Cluster.Name
	return func() tea.Msg {
		gens, err := g.List(ctx, ns, name)
		return generationsMsg{key: key, gens: gens, err: err}
	}
}

// actionPhases are the phases each action passes, in order
// (ARCHITECTURE.md).
var actionPhases = map[model.Action][]model.ActionPhase{
	model.ActionReplace: {model.ActionPhaseRequested, model.ActionPhaseFencing, model.ActionPhaseRemoving, model.ActionPhaseRestoring, model.ActionPhaseBootstrapping, model.ActionPhaseCatchingUp, model.ActionPhaseReady},
	model.ActionReseed:  {model.ActionPhaseRequested, model.ActionPhaseFencing, model.ActionPhaseRemoving, model.ActionPhaseRestoring, model.ActionPhaseBootstrapping, model.ActionPhaseCatchingUp, model.ActionPhaseReady},
	model.ActionSeed:    {model.ActionPhaseRequested, model.ActionPhaseCapturing, model.ActionPhaseUploading, model.ActionPhasePublished},
	model.ActionRestore: {model.ActionPhaseRequested, model.ActionPhaseFencing, model.ActionPhaseRemoving, model.ActionPhaseRestoring, model.ActionPhaseBootstrapping, model.ActionPhaseReady},
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

// seedBody shows the cluster's seed generations, the actions (the one run
// from here, live, and those its ledger records) with their receipts and
// progress, and every member's bootstrap phase.
func (m Model) seedBody(r status.Result, w, h int) []string {
	t := m.theme
	c := r.Observation.Cluster
	var out []string
	out = append(out, t.Section.Render("Seed generations"))
	switch st, ok := m.gens[m.focus]; {
	case m.generations == nil:
		out = append(out, wrap("Not listed here; kubectl hactl generations list "+c.Name+" lists them.", w, "  ")...)
	case !ok || (st.loading && st.gens == nil):
		out = append(out, "  "+t.Dim.Render("listing…"))
	case st.err != nil:
		out = append(out, wrap(t.Warn.Render("cannot list generations: ")+st.err.Error(), w, "  ")...)
	case len(st.gens) == 0:
		out = append(out, "  "+t.Dim.Render("none yet: s takes one (kubectl hactl seed "+c.Name+" --generation G)"))
	default:
		out = append(out, m.generationLines(st.gens, w)...)
	}

	out = append(out, "", t.Section.Render("Actions"))
	shown := 0
	a := m.action
	var liveID string
	if a != nil && a.req.Cluster == c.Name && a.req.Namespace == c.Namespace {
		out = append(out, m.actionLines(a, w)...)
		shown++
		if n := len(a.receipts); n > 0 {
			liveID = a.receipts[n-1].ActionID
		}
	}
	for i := len(r.Observation.Ledger) - 1; i >= 0; i-- {
		e := r.Observation.Ledger[i]
		if e.ID == liveID || (e.State != model.EntryInProgress && shown >= 3) {
			continue
		}
		out = append(out, m.ledgerLines(e, w)...)
		shown++
	}
	if shown == 0 {
		out = append(out, "  "+t.Dim.Render("none recorded for this cluster"))
	}

	out = append(out, "", t.Section.Render("Member phases"))
	for _, mem := range r.Observation.Members {
		out = append(out, "  "+fit(mem.Name, 18)+" "+t.phase(mem.Phase).Render(fit(mem.Phase.String(), 13))+" "+t.Dim.Render(phaseNote(mem)))
	}
	if h <= 0 {
		return out
	}
	top := min(m.seedTop, max(0, len(out)-h))
	return out[top:]
}

func (m Model) generationLines(gens []Generation, w int) []string {
	t := m.theme
	cols := []column{
		{title: "GENERATION", min: 8, max: 30},
		{title: "AGE", max: 5},
		{title: "SOURCE", min: 6, max: 20, drop: 2},
		{title: "REVISION", max: 12, drop: 3},
		{title: "SIZE", max: 9},
		{title: "STATE", min: 8, max: 24},
	}
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
			plain(g.ID), plain(age(g.Created, m.now())), plain(dash(g.SourceMember)),
			plain(fmt.Sprint(g.Revision)), plain(bytesText(g.Bytes)), state,
		})
	}
	tb := newTable(cols, rows, w)
	return append([]string{tb.header(t)}, tb.lines(t, -1, 0, len(rows))...)
}

// progressLines are a bar and the phase chain of an action.
func (m Model) progressLines(action model.Action, phase model.ActionPhase, frac float64, w int) []string {
	t := m.theme
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
func (m Model) receiptLine(r model.Receipt) string {
	s := m.clockTime(r.At) + " " + fit(r.Phase.String(), 13) + " " + r.Step.String() + " " + r.Outcome.String()
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// actionLines draws the action run from this TUI: its phase, a progress
// bar and its receipts as they stream in.
func (m Model) actionLines(a *runningAction, w int) []string {
	t := m.theme
	state := t.Warn.Render(a.phase().String())
	switch {
	case a.done && a.err != nil:
		state = t.Bad.Render("stopped in " + a.phase().String())
	case a.done:
		state = t.Good.Render("finished: " + a.phase().String())
	}
	out := []string{"  " + t.Bold.Render(a.title()) + " · " + state + t.Dim.Render(" · started here "+m.clockTime(a.started))}
	frac := a.fraction()
	if frac == 0 {
		frac = phaseFraction(a.req.Intent.Action, a.phase())
	}
	out = append(out, m.progressLines(a.req.Intent.Action, a.phase(), frac, w)...)
	if a.err != nil {
		out = append(out, wrap(t.Bad.Render("error: ")+a.err.Error(), w, "  ")...)
	}
	return append(out, m.receiptLines(a.receipts, 8, w)...)
}

// receiptLines are the last n receipts, one line each (the CLI's -o json
// and the ledger hold them whole).
func (m Model) receiptLines(rs []model.Receipt, n, w int) []string {
	var out []string
	if len(rs) > n {
		out = append(out, "  "+m.theme.Dim.Render(fmt.Sprintf("… %d earlier receipts", len(rs)-n)))
		rs = rs[len(rs)-n:]
	}
	for _, r := range rs {
		line := "  " + m.receiptLine(r)
		if r.Outcome == model.OutcomeFailed || r.Outcome == model.OutcomeConflict {
			line = m.theme.Bad.Render(line)
		}
		out = append(out, line)
	}
	return out
}

// ledgerLines draws one action the cluster's ledger records.
func (m Model) ledgerLines(e model.LedgerEntry, w int) []string {
	t := m.theme
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
		t.Dim.Render(fmt.Sprintf(" · by %s · updated %s ago", dash(e.Holder), age(e.UpdatedAt, m.now())))}
	if e.State == model.EntryInProgress {
		out = append(out, m.progressLines(e.Action, e.Phase, phaseFraction(e.Action, e.Phase), w)...)
		out = append(out, m.receiptLines(e.Receipts, 5, w)...)
	}
	return out
}

// phaseNote explains a member's phase in a few words.
func phaseNote(mem model.Member) string {
	e := mem.Engine
	switch mem.Phase {
	case model.PhaseJoining:
		if mem.Lag != nil {
			return fmt.Sprintf("learner, %d behind", *mem.Lag)
		}
		return "learner, lag unknown"
	case model.PhaseCatchingUp:
		return fmt.Sprintf("voter, %s behind", lagText(mem.Lag))
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

func bytesText(n int64) string {
	switch {
	case n <= 0:
		return "-"
	case n < 1<<20:
		return fmt.Sprintf("%.0fKiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2fGiB", float64(n)/(1<<30))
}
