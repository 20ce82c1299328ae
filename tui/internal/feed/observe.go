package feed

import (
	"sort"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// observe reads (and with probe, probes) every cluster in a Cmd.
func (f *Feed) observe(probe bool) tea.Cmd {
	if f.backend == nil {
		return nil
	}
	f.seq++
	seq, b, ctx, now := f.seq, f.backend, f.ctx, f.cfg.Now
	return func() tea.Msg {
		// A read without a probe comes judged with the members' last
		// answers (the backend's watcher keeps them): the view shows it.
		rs, warn, err := b.Observe(ctx, probe)
		return ObservedMsg{Seq: seq, Probed: probe, Results: rs, Warnings: warn, Err: err, At: now()}
	}
}

func (f Feed) waitChange() tea.Cmd {
	if f.backend == nil {
		return nil
	}
	ch := f.backend.Changes()
	return func() tea.Msg {
		if _, ok := <-ch; !ok {
			return nil
		}
		return ChangedMsg{}
	}
}

func (f Feed) waitError() tea.Cmd {
	if f.backend == nil {
		return nil
	}
	ch := f.backend.Errors()
	return func() tea.Msg {
		err, ok := <-ch
		if !ok {
			return nil
		}
		return WatchErrMsg{Err: err}
	}
}

// observeDirect is the first read, from the API server while the watches
// sync (nil when the backend cannot). Its sequence number is 0: any read
// the feed issues later supersedes it.
func (f Feed) observeDirect() tea.Cmd {
	ch := f.prefetch
	if ch == nil {
		ch = f.startDirect()
	}
	if ch == nil {
		return nil
	}
	return func() tea.Msg { return <-ch }
}

// startDirect starts the direct read in the background (nil when the
// backend cannot read directly); its one message arrives on the channel.
func (f Feed) startDirect() <-chan tea.Msg {
	d, ok := f.backend.(DirectObserver)
	if !ok {
		return nil
	}
	ch := make(chan tea.Msg, 1)
	ctx, probes, now := f.ctx, f.cfg.Probes, f.cfg.Now
	d.ExpectDirect()
	go func() {
		rs, warn, err := d.ObserveDirect(ctx)
		ch <- ObservedMsg{Direct: true, Probed: probes, Results: rs, Warnings: warn, Err: err, At: now()}
	}()
	return ch
}

// applyObserved takes in one observation and schedules what follows it.
func (f Feed) applyObserved(msg ObservedMsg) (Feed, tea.Cmd) {
	if msg.Direct {
		return f.applyDirect(msg)
	}
	var cmds []tea.Cmd
	if msg.Probed {
		f.probing = false
		interval := f.cfg.ProbeInterval
		cmds = append(cmds, tea.Tick(interval, func(time.Time) tea.Msg { return ProbeTickMsg{} }))
	} else {
		f.refreshing = false
		if f.refreshPending {
			f.refreshPending = false
			f.refreshing = true
			cmds = append(cmds, f.observe(false))
		}
	}
	if msg.Err != nil {
		f.lastErr = msg.Err
		f.changed.Status = msg.Err
		return f, tea.Batch(cmds...)
	}
	if f.lastErr != nil {
		f.lastErr = nil
		f.changed.ClearStatus = true
	}
	f.warnings = msg.Warnings
	if msg.Probed {
		f.probedAt = msg.At
		f.history.Record(msg.Results, msg.At)
		f.leaders.Add(msg.Results)
		f.changed.History = true
		if msg.Seq < f.appliedSeq {
			// A cache read overtook this probe: a fresh read carries its
			// answers instead of showing older pod data.
			if !f.refreshing {
				f.refreshing = true
				cmds = append(cmds, f.observe(false))
			} else {
				f.refreshPending = true
			}
			return f, tea.Batch(cmds...)
		}
	} else if msg.Seq < f.appliedSeq {
		return f, tea.Batch(cmds...)
	}
	f.appliedSeq = msg.Seq
	f.setResults(msg.Results)
	return f, tea.Batch(cmds...)
}

// applyDirect takes in the direct read. The watches' path reports errors;
// this read fills the screen until the caches have something newer, and
// its probe facts stand until the first probe round of the watches (never
// replacing a round's). When the watches synced before it answered, their
// rounds start from here (roundsAfterDirect).
func (f Feed) applyDirect(msg ObservedMsg) (Feed, tea.Cmd) {
	f.directPending = false
	ok := msg.Err == nil
	reread := false
	if ok && msg.Probed && f.probedAt.IsZero() {
		f.probedAt = msg.At
		f.history.Record(msg.Results, msg.At)
		f.leaders.Add(msg.Results)
		f.changed.History = true
		f.directProbed = true
		// A cache read on screen: a fresh one carries these answers.
		reread = f.appliedSeq > 0
	}
	if ok && f.appliedSeq == 0 && !f.loaded && !f.unsynced {
		f.warnings = msg.Warnings
		f.setResults(msg.Results)
	}
	switch {
	case f.afterDirect:
		f.afterDirect = false
		return f.roundsAfterDirect()
	case reread:
		cmd := f.reread()
		return f, cmd
	}
	return f, nil
}

// roundsAfterDirect starts the watches' probe rounds once they synced and
// the direct read answered: the first a probe interval after the direct
// read's probe, a cache read meanwhile carrying its answers; at once
// when the direct read brought no probe.
func (f Feed) roundsAfterDirect() (Feed, tea.Cmd) {
	if !f.directProbed {
		f.probing = true
		cmd := f.observe(true)
		return f, cmd
	}
	f.probing = false
	return f, tea.Batch(tea.Tick(f.cfg.ProbeInterval, func(time.Time) tea.Msg { return ProbeTickMsg{} }), f.reread())
}

// reread reads the caches again, the members carrying their last probe's
// answers (nil when a cache read is in flight: it is queued behind it).
func (f *Feed) reread() tea.Cmd {
	if f.refreshing {
		f.refreshPending = true
		return nil
	}
	f.refreshing = true
	return f.observe(false)
}

// setResults stores results sorted by namespace and name, for the root
// to show.
func (f *Feed) setResults(rs []status.Result) {
	rs = append([]status.Result(nil), rs...)
	sort.Slice(rs, func(i, j int) bool {
		return common.ClusterKey(rs[i].Observation.Cluster) < common.ClusterKey(rs[j].Observation.Cluster)
	})
	f.results = rs
	f.loaded = true
	f.changed.Results = true
}

// observation handles the messages of the backend plumbing; ok is false
// for other messages.
func (f Feed) observation(msg tea.Msg) (_ Feed, _ tea.Cmd, ok bool) {
	switch msg := msg.(type) {
	case SyncedMsg:
		if msg.Err != nil {
			f.lastErr = msg.Err
			f.changed.Status = msg.Err
			// A first screen from the direct read would stay as it is,
			// looking live: without the watches nothing refreshes it.
			f.loaded, f.results = false, nil
			f.unsynced = true
			f.changed.Dropped = true
			return f, nil, true
		}
		watch := []tea.Cmd{f.waitChange(), f.waitError()}
		switch {
		case f.probing:
			// A round is running (p, an action step): it schedules the
			// next.
		case f.directPending:
			// The direct read is probing every member now: the rounds
			// start when it answers (applyDirect), or a probe interval
			// from now if it has not.
			f.probing = true
			f.afterDirect = true
			watch = append(watch, tea.Tick(f.cfg.ProbeInterval, func(time.Time) tea.Msg { return DirectOverdueMsg{} }))
		default:
			var next tea.Cmd
			f, next = f.roundsAfterDirect()
			watch = append(watch, next)
		}
		return f, tea.Batch(watch...), true
	case DirectOverdueMsg:
		if !f.afterDirect {
			return f, nil, true
		}
		// probing stays set: it has been since the sync, for this round.
		f.afterDirect = false
		cmd := f.observe(true)
		return f, cmd, true
	case ChangedMsg:
		cmds := []tea.Cmd{f.waitChange()}
		if !f.refreshQueued {
			f.refreshQueued = true
			cmds = append(cmds, tea.Tick(refreshDelay, func(time.Time) tea.Msg { return RefreshMsg{} }))
		}
		return f, tea.Batch(cmds...), true
	case RefreshMsg:
		f.refreshQueued = false
		if f.refreshing {
			f.refreshPending = true
			return f, nil, true
		}
		f.refreshing = true
		cmd := f.observe(false)
		return f, cmd, true
	case ProbeTickMsg:
		if f.probing {
			return f, nil, true
		}
		f.probing = true
		cmd := f.observe(true)
		return f, cmd, true
	case WatchErrMsg:
		f.changed.Status = msg.Err
		return f, f.waitError(), true
	case ObservedMsg:
		nf, cmd := f.applyObserved(msg)
		return nf, cmd, true
	}
	return f, nil, false
}
