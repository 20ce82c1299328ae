package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/status"
)

// clusterList is the clusters screen: every cluster in scope in a table,
// and a preview of the selected one's reasons.
type clusterList struct {
	table
	syncState
	// namespace is the scope; "" (all namespaces) adds a NAMESPACE column.
	namespace string
	// results are every cluster in scope, visible those the filter keeps.
	results []status.Result
	visible []status.Result
}

func newClusterList(th Theme, keys KeyMap, namespace string) clusterList {
	var cols []column
	if namespace == "" {
		cols = append(cols, column{title: "NAMESPACE", min: 6, max: 20, drop: 1})
	}
	cols = append(cols,
		column{title: "NAME", min: 8, max: 30},
		column{title: "ENGINE", max: 8, drop: 2},
		column{title: "READY", max: 7},
		column{title: "VERDICT", max: 18},
		column{title: "REASONS", min: 10},
	)
	return clusterList{table: newTable(th, keys, cols...), namespace: namespace}
}

// SetSize sets the screen's size: the table takes all but eight lines
// (the preview's).
func (c *clusterList) SetSize(w, h int) { c.table.SetSize(w, max(1, h-8)+1) }

// SetTheme sets the styles (the verdict badges are drawn with them).
func (c *clusterList) SetTheme(th Theme) {
	c.table.SetTheme(th)
	c.refresh()
}

// setData sets the clusters in scope and the filter.
func (c *clusterList) setData(rs []status.Result, filter string) {
	c.results, c.visible = rs, filterClusters(rs, filter)
	c.refresh()
}

// Update moves the cursor; opening the selected cluster is the root's.
func (c clusterList) Update(msg tea.Msg) (clusterList, tea.Cmd) {
	var cmd tea.Cmd
	c.table, cmd = c.table.Update(msg)
	return c, cmd
}

// selected is the cluster under the cursor.
func (c clusterList) selected() (status.Result, bool) {
	if c.cursor < 0 || c.cursor >= len(c.visible) {
		return status.Result{}, false
	}
	return c.visible[c.cursor], true
}

// filterClusters are the results whose key, engine or reasons contain f
// (lower case; "" keeps all).
func filterClusters(rs []status.Result, f string) []status.Result {
	if f == "" {
		return rs
	}
	var out []status.Result
	for _, r := range rs {
		hay := strings.ToLower(clusterKey(r.Observation.Cluster) + " " + r.Observation.Cluster.Engine.String() + " " + topReasons(r.Verdict, 100))
		if strings.Contains(hay, f) {
			out = append(out, r)
		}
	}
	return out
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

// refresh rebuilds the rows from the visible clusters.
func (c *clusterList) refresh() {
	t := c.theme
	rows := make([][]cell, 0, len(c.visible))
	for _, r := range c.visible {
		cl := r.Observation.Cluster
		var row []cell
		if c.namespace == "" {
			row = append(row, plain(cl.Namespace))
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
			plain(cl.Name),
			plain(cl.Engine.String()),
			plain(fmt.Sprintf("%d/%d", readyCount(r), cl.Replicas)),
			styled(word, badge),
			plain(topReasons(r.Verdict, 3)),
		)
		rows = append(rows, row)
	}
	c.SetRows(rows)
}

// View lists every cluster in scope and previews the selected one's
// reasons.
func (c clusterList) View() []string {
	t := c.theme
	if len(c.results) == 0 {
		scope := "namespace " + c.namespace
		if c.namespace == "" {
			scope = "any namespace"
		}
		return append([]string{""}, wrap(fmt.Sprintf("No HA clusters in %s. A cluster is a StatefulSet labelled hactl.dev/engine=<engine>, or one that runs etcd.", scope), c.width-2, "  ")...)
	}
	lines := c.table.View()
	if len(c.visible) == 0 {
		return append(lines, "  "+t.Dim.Render("no cluster matches the filter"))
	}
	r, ok := c.selected()
	if !ok {
		return lines
	}
	lines = append(lines, "")
	lines = append(lines, reasonPreview(t, r)...)
	return append(lines, "", "  "+t.Dim.Render("enter opens the cluster"))
}

// reasonPreview lists a cluster's reasons, one a line, or says it has none.
func reasonPreview(t Theme, r status.Result) []string {
	if len(r.Verdict.Reasons) == 0 {
		return []string{"  " + t.Good.Render("no reasons: losing any one member would be survivable")}
	}
	var lines []string
	for _, rs := range r.Verdict.Reasons {
		lines = append(lines, "  "+t.impact(rs.Code).Render(impactMark(rs.Code)+" "+rs.Code.String())+" "+reasonTail(rs))
	}
	return lines
}
