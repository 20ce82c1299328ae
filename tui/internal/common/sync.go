package common

// ViewKey is what a view's rows were built from: the root's count of
// changes of what the views show, the cluster in focus, the filter and the
// clock's second.
type ViewKey struct {
	Gen           uint64
	Focus, Filter string
	Sec           int64
}

// SyncState remembers the ViewKey of a view's rows; the views embed it
// and the root rebuilds a view's rows only when the key changed.
type SyncState struct {
	key    ViewKey
	synced bool
}

// Stale reports whether the rows were not built from k.
func (s SyncState) Stale(k ViewKey) bool { return !s.synced || s.key != k }

// Synced records that the rows were built from k.
func (s *SyncState) Synced(k ViewKey) { s.key, s.synced = k, true }
