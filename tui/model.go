package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/internal/remedy"
	"github.com/hactl-dev/hactl/verdict"
)

// DefaultProbeInterval is how often members are probed when
// Config.ProbeInterval is zero.
const DefaultProbeInterval = 5 * time.Second

// refreshDelay coalesces a burst of watch events into one re-read.
const refreshDelay = 150 * time.Millisecond

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
	// Verdict are the verdict thresholds (used to re-evaluate after watch
	// events between probes).
	Verdict verdict.Options
	// ReadOnly disables every action; ReadOnlyReason says why
	// ("--readonly", "context prod is read-only").
	ReadOnly       bool
	ReadOnlyReason string
	// LockHolder is this process's identity on a cluster's action lock.
	LockHolder string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Model is the root Bubble Tea model: it routes window sizes, global keys
// and focus, keeps the observations, and draws the focused view.
type Model struct {
	cfg         Config
	ctx         context.Context
	backend     Backend
	actions     Actions
	generations Generations
	gens        map[string]genState

	theme Theme
	keys  KeyMap
	help  help.Model
	book  remedy.Book

	width, height int

	screen screen
	tab    tab
	// focus is the key (namespace/name) of the cluster shown on
	// screenCluster.
	focus string

	results  []status.Result
	loaded   bool
	lastErr  error
	warnings status.Warnings
	probedAt time.Time
	history  lagHistory

	clusters  listState
	members   listState
	readiness listState
	lower     int // scroll of the reasons/events pane
	seedTop   int // scroll of the seed-phase view

	filter    textinput.Model
	filtering bool

	showHelp bool
	dialog   *dialog
	action   *runningAction

	statusText  string
	statusError bool
	quitArmed   bool

	// Observation bookkeeping.
	seq            uint64
	appliedSeq     uint64
	probing        bool
	refreshing     bool
	refreshPending bool
	refreshQueued  bool
	facts          probeFacts
}

// listState is a cursor in a list; the window shown follows it.
type listState struct{ cursor int }

func (l *listState) move(d, n int) {
	l.cursor = min(max(l.cursor+d, 0), max(n-1, 0))
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
	th := NewTheme(true)
	h := help.New()
	h.Styles = th.Help
	m := Model{
		cfg:         cfg,
		ctx:         ctx,
		backend:     backend,
		actions:     actions,
		generations: deps.Generations,
		gens:        map[string]genState{},
		theme:       th,
		keys:        DefaultKeyMap().withReadOnly(cfg.ReadOnly || actions == nil),
		help:        h,
		book:        remedy.Load(),
		width:       80,
		height:      24,
		filter:      fi,
		history:     lagHistory{},
	}
	if cfg.Cluster != "" {
		m.screen = screenCluster
		m.focus = cfg.Cluster
		if cfg.Namespace != "" && !strings.Contains(cfg.Cluster, "/") {
			m.focus = cfg.Namespace + "/" + cfg.Cluster
		}
	}
	return m
}

// Init implements tea.Model: it asks for the background colour and starts
// the watches.
func (m Model) Init() tea.Cmd {
	cmds := []tea.Cmd{tea.RequestBackgroundColor}
	if m.backend != nil {
		b, ctx := m.backend, m.ctx
		cmds = append(cmds, func() tea.Msg { return syncedMsg{err: b.Start(ctx)} })
	}
	return tea.Batch(cmds...)
}

func (m Model) now() time.Time { return m.cfg.Now() }

// clockTime formats t as a time of day in the clock's location.
func (m Model) clockTime(t time.Time) string { return t.In(m.now().Location()).Format("15:04:05") }

