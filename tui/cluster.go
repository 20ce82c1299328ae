package tui

import (
	"fmt"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// updateCluster handles keys on a cluster's views.
func (m Model) updateCluster(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	r, _ := m.focused()
	n := len(m.visibleMembers(r))
	before := m.tab
	m, cmd := m.clusterKey(msg, k, n)
	if m.tab == tabSeed && before != tabSeed {
		cmd = tea.Batch(cmd, m.loadGenerations())
	}
	return m, cmd
}

func (m Model) clusterKey(msg tea.KeyPressMsg, k KeyMap, n int) (Model, tea.Cmd) {
	switch {
	case key.Matches(msg, k.Back):
		m = m.back()
	case key.Matches(msg, k.NextTab):
		m.tab = (m.tab + 1) % numTabs
	case key.Matches(msg, k.PrevTab):
		m.tab = (m.tab + numTabs - 1) % numTabs
	case msg.String() == "1", msg.String() == "2", msg.String() == "3":
		m.tab = tab(msg.String()[0] - '1')
	case key.Matches(msg, k.Up):
		m.cursorFor().move(-1, n)
	case key.Matches(msg, k.Down):
		m.cursorFor().move(1, n)
	case key.Matches(msg, k.ScrollUp):
		if m.tab == tabSeed {
			m.seedTop = max(0, m.seedTop-5)
		} else {
			m.lower = max(0, m.lower-5)
		}
	case key.Matches(msg, k.ScrollDown):
		r, _ := m.focused()
		if m.tab == tabSeed {
			m.seedTop = min(m.seedTop+5, max(0, len(m.seedBody(r, m.width, 0))-1))
		} else {
			m.lower = min(m.lower+5, max(0, len(m.reasonsPane(r, m.width))-1))
		}
	case key.Matches(msg, k.Replace, k.Reseed, k.Seed):
		a, _ := actionFor(k, msg)
		return m.openDialog(a, false)
	case key.Matches(msg, k.Explain):
		return m.openDialog(model.ActionReplace, true)
	case msg.String() == "r", msg.String() == "R", msg.String() == "s":
		// An action key while actions are disabled.
		if m.cfg.ReadOnly {
			m.setStatus(true, "read-only: actions are disabled (%s)", m.cfg.ReadOnlyReason)
		} else {
			m.setStatus(true, "%s", m.noActionsWhy())
		}
	}
	return m, nil
}

// cursorFor is the member cursor of the current tab.
func (m *Model) cursorFor() *listState {
	if m.tab == tabReadiness {
		return &m.readiness
	}
	return &m.members
}

// clusterBody draws the focused cluster's current tab.
func (m Model) clusterBody(w, h int) []string {
	r, ok := m.focused()
	if !ok {
		return append([]string{""}, wrap(fmt.Sprintf("Cluster %s is not in scope (any more). esc goes back to the list.", m.focus), w-2, "  ")...)
	}
	switch m.tab {
	case tabSeed:
		return m.seedBody(r, w, h)
	case tabReadiness:
		return m.readinessBody(r, w, h)
	}
	return m.membersBody(r, w, h)
}

// summaryLines are the cluster-wide facts: engine, shape, leader,
// cluster ID and the quorum arithmetic.
func (m Model) summaryLines(r status.Result, w int) []string {
	t := m.theme
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
	q := []string{
		fmt.Sprintf("voters %d", a.Voters),
		fmt.Sprintf("quorum %d", a.Quorum),
		fmt.Sprintf("tolerates %d", a.Tolerance),
		fmt.Sprintf("answering %d/%d", a.AnsweringVoters, a.Voters),
	}
	if a.Frontier != nil {
		q = append(q, "frontier "+strconv.FormatUint(*a.Frontier, 10))
	} else if r.Observation.EngineProbed {
		q = append(q, "frontier unknown")
	}
	return []string{
		" " + strings.Join(parts, t.Dim.Render(" · ")),
		" " + t.Dim.Render(strings.Join(q, " · ")),
	}
}

// memberRows are the member table's rows.
func (m Model) memberRows(r status.Result, ms []model.Member, w int) ([]column, [][]cell) {
	t := m.theme
	cols := []column{
		{title: "#", max: 3},
		{title: "POD", min: 8, max: 30},
		{title: "NODE", min: 4, max: 20, drop: 3},
		{title: "ROLE", max: 8},
		{title: "MEMBER ID", short: "ID", min: 4, max: 16, drop: 4},
		{title: "PHASE", max: 13},
		{title: "READY", short: "RDY", max: 5},
		{title: "LAG", min: 3, max: 10},
		{title: "VERSION", short: "VER", min: 3, max: 10, drop: 2},
		{title: "RESTARTS", short: "RST", min: 3, max: 8, drop: 1},
		{title: "AGE", max: 5, drop: 5},
	}
	now := m.now()
	rows := make([][]cell, 0, len(ms))
	for _, mem := range ms {
		pod, node, ready, restarts, ageS := "-", "-", "-", "-", "-"
		if p := mem.Pod; p != nil {
			pod, node, ready, restarts, ageS = p.Name, dash(p.Node), yesNo(p.Ready), strconv.Itoa(p.Restarts), age(p.CreatedAt, now)
		}
		id, version := "-", "-"
		if e := mem.Engine; e != nil {
			id = dash(e.MemberID)
			if w < 100 {
				id = shortID(id, 8)
			}
			version = dash(e.Version)
		}
		role := mem.Engine.Role()
		roleCell := plain(role.String())
		if role == model.RoleLeader {
			roleCell = styled(role.String(), t.Bold)
		}
		readyCell := plain(ready)
		if ready == "no" {
			readyCell = styled(ready, t.Warn)
		}
		rows = append(rows, []cell{
			plain(strconv.Itoa(mem.Ordinal)), plain(pod), plain(node), roleCell, plain(id),
			styled(mem.Phase.String(), t.phase(mem.Phase)), readyCell, plain(lagText(mem.Lag)),
			plain(version), plain(restarts), plain(ageS),
		})
	}
	return cols, rows
}

// membersBody is the member table, the verdict's reasons with their
// remedies, and recent events.
func (m Model) membersBody(r status.Result, w, h int) []string {
	t := m.theme
	lines := m.summaryLines(r, w)
	ms := m.visibleMembers(r)
	cols, rows := m.memberRows(r, ms, w)
	tb := newTable(cols, rows, w)
	tableH := max(1, min(len(rows), (h-len(lines)-2)/2))
	cur := m.members.cursor
	lines = append(lines, "", tb.header(t))
	lines = append(lines, tb.lines(t, cur, windowStart(cur, tableH, len(rows)), tableH)...)
	if len(ms) == 0 {
		lines = append(lines, "  "+t.Dim.Render("no member matches the filter"))
	}
	paneH := max(0, h-len(lines)-1)
	pane := m.reasonsPane(r, w)
	top := min(m.lower, max(0, len(pane)-paneH))
	sep := ""
	if top > 0 || top+paneH < len(pane) {
		// Say there is more, on the line above the pane.
		sep = spread("", t.Dim.Render(fmt.Sprintf("[lines %d–%d of %d · pgup/pgdn]", top+1, min(top+paneH, len(pane)), len(pane))), w)
	}
	lines = append(lines, sep)
	return append(lines, pane[top:]...)
}

// reasonsPane is every reason with its remedy from docs/reason-codes.md,
// then recent events.
func (m Model) reasonsPane(r status.Result, w int) []string {
	t := m.theme
	f := m.filterText()
	var reasons []model.Reason
	for _, rs := range r.Verdict.Reasons {
		if f == "" || strings.Contains(strings.ToLower(reasonLine(rs)), f) {
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
		out = append(out, hang(head, w)...)
	}
	// Each code's remedy once, from docs/reason-codes.md.
	seen := map[model.ReasonCode]bool{}
	first := true
	for _, rs := range reasons {
		fix := m.book.FixText(rs.Code)
		if seen[rs.Code] || fix == "" {
			continue
		}
		seen[rs.Code] = true
		if first {
			out = append(out, "", t.Section.Render("Remedies")+t.Dim.Render(" (docs/reason-codes.md)"))
			first = false
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
			out = append(out, wrap(para, w, "  ")...)
		}
	}
	ev := r.Observation.Events
	out = append(out, "", t.Section.Render(fmt.Sprintf("Events (%d)", len(ev))))
	if len(ev) == 0 {
		out = append(out, t.Dim.Render("  none recent"))
	}
	for _, e := range ev {
		line := fmt.Sprintf("  %s %s %s %s: %s", m.clockTime(e.Last), e.Type, e.Reason, e.Object, e.Message)
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
