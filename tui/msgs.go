package tui

import (
	"time"

	"github.com/hactl-dev/hactl/status"
)

// syncedMsg: the watch caches synced (err nil) or could not.
type syncedMsg struct{ err error }

// changedMsg: watched objects changed.
type changedMsg struct{}

// watchErrMsg: a watch failed (it is retried by the informer).
type watchErrMsg struct{ err error }

// refreshMsg: the debounce after a change elapsed; read the caches.
type refreshMsg struct{}

// probeTickMsg: time to probe the members again.
type probeTickMsg struct{}

// directOverdueMsg: the watches synced a probe interval ago and the
// direct read has still not answered; probe without it.
type directOverdueMsg struct{}

// observedMsg carries one observation of every cluster in scope.
type observedMsg struct {
	seq      uint64
	probed   bool
	results  []status.Result
	warnings status.Warnings
	err      error
	// direct: the first read, straight from the API server while the
	// watches sync (DirectObserver); it schedules the first probe of the
	// caches only when the watches synced before it answered.
	direct bool
	at     time.Time
}
