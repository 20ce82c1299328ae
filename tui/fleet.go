package tui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/components/clusters"
	"github.com/hactl-dev/hactl/tui/components/table"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// FleetContext is one kubeconfig context as a fleet read found it: its
// clusters, or why they could not be read.
type FleetContext struct {
	Name    string
	Results []status.Result
	Err     error
}

// FleetChoice is the cluster the user opened from the fleet view.
type FleetChoice struct {
	Context, Namespace, Cluster string
}

// FleetOptions configure RunFleet.
type FleetOptions struct {
	// Read reads every context once (each bounded by the caller: a
	// context that does not answer comes back with its error).
	Read func(ctx context.Context) []FleetContext
	// Interval is the time between reads.
	Interval time.Duration
	// Selected, when set, is the cluster the cursor starts on (the one
	// the user comes back from).
	Selected FleetChoice
	// First, when set, is a read already made: shown at once.
	First []FleetContext
	// ByVerdict and Filter are the sort and filter to start with.
	ByVerdict bool
	Filter    string

	// Note, when set, is shown in the status line at start (why the
	// cluster last chosen could not be opened).
	Note string
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	In     io.Reader
	Out    io.Writer
	Env    []string
	Width  int
	Height int
	Log    io.Writer
}

// FleetResult is how the fleet view ended: the cluster opened (Opened),
// and what to hand the next RunFleet to come back to the same screen: the
// last read, the sort and the filter.
type FleetResult struct {
	Choice    FleetChoice
	Opened    bool
	Contexts  []FleetContext
	ByVerdict bool
	Filter    string
}

// RunFleet shows the fleet view until the user opens a cluster or quits.
func RunFleet(ctx context.Context, o FleetOptions) (FleetResult, error) {
	if o.Read == nil {
		return FleetResult{}, errors.New("tui: no fleet reader")
	}
	restore := RouteKlog(o.Log)
	defer restore()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := tea.NewProgram(newFleet(ctx, o), programOptions(ctx, o.In, o.Out, o.Env, o.Width, o.Height)...)
	final, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return FleetResult{}, nil
	}
	if err != nil {
		return FleetResult{}, fmt.Errorf("running the fleet view: %w", err)
	}
	f, _ := final.(fleet)
	return FleetResult{Choice: f.chosen, Opened: f.opened, Contexts: f.contexts, ByVerdict: f.byVerdict, Filter: f.filter.Value()}, nil
}

// fleetRow is one line of the fleet table: a cluster of a context, or a
// context that could not be read (err set).
type fleetRow struct {
	context string
	result  status.Result
	err     error
}

func (r fleetRow) choice() FleetChoice {
	c := r.result.Observation.Cluster
	return FleetChoice{Context: r.context, Namespace: c.Namespace, Cluster: c.Name}
}

// severity orders rows worst first: a context that could not be read,
// then not control-ready, not failover-ready, failover-ready.
func (r fleetRow) severity() int {
	switch {
	case r.err != nil:
		return 0
	case !r.result.Verdict.ControlReady:
		return 1
	case !r.result.Verdict.FailoverReady:
		return 2
	}
	return 3
}

// fleetReadMsg carries a read of every context.
type fleetReadMsg struct {
	contexts []FleetContext
	at       time.Time
}

// fleetTickMsg says it is time to read again: the tick scheduled after
// read seq (older ticks are ignored, so that one loop of reads runs).
type fleetTickMsg struct{ seq int }

// fleet is the fleet view: every cluster of every context in one table,
// grouped by context (or sorted by verdict, worst first), filtered, and
// opened with enter.
type fleet struct {
	ctx  context.Context
	opts FleetOptions
	keys common.KeyMap

	table table.Model
	// contexts is the last read; rows its lines.
	contexts []FleetContext
	rows     []fleetRow
	visible  []fleetRow
	read     time.Time
	reading  bool
	loaded   bool
	// reads counts the reads that answered; the tick after the last one
	// carries it.
	reads int

	byVerdict bool
	filter    textinput.Model
	filtering bool

	width, height int
	chosen        FleetChoice
	opened        bool
	note          string
}

// fleetPreview is how many lines the preview under the table takes.
const fleetPreview = 6