// Update implements tea.Model.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		if msg.Width <= 0 || msg.Height <= 0 {
			// A size the terminal could not tell: keep drawing at the last
			// one rather than blanking the screen.
			return m, nil
		}
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		m.filter.SetWidth(max(10, msg.Width-4))
		return m, nil
	case tea.BackgroundColorMsg:
		m.theme = NewTheme(msg.IsDark())
		m.help.Styles = m.theme.Help
		return m, nil
	case syncedMsg:
		if msg.err != nil {
			m.lastErr = msg.err
			m.setStatus(true, "%v", msg.err)
			return m, nil
		}
		m.probing = true
		return m, tea.Batch(m.observe(true), m.waitChange(), m.waitError())
	case changedMsg:
		cmds := []tea.Cmd{m.waitChange()}
		if !m.refreshQueued {
			m.refreshQueued = true
			cmds = append(cmds, tea.Tick(refreshDelay, func(time.Time) tea.Msg { return refreshMsg{} }))
		}
		return m, tea.Batch(cmds...)
	case refreshMsg:
		m.refreshQueued = false
		if m.refreshing {
			m.refreshPending = true
			return m, nil
		}
		m.refreshing = true
		return m, m.observe(false)
	case probeTickMsg:
		if m.probing {
			return m, nil
		}
		m.probing = true
		return m, m.observe(true)
	case watchErrMsg:
		m.setStatus(true, "%v", msg.err)
		return m, m.waitError()
	case observedMsg:
		return m.applyObserved(msg)
	case generationsMsg:
		m.gens[msg.key] = genState{gens: msg.gens, err: msg.err}
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
	}
	if cmd, ok := m.actionMsg(msg); ok {
		return m, cmd
	}
	if m.dialog != nil {
		return m.updateDialog(msg)
	}
	return m, nil
}

// focused returns the result of the cluster shown on screenCluster.
func (m Model) focused() (status.Result, bool) {
	for _, r := range m.results {
		if clusterKey(r.Observation.Cluster) == m.focus {
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
// global keys, then the focused screen.
func (m Model) handleKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
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
		return m, m.filter.Focus()
	case key.Matches(msg, k.Probe):
		if m.probing || m.backend == nil {
			return m, nil
		}
		m.probing = true
		m.setStatus(false, "probing members…")
		return m, m.observe(true)
	}
	if m.screen == screenClusters {
		return m.updateClusters(msg)
	}
	return m.updateCluster(msg)
}

// quit ends the program; while an action runs it asks first.
func (m Model) quit() (tea.Model, tea.Cmd) {
	if m.action != nil && !m.action.done && !m.quitArmed {
		m.quitArmed = true
		m.setStatus(true, "an action is running: press q again to quit (rerunning the same command resumes it)")
		return m, nil
	}
	return m, tea.Quit
}

func (m Model) updateFilter(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
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
	m.clusters.cursor, m.members.cursor, m.readiness.cursor = 0, 0, 0
	return m, cmd
}

// filterText is the active filter, lower-cased.
func (m Model) filterText() string { return strings.ToLower(strings.TrimSpace(m.filter.Value())) }

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
		m.lower = 0
	}
	return m
}

// noActionsWhy says why no action can be offered.
func (m Model) noActionsWhy() string {
	if !m.cfg.Probes {
		return "actions are not available: they need the members probed (run without --no-probe)"
	}
	return "actions are not available here"
}

// visibleClusters are the results the clusters view lists (filtered).
func (m Model) visibleClusters() []status.Result {
	f := m.filterText()
	if f == "" || m.screen != screenClusters {
		return m.results
	}
	var out []status.Result
	for _, r := range m.results {
		hay := strings.ToLower(clusterKey(r.Observation.Cluster) + " " + r.Observation.Cluster.Engine.String() + " " + topReasons(r.Verdict, 100))
		if strings.Contains(hay, f) {
			out = append(out, r)
		}
	}
	return out
}

// visibleMembers are the members of r the cluster views list (filtered).
func (m Model) visibleMembers(r status.Result) []model.Member {
	f := m.filterText()
	if f == "" || m.screen != screenCluster {
		return r.Observation.Members
	}
	var out []model.Member
	for _, mem := range r.Observation.Members {
		hay := mem.Name + " " + mem.Phase.String() + " " + mem.Engine.Role().String()
		if mem.Pod != nil {
			hay += " " + mem.Pod.Node
		}
		if strings.Contains(strings.ToLower(hay), f) {
			out = append(out, mem)
		}
	}
	return out
}

// selectedMember is the member under the cursor of the current tab.
func (m Model) selectedMember() (status.Result, model.Member, bool) {
	r, ok := m.focused()
	if !ok {
		return r, model.Member{}, false
	}
	ms := m.visibleMembers(r)
	cur := m.members.cursor
	if m.tab == tabReadiness {
		cur = m.readiness.cursor
	}
	if cur < 0 || cur >= len(ms) {
		return r, model.Member{}, false
	}
	return r, ms[cur], true
}
