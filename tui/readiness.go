package tui

import (
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/verdict"
)

// readinessView is a cluster's readiness tab: each member's lag against
// the leader frontier, its history over the recent probes, and the
// learners' catch-up.
type readinessView struct {
	table
	syncState
	// verdict are the verdict's thresholds (each engine's, Patroni's per
	// cluster), interval the time between probes.
	verdict  model.VerdictOptions
	interval time.Duration
	// views are the engines' views.
	views engineViews
	// result is the cluster shown, members its members the filter keeps,
	// history the lag of the recent probes.
	result  status.Result
	members []model.Member
	history lagHistory
}

// historyColumn is the column of the lag sparklines.
const historyColumn = 5

func newReadinessView(th Theme, keys KeyMap, o model.VerdictOptions, interval time.Duration, views engineViews) readinessView {
	tb := newTable(th, keys,
		column{title: "MEMBER", min: 6, max: 30},
		column{title: "ROLE", max: 8},
		column{title: "PHASE", max: 13, drop: 1},
		column{title: "LAG", min: 3, max: 10},
		column{title: "vs THRESHOLD", min: 12, max: 12},
		// The history takes the width the other columns leave.
		column{title: "HISTORY", min: 10, grow: true},
	)
	return readinessView{table: tb, verdict: o, interval: interval, views: views}
}

// SetSize sets the tab's size: the table takes what the three lines above
// it and the six below leave.
func (v *readinessView) SetSize(w, h int) {
	v.table.SetSize(w, max(1, h-9)+1)
	v.refresh()
}

// SetTheme sets the styles.
func (v *readinessView) SetTheme(th Theme) {
	v.table.SetTheme(th)
	v.refresh()
}

// setData sets the cluster shown, the filter and the lag history.
func (v *readinessView) setData(r status.Result, filter string, h lagHistory) {
	v.result, v.history = r, h
	v.members = filterMembers(v.views, r, filter)
	v.refresh()
}

// Update moves the cursor.
func (v readinessView) Update(msg tea.Msg) (readinessView, tea.Cmd) {
	var cmd tea.Cmd
	v.table, cmd = v.table.Update(msg)
	return v, cmd
}

// refresh rebuilds the rows, then draws each member's lag history to the
// width its column got.
func (v *readinessView) refresh() {
	c := v.result.Observation.Cluster
	t, thr, ev := v.theme, verdict.LagThreshold(v.verdict, c), v.views.of(c)
	rows := make([][]cell, 0, len(v.members))
	series := make([][]*int64, 0, len(v.members))
	for _, mem := range v.members {
		series = append(series, v.history.lags(c, mem.Name))
		vs := "[  unknown ]"
		if mem.Lag != nil {
			vs = "[" + bar(float64(*mem.Lag)/float64(thr), 10) + "]"
		}
		vsCell := plain(vs)
		switch {
		case mem.Lag == nil:
			vsCell = styled(vs, t.Unknown)
		case uint64(*mem.Lag) > thr:
			vsCell = styled(vs, t.Warn)
		default:
			vsCell = styled(vs, t.Good)
		}
		rows = append(rows, []cell{
			plain(mem.Name), plain(ev.Role(mem)), styled(mem.Phase.String(), t.phase(mem.Phase)),
			plain(ev.LagText(mem.Lag)), vsCell, plain(""),
		})
	}
	v.SetRows(rows)
	v.fill(historyColumn, func(i, w int) cell {
		scale := int64(thr)
		for _, l := range series[i] {
			if l != nil && *l > scale {
				scale = *l
			}
		}
		return plain(sparkline(series[i], scale, w))
	})
}

// View draws the frontier, the table and the learners.
func (v readinessView) View() []string {
	t, r := v.theme, v.result
	c := r.Observation.Cluster
	thr, ev := verdict.LagThreshold(v.verdict, c), v.views.of(c)
	a := r.Analysis
	head := "frontier unknown: lag cannot be judged (never read as caught up)"
	switch {
	case a.Frontier != nil:
		head = ev.Frontier(*a.Frontier, a.LeaderMember)
	case a.NoFrontierBecause != "":
		head = "frontier unknown: " + a.NoFrontierBecause
	}
	n := len(v.history[memberHistoryKey(r.Observation.Cluster, firstMemberName(r))])
	lines := []string{
		" " + head,
		" " + t.Dim.Render(fmt.Sprintf("lag threshold %d %s · %s shown, every %s", thr, ev.LagUnit(), plural(n, "probe"), v.interval)),
		"",
	}
	lines = append(lines, v.table.View()...)
	trend := func(member string) string { return v.history.trend(c, member) }
	if title, sec, none := ev.Section(r.Observation, thr, trend); title != "" {
		lines = append(lines, "", t.Section.Render(title))
		for _, l := range sec {
			lines = append(lines, wrap(l, v.width, "  ")...)
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