// The fleet's own keys.
var (
	fleetSortKey    = key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort by verdict / by context"))
	fleetRefreshKey = key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "read again"))
)

func newFleet(ctx context.Context, o FleetOptions) fleet {
	if o.Now == nil {
		o.Now = time.Now
	}
	keys := common.DefaultKeyMap()
	th := common.NewTheme(true)
	fi := textinput.New()
	fi.Prompt = "/"
	fi.Placeholder = "filter"
	fi.SetValue(o.Filter)
	f := fleet{ctx: ctx, opts: o, keys: keys, filter: fi, note: oneLine(o.Note), byVerdict: o.ByVerdict,
		table: table.New(th, keys,
			table.Column{Title: "CONTEXT", Min: 6, Max: 24},
			table.Column{Title: "NAMESPACE", Min: 6, Max: 20, Drop: 1},
			table.Column{Title: "NAME", Min: 8, Max: 30},
			table.Column{Title: "ENGINE", Max: 8, Drop: 2},
			table.Column{Title: "READY", Max: 7},
			table.Column{Title: "VERDICT", Max: 18},
			table.Column{Title: "REASONS", Min: 10},
		)}
	if o.First != nil {
		f.setContexts(o.First, o.Now())
	}
	// Init starts the first read (Init cannot keep state: it is said
	// here).
	f.reading = true
	return f
}

// Init asks for the terminal's background and reads every context: a read
// handed in (First, the screen the user comes back to) is shown until it
// answers.
func (f fleet) Init() tea.Cmd {
	return tea.Batch(tea.RequestBackgroundColor, f.reader())
}

// readCmd starts a read (the caller checked none runs).
func (f *fleet) readCmd() tea.Cmd {
	f.reading = true
	return f.reader()
}

func (f fleet) reader() tea.Cmd {
	read, ctx, now := f.opts.Read, f.ctx, f.opts.Now
	return func() tea.Msg { return fleetReadMsg{contexts: read(ctx), at: now()} }
}

// tick schedules the next read, an interval after the last one answered.
func (f fleet) tick() tea.Cmd {
	seq := f.reads
	return tea.Tick(max(f.opts.Interval, time.Second), func(time.Time) tea.Msg { return fleetTickMsg{seq: seq} })
}

// setContexts replaces the rows, keeping the cursor on the same cluster
// (or on Selected, the first time).
func (f *fleet) setContexts(cs []FleetContext, at time.Time) {
	was, had := f.current()
	if !f.loaded && f.opts.Selected != (FleetChoice{}) {
		was, had = fleetRow{context: f.opts.Selected.Context}, true
		was.result.Observation.Cluster.Namespace = f.opts.Selected.Namespace
		was.result.Observation.Cluster.Name = f.opts.Selected.Cluster
	}
	f.contexts = cs
	f.rows = f.rows[:0]
	for _, c := range cs {
		if c.Err != nil {
			f.rows = append(f.rows, fleetRow{context: c.Name, err: c.Err})
			continue
		}
		for _, r := range c.Results {
			f.rows = append(f.rows, fleetRow{context: c.Name, result: r})
		}
	}
	f.read, f.loaded = at, true
	f.refresh()
	if had {
		for i, r := range f.visible {
			if r.err == nil && r.choice() == was.choice() || r.err != nil && was.err != nil && r.context == was.context {
				f.table.SetCursor(i)
				break
			}
		}
	}
}

