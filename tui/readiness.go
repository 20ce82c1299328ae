package tui

import (
	"fmt"
	"strconv"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/verdict"
)

// lagThreshold is the verdict's lag threshold in effect.
func (m Model) lagThreshold() uint64 {
	if m.cfg.Verdict.LagThreshold > 0 {
		return m.cfg.Verdict.LagThreshold
	}
	return verdict.DefaultLagThreshold
}

// readinessBody shows each member's lag against the leader frontier, its
// history over the recent probes, and the learners' catch-up.
func (m Model) readinessBody(r status.Result, w, h int) []string {
	t := m.theme
	a := r.Analysis
	thr := m.lagThreshold()
	head := "frontier unknown: lag cannot be judged (never read as caught up)"
	if a.Frontier != nil {
		head = fmt.Sprintf("frontier %d from leader %s", *a.Frontier, dash(a.LeaderMember))
	} else if a.NoFrontierBecause != "" {
		head = "frontier unknown: " + a.NoFrontierBecause
	}
	n := len(m.history[memberHistoryKey(r.Observation.Cluster, firstMemberName(r))])
	lines := []string{
		" " + head,
		" " + t.Dim.Render(fmt.Sprintf("lag threshold %d entries · %s shown, every %s", thr, plural(n, "probe"), m.cfg.ProbeInterval)),
		"",
	}
	ms := m.visibleMembers(r)
	cols := []column{
		{title: "MEMBER", min: 6, max: 30},
		{title: "ROLE", max: 8},
		{title: "PHASE", max: 13, drop: 1},
		{title: "LAG", min: 3, max: 10},
		{title: "vs THRESHOLD", min: 12, max: 12},
		{title: "HISTORY", min: 10},
	}
	rows := make([][]cell, 0, len(ms))
	series := make([][]*int64, 0, len(ms))
	for _, mem := range ms {
		lags := m.history.lags(r.Observation.Cluster, mem.Name)
		series = append(series, lags)
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
			plain(mem.Name), plain(mem.Engine.Role().String()), styled(mem.Phase.String(), t.phase(mem.Phase)),
			plain(lagText(mem.Lag)), vsCell, plain(""),
		})
	}
	tb := newTable(cols, rows, w)
	// The history takes the width the other columns leave.
	hist := len(cols) - 1
	if tb.widths[hist] > 0 {
		used := 1
		for i, x := range tb.widths {
			if x > 0 && i != hist {
				used += x + 1
			}
		}
		tb.widths[hist] = max(tb.widths[hist], w-used)
		for i, lags := range series {
			var scale = int64(thr)
			for _, v := range lags {
				if v != nil && *v > scale {
					scale = *v
				}
			}
			rows[i][hist] = plain(sparkline(lags, scale, tb.widths[hist]))
		}
	}
	tableH := max(1, min(len(rows), h-len(lines)-6))
	cur := m.readiness.cursor
	lines = append(lines, tb.header(t))
	lines = append(lines, tb.lines(t, cur, windowStart(cur, tableH, len(rows)), tableH)...)
	lines = append(lines, "", t.Section.Render("Learners"))
	learners := 0
	for _, mem := range r.Observation.Members {
		if mem.Engine == nil || !mem.Engine.IsLearner {
			continue
		}
		learners++
		lines = append(lines, wrap(learnerLine(mem, thr, m.history.trend(r.Observation.Cluster, mem.Name)), w, "  ")...)
	}
	if learners == 0 {
		lines = append(lines, "  "+t.Dim.Render("none: every answering member votes"))
	}
	lines = append(lines, "  "+t.Dim.Render("▁…█ lag per probe, scaled to the threshold or the largest lag; · no frontier"))
	return lines
}

func firstMemberName(r status.Result) string {
	if len(r.Observation.Members) == 0 {
		return ""
	}
	return r.Observation.Members[0].Name
}

// learnerLine describes one learner's catch-up.
func learnerLine(mem model.Member, thr uint64, trend string) string {
	s := mem.Name + ": "
	switch {
	case mem.Lag == nil:
		s += "lag unknown (no leader frontier)"
	case uint64(*mem.Lag) <= thr:
		s += strconv.FormatInt(*mem.Lag, 10) + " entries behind, within the threshold: ready to be promoted"
	default:
		s += fmt.Sprintf("%d entries behind, %d above the threshold", *mem.Lag, uint64(*mem.Lag)-thr)
	}
	if trend != "" {
		s += " (" + trend + ")"
	}
	return s
}
