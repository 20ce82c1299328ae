package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/components/clusters"
	"github.com/hactl-dev/hactl/tui/components/dialog"
	"github.com/hactl-dev/hactl/tui/components/help"
	"github.com/hactl-dev/hactl/tui/components/members"
	"github.com/hactl-dev/hactl/tui/components/readiness"
	"github.com/hactl-dev/hactl/tui/components/seed"
	"github.com/hactl-dev/hactl/tui/components/timeline"
	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/tui/internal/feed"
	"github.com/hactl-dev/hactl/tui/internal/remedy"
)

// DefaultProbeInterval is how often members are probed when
// Config.ProbeInterval is zero.
const DefaultProbeInterval = 5 * time.Second

// Config is what the TUI shows and how.
type Config struct {
	// Namespace in scope; "" for all namespaces.
	Namespace string
	// Context is the kubeconfig context, shown in the title.
	Context string
	// Cluster, when set, opens that cluster's view at start.
	Cluster string
	// ProbeInterval is the time between member probes.
	ProbeInterval time.Duration
	// Probes is false when members are not dialled (--no-probe).
	Probes bool
	// Verdict are the verdict thresholds the backend judges with (the
	// readiness view marks lags against them).
	Verdict model.VerdictOptions
	// Views are how each engine's facts read, by engine (those the faces
	// hold: engine.Views); a cluster of an engine with none is shown
	// plainly.
	Views map[model.Engine]model.EngineView
	// ReadOnly disables every action; ReadOnlyReason says why
	// ("--readonly", "context prod is read-only").
	ReadOnly       bool
	ReadOnlyReason string
	// LockHolder is this process's identity on a cluster's action lock.
	LockHolder string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Model is the root Bubble Tea model. It routes: it keeps the window
// size (handed to the views with SetSize), the global keys (quit, help,
// filter, probe), the screen, tab and focus that say which view gets the
// other keys, and the action flow (a dialog's request classified, a
// confirmed decision run); it hands the feed its messages and shows what
// the feed reports. The feed runs the reads and probes; the views draw
// and keep their own state.
type Model struct {
	cfg     Config
	ctx     context.Context
	actions Actions

	// dataGen counts changes of what the views show (results, lag
	// history): syncViews rebuilds a view's rows only when it, the focus,
	// the filter or the clock's second changed since the view's last
	// rows, not on every key press or frame.
	dataGen uint64

	theme common.Theme
	keys  common.KeyMap

	width, height int

	screen screen
	tab    tab
	// focus is the key (namespace/name) of the cluster shown on
	// screenCluster.
	focus string

	// feed reads and probes the clusters in scope and keeps what they
	// brought (the results, the lag history, the leader log).
	feed feed.Feed
	// dialogSeq numbers the dialogs (and each new decision one asks for).
	dialogSeq int

	// The views: the clusters screen, a cluster's tabs, the help screen,
	// and the dialog (nil when none is open), which takes every key while
	// it is open.
	clusters  clusters.Model
	members   members.Model
	readiness readiness.Model
	timeline  timeline.Model
	seed      seed.Model
	help      help.Model
	dialog    *dialog.Model

	filter    textinput.Model
	filtering bool
	showHelp  bool

	action *common.RunningAction

	statusText  string
	statusError bool
	quitArmed   bool
}

// Deps are the TUI's edges. Any may be nil: without a Backend nothing is
// read (tests feed messages), without Actions no action is offered,
// without Generations the seed-phase view lists none.
type Deps struct {
	Backend     Backend
	Actions     Actions
	Generations Generations
}

// New returns the model.
func New(ctx context.Context, cfg Config, deps Deps) Model {
	backend, actions := deps.Backend, deps.Actions
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = DefaultProbeInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if ctx == nil {
		ctx = context.Background()
	}
	fi := textinput.New()
	fi.Prompt = "/"
	fi.Placeholder = "filter"
	th := common.NewTheme(true)
	keys := common.DefaultKeyMap().WithReadOnly(cfg.ReadOnly || actions == nil)
	var note string
	switch {
	case cfg.ReadOnly:
		note = "Actions are disabled: " + cfg.ReadOnlyReason + "."
	case actions == nil:
		note = noActionsWhy(cfg) + "."
	}
	m := Model{
		cfg:       cfg,
		ctx:       ctx,
		actions:   actions,
		theme:     th,
		keys:      keys,
		help:      help.New(th, keys, note),
		filter:    fi,
		feed:      feed.New(ctx, backend, feed.Config{ProbeInterval: cfg.ProbeInterval, Probes: cfg.Probes, Now: cfg.Now}),
		clusters:  clusters.New(th, keys, cfg.Namespace),
		members:   members.New(th, keys, remedy.Load(), cfg.Now, cfg.Views),
		readiness: readiness.New(th, keys, cfg.Verdict, cfg.ProbeInterval, cfg.Views),
		timeline:  timeline.New(th, keys),
		seed:      seed.New(th, keys, cfg.Now, deps.Generations, cfg.Views),
	}
	m.resize(80, 24)
	if cfg.Cluster != "" {
		m.screen = screenCluster
		m.focus = cfg.Cluster
		if cfg.Namespace != "" && !strings.Contains(cfg.Cluster, "/") {
			m.focus = cfg.Namespace + "/" + cfg.Cluster
		}
	}
	m.syncViews()
	return m
}

// Init implements tea.Model: it asks for the background colour and starts
// the feed (the watches and the direct read).
func (m Model) Init() tea.Cmd {
	cmds := append([]tea.Cmd{tea.RequestBackgroundColor}, m.feed.Init()...)
	return tea.Batch(cmds...)
}

// Update implements tea.Model. It routes msg, then hands the views the
// data they show.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := m.update(msg)
	m.syncViews()
	return m, cmd
}

