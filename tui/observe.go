package tui

import (
	"sort"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// observations are what the root knows of the clusters in scope, and the
// bookkeeping of the cache reads and probes that bring them.
type observations struct {
	results  []status.Result
	loaded   bool
	lastErr  error
	warnings status.Warnings
	probedAt time.Time
	history  common.LagHistory
	// leaders are the leader changes this view saw, per cluster, for
	// the history tab.
	leaders status.LeaderLog

	// seq numbers the reads and probes (and the dialogs); appliedSeq is
	// the read or probe shown.
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
}

// observe reads (and with probe, probes) every cluster in a Cmd.
func (m *Model) observe(probe bool) tea.Cmd {
	if m.backend == nil {
		return nil
	}
	m.seq++
	seq, b, ctx, now := m.seq, m.backend, m.ctx, m.cfg.Now
	return func() tea.Msg {
		// A read without a probe comes judged with the members' last
		// answers (the backend's watcher keeps them): the view shows it.
		rs, warn, err := b.Observe(ctx, probe)
		return observedMsg{seq: seq, probed: probe, results: rs, warnings: warn, err: err, at: now()}
	}
}

func (m Model) waitChange() tea.Cmd {
	if m.backend == nil {
		return nil
	}
	ch := m.backend.Changes()
	return func() tea.Msg {
		if _, ok := <-ch; !ok {
			return nil
		}
		return changedMsg{}
	}
}

func (m Model) waitError() tea.Cmd {
	if m.backend == nil {
		return nil
	}
	ch := m.backend.Errors()
	return func() tea.Msg {
		err, ok := <-ch
		if !ok {
			return nil
		}
		return watchErrMsg{err: err}
	}
}

// observeDirect is the first read, from the API server while the watches
// sync (nil when the backend cannot). Its sequence number is 0: any read
// the model issues later supersedes it.
func (m Model) observeDirect() tea.Cmd {
	ch := m.prefetch
	if ch == nil {
		ch = m.startDirect()
	}
	if ch == nil {
		return nil
	}
	return func() tea.Msg { return <-ch }
}

// startDirect starts the direct read in the background (nil when the
// backend cannot read directly); its one message arrives on the channel.
func (m Model) startDirect() <-chan tea.Msg {
	d, ok := m.backend.(DirectObserver)
	if !ok {
		return nil
	}
	ch := make(chan tea.Msg, 1)
	ctx, probes, now := m.ctx, m.cfg.Probes, m.cfg.Now
	d.ExpectDirect()
	go func() {
		rs, warn, err := d.ObserveDirect(ctx)
		ch <- observedMsg{direct: true, probed: probes, results: rs, warnings: warn, err: err, at: now()}
	}()
	return ch
}

// applyObserved takes in one observation and schedules what follows it.
func (m Model) applyObserved(msg observedMsg) (Model, tea.Cmd) {
	if msg.direct {
		return m.applyDirect(msg)
	}
	var cmds []tea.Cmd
	if msg.probed {
		m.probing = false
		interval := m.cfg.ProbeInterval
		cmds = append(cmds, tea.Tick(interval, func(time.Time) tea.Msg { return probeTickMsg{} }))
	} else {
		m.refreshing = false
		if m.refreshPending {
			m.refreshPending = false
			m.refreshing = true
			cmds = append(cmds, m.observe(false))
		}
	}
	if msg.err != nil {
		m.lastErr = msg.err
		m.setStatus(true, "%v", msg.err)
		return m, tea.Batch(cmds...)
	}
	if m.lastErr != nil {
		m.lastErr = nil
		m.clearStatus()
	}
	m.warnings = msg.warnings
	if msg.probed {
		m.probedAt = msg.at
		m.history.Record(msg.results, msg.at)
		m.leaders.Add(msg.results)
		m.dataGen++
		if msg.seq < m.appliedSeq {
			// A cache read overtook this probe: a fresh read carries its
			// answers instead of showing older pod data.
			if !m.refreshing {
				m.refreshing = true
				cmds = append(cmds, m.observe(false))
			} else {
				m.refreshPending = true
			}
			return m, tea.Batch(cmds...)
		}
	} else if msg.seq < m.appliedSeq {
		return m, tea.Batch(cmds...)
	}
	m.appliedSeq = msg.seq
	m.setResults(msg.results)
	return m, tea.Batch(cmds...)
}

// applyDirect takes in the direct read. The watches' path reports errors;
// this read fills the screen until the caches have something newer, and
// its probe facts stand until the first probe round of the watches (never
// replacing a round's). When the watches synced before it answered, their
// rounds start from here (roundsAfterDirect).
func (m Model) applyDirect(msg observedMsg) (Model, tea.Cmd) {
	m.directPending = false
	ok := msg.err == nil
	reread := false
	if ok && msg.probed && m.probedAt.IsZero() {
		m.probedAt = msg.at
		m.history.Record(msg.results, msg.at)
		m.leaders.Add(msg.results)
		m.dataGen++
		m.directProbed = true
		// A cache read on screen: a fresh one carries these answers.
		reread = m.appliedSeq > 0
	}
	if ok && m.appliedSeq == 0 && !m.loaded && !m.unsynced {
		m.warnings = msg.warnings
		m.setResults(msg.results)
	}
	switch {
	case m.afterDirect:
		m.afterDirect = false
		return m.roundsAfterDirect()
	case reread:
		return m, m.reread()
	}
	return m, nil
}

// roundsAfterDirect starts the watches' probe rounds once they synced and
// the direct read answered: the first a probe interval after the direct
// read's probe, a cache read meanwhile carrying its answers; at once
// when the direct read brought no probe.
func (m Model) roundsAfterDirect() (Model, tea.Cmd) {
	if !m.directProbed {
		m.probing = true
		return m, m.observe(true)
	}
	m.probing = false
	return m, tea.Batch(tea.Tick(m.cfg.ProbeInterval, func(time.Time) tea.Msg { return probeTickMsg{} }), m.reread())
}

// reread reads the caches again, the members carrying their last probe's
// answers (nil when a cache read is in flight: it is queued behind it).
func (m *Model) reread() tea.Cmd {
	if m.refreshing {
		m.refreshPending = true
		return nil
	}
	m.refreshing = true
	return m.observe(false)
}

// setResults stores results sorted by namespace and name and keeps the
// cursors in range.
func (m *Model) setResults(rs []status.Result) {
	rs = append([]status.Result(nil), rs...)
	sort.Slice(rs, func(i, j int) bool {
		return common.ClusterKey(rs[i].Observation.Cluster) < common.ClusterKey(rs[j].Observation.Cluster)
	})
	m.results = rs
	m.dataGen++
	m.loaded = true
	if m.focus != "" && !strings.Contains(m.focus, "/") {
		// A bare name given with all namespaces in scope: take the first
		// cluster of that name.
		for _, r := range rs {
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

// observation handles the messages of the backend plumbing; ok is false
// for other messages.
func (m Model) observation(msg tea.Msg) (_ Model, _ tea.Cmd, ok bool) {
	switch msg := msg.(type) {
	case syncedMsg:
		if msg.err != nil {
			m.lastErr = msg.err
			m.setStatus(true, "%v", msg.err)
			// A first screen from the direct read would stay as it is,
			// looking live: without the watches nothing refreshes it.
			m.loaded, m.results = false, nil
			m.unsynced = true
			m.dataGen++
			return m, nil, true
		}
		watch := []tea.Cmd{m.waitChange(), m.waitError()}
		switch {
		case m.probing:
			// A round is running (p, an action step): it schedules the
			// next.
		case m.directPending:
			// The direct read is probing every member now: the rounds
			// start when it answers (applyDirect), or a probe interval
			// from now if it has not.
			m.probing = true
			m.afterDirect = true
			watch = append(watch, tea.Tick(m.cfg.ProbeInterval, func(time.Time) tea.Msg { return directOverdueMsg{} }))
		default:
			var next tea.Cmd
			m, next = m.roundsAfterDirect()
			watch = append(watch, next)
		}
		return m, tea.Batch(watch...), true
	case directOverdueMsg:
		if !m.afterDirect {
			return m, nil, true
		}
		// probing stays set: it has been since the sync, for this round.
		m.afterDirect = false
		return m, m.observe(true), true
	case changedMsg:
		cmds := []tea.Cmd{m.waitChange()}
		if !m.refreshQueued {
			m.refreshQueued = true
			cmds = append(cmds, tea.Tick(refreshDelay, func(time.Time) tea.Msg { return refreshMsg{} }))
		}
		return m, tea.Batch(cmds...), true
	case refreshMsg:
		m.refreshQueued = false
		if m.refreshing {
			m.refreshPending = true
			return m, nil, true
		}
		m.refreshing = true
		return m, m.observe(false), true
	case probeTickMsg:
		if m.probing {
			return m, nil, true
		}
		m.probing = true
		return m, m.observe(true), true
	case watchErrMsg:
		m.setStatus(true, "%v", msg.err)
		return m, m.waitError(), true
	case observedMsg:
		nm, cmd := m.applyObserved(msg)
		return nm, cmd, true
	}
	return m, nil, false
}
