package tui

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
	"github.com/hactl-dev/hactl/tui/internal/remedy"
)

// memberView is a cluster's members tab: the cluster-wide facts, the
// member table, and a pane of the verdict's reasons with their remedies
// and recent events, which scrolls on its own.
type memberView struct {
	table
	syncState
	// tabHeight is the height of the whole tab; the table gets part of
	// it, the pane the rest.
	tabHeight int
	// lower is the scroll of the reasons/events pane.
	lower int
	book  remedy.Book
	now   func() time.Time
	// views are the engines' views.
	views engineViews
	// result is the cluster shown, members its members the filter keeps,
	// filter the filter (it narrows the reasons too).
	result  status.Result
	members []model.Member
	filter  string
	// summary and paneLines are drawn by refresh, for the frames that
	// follow (see pane).
	summary, paneLines []string
}

func newMemberView(th Theme, keys KeyMap, book remedy.Book, now func() time.Time, views engineViews) memberView {
	return memberView{table: newTable(th, keys, memberColumns(nil)...), book: book, now: now, views: views}
}

// memberColumns are the member table's columns, with an engine's own
// (extra) after PHASE.
func memberColumns(extra []column) []column {
	cols := []column{
		{title: "#", max: 3},
		{title: "POD", min: 8, max: 30},
		{title: "NODE", min: 4, max: 20, drop: 3},
		{title: "ROLE", max: 8},
		{title: "MEMBER ID", short: "ID", min: 4, max: 16, drop: 4},
		{title: "PHASE", max: 13},
	}
	cols = append(cols, extra...)
	return append(cols,
		column{title: "READY", short: "RDY", max: 5},
		column{title: "LAG", min: 3, max: 10},
		column{title: "VERSION", short: "VER", min: 3, max: 10, drop: 2},
		column{title: "RESTARTS", short: "RST", min: 3, max: 8, drop: 1},
		column{title: "AGE", max: 5, drop: 5},
	)
}

// SetSize sets the tab's size: the table takes up to half of what the
// summary leaves, the pane the rest.
func (v *memberView) SetSize(w, h int) {
	v.tabHeight = h
	v.table.SetSize(w, max(1, (h-4)/2)+1)
	v.refresh()
}

// SetTheme sets the styles.
func (v *memberView) SetTheme(th Theme) {
	v.table.SetTheme(th)
	v.refresh()
}

// setData sets the cluster shown and the filter.
func (v *memberView) setData(r status.Result, filter string) {
	v.result, v.filter = r, filter
	v.members = filterMembers(v.views, r, filter)
	v.refresh()
}

// reset puts the cursor and the pane back at the top.
func (v *memberView) reset() { v.cursor, v.lower = 0, 0 }

// Update moves the cursor and scrolls the pane.
func (v memberView) Update(msg tea.Msg) (memberView, tea.Cmd) {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return v, nil
	}
	switch {
	case key.Matches(k, v.keys.ScrollUp):
		v.lower = max(0, v.lower-5)
	case key.Matches(k, v.keys.ScrollDown):
		v.lower = min(v.lower+5, max(0, len(v.paneLines)-1))
	default:
		v.table, _ = v.table.Update(msg)
	}
	return v, nil
}

// filterMembers are the members of r whose name, phase, role or node
// contain f (lower case; "" keeps all).
func filterMembers(views engineViews, r status.Result, f string) []model.Member {
	if f == "" {
		return r.Observation.Members
	}
	var out []model.Member
	for _, mem := range r.Observation.Members {
		hay := mem.Name + " " + mem.Phase.String() + " " + views.of(r.Observation.Cluster).Role(mem)
		if mem.Pod != nil {
			hay += " " + mem.Pod.Node
		}
		if strings.Contains(strings.ToLower(hay), f) {
			out = append(out, mem)
		}
	}
	return out
}