// refresh sorts and filters the rows and rebuilds the table.
func (f *fleet) refresh() {
	rows := slices.Clone(f.rows)
	slices.SortStableFunc(rows, func(a, b fleetRow) int {
		if f.byVerdict {
			if c := cmp.Compare(a.severity(), b.severity()); c != 0 {
				return c
			}
		}
		ac, bc := a.result.Observation.Cluster, b.result.Observation.Cluster
		return cmp.Or(cmp.Compare(a.context, b.context), cmp.Compare(ac.Namespace, bc.Namespace), cmp.Compare(ac.Name, bc.Name))
	})
	needle := strings.ToLower(strings.TrimSpace(f.filter.Value()))
	f.visible = f.visible[:0]
	for _, r := range rows {
		if needle == "" || strings.Contains(strings.ToLower(r.haystack()), needle) {
			f.visible = append(f.visible, r)
		}
	}
	t := f.table.Theme()
	cells := make([][]table.Cell, 0, len(f.visible))
	prev := ""
	for _, r := range f.visible {
		// Grouped by context: its name on the group's first row.
		ctxCell := table.Plain(r.context)
		if !f.byVerdict && r.context == prev {
			ctxCell = table.Plain("")
		}
		prev = r.context
		if r.err != nil {
			cells = append(cells, []table.Cell{ctxCell, table.Plain("-"), table.Plain("-"), table.Plain("-"), table.Plain("-"),
				table.Styled("UNREADABLE", t.Bad), table.Plain(oneLine(r.err.Error()))})
			continue
		}
		cl := r.result.Observation.Cluster
		badge, word := t.Good, "failover-ready"
		switch {
		case !r.result.Verdict.ControlReady:
			badge, word = t.Bad, "NOT control-ready"
		case !r.result.Verdict.FailoverReady:
			badge, word = t.Warn, "NOT failover-ready"
		}
		cells = append(cells, []table.Cell{ctxCell, table.Plain(cl.Namespace), table.Plain(cl.Name), table.Plain(cl.Engine.String()),
			table.Plain(fmt.Sprintf("%d/%d", clusters.ReadyCount(r.result), cl.Replicas)), table.Styled(word, badge),
			table.Plain(common.TopReasons(r.result.Verdict, 3))})
	}
	f.table.SetRows(cells)
	f.table.Clamp()
}

func (r fleetRow) haystack() string {
	if r.err != nil {
		return r.context + " unreadable " + r.err.Error()
	}
	cl := r.result.Observation.Cluster
	return strings.Join([]string{r.context, cl.Namespace, cl.Name, cl.Engine.String(), common.TopReasons(r.result.Verdict, 100)}, " ")
}

// oneLine is s on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (f fleet) current() (fleetRow, bool) {
	if f.table.Cursor() < 0 || f.table.Cursor() >= len(f.visible) {
		return fleetRow{}, false
	}
	return f.visible[f.table.Cursor()], true
}

// Update implements tea.Model.
func (f fleet) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		if msg.Width <= 0 || msg.Height <= 0 {
			return f, nil
		}
		f.width, f.height = msg.Width, msg.Height
		// The table, and under it a preview of the selected row (its
		// reasons, or why its context could not be read).
		f.table.SetSize(msg.Width, max(1, msg.Height-fleetPreview-4))
		f.filter.SetWidth(max(10, msg.Width-4))
	case tea.BackgroundColorMsg:
		f.table.SetTheme(common.NewTheme(msg.IsDark()))
		f.refresh()
	case fleetReadMsg:
		f.reading = false
		f.reads++
		f.setContexts(msg.contexts, msg.at)
		return f, f.tick()
	case fleetTickMsg:
		if f.reading || msg.seq != f.reads {
			// A read runs, or answered since this tick was scheduled
			// (p): its own tick follows.
			return f, nil
		}
		cmd := f.readCmd()
		return f, cmd
	case tea.PasteMsg:
		if f.filtering {
			var cmd tea.Cmd
			f.filter, cmd = f.filter.Update(msg)
			f.table.SetCursor(0)
			f.refresh()
			return f, cmd
		}
	case tea.KeyPressMsg:
		return f.key(msg)
	}
	return f, nil
}

func (f fleet) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if f.filtering {
		switch msg.String() {
		case "ctrl+c":
			return f, tea.Quit
		case "enter":
			f.filtering = false
			f.filter.Blur()
			return f, nil
		case "esc":
			f.filtering = false
			f.filter.Blur()
			f.filter.SetValue("")
			f.refresh()
			return f, nil
		}
		var cmd tea.Cmd
		f.filter, cmd = f.filter.Update(msg)
		f.table.SetCursor(0)
		f.refresh()
		return f, cmd
	}
	f.note = ""
	switch {
	case key.Matches(msg, f.keys.Quit):
		return f, tea.Quit
	case key.Matches(msg, f.keys.Filter):
		f.filtering = true
		cmd := f.filter.Focus()
		return f, cmd
	case key.Matches(msg, f.keys.Back):
		if f.filter.Value() != "" {
			f.filter.SetValue("")
			f.refresh()
		}
		return f, nil
	case key.Matches(msg, fleetSortKey):
		f.byVerdict = !f.byVerdict
		was, ok := f.current()
		f.refresh()
		if ok {
			for i, r := range f.visible {
				if r.context == was.context && r.choice() == was.choice() {
					f.table.SetCursor(i)
				}
			}
		}
		return f, nil
	case key.Matches(msg, fleetRefreshKey):
		if f.reading {
			return f, nil
		}
		cmd := f.readCmd()
		return f, cmd
	case key.Matches(msg, f.keys.Open):
		r, ok := f.current()
		switch {
		case !ok:
			return f, nil
		case r.err != nil:
			f.note = fmt.Sprintf("context %s could not be read: %s", r.context, oneLine(r.err.Error()))
			return f, nil
		}
		f.chosen, f.opened = r.choice(), true
		return f, tea.Quit
	}
	var cmd tea.Cmd
	f.table, cmd = f.table.Update(msg)
	return f, cmd
}

