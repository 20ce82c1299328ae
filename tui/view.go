package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// View implements tea.Model.
func (m Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "kubectl hactl"
	return v
}

// Render draws the whole screen as exactly height lines of at most width
// cells.
func (m Model) Render() string {
	w, h := m.width, m.height
	if w <= 0 || h <= 0 {
		return ""
	}
	// Update (and New) synced the views' rows; a frame only draws. The
	// seed tab takes its data as it is (cheap: no rows to build).
	r, _ := m.focused()
	m.seed.SetData(m.focus, r, m.action)
	bodyH := bodyHeight(h)
	var body []string
	switch {
	case m.showHelp:
		body = m.help.View()
	case m.feed.Err() != nil && !m.feed.Loaded():
		body = m.errorBody(w)
	case !m.feed.Loaded():
		body = []string{"", "  " + m.theme.Dim.Render("reading clusters…")}
	case m.screen == screenClusters:
		body = m.clusters.View()
	default:
		body = m.clusterBody()
	}
	body = common.Clip(body, w, bodyH)
	if m.dialog != nil {
		body = m.dialog.View()
	}
	lines := []string{m.titleLine(w), m.subtitleLine(w)}
	lines = append(lines, body...)
	lines = append(lines, m.statusLine(w), m.helpLine())
	return strings.Join(common.Clip(lines, w, h), "\n")
}

func (m Model) titleLine(w int) string {
	t := m.theme
	left := t.Title.Render("kubectl hactl")
	scope := "all namespaces"
	if m.cfg.Namespace != "" {
		scope = "ns " + m.cfg.Namespace
	}
	if m.cfg.Context != "" {
		scope = m.cfg.Context + " · " + scope
	}
	left += " " + t.Crumb.Render(scope)
	right := ""
	if m.screen == screenCluster {
		name := m.focus
		if m.cfg.Namespace != "" {
			name = strings.TrimPrefix(name, m.cfg.Namespace+"/")
		}
		left += t.Crumb.Render(" › ") + t.Bold.Render(name)
		if r, ok := m.focused(); ok {
			right = t.VerdictBadge(r.Verdict)
		}
	}
	if m.cfg.ReadOnly {
		right = strings.TrimSpace(t.Dim.Render("[read-only]") + " " + right)
	}
	return common.Spread(left, right, w)
}

func (m Model) subtitleLine(w int) string {
	t := m.theme
	if m.screen == screenCluster {
		var parts []string
		for i := tab(0); i < numTabs; i++ {
			label := fmt.Sprintf("%d:%s", i+1, i)
			if i == m.tab {
				parts = append(parts, t.TabActive.Render(label))
			} else {
				parts = append(parts, t.Tab.Render(label))
			}
		}
		return common.Spread(strings.Join(parts, "  "), t.Dim.Render(m.freshness()), w)
	}
	n, ok := len(m.feed.Results()), 0
	for _, r := range m.feed.Results() {
		if r.Verdict.FailoverReady {
			ok++
		}
	}
	left := t.Dim.Render(fmt.Sprintf("%s · %d failover-ready", model.Plural(n, "cluster"), ok))
	return common.Spread(left, t.Dim.Render(m.freshness()), w)
}

// freshness says when members were last probed.
func (m Model) freshness() string {
	switch {
	case !m.cfg.Probes:
		return "members not probed (--no-probe)"
	case m.feed.Probing() && m.feed.ProbedAt().IsZero():
		return "probing…"
	case m.feed.ProbedAt().IsZero():
		return ""
	}
	return "probed " + common.TimeOfDay(m.feed.ProbedAt(), m.cfg.Now()) + fmt.Sprintf(" · every %s", m.cfg.ProbeInterval)
}

func (m Model) statusLine(w int) string {
	if m.filtering {
		return m.filter.View()
	}
	t := m.theme
	if m.statusText != "" {
		if m.statusError {
			return t.StatusError.Render(m.statusText)
		}
		return t.StatusInfo.Render(m.statusText)
	}
	if f := m.filter.Value(); f != "" {
		return t.StatusInfo.Render("filter: " + f + "  (esc clears)")
	}
	if m.action != nil {
		return t.StatusInfo.Render(m.action.Summary())
	}
	if warn := m.feed.Warnings(); len(warn) > 0 {
		return t.StatusInfo.Render("warning: " + warn[0])
	}
	return ""
}

// helpLine is the short help of what has the focus.
func (m Model) helpLine() string {
	if m.dialog != nil {
		return m.help.Line(m.dialog.ShortHelp())
	}
	// Narrow: tab is shown in the header, esc in help.
	return m.help.Line(helpFor(m.keys, m.screen).short, m.keys.NextTab, m.keys.Back)
}

func (m Model) errorBody(w int) []string {
	lines := []string{"", "  " + m.theme.Bad.Render("Cannot read the clusters:"), ""}
	lines = append(lines, common.Wrap(m.feed.Err().Error(), w-2, "  ")...)
	return append(lines, "", "  "+m.theme.Dim.Render("q quits"))
}