// summaryLines are the cluster-wide facts: engine, shape, leader,
// cluster ID and the quorum arithmetic.
func summaryLines(t Theme, views engineViews, r status.Result, w int) []string {
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
			id = shortID(id, 8)
		}
		parts = append(parts, "cluster "+id)
	}
	q := views.summaryOf(r)
	if a.Frontier != nil {
		q = append(q, "frontier "+views.of(c).Position(*a.Frontier))
	} else if r.Observation.EngineProbed {
		q = append(q, "frontier unknown")
	}
	return []string{
		" " + strings.Join(parts, t.Dim.Render(" · ")),
		" " + t.Dim.Render(strings.Join(q, " · ")),
	}
}

// refresh rebuilds the member table's rows.
func (v *memberView) refresh() {
	t := v.theme
	now := v.now()
	rows := make([][]cell, 0, len(v.members))
	for _, mem := range v.members {
		pod, node, ready, restarts, ageS := "-", "-", "-", "-", "-"
		if p := mem.Pod; p != nil {
			pod, node, ready, restarts, ageS = p.Name, format.Dash(p.Node), yesNo(p.Ready), strconv.Itoa(p.Restarts), format.Age(p.CreatedAt, now)
		}
		id, version := "-", "-"
		if e := mem.Engine; e != nil {
			id = format.Dash(e.MemberID)
			if v.width < 100 {
				id = shortID(id, 8)
			}
			version = format.Dash(e.Version)
		}
		ev := v.views.of(v.result.Observation.Cluster)
		roleCell := plain(ev.Role(mem))
		if ev.Leads(mem) {
			roleCell = styled(ev.Role(mem), t.Bold)
		}
		readyCell := plain(ready)
		if ready == "no" {
			readyCell = styled(ready, t.Warn)
		}
		row := []cell{
			plain(strconv.Itoa(mem.Ordinal)), plain(pod), plain(node), roleCell, plain(id),
			styled(mem.Phase.String(), t.phase(mem.Phase)),
		}
		for _, c := range ev.Cells(mem) {
			row = append(row, plain(c))
		}
		rows = append(rows, append(row, readyCell, plain(ev.LagText(mem.Lag)), plain(version), plain(restarts), plain(ageS)))
	}
	v.table.setColumns(memberColumns(viewColumns(v.views.of(v.result.Observation.Cluster).Columns())))
	v.SetRows(rows)
	v.summary = summaryLines(t, v.views, v.result, v.width)
	v.paneLines = v.pane()
}

// View draws the summary, the member table, and the pane from its
// scroll.
func (v memberView) View() []string {
	t, w := v.theme, v.width
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
		sep = spread("", t.Dim.Render(fmt.Sprintf("[lines %d–%d of %d · pgup/pgdn]", top+1, min(top+paneH, len(pane)), len(pane))), w)
	}
	lines = append(lines, sep)
	return append(lines, pane[top:]...)
}

// pane is every reason with its remedy from docs/reason-codes.md, then
// recent events.
func (v memberView) pane() []string {
	t, r := v.theme, v.result
	var reasons []model.Reason
	for _, rs := range r.Verdict.Reasons {
		if v.filter == "" || strings.Contains(strings.ToLower(reasonLine(rs)), v.filter) {
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
		head := t.impact(rs.Code).Render(impactMark(rs.Code) + " " + rs.Code.String())
		if tail := reasonTail(rs); tail != "" {
			head += " " + tail
		}
		out = append(out, hang(head, v.width)...)
	}
	out = append(out, v.remedies(reasons)...)
	return append(out, v.events()...)
}

// remedies are each code's remedy, once, from docs/reason-codes.md.
func (v memberView) remedies(reasons []model.Reason) []string {
	t := v.theme
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
				para = t.impact(rs.Code).Render(rs.Code.String()) + ": " + para
			}
			out = append(out, wrap(para, v.width, "  ")...)
		}
	}
	return out
}

// events are the cluster's recent events.
func (v memberView) events() []string {
	t := v.theme
	ev := v.result.Observation.Events
	out := []string{"", t.Section.Render(fmt.Sprintf("Events (%d)", len(ev)))}
	if len(ev) == 0 {
		out = append(out, t.Dim.Render("  none recent"))
	}
	for _, e := range ev {
		line := fmt.Sprintf("  %s %s %s %s: %s", timeOfDay(e.Last, v.now()), e.Type, e.Reason, e.Object, e.Message)
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