// View implements tea.Model.
func (f fleet) View() tea.View {
	v := tea.NewView(f.render())
	v.AltScreen = true
	v.WindowTitle = "kubectl hactl: fleet"
	return v
}

// render draws the screen: a title with the counts, the table, and the
// keys (or the filter, or a note).
func (f fleet) render() string {
	if f.width <= 0 || f.height <= 0 {
		return ""
	}
	t := f.table.Theme()
	lines := []string{f.title()}
	switch {
	case !f.loaded:
		lines = append(lines, "", "  "+t.Dim.Render("reading every context…"))
	case len(f.rows) == 0:
		lines = append(lines, "", "  "+t.Dim.Render("no HA clusters in any context"))
	default:
		lines = append(lines, f.table.View()...)
		if len(f.visible) == 0 {
			lines = append(lines, "  "+t.Dim.Render("nothing matches the filter"))
		}
		if r, ok := f.current(); ok {
			var preview []string
			if r.err != nil {
				preview = common.Wrap("context "+r.context+" could not be read: "+oneLine(r.err.Error()), f.width-2, "  ")
				for i := range preview {
					preview[i] = t.Bad.Render(preview[i])
				}
			} else {
				preview = clusters.ReasonPreview(t, r.result)
			}
			lines = append(lines, "")
			lines = append(lines, preview[:min(len(preview), fleetPreview-1)]...)
		}
	}
	lines = common.Clip(lines, f.width, max(0, f.height-2))
	keys := "enter open · / filter · s sort by " + map[bool]string{true: "context", false: "verdict"}[f.byVerdict] + " · p read again · q quit"
	foot := t.Dim.Render(keys)
	switch {
	case f.filtering:
		foot = f.filter.View()
	case f.filter.Value() != "":
		foot = t.Dim.Render("filter: "+f.filter.Value()+" (esc clears) · ") + t.Dim.Render(keys)
	}
	status := ""
	if f.note != "" {
		status = t.StatusError.Render(f.note)
	} else if f.loaded {
		status = t.StatusInfo.Render(fmt.Sprintf("read %s; again every %s", f.read.Format("15:04:05"), max(f.opts.Interval, time.Second)))
	}
	lines = append(lines, foot, status)
	return strings.Join(common.Clip(lines, f.width, f.height), "\n")
}

// title counts contexts, clusters and verdicts.
func (f fleet) title() string {
	t := f.table.Theme()
	unreadable, notCR, notFR, clusters := 0, 0, 0, 0
	for _, r := range f.rows {
		switch r.severity() {
		case 0:
			unreadable++
			continue
		case 1:
			notCR++
		case 2:
			notFR++
		}
		clusters++
	}
	parts := []string{t.Title.Render("hactl fleet"), model.Plural(len(f.contexts), "context") + " · " + model.Plural(clusters, "cluster")}
	if notCR > 0 {
		parts = append(parts, t.Bad.Render(fmt.Sprintf("%d NOT control-ready", notCR)))
	}
	if notFR > 0 {
		parts = append(parts, t.Warn.Render(fmt.Sprintf("%d NOT failover-ready", notFR)))
	}
	if unreadable > 0 {
		parts = append(parts, t.Bad.Render(fmt.Sprintf("%d unreadable", unreadable)))
	}
	return common.Fit(strings.Join(parts, "  "), f.width)
}
