package model

import "time"

// PatroniFacts is what one Patroni member said when dialled on its own:
// GET /patroni (its own PostgreSQL, read by fresh SQL on every request)
// and GET /cluster (its view of the DCS). WAL positions are byte offsets
// (an LSN as a number); nil means the member did not report one.
type PatroniFacts struct {
	// Name is the member's Patroni name (the pod name on Kubernetes), as
	// its own /cluster view lists it; Scope is the Patroni cluster name.
	Name  string `json:"name,omitempty"`
	Scope string `json:"scope,omitempty"`
	// Role is /patroni's role as reported: "master" (3.0.x) or "primary"
	// (later releases) for a writable primary, "replica", "demoted",
	// "uninitialized", "standby_leader".
	Role string `json:"role"`
	// State is /patroni's state: running, starting, stopping, stopped,
	// "creating replica", unknown, …
	State string `json:"state"`
	// PostmasterStart is when the member's PostgreSQL started, as the
	// member reports it (postmaster_start_time, its own clock): a
	// different value later shows PostgreSQL restarted, as a
	// reinitialize makes it. Compared only with itself, never with this
	// machine's clock.
	PostmasterStart string `json:"postmasterStartTime,omitempty"`
	// Timeline is the member's timeline (a replica's value may be a cached
	// IDENTIFY_SYSTEM answer: a hint, never proof of agreement).
	Timeline int64 `json:"timeline,omitempty"`
	// WALLocation is a primary's current WAL position
	// (pg_current_wal_lsn): the leader frontier.
	WALLocation *int64 `json:"walLocation,omitempty"`
	// ReceivedLocation and ReplayedLocation are a replica's WAL received
	// from its upstream and replayed into its data.
	ReceivedLocation *int64 `json:"receivedLocation,omitempty"`
	ReplayedLocation *int64 `json:"replayedLocation,omitempty"`
	// ReplayPaused: pg_is_wal_replay_paused() on a replica.
	ReplayPaused bool `json:"replayPaused,omitempty"`
	// Replication is a primary's pg_stat_replication as Patroni reports
	// it: who streams from it (no positions).
	Replication []PatroniReplication `json:"replication,omitempty"`
	// SyncStandby: this replica is the synchronous standby.
	SyncStandby    bool `json:"syncStandby,omitempty"`
	PendingRestart bool `json:"pendingRestart,omitempty"`
	// Paused: the cluster is in maintenance mode (no automatic failover).
	Paused bool `json:"paused,omitempty"`
	// ClusterUnlocked: the member sees no leader lock.
	ClusterUnlocked bool `json:"clusterUnlocked,omitempty"`
	// NoFailover: the member is tagged nofailover (never a candidate).
	NoFailover bool `json:"noFailover,omitempty"`
	// DCSLastSeen is when the member last reached its DCS (zero when not
	// reported).
	DCSLastSeen time.Time `json:"dcsLastSeen,omitempty"`
	// SystemID is PostgreSQL's database system identifier: the cluster's
	// identity, fixed at initdb.
	SystemID string `json:"systemID,omitempty"`
	// ServerVersion is PostgreSQL's numeric version (150018);
	// PatroniVersion Patroni's own.
	ServerVersion  int    `json:"serverVersion,omitempty"`
	PatroniVersion string `json:"patroniVersion,omitempty"`
	// ViewLeader is the leader this member's /cluster view names ("" when
	// none, or when /cluster was not read: ViewErr says why).
	ViewLeader string `json:"viewLeader,omitempty"`
	ViewErr    string `json:"viewError,omitempty"`
}

// RoleName is the role a Patroni member shows: primary (for master or
// primary), sync-standby, replica, or what the member said (demoted,
// uninitialized, standby_leader).
func (p *PatroniFacts) RoleName() string {
	switch {
	case p.Writable():
		return "primary"
	case p.Role == "replica" && p.SyncStandby:
		return "sync-standby"
	case p.Role == "":
		return RoleUnknown.String()
	}
	return p.Role
}

// Writable reports whether the member says it is a writable primary.
func (p *PatroniFacts) Writable() bool {
	return p != nil && (p.Role == "master" || p.Role == "primary")
}

// Streaming reports whether a primary lists name as streaming from it.
func (p *PatroniFacts) Streaming(name string) (PatroniReplication, bool) {
	if p == nil {
		return PatroniReplication{}, false
	}
	for _, r := range p.Replication {
		if r.Name == name && r.State == "streaming" {
			return r, true
		}
	}
	return PatroniReplication{}, false
}

// PatroniReplication is one row of a primary's replication list.
type PatroniReplication struct {
	// Name is the standby's application_name (its Patroni name).
	Name string `json:"name"`
	// State is pg_stat_replication.state (streaming, catchup, …);
	// SyncState its sync_state (async, sync, potential, quorum).
	State     string `json:"state"`
	SyncState string `json:"syncState,omitempty"`
}

