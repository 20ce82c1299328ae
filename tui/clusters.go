package tui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/hactl-dev/hactl/status"
)

// updateClusters handles keys on the clusters list.
func (m Model) updateClusters(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	list := m.visibleClusters()
	switch {
	case key.Matches(msg, k.Up):
		m.clusters.move(-1, len(list))
	case key.Matches(msg, k.Down):
		m.clusters.move(1, len(list))
	case key.Matches(msg, k.Open):
		if m.clusters.cursor < len(list) {
			m.focus = clusterKey(list[m.clusters.cursor].Observation.Cluster)
			m.screen, m.tab = screenCluster, tabMembers
			m.members, m.readiness, m.lower, m.seedTop = listState{}, listState{}, 0, 0
			m.filter.SetValue("")
		}
	case key.Matches(msg, k.Back):
		m = m.back()
	}
	return m, nil
}

func readyCount(r status.Result) int {
	n := 0
	for _, mem := range r.Observation.Members {
		if mem.Pod != nil && mem.Pod.Ready {
			n++
		}
	}
	return n
}

// clustersBody lists every cluster in scope.
func (m Model) clustersBody(w, h int) []string {
	t := m.theme
	list := m.visibleClusters()
	if len(m.results) == 0 {
		scope := "namespace " + m.cfg.Namespace
		if m.cfg.Namespace == "" {
			scope = "any namespace"
		}
		return append([]string{""}, wrap(fmt.Sprintf("No HA clusters in %s. A cluster is a StatefulSet labelled hactl.dev/engine=<engine>, or one that runs etcd.", scope), w-2, "  ")...)
	}
	cols := []column{}
	showNS := m.cfg.Namespace == ""
	if showNS {
		cols = append(cols, column{title: "NAMESPACE", min: 6, max: 20, drop: 1})
	}
	cols = append(cols,
		column{title: "NAME", min: 8, max: 30},
		column{title: "ENGINE", max: 8, drop: 2},
		column{title: "READY", max: 7},
		column{title: "VERDICT", max: 18},
		column{title: "REASONS", min: 10},
	)
	rows := make([][]cell, 0, len(list))
	for _, r := range list {
		c := r.Observation.Cluster
		var row []cell
		if showNS {
			row = append(row, plain(c.Namespace))
		}
		badge := t.Good
		word := "failover-ready"
		switch {
		case !r.Verdict.ControlReady:
			badge, word = t.Bad, "NOT control-ready"
		case !r.Verdict.FailoverReady:
			badge, word = t.Warn, "NOT failover-ready"
		}
		row = append(row,
			plain(c.Name),
			plain(c.Engine.String()),
			plain(fmt.Sprintf("%d/%d", readyCount(r), c.Replicas)),
			styled(word, badge),
			plain(topReasons(r.Verdict, 3)),
		)
		rows = append(rows, row)
	}
	tb := newTable(cols, rows, w)
	tableH := max(1, min(len(rows), h-8))
	cur := m.clusters.cursor
	lines := []string{tb.header(t)}
	lines = append(lines, tb.lines(t, cur, windowStart(cur, tableH, len(rows)), tableH)...)
	if len(list) == 0 {
		lines = append(lines, "  "+t.Dim.Render("no cluster matches the filter"))
		return lines
	}
	// A preview of the selected cluster's reasons.
	if cur < len(list) {
		r := list[cur]
		lines = append(lines, "")
		if len(r.Verdict.Reasons) == 0 {
			lines = append(lines, "  "+t.Good.Render("no reasons: losing any one member would be survivable"))
		}
		for _, rs := range r.Verdict.Reasons {
			lines = append(lines, "  "+t.impact(rs.Code).Render(impactMark(rs.Code)+" "+rs.Code.String())+" "+reasonTail(rs))
		}
		lines = append(lines, "", "  "+t.Dim.Render("enter opens the cluster"))
	}
	return lines
}
