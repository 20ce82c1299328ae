package tui

import (
	"fmt"
	"strconv"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/internal/format"
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
	// threshold is the verdict's lag threshold, interval the time between
	// probes.
	threshold uint64
	// verdict are the verdict's thresholds (Patroni's are per cluster).
	verdict  verdict.Options
	interval time.Duration
	// result is the cluster shown, members its members the filter keeps,
	// history the lag of the recent probes.
	result  status.Result
	members []model.Member
	history lagHistory
}

// historyColumn is the column of the lag sparklines.
const historyColumn = 5

func newReadinessView(th Theme, keys KeyMap, threshold uint64, interval time.Duration) readinessView {
	tb := newTable(th, keys,
		column{title: "MEMBER", min: 6, max: 30},
		column{title: "ROLE", max: 8},
		column{title: "PHASE", max: 13, drop: 1},
		column{title: "LAG", min: 3, max: 10},
		column{title: "vs THRESHOLD", min: 12, max: 12},
		// The history takes the width the other columns leave.
		column{title: "HISTORY", min: 10, grow: true},
	)
	return readinessView{table: tb, threshold: threshold, interval: interval}
}

// thresholdOf is the lag threshold for cluster c: the view's (raft
// entries) for etcd, the WAL bytes the verdict uses for Patroni.
func (v *readinessView) thresholdOf(c model.ClusterFacts) uint64 {
	if c.Engine == model.EnginePatroni {
		return thresholdFor(v.verdict, c)
	}
	return v.threshold
}

// lagThreshold is the verdict's lag threshold in effect.
func lagThreshold(o verdict.Options) uint64 {
	if o.LagThreshold > 0 {
		return o.LagThreshold
	}
	return verdict.DefaultLagThreshold
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
	v.members = filterMembers(r, filter)
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
	t, thr := v.theme, v.thresholdOf(c)
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
			plain(mem.Name), plain(roleText(mem)), styled(mem.Phase.String(), t.phase(mem.Phase)),
			plain(lagText(c, mem.Lag)), vsCell, plain(""),
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
	thr := v.thresholdOf(c)
	a := r.Analysis
	head := "frontier unknown: lag cannot be judged (never read as caught up)"
	switch {
	case a.Frontier != nil && c.Engine == model.EnginePatroni:
		head = fmt.Sprintf("frontier: WAL position %d of primary %s", *a.Frontier, format.Dash(a.LeaderMember))
	case a.Frontier != nil:
		head = fmt.Sprintf("frontier %d from leader %s", *a.Frontier, format.Dash(a.LeaderMember))
	case a.NoFrontierBecause != "":
		head = "frontier unknown: " + a.NoFrontierBecause
	}
	n := len(v.history[memberHistoryKey(r.Observation.Cluster, firstMemberName(r))])
	lines := []string{
		" " + head,
		" " + t.Dim.Render(fmt.Sprintf("lag threshold %d %s · %s shown, every %s", thr, lagUnit(c), plural(n, "probe"), v.interval)),
		"",
	}
	lines = append(lines, v.table.View()...)
	if c.Engine == model.EnginePatroni {
		lines = append(lines, "", t.Section.Render("Replication"))
		for _, l := range replicationLines(r) {
			lines = append(lines, wrap(l, v.width, "  ")...)
		}
		return append(lines, "  "+t.Dim.Render("▁…█ lag per probe, scaled to the threshold or the largest lag; · no frontier"))
	}
	lines = append(lines, "", t.Section.Render("Learners"))
	learners := 0
	for _, mem := range r.Observation.Members {
		if mem.Engine == nil || !mem.Engine.IsLearner {
			continue
		}
		learners++
		lines = append(lines, wrap(learnerLine(mem, thr, v.history.trend(r.Observation.Cluster, mem.Name)), v.width, "  ")...)
	}
	if learners == 0 {
		lines = append(lines, "  "+t.Dim.Render("none: every answering member votes"))
	}
	return append(lines, "  "+t.Dim.Render("▁…█ lag per probe, scaled to the threshold or the largest lag; · no frontier"))
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

// replicationLines say, for each replica of a Patroni cluster, whether the
// primary lists it as streaming (its pg_stat_replication, as Patroni
// reports it).
func replicationLines(r status.Result) []string {
	var primary *model.PatroniFacts
	for _, mem := range r.Observation.Members {
		if e := mem.Engine; e != nil && e.Reachable && e.Patroni.Writable() {
			primary = e.Patroni
		}
	}
	if primary == nil {
		return []string{"no primary answered: replication unknown"}
	}
	var out []string
	for _, mem := range r.Observation.Members {
		e := mem.Engine
		if e != nil && e.Reachable && e.Patroni.Writable() {
			continue
		}
		if rep, ok := primary.Streaming(mem.Name); ok {
			out = append(out, fmt.Sprintf("%s: streaming from the primary (%s)", mem.Name, format.Dash(rep.SyncState)))
		} else {
			out = append(out, mem.Name+": not streaming from the primary")
		}
	}
	if len(out) == 0 {
		out = append(out, "no replicas")
	}
	return out
}
