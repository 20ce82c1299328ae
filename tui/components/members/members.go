// Package members is a cluster's members tab: the cluster-wide facts, the
// member table, and a pane of the verdict's reasons with their remedies and
// recent events, which scrolls on its own.
package members

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/components/table"
	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/tui/internal/remedy"
)

// Model is a cluster's members tab: the cluster-wide facts, the member
// table, and a pane of the verdict's reasons with their remedies and
// recent events, which scrolls on its own.
type Model struct {
	table table.Model
	common.SyncState
	// tabHeight is the height of the whole tab; the table gets part of
	// it, the pane the rest.
	tabHeight int
	// lower is the scroll of the reasons/events pane.
	lower int
	book  remedy.Book
	now   func() time.Time
	// views are the engines' views.
	views common.EngineViews
	// result is the cluster shown, members its members the filter keeps,
	// filter the filter (it narrows the reasons too).
	result  status.Result
	members []model.Member
	filter  string
	// summary and paneLines are drawn by refresh, for the frames that
	// follow (see pane).
	summary, paneLines []string
}

// New returns the members tab; book holds the remedies, views the
// engines' views.
func New(th common.Theme, keys common.KeyMap, book remedy.Book, now func() time.Time, views common.EngineViews) Model {
	return Model{table: table.New(th, keys, memberColumns(nil)...), book: book, now: now, views: views}
}

// memberColumns are the member table's columns, with an engine's own
// (extra) after PHASE.
func memberColumns(extra []table.Column) []table.Column {
	cols := []table.Column{
		{Title: "#", Max: 3},
		{Title: "POD", Min: 8, Max: 30},
		{Title: "NODE", Min: 4, Max: 20, Drop: 3},
		{Title: "ROLE", Max: 8},
		{Title: "MEMBER ID", Short: "ID", Min: 4, Max: 16, Drop: 4},
		{Title: "PHASE", Max: 13},
	}
	cols = append(cols, extra...)
	return append(cols,
		table.Column{Title: "READY", Short: "RDY", Max: 5},
		table.Column{Title: "LAG", Min: 3, Max: 10},
		table.Column{Title: "VERSION", Short: "VER", Min: 3, Max: 10, Drop: 2},
		table.Column{Title: "RESTARTS", Short: "RST", Min: 3, Max: 8, Drop: 1},
		table.Column{Title: "AGE", Max: 5, Drop: 5},
	)
}

// SetSize sets the tab's size: the table takes up to half of what the
// summary leaves, the pane the rest.
func (v *Model) SetSize(w, h int) {
	v.tabHeight = h
	v.table.SetSize(w, max(1, (h-4)/2)+1)
	v.refresh()
}

// SetTheme sets the styles.
func (v *Model) SetTheme(th common.Theme) {
	v.table.SetTheme(th)
	v.refresh()
}

// SetData sets the cluster shown and the filter.
func (v *Model) SetData(r status.Result, filter string) {
	v.result, v.filter = r, filter
	v.members = common.FilterMembers(v.views, r, filter)
	v.refresh()
}

// Reset puts the cursor and the pane back at the top.
func (v *Model) Reset() {
	v.table.SetCursor(0)
	v.lower = 0
}

// Update moves the cursor and scrolls the pane.
func (v Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return v, nil
	}
	switch {
	case key.Matches(k, v.table.Keys().ScrollUp):
		v.lower = max(0, v.lower-5)
	case key.Matches(k, v.table.Keys().ScrollDown):
		v.lower = min(v.lower+5, max(0, len(v.paneLines)-1))
	default:
		v.table, _ = v.table.Update(msg)
	}
	return v, nil
}

