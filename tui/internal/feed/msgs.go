package feed

import (
	"time"

	"github.com/hactl-dev/hactl/status"
)

// SyncedMsg: the watch caches synced (Err nil) or could not.
type SyncedMsg struct{ Err error }

// ChangedMsg: watched objects changed.
type ChangedMsg struct{}

// WatchErrMsg: a watch failed (it is retried by the informer).
type WatchErrMsg struct{ Err error }

// RefreshMsg: the debounce after a change elapsed; read the caches.
type RefreshMsg struct{}

// ProbeTickMsg: time to probe the members again.
type ProbeTickMsg struct{}

// DirectOverdueMsg: the watches synced a probe interval ago and the
// direct read has still not answered; probe without it.
type DirectOverdueMsg struct{}

// ObservedMsg carries one observation of every cluster in scope.
type ObservedMsg struct {
	Seq      uint64
	Probed   bool
	Results  []status.Result
	Warnings status.Warnings
	Err      error
	// Direct: the first read, straight from the API server while the
	// watches sync (DirectObserver); it schedules the first probe of the
	// caches only when the watches synced before it answered.
	Direct bool
	At     time.Time
}
