// Package readiness is a cluster's readiness tab: each member's lag against
// the leader frontier, its history over the recent probes, and the
// learners' catch-up.
package readiness

import (
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/components/table"
	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/verdict"
)

// Model is a cluster's readiness tab: each member's lag against the
// leader frontier, its history over the recent probes, and the learners'
// catch-up.
type Model struct {
	table table.Model
	common.SyncState
	// verdict are the verdict's thresholds (each engine's, Patroni's per
	// cluster), interval the time between probes.
	verdict  model.VerdictOptions
	interval time.Duration
	// views are the engines' views.
	views common.EngineViews
	// result is the cluster shown, members its members the filter keeps,
	// history the lag of the recent probes.
	result  status.Result
	members []model.Member
	history common.LagHistory
}

// historyColumn is the column of the lag sparklines.
const historyColumn = 5

// New returns the readiness tab: o are the verdict's thresholds,
// interval the time between probes, views the engines' views.
func New(th common.Theme, keys common.KeyMap, o model.VerdictOptions, interval time.Duration, views common.EngineViews) Model {
	tb := table.New(th, keys,
		table.Column{Title: "MEMBER", Min: 6, Max: 30},
		table.Column{Title: "ROLE", Max: 8},
		table.Column{Title: "PHASE", Max: 13, Drop: 1},
		table.Column{Title: "LAG", Min: 3, Max: 10},
		table.Column{Title: "vs THRESHOLD", Min: 12, Max: 12},
		// The history takes the width the other columns leave.
		table.Column{Title: "HISTORY", Min: 10, Grow: true},
	)
	return Model{table: tb, verdict: o, interval: interval, views: views}
}

// SetSize sets the tab's size: the table takes what the three lines above
// it and the six below leave.
func (v *Model) SetSize(w, h int) {
	v.table.SetSize(w, max(1, h-9)+1)
	v.refresh()
}

// SetTheme sets the styles.
func (v *Model) SetTheme(th common.Theme) {
	v.table.SetTheme(th)
	v.refresh()
}

// SetData sets the cluster shown, the filter and the lag history.
func (v *Model) SetData(r status.Result, filter string, h common.LagHistory) {
	v.result, v.history = r, h
	v.members = common.FilterMembers(v.views, r, filter)
	v.refresh()
}

// Update moves the cursor.
func (v Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	var cmd tea.Cmd
	v.table, cmd = v.table.Update(msg)
	return v, cmd
}

// refresh rebuilds the rows, then draws each member's lag history to the
// width its column got.
func (v *Model) refresh() {
	c := v.result.Observation.Cluster
	t, thr, ev := v.table.Theme(), verdict.LagThreshold(v.verdict, c), v.views.Of(c)
	rows := make([][]table.Cell, 0, len(v.members))
	series := make([][]*int64, 0, len(v.members))
	for _, mem := range v.members {
		series = append(series, v.history.Lags(c, mem.Name))
		vs := "[  unknown ]"
		if mem.Lag != nil {
			vs = "[" + common.Bar(float64(*mem.Lag)/float64(thr), 10) + "]"
		}
		vsCell := table.Plain(vs)
		switch {
		case mem.Lag == nil:
			vsCell = table.Styled(vs, t.Unknown)
		case uint64(*mem.Lag) > thr:
			vsCell = table.Styled(vs, t.Warn)
		default:
			vsCell = table.Styled(vs, t.Good)
		}
		rows = append(rows, []table.Cell{
			table.Plain(mem.Name), table.Plain(ev.Role(mem)), table.Styled(mem.Phase.String(), t.Phase(mem.Phase)),
			table.Plain(ev.LagText(mem.Lag)), vsCell, table.Plain(""),
		})
	}
	v.table.SetRows(rows)
	v.table.Fill(historyColumn, func(i, w int) table.Cell {
		scale := int64(thr)
		for _, l := range series[i] {
			if l != nil && *l > scale {
				scale = *l
			}
		}
		return table.Plain(common.Sparkline(series[i], scale, w))
	})
}

// View draws the frontier, the table and the learners.
func (v Model) View() []string {
	t, r := v.table.Theme(), v.result
	c := r.Observation.Cluster
	thr, ev := verdict.LagThreshold(v.verdict, c), v.views.Of(c)
	a := r.Analysis
	head := "frontier unknown: lag cannot be judged (never read as caught up)"
	switch {
	case a.Frontier != nil:
		head = ev.Frontier(*a.Frontier, a.LeaderMember)
	case a.NoFrontierBecause != "":
		head = "frontier unknown: " + a.NoFrontierBecause
	}
	n := len(v.history[common.MemberHistoryKey(r.Observation.Cluster, firstMemberName(r))])
	lines := []string{
		" " + head,
		" " + t.Dim.Render(fmt.Sprintf("lag threshold %d %s · %s shown, every %s", thr, ev.LagUnit(), model.Plural(n, "probe"), v.interval)),
		"",
	}
	lines = append(lines, v.table.View()...)
	trend := func(member string) string { return v.history.Trend(c, member) }
	if title, sec, none := ev.Section(r.Observation, thr, trend); title != "" {
		lines = append(lines, "", t.Section.Render(title))
		for _, l := range sec {
			lines = append(lines, common.Wrap(l, v.table.Width(), "  ")...)
		}
		if len(sec) == 0 && none != "" {
			lines = append(lines, "  "+t.Dim.Render(none))
		}
	}
	return append(lines, "  "+t.Dim.Render("▁…█ lag per probe, scaled to the threshold or the largest lag; · no frontier"))
}

func firstMemberName(r status.Result) string {
	if len(r.Observation.Members) == 0 {
		return ""
	}
	return r.Observation.Members[0].Name
}

// Cursor is the row under the cursor.
func (v Model) Cursor() int { return v.table.Cursor() }

// SetCursor puts the cursor on row i.
func (v *Model) SetCursor(i int) { v.table.SetCursor(i) }

// Clamp keeps the cursor on a row.
func (v *Model) Clamp() { v.table.Clamp() }