// summaryLines are the cluster-wide facts: engine, shape, leader,
// cluster ID, who owns the members in hactl's stead, the quorum
// arithmetic, and an operator's word on the cluster.
func summaryLines(t common.Theme, views common.EngineViews, r status.Result, w int, now time.Time) []string {
	c, a := r.Observation.Cluster, r.Analysis
	parts := []string{c.Engine.String(), c.Shape.String()}
	if a.LeaderMember != "" {
		parts = append(parts, "leader "+a.LeaderMember)
	} else {
		parts = append(parts, "no agreed leader")
	}
	if a.ClusterID != "" {
		id := a.ClusterID
		if w < 100 {
			id = common.ShortID(id, 8)
		}
		parts = append(parts, "cluster "+id)
	}
	q := views.SummaryOf(r)
	if a.Frontier != nil {
		q = append(q, "frontier "+views.Of(c).Position(*a.Frontier))
	} else if r.Observation.EngineProbed {
		q = append(q, "frontier unknown")
	}
	if m := c.ManagedBy; m != nil {
		parts = append(parts, c.Layout+", owned by "+m.Name)
	}
	lines := []string{
		" " + strings.Join(parts, t.Dim.Render(" · ")),
		" " + t.Dim.Render(strings.Join(q, " · ")),
	}
	if op := c.Operator; op != nil {
		lines = append(lines, " "+t.Dim.Render(status.OperatorLine(op)))
		if b := status.BackupLine(op, now); b != "" {
			lines = append(lines, " "+t.Dim.Render(b))
		}
	}
	return lines
}

// refresh rebuilds the member table's rows.
func (v *Model) refresh() {
	t := v.table.Theme()
	now := v.now()
	rows := make([][]table.Cell, 0, len(v.members))
	for _, mem := range v.members {
		pod, node, ready, restarts, ageS := "-", "-", "-", "-", "-"
		if p := mem.Pod; p != nil {
			pod, node, ready, restarts, ageS = p.Name, format.Dash(p.Node), common.YesNo(p.Ready), strconv.Itoa(p.Restarts), format.Age(p.CreatedAt, now)
		}
		id, version := "-", "-"
		if e := mem.Engine; e != nil {
			id = format.Dash(e.MemberID)
			if v.table.Width() < 100 {
				id = common.ShortID(id, 8)
			}
			version = format.Dash(e.Version)
		}
		ev := v.views.Of(v.result.Observation.Cluster)
		roleCell := table.Plain(ev.Role(mem))
		if ev.Leads(mem) {
			roleCell = table.Styled(ev.Role(mem), t.Bold)
		}
		readyCell := table.Plain(ready)
		if ready == "no" {
			readyCell = table.Styled(ready, t.Warn)
		}
		row := []table.Cell{
			table.Plain(strconv.Itoa(mem.Ordinal)), table.Plain(pod), table.Plain(node), roleCell, table.Plain(id),
			table.Styled(mem.Phase.String(), t.Phase(mem.Phase)),
		}
		for _, c := range ev.Cells(mem) {
			row = append(row, table.Plain(c))
		}
		rows = append(rows, append(row, readyCell, table.Plain(ev.LagText(mem.Lag)), table.Plain(version), table.Plain(restarts), table.Plain(ageS)))
	}
	v.table.SetColumns(memberColumns(viewColumns(v.views.Of(v.result.Observation.Cluster).Columns())))
	v.table.SetRows(rows)
	v.summary = summaryLines(t, v.views, v.result, v.table.Width(), v.now())
	v.paneLines = v.pane()
}

// View draws the summary, the member table, and the pane from its
// scroll.
func (v Model) View() []string {
	t, w := v.table.Theme(), v.table.Width()
	lines := append([]string(nil), v.summary...)
	lines = append(lines, "")
	lines = append(lines, v.table.View()...)
	if len(v.members) == 0 {
		lines = append(lines, "  "+t.Dim.Render("no member matches the filter"))
	}
	paneH := max(0, v.tabHeight-len(lines)-1)
	pane := v.paneLines
	top := min(v.lower, max(0, len(pane)-paneH))
	sep := ""
	if top > 0 || top+paneH < len(pane) {
		// Say there is more, on the line above the pane.
		sep = common.Spread("", t.Dim.Render(fmt.Sprintf("[lines %d–%d of %d · pgup/pgdn]", top+1, min(top+paneH, len(pane)), len(pane))), w)
	}
	lines = append(lines, sep)
	return append(lines, pane[top:]...)
}

