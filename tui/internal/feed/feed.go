// Package feed runs the live view's observation: the watches' sync and
// events, the cache reads and the member probes of a Backend, in order,
// and what they bring (the results, the lag history, the leader log); the
// root model hands it the feed's messages and shows what it reports.
package feed

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// Backend is the TUI's reading edge. Every method may block; the model
// calls them only inside a tea.Cmd and gets the answers back as messages.
type Backend interface {
	// Start runs the watches and returns once their caches have synced
	// (or with the reason they could not).
	Start(ctx context.Context) error
	// Changes delivers a value after watched objects changed; a burst of
	// changes may deliver one value.
	Changes() <-chan struct{}
	// Errors delivers watch failures (RBAC, connectivity) as they happen.
	Errors() <-chan error
	// Observe reads every cluster in scope from the watch caches and,
	// with probe, asks every member on its own.
	Observe(ctx context.Context, probe bool) ([]status.Result, status.Warnings, error)
}

// DirectObserver is a Backend that can also read every cluster in scope
// straight from the API server, probing the members when probes are on,
// without waiting for Start: the model's first screen comes from it while
// the watches sync, then the caches take over.
type DirectObserver interface {
	// ExpectDirect is called before ObserveDirect starts in the
	// background: the watches Start then lists after it.
	ExpectDirect()
	ObserveDirect(ctx context.Context) ([]status.Result, status.Warnings, error)
}

// refreshDelay coalesces a burst of watch events into one re-read.
const refreshDelay = 150 * time.Millisecond

// Config is how a Feed reads. The root hands it in with its defaults
// applied: a positive ProbeInterval and a clock.
type Config struct {
	// ProbeInterval is the time between member probes.
	ProbeInterval time.Duration
	// Probes is false when members are not dialled (--no-probe).
	Probes bool
	// Now is the clock.
	Now func() time.Time
}

// Feed is what the root knows of the clusters in scope, and the
// bookkeeping of the cache reads and probes that bring them.
type Feed struct {
	cfg     Config
	ctx     context.Context
	backend Backend
	// prefetch delivers the direct read started before the program ran
	// (StartDirect); nil: Init starts it.
	prefetch <-chan tea.Msg

	results  []status.Result
	loaded   bool
	lastErr  error
	warnings status.Warnings
	probedAt time.Time
	history  common.LagHistory
	// leaders are the leader changes this view saw, per cluster, for
	// the history tab.
	leaders status.LeaderLog

	// seq numbers the reads and probes; appliedSeq is the read or probe
	// shown.
	seq        uint64
	appliedSeq uint64
	probing    bool
	// directPending: the direct read (DirectObserver) has not answered
	// yet. afterDirect: the watches synced meanwhile, and their first
	// probe round waits for it. directProbed: it answered with the facts
	// of a probe of every member, so the watches' first round is the
	// next one, a probe interval later, not a second one at once.
	directPending bool
	afterDirect   bool
	directProbed  bool
	// unsynced: the watches could not sync; nothing refreshes the screen.
	unsynced       bool
	refreshing     bool
	refreshPending bool
	refreshQueued  bool

	// changed is what the message in hand changed; Update reports it.
	changed Changes
}

// Changes are what one message changed, for the root to show.
type Changes struct {
	// Results: there are new results to show (Results).
	Results bool
	// History: a probe's answers went into the lag history and the
	// leader log.
	History bool
	// Dropped: the watches could not sync and the results were dropped
	// (a first screen from the direct read would stay, looking live).
	Dropped bool
	// Status, when not nil, is an error for the status line.
	Status error
	// ClearStatus: the error last reported is over; clear the status
	// line.
	ClearStatus bool
}

// New returns the feed of backend (nil: nothing is read; tests feed
// messages).
func New(ctx context.Context, backend Backend, cfg Config) Feed {
	f := Feed{cfg: cfg, ctx: ctx, backend: backend, history: common.LagHistory{}, leaders: status.LeaderLog{}}
	if _, ok := backend.(DirectObserver); ok {
		// Init starts the direct read (StartDirect may have already).
		f.directPending = true
	}
	return f
}

// Init returns the commands that start the feed: the watches' Start
// (answered by a SyncedMsg) and the direct read; none without a backend.
func (f Feed) Init() []tea.Cmd {
	if f.backend == nil {
		return nil
	}
	b, ctx := f.backend, f.ctx
	return []tea.Cmd{func() tea.Msg { return SyncedMsg{Err: b.Start(ctx)} }, f.observeDirect()}
}

// StartDirect starts the direct read now, before the program runs, so
// the first screen comes sooner; Init then waits for it.
func (f *Feed) StartDirect() { f.prefetch = f.startDirect() }

// Probe starts a round of probes of every member unless one is running
// or there is no backend (then the command is nil).
func (f Feed) Probe() (Feed, tea.Cmd) {
	if f.probing || f.backend == nil {
		return f, nil
	}
	f.probing = true
	cmd := f.observe(true)
	return f, cmd
}

// Update handles the feed's messages and returns the feed, the commands
// that follow and what changed; ok is false for any other message, which
// it leaves alone.
func (f Feed) Update(msg tea.Msg) (_ Feed, _ tea.Cmd, _ Changes, ok bool) {
	f.changed = Changes{}
	f, cmd, ok := f.observation(msg)
	changed := f.changed
	f.changed = Changes{}
	return f, cmd, changed, ok
}

// Results are the clusters in scope, sorted by namespace and name.
func (f Feed) Results() []status.Result { return f.results }

// Loaded reports whether there are results to show.
func (f Feed) Loaded() bool { return f.loaded }

// Err is the last read's error (nil once one succeeds again).
func (f Feed) Err() error { return f.lastErr }

// Warnings are the last read's warnings.
func (f Feed) Warnings() status.Warnings { return f.warnings }

// ProbedAt is when members were last probed (zero: not yet).
func (f Feed) ProbedAt() time.Time { return f.probedAt }

// Probing reports whether a probe round is running.
func (f Feed) Probing() bool { return f.probing }

// History is the members' lag over the recent probes.
func (f Feed) History() common.LagHistory { return f.history }

// Leaders are the leader changes this view saw, per cluster.
func (f Feed) Leaders() status.LeaderLog { return f.leaders }