func (m Model) update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		if msg.Width <= 0 || msg.Height <= 0 {
			// A size the terminal could not tell: keep drawing at the last
			// one rather than blanking the screen.
			return m, nil
		}
		m.resize(msg.Width, msg.Height)
		m.help.SetSize(msg.Width, msg.Height)
		m.filter.SetWidth(max(10, msg.Width-4))
		return m, nil
	case tea.BackgroundColorMsg:
		m.setTheme(common.NewTheme(msg.IsDark()))
		return m, nil
	case tea.KeyPressMsg:
		return m.handleKey(msg)
	case tea.PasteMsg:
		if m.dialog != nil {
			return m.updateDialog(msg)
		}
		if m.filtering {
			var cmd tea.Cmd
			m.filter, cmd = m.filter.Update(msg)
			return m, cmd
		}
		return m, nil
	case common.GenerationsMsg:
		var cmd tea.Cmd
		m.seed, cmd = m.seed.Update(msg)
		if m.dialog != nil {
			var dcmd tea.Cmd
			m, dcmd = m.updateDialog(msg)
			cmd = tea.Batch(cmd, dcmd)
		}
		return m, cmd
	case dialog.DecidedMsg:
		if m.dialog != nil {
			return m.updateDialog(msg)
		}
		return m, nil
	}
	if f, cmd, changed, ok := m.feed.Update(msg); ok {
		m.feed = f
		m.showFeed(changed)
		return m, cmd
	}
	if cmd, ok := m.actionMsg(msg); ok {
		return m, cmd
	}
	if m.dialog != nil {
		return m.updateDialog(msg)
	}
	return m, nil
}

// bodyHeight is the height of the views in a window h lines high: all
// but the title, subtitle, status and help lines.
func bodyHeight(h int) int { return max(0, h-4) }

// resize sets the window size and hands the views the body's.
func (m *Model) resize(w, h int) {
	m.width, m.height = w, h
	bh := bodyHeight(h)
	m.clusters.SetSize(w, bh)
	m.members.SetSize(w, bh)
	m.readiness.SetSize(w, bh)
	m.timeline.SetSize(w, bh)
	m.seed.SetSize(w, bh)
	if m.dialog != nil {
		d := *m.dialog
		d.SetSize(w, bh)
		m.dialog = &d
	}
}

// setTheme sets the theme and hands it to the views.
func (m *Model) setTheme(th common.Theme) {
	m.theme = th
	m.help.SetTheme(th)
	m.clusters.SetTheme(th)
	m.members.SetTheme(th)
	m.readiness.SetTheme(th)
	m.timeline.SetTheme(th)
	m.seed.SetTheme(th)
	if m.dialog != nil {
		d := *m.dialog
		d.SetTheme(th)
		m.dialog = &d
	}
}

// syncViews hands every view the data it shows: the clusters, the
// focused one, the filter of the current screen, the lag history and the
// running action.
func (m *Model) syncViews() {
	sec := m.cfg.Now().Unix()
	ck := common.ViewKey{Gen: m.dataGen, Filter: m.filterOn(screenClusters), Sec: sec}
	if m.clusters.Stale(ck) {
		m.clusters.SetData(m.feed.Results(), ck.Filter)
		m.clusters.Synced(ck)
	}
	r, _ := m.focused()
	f := m.filterOn(screenCluster)
	k := common.ViewKey{Gen: m.dataGen, Focus: m.focus, Filter: f, Sec: sec}
	if m.members.Stale(k) {
		m.members.SetData(r, f)
		m.members.Synced(k)
	}
	if m.readiness.Stale(k) {
		m.readiness.SetData(r, f, m.feed.History())
		m.readiness.Synced(k)
	}
	if m.timeline.Stale(k) {
		m.timeline.SetData(r, m.feed.Leaders().Of(r.Observation.Cluster))
		m.timeline.Synced(k)
	}
	m.seed.SetData(m.focus, r, m.action)
}

