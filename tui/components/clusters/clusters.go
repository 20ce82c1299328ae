// Package clusters is the clusters screen's component: every cluster in
// scope in a table, filtered, and a preview of the selected one's reasons.
package clusters

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/components/table"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// Model is the clusters screen: every cluster in scope in a table, and a
// preview of the selected one's reasons.
type Model struct {
	table table.Model
	common.SyncState
	// namespace is the scope; "" (all namespaces) adds a NAMESPACE column.
	namespace string
	// results are every cluster in scope, visible those the filter keeps.
	results []status.Result
	visible []status.Result
}

// New returns the clusters screen of namespace ("" for all namespaces).
func New(th common.Theme, keys common.KeyMap, namespace string) Model {
	var cols []table.Column
	if namespace == "" {
		cols = append(cols, table.Column{Title: "NAMESPACE", Min: 6, Max: 20, Drop: 1})
	}
	cols = append(cols,
		table.Column{Title: "NAME", Min: 8, Max: 30},
		table.Column{Title: "ENGINE", Max: 8, Drop: 2},
		table.Column{Title: "READY", Max: 7},
		table.Column{Title: "VERDICT", Max: 18},
		table.Column{Title: "REASONS", Min: 10},
	)
	return Model{table: table.New(th, keys, cols...), namespace: namespace}
}

// SetSize sets the screen's size: the table takes all but eight lines
// (the preview's).
func (c *Model) SetSize(w, h int) { c.table.SetSize(w, max(1, h-8)+1) }

// SetTheme sets the styles (the verdict badges are drawn with them).
func (c *Model) SetTheme(th common.Theme) {
	c.table.SetTheme(th)
	c.refresh()
}

// SetData sets the clusters in scope and the filter.
func (c *Model) SetData(rs []status.Result, filter string) {
	c.results, c.visible = rs, filterClusters(rs, filter)
	c.refresh()
}

// Update moves the cursor; opening the selected cluster is the root's.
func (c Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	var cmd tea.Cmd
	c.table, cmd = c.table.Update(msg)
	return c, cmd
}

// Selected is the cluster under the cursor.
func (c Model) Selected() (status.Result, bool) {
	if c.table.Cursor() < 0 || c.table.Cursor() >= len(c.visible) {
		return status.Result{}, false
	}
	return c.visible[c.table.Cursor()], true
}

// filterClusters are the results whose key, engine or reasons contain f
// (lower case; "" keeps all).
func filterClusters(rs []status.Result, f string) []status.Result {
	if f == "" {
		return rs
	}
	var out []status.Result
	for _, r := range rs {
		hay := strings.ToLower(common.ClusterKey(r.Observation.Cluster) + " " + r.Observation.Cluster.Engine.String() + " " + common.TopReasons(r.Verdict, 100))
		if strings.Contains(hay, f) {
			out = append(out, r)
		}
	}
	return out
}

// ReadyCount is how many of r's members' pods are ready.
func ReadyCount(r status.Result) int {
	n := 0
	for _, mem := range r.Observation.Members {
		if mem.Pod != nil && mem.Pod.Ready {
			n++
		}
	}
	return n
}

// refresh rebuilds the rows from the visible clusters.
func (c *Model) refresh() {
	t := c.table.Theme()
	rows := make([][]table.Cell, 0, len(c.visible))
	for _, r := range c.visible {
		cl := r.Observation.Cluster
		var row []table.Cell
		if c.namespace == "" {
			row = append(row, table.Plain(cl.Namespace))
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
			table.Plain(cl.Name),
			table.Plain(cl.Engine.String()),
			table.Plain(fmt.Sprintf("%d/%d", ReadyCount(r), cl.Replicas)),
			table.Styled(word, badge),
			table.Plain(common.TopReasons(r.Verdict, 3)),
		)
		rows = append(rows, row)
	}
	c.table.SetRows(rows)
}

// View lists every cluster in scope and previews the selected one's
// reasons.
func (c Model) View() []string {
	t := c.table.Theme()
	if len(c.results) == 0 {
		scope := "namespace " + c.namespace
		if c.namespace == "" {
			scope = "any namespace"
		}
		return append([]string{""}, common.Wrap(fmt.Sprintf("No HA clusters in %s. A cluster is a StatefulSet labelled hactl.dev/engine=<engine>, or one that runs etcd.", scope), c.table.Width()-2, "  ")...)
	}
	lines := c.table.View()
	if len(c.visible) == 0 {
		return append(lines, "  "+t.Dim.Render("no cluster matches the filter"))
	}
	r, ok := c.Selected()
	if !ok {
		return lines
	}
	lines = append(lines, "")
	lines = append(lines, ReasonPreview(t, r)...)
	return append(lines, "", "  "+t.Dim.Render("enter opens the cluster"))
}

// ReasonPreview lists a cluster's reasons, one a line, or says it has none.
func ReasonPreview(t common.Theme, r status.Result) []string {
	if len(r.Verdict.Reasons) == 0 {
		return []string{"  " + t.Good.Render("no reasons: losing any one member would be survivable")}
	}
	var lines []string
	for _, rs := range r.Verdict.Reasons {
		lines = append(lines, "  "+t.Impact(rs.Code).Render(common.ImpactMark(rs.Code)+" "+rs.Code.String())+" "+common.ReasonTail(rs))
	}
	return lines
}

// Cursor is the row under the cursor.
func (c Model) Cursor() int { return c.table.Cursor() }

// SetCursor puts the cursor on row i.
func (c *Model) SetCursor(i int) { c.table.SetCursor(i) }

// Clamp keeps the cursor on a row.
func (c *Model) Clamp() { c.table.Clamp() }

// Visible are the clusters the filter keeps.
func (c Model) Visible() []status.Result { return c.visible }
