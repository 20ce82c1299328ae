package tui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// screen is the top-level view the TUI shows.
type screen int

const (
	// screenClusters lists every cluster in scope.
	screenClusters screen = iota
	// screenCluster shows one cluster, in one of its tabs.
	screenCluster
)

func (s screen) String() string {
	switch s {
	case screenClusters:
		return "clusters"
	case screenCluster:
		return "cluster"
	}
	return "unknown"
}

// tab is one view of a cluster.
type tab int

const (
	tabMembers tab = iota
	tabSeed
	tabReadiness
	tabHistory
	numTabs
)

func (t tab) String() string {
	switch t {
	case tabMembers:
		return "members"
	case tabSeed:
		return "seed phase"
	case tabReadiness:
		return "readiness"
	case tabHistory:
		return "history"
	}
	return "unknown"
}

// updateClusters handles keys on the clusters screen: enter opens the
// selected cluster, esc goes back, the list takes the rest.
func (m Model) updateClusters(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	switch {
	case key.Matches(msg, m.keys.Open):
		if r, ok := m.clusters.Selected(); ok {
			m.openCluster(common.ClusterKey(r.Observation.Cluster))
		}
	case key.Matches(msg, m.keys.Back):
		m = m.back()
	default:
		var cmd tea.Cmd
		m.clusters, cmd = m.clusters.Update(msg)
		return m, cmd
	}
	return m, nil
}

// openCluster shows cluster k's members, its views from the top.
func (m *Model) openCluster(k string) {
	m.focus = k
	m.screen, m.tab = screenCluster, tabMembers
	m.members.Reset()
	m.readiness.SetCursor(0)
	m.timeline.SetCursor(0)
	m.seed.ResetScroll()
	m.filter.SetValue("")
}

// back leaves the current screen (esc): clear the filter first, then go
// up one level.
func (m Model) back() Model {
	if m.filter.Value() != "" {
		m.filter.SetValue("")
		return m
	}
	if m.screen == screenCluster {
		m.screen = screenClusters
		m.tab = tabMembers
	}
	return m
}

// updateCluster handles keys on a cluster's tabs; the seed tab lists the
// generations whenever it is switched to.
func (m Model) updateCluster(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	before := m.tab
	m, cmd := m.clusterKey(msg)
	if m.tab == tabSeed && before != tabSeed {
		cmd = tea.Batch(cmd, m.loadGenerations())
	}
	return m, cmd
}

// clusterKey handles the keys of every tab (back, switching tabs, the
// actions) and passes the rest to the tab shown.
func (m Model) clusterKey(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Back):
		m = m.back()
	case key.Matches(msg, k.NextTab):
		m.tab = (m.tab + 1) % numTabs
	case key.Matches(msg, k.PrevTab):
		m.tab = (m.tab + numTabs - 1) % numTabs
	case msg.String() == "1", msg.String() == "2", msg.String() == "3", msg.String() == "4":
		m.tab = tab(msg.String()[0] - '1')
	case key.Matches(msg, k.Replace, k.Reseed, k.Seed, k.Restore, k.Switchover):
		a, _ := actionFor(k, msg)
		return m.openDialog(a, false)
	case key.Matches(msg, k.Explain):
		return m.openDialog(model.ActionReplace, true)
	case isActionKey(k, msg):
		// An action key while actions are disabled.
		if m.cfg.ReadOnly {
			m.setStatus(true, "read-only: actions are disabled (%s)", m.cfg.ReadOnlyReason)
		} else {
			m.setStatus(true, "%s", noActionsWhy(m.cfg))
		}
	default:
		return m.updateTab(msg)
	}
	return m, nil
}

// isActionKey reports whether msg is an action's key, enabled or not.
func isActionKey(k common.KeyMap, msg tea.KeyPressMsg) bool {
	_, ok := actionFor(k, msg)
	return ok
}

// updateTab passes a key to the view of the tab shown. The seed tab lists
// no members: up and down move the members tab's cursor, the member the
// action keys apply to. The readiness tab has no pane: pgup and pgdn
// scroll the members tab's.
func (m Model) updateTab(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	var cmd tea.Cmd
	switch {
	case m.tab == tabSeed && key.Matches(msg, m.keys.ScrollUp, m.keys.ScrollDown):
		m.seed, cmd = m.seed.Update(msg)
	case m.tab == tabReadiness && key.Matches(msg, m.keys.Up, m.keys.Down):
		m.readiness, cmd = m.readiness.Update(msg)
	case m.tab == tabHistory && key.Matches(msg, m.keys.Up, m.keys.Down):
		m.timeline, cmd = m.timeline.Update(msg)
	default:
		m.members, cmd = m.members.Update(msg)
	}
	return m, cmd
}

// loadGenerations lists the focused cluster's generations in a Cmd.
func (m *Model) loadGenerations() tea.Cmd {
	r, ok := m.focused()
	if !ok {
		return nil
	}
	return m.seed.Load(m.ctx, m.focus, r.Observation.Cluster)
}

// clusterBody draws the focused cluster's tab shown.
func (m Model) clusterBody() []string {
	if _, ok := m.focused(); !ok {
		return append([]string{""}, common.Wrap(fmt.Sprintf("Cluster %s is not in scope (any more). esc goes back to the list.", m.focus), m.width-2, "  ")...)
	}
	switch m.tab {
	case tabSeed:
		return m.seed.View()
	case tabReadiness:
		return m.readiness.View()
	case tabHistory:
		return m.timeline.View()
	}
	return m.members.View()
}

// screenHelp is the short help of one screen.
type screenHelp struct {
	short []key.Binding
	full  [][]key.Binding
}

func (h screenHelp) ShortHelp() []key.Binding  { return h.short }
func (h screenHelp) FullHelp() [][]key.Binding { return h.full }

// helpFor returns the bindings that matter on screen s.
func helpFor(k common.KeyMap, s screen) screenHelp {
	switch s {
	case screenClusters:
		return screenHelp{short: []key.Binding{k.Up, k.Down, k.Open, k.Filter, k.Probe, k.Help, k.Quit}, full: k.FullHelp()}
	default:
		return screenHelp{short: []key.Binding{k.NextTab, k.Replace, k.Reseed, k.Seed, k.Restore, k.Switchover, k.Explain, k.Back, k.Help, k.Quit}, full: k.FullHelp()}
	}
}

// actionFor maps an action key to its model.Action.
func actionFor(k common.KeyMap, msg tea.KeyPressMsg) (model.Action, bool) {
	switch msg.String() {
	case k.Replace.Keys()[0]:
		return model.ActionReplace, true
	case k.Reseed.Keys()[0]:
		return model.ActionReseed, true
	case k.Seed.Keys()[0]:
		return model.ActionSeed, true
	case k.Restore.Keys()[0]:
		return model.ActionRestore, true
	case k.Switchover.Keys()[0]:
		return model.ActionSwitchover, true
	}
	return "", false
}