// TimelineSwitch is one entry of Patroni's timeline history: the
// timeline that ended, the WAL position it ended at, why, when, and the
// member that led the next one.
type TimelineSwitch struct {
	Timeline  int       `json:"timeline"`
	LSN       uint64    `json:"lsn"`
	Reason    string    `json:"reason,omitempty"`
	At        time.Time `json:"at,omitempty"`
	NewLeader string    `json:"newLeader,omitempty"`
}

// PatroniClusterFacts is what the API server holds for a Patroni cluster
// using the Kubernetes DCS: the leader lock, the dynamic configuration and
// the sync object (ConfigMaps <scope>-leader, <scope>-config,
// <scope>-sync, or the Endpoints <scope>, <scope>-config, <scope>-sync).
// It is nil for other engines.
type PatroniClusterFacts struct {
	// Scope is the Patroni cluster name (PATRONI_SCOPE, else the
	// cluster-name label, else the StatefulSet's name).
	Scope string `json:"scope"`
	// RoleLabel is the pod label Patroni writes the role into ("role").
	RoleLabel string `json:"roleLabel"`
	// ScopeLabel is the pod label whose value is the scope
	// ("cluster-name").
	ScopeLabel string `json:"scopeLabel,omitempty"`
	// DCS is where the Kubernetes DCS keeps the objects below:
	// DCSConfigMaps or DCSEndpoints; DCSFrom says how that was decided
	// (the variable that says so, or the objects found).
	DCS     string `json:"dcs,omitempty"`
	DCSFrom string `json:"dcsFrom,omitempty"`
	// Orphaned describes a leader record of the other kind of DCS
	// object that was left behind (a cluster moved from Endpoints to
	// ConfigMaps keeps the old Endpoints): not read as a second leader.
	Orphaned string `json:"orphaned,omitempty"`
	// RESTPort is Patroni's REST API port in the pod (8008).
	RESTPort int `json:"restPort"`
	// ObjectsErr says why the objects below could not be read (RBAC);
	// the lock and configuration are then unknown, not absent.
	ObjectsErr string `json:"objectsError,omitempty"`
	// LockFound: the leader object exists. LockHolder is its leader
	// annotation ("" when the lock is free).
	LockFound  bool      `json:"lockFound"`
	LockHolder string    `json:"lockHolder,omitempty"`
	LockRenew  time.Time `json:"lockRenewTime,omitempty"`
	// LockTTL is the lock's ttl; the lock is stale once LockRenew+LockTTL
	// has passed.
	LockTTL         time.Duration `json:"lockTTL,omitempty"`
	LockTransitions int           `json:"lockTransitions,omitempty"`
	// LockAcquired is when the lock's holder took it.
	LockAcquired time.Time `json:"lockAcquireTime,omitempty"`
	// History is the DCS's timeline history (the config object's
	// "history", as GET /history answers): one entry per promotion.
	History []TimelineSwitch `json:"history,omitempty"`
	// ConfigFound: the config object was read. The values below come from
	// its dynamic configuration.
	ConfigFound bool `json:"configFound"`
	// MaximumLagOnFailover is Patroni's own bound on a failover
	// candidate's lag in bytes (0 when not set).
	MaximumLagOnFailover int64 `json:"maximumLagOnFailover,omitempty"`
	SynchronousMode      bool  `json:"synchronousMode,omitempty"`
	// SynchronousModeStrict: synchronous_mode_strict is set, so the
	// primary stops committing while no synchronous standby streams.
	SynchronousModeStrict bool `json:"synchronousModeStrict,omitempty"`
	// Paused: the dynamic configuration has pause set.
	Paused bool `json:"paused,omitempty"`
	// Initialize is the system identifier the cluster was initialised
	// with: its identity as the DCS records it.
	Initialize string `json:"initialize,omitempty"`
	// SyncStandby is the sync object's standby ("" when none or no sync
	// object).
	SyncStandby string `json:"syncStandby,omitempty"`
	// FailoverPending: a switchover or failover request is recorded.
	FailoverPending bool `json:"failoverPending,omitempty"`
}

// Where Patroni's Kubernetes DCS keeps its objects.
const (
	DCSConfigMaps = "ConfigMaps"
	DCSEndpoints  = "Endpoints"
)

// LeaderObject names the object holding the leader lock: "ConfigMap
// <scope>-leader", or "Endpoints <scope>" in Endpoints mode.
func (c *PatroniClusterFacts) LeaderObject() string {
	if c.DCS == DCSEndpoints {
		return "Endpoints " + c.Scope
	}
	return "ConfigMap " + c.Scope + "-leader"
}

// LockStale reports whether the leader lock has outlived its ttl at now.
func (c *PatroniClusterFacts) LockStale(now time.Time) bool {
	if c == nil || !c.LockFound || c.LockHolder == "" || c.LockRenew.IsZero() || c.LockTTL <= 0 {
		return false
	}
	return now.After(c.LockRenew.Add(c.LockTTL))
}