// showFeed shows what a feed message changed: the status line, the data
// the views show, and new results.
func (m *Model) showFeed(c feed.Changes) {
	if c.Status != nil {
		m.setStatus(true, "%v", c.Status)
	}
	if c.ClearStatus {
		m.clearStatus()
	}
	if c.History || c.Dropped {
		m.dataGen++
	}
	if c.Results {
		m.showResults()
	}
}

// showResults takes in the feed's new results and keeps the cursors in
// range.
func (m *Model) showResults() {
	m.dataGen++
	if m.focus != "" && !strings.Contains(m.focus, "/") {
		// A bare name given with all namespaces in scope: take the first
		// cluster of that name.
		for _, r := range m.feed.Results() {
			if r.Observation.Cluster.Name == m.focus {
				m.focus = common.ClusterKey(r.Observation.Cluster)
				break
			}
		}
	}
	m.syncViews()
	m.clusters.Clamp()
	if _, ok := m.focused(); ok {
		m.members.Clamp()
		m.readiness.Clamp()
		m.timeline.Clamp()
	}
}

// focused returns the result of the cluster shown on screenCluster.
func (m Model) focused() (status.Result, bool) {
	for _, r := range m.feed.Results() {
		if common.ClusterKey(r.Observation.Cluster) == m.focus {
			return r, true
		}
	}
	return status.Result{}, false
}

func (m *Model) setStatus(isErr bool, format string, a ...any) {
	m.statusText = strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", " ")
	m.statusError = isErr
}

func (m *Model) clearStatus() { m.statusText, m.statusError = "", false }

// handleKey routes a key press: dialog, filter input and help first, then
// global keys, then the screen shown.
func (m Model) handleKey(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	if msg.String() == "ctrl+c" && m.dialog == nil {
		return m.quit()
	}
	if m.dialog != nil {
		return m.updateDialog(msg)
	}
	if m.filtering {
		return m.updateFilter(msg)
	}
	k := m.keys
	if m.showHelp {
		switch {
		case key.Matches(msg, k.Help, k.Back):
			m.showHelp = false
		case key.Matches(msg, k.Quit):
			return m.quit()
		}
		return m, nil
	}
	if !key.Matches(msg, k.Quit) {
		m.quitArmed = false
	}
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.showHelp = true
		return m, nil
	case key.Matches(msg, k.Filter):
		m.filtering = true
		cmd := m.filter.Focus()
		return m, cmd
	case key.Matches(msg, k.Probe):
		var probe tea.Cmd
		if m.feed, probe = m.feed.Probe(); probe == nil {
			return m, nil
		}
		m.setStatus(false, "probing members…")
		return m, probe
	}
	if m.screen == screenClusters {
		return m.updateClusters(msg)
	}
	return m.updateCluster(msg)
}

// quit ends the program; while an action runs it asks first.
func (m Model) quit() (Model, tea.Cmd) {
	if m.action != nil && !m.action.Done && !m.quitArmed {
		m.quitArmed = true
		m.setStatus(true, "an action is running: press q again to quit (rerunning the same command resumes it)")
		return m, nil
	}
	return m, tea.Quit
}

func (m Model) updateFilter(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	switch msg.String() {
	case "enter":
		m.filtering = false
		m.filter.Blur()
		return m, nil
	case "esc":
		m.filtering = false
		m.filter.Blur()
		m.filter.SetValue("")
		return m, nil
	}
	var cmd tea.Cmd
	m.filter, cmd = m.filter.Update(msg)
	m.clusters.SetCursor(0)
	m.members.SetCursor(0)
	m.readiness.SetCursor(0)
	return m, cmd
}

// filterOn is the filter that applies on screen s, lower-cased: the
// active one on the screen shown, none on the other.
func (m Model) filterOn(s screen) string {
	if m.screen != s {
		return ""
	}
	return strings.ToLower(strings.TrimSpace(m.filter.Value()))
}

// noActionsWhy says why no action can be offered.
func noActionsWhy(cfg Config) string {
	if !cfg.Probes {
		return "actions are not available: they need the members probed (run without --no-probe)"
	}
	return "actions are not available here"
}

// visibleClusters are the results the clusters view lists (filtered).
func (m Model) visibleClusters() []status.Result { return m.clusters.Visible() }

// visibleMembers are the members of r the cluster views list (filtered).
func (m Model) visibleMembers(r status.Result) []model.Member {
	return common.FilterMembers(m.cfg.Views, r, m.filterOn(screenCluster))
}

// selectedMember is the member under the cursor of the current tab.
func (m Model) selectedMember() (status.Result, model.Member, bool) {
	r, ok := m.focused()
	if !ok {
		return r, model.Member{}, false
	}
	ms := m.visibleMembers(r)
	cur := m.members.Cursor()
	if m.tab == tabReadiness {
		cur = m.readiness.Cursor()
	}
	if cur < 0 || cur >= len(ms) {
		return r, model.Member{}, false
	}
	return r, ms[cur], true
}