// pane is every reason with its remedy from docs/reason-codes.md, then
// recent events.
func (v Model) pane() []string {
	t, r := v.table.Theme(), v.result
	var reasons []model.Reason
	for _, rs := range r.Verdict.Reasons {
		if v.filter == "" || strings.Contains(strings.ToLower(common.ReasonLine(rs)), v.filter) {
			reasons = append(reasons, rs)
		}
	}
	var out []string
	if len(r.Verdict.Reasons) == 0 {
		out = append(out, t.Section.Render("Verdict")+" "+t.Good.Render("failover-ready: losing any one member would be survivable"))
	} else {
		out = append(out, t.Section.Render(fmt.Sprintf("Reasons (%d)", len(r.Verdict.Reasons))))
	}
	for _, rs := range reasons {
		head := t.Impact(rs.Code).Render(common.ImpactMark(rs.Code) + " " + rs.Code.String())
		if tail := common.ReasonTail(rs); tail != "" {
			head += " " + tail
		}
		out = append(out, common.Hang(head, v.table.Width())...)
	}
	out = append(out, v.remedies(reasons)...)
	return append(out, v.events()...)
}

// remedies are each code's remedy, once, from docs/reason-codes.md.
func (v Model) remedies(reasons []model.Reason) []string {
	t := v.table.Theme()
	var out []string
	seen := map[model.ReasonCode]bool{}
	for _, rs := range reasons {
		fix := v.book.FixText(rs.Code)
		if seen[rs.Code] || fix == "" {
			continue
		}
		seen[rs.Code] = true
		if len(out) == 0 {
			out = append(out, "", t.Section.Render("Remedies")+t.Dim.Render(" (docs/reason-codes.md)"))
		}
		for i, para := range strings.Split(fix, "\n\n") {
			if strings.HasPrefix(para, "    ") {
				for _, l := range strings.Split(para, "\n") {
					out = append(out, t.Dim.Render(l))
				}
				continue
			}
			if i == 0 {
				para = t.Impact(rs.Code).Render(rs.Code.String()) + ": " + para
			}
			out = append(out, common.Wrap(para, v.table.Width(), "  ")...)
		}
	}
	return out
}

// events are the cluster's recent events.
func (v Model) events() []string {
	t := v.table.Theme()
	ev := v.result.Observation.Events
	out := []string{"", t.Section.Render(fmt.Sprintf("Events (%d)", len(ev)))}
	if len(ev) == 0 {
		out = append(out, t.Dim.Render("  none recent"))
	}
	for _, e := range ev {
		line := fmt.Sprintf("  %s %s %s %s: %s", common.TimeOfDay(e.Last, v.now()), e.Type, e.Reason, e.Object, e.Message)
		if e.Count > 1 {
			line += fmt.Sprintf(" (×%d)", e.Count)
		}
		st := t.Dim
		if e.Type == "Warning" {
			st = t.Warn
		}
		out = append(out, st.Render(line))
	}
	return out
}

// viewColumns are an engine's own member-table columns as the table
// takes them.
func viewColumns(cs []model.ViewColumn) []table.Column {
	out := make([]table.Column, 0, len(cs))
	for _, c := range cs {
		out = append(out, table.Column{Title: c.Title, Min: c.Min, Max: c.Max, Drop: c.Drop})
	}
	return out
}

// Cursor is the row under the cursor.
func (v Model) Cursor() int { return v.table.Cursor() }

// SetCursor puts the cursor on row i.
func (v *Model) SetCursor(i int) { v.table.SetCursor(i) }

// Clamp keeps the cursor on a row.
func (v *Model) Clamp() { v.table.Clamp() }
