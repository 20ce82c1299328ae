package model

// CNPGFacts is what one CloudNativePG instance said of itself: its
// instance manager's GET /pg/status (pkg/postgres/status.go's
// PostgresqlStatus), read from its own PostgreSQL on every request. WAL
// positions are byte offsets (an LSN as a number); nil means the instance
// did not report one.
type CNPGFacts struct {
	// IsPrimary: the instance's PostgreSQL is not in recovery.
	IsPrimary bool `json:"isPrimary"`
	// CurrentLSN is a primary's current WAL position (the leader
	// frontier); ReceivedLSN and ReplayLSN a replica's WAL received from
	// its upstream and replayed into its data.
	CurrentLSN  *int64 `json:"currentLsn,omitempty"`
	ReceivedLSN *int64 `json:"receivedLsn,omitempty"`
	ReplayLSN   *int64 `json:"replayLsn,omitempty"`
	// TimelineID is the instance's timeline.
	TimelineID int64 `json:"timelineID,omitempty"`
	// SystemID is PostgreSQL's database system identifier.
	SystemID string `json:"systemID,omitempty"`
	// ReplayPaused: pg_is_wal_replay_paused() on a replica;
	// WALReceiverActive: its WAL receiver streams from the primary.
	ReplayPaused      bool `json:"replayPaused,omitempty"`
	WALReceiverActive bool `json:"walReceiverActive,omitempty"`
	PendingRestart    bool `json:"pendingRestart,omitempty"`
	// Replication is a primary's pg_stat_replication: who streams from
	// it, with their positions.
	Replication []CNPGReplication `json:"replication,omitempty"`
	// ManagerVersion is the instance manager's version.
	ManagerVersion string `json:"managerVersion,omitempty"`
	// Down is what the instance manager answered instead of a status
	// (HTTP 500: it could not read its PostgreSQL, which then is not
	// running or not accepting connections); "" when it answered one.
	Down string `json:"down,omitempty"`
}

// CNPGReplication is one row of a primary's pg_stat_replication.
type CNPGReplication struct {
	// Name is the replica's application_name (its instance name).
	Name      string `json:"name"`
	State     string `json:"state,omitempty"`
	SyncState string `json:"syncState,omitempty"`
	// ReplayLSN is what the replica last reported replayed.
	ReplayLSN *int64 `json:"replayLsn,omitempty"`
}

// RoleName is the role an instance shows: primary or replica, down
// when its PostgreSQL did not answer its manager.
func (f *CNPGFacts) RoleName() string {
	switch {
	case f.Down != "":
		return "down"
	case f.IsPrimary:
		return "primary"
	}
	return "replica"
}

// Writable reports whether f is a running primary (nil: no).
func (f *CNPGFacts) Writable() bool { return f != nil && f.Down == "" && f.IsPrimary }

// Streaming reports whether the primary lists instance name as
// streaming, and that row.
func (f *CNPGFacts) Streaming(name string) (CNPGReplication, bool) {
	for _, r := range f.Replication {
		if r.Name == name {
			return r, r.State == "streaming"
		}
	}
	return CNPGReplication{}, false
}
