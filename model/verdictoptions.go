package model

import "time"

// DefaultLagThreshold is the number of positions (raft entries, an
// engine's applied index) a voter may trail the leader frontier and still
// count as a member: VerdictOptions.LagThreshold when it is zero.
const DefaultLagThreshold uint64 = 1000

// VerdictOptions are the thresholds of the verdict. The zero value means all
// defaults; so does any zero field. A saved plan shows them under
// decision.intent.options.verdict, by their JSON names.
type VerdictOptions struct {
	// LagThreshold: a voter more than this many raft entries behind the
	// leader frontier is catching-up (member_lagging). Default 1000.
	LagThreshold uint64 `json:"lagThreshold,omitempty"`
	// StaleAfter: an observation older than this at `now` is stale
	// (observation_stale). Default 30s.
	StaleAfter time.Duration `json:"staleAfter,omitempty"`
	// DBQuotaFraction: a database at or above this fraction of the backend
	// quota is reported db_near_quota. Zero: the engine's default (etcd:
	// 0.8).
	DBQuotaFraction float64 `json:"dbQuotaFraction,omitempty"`
	// DefaultQuotaBytes is the backend quota assumed when the template
	// sets none. Zero: the engine's default (etcd: 2 GiB).
	DefaultQuotaBytes int64 `json:"defaultQuotaBytes,omitempty"`
	// BootstrapWindow: while no member answers with a cluster ID or a
	// leader and no cluster ID was recorded, a StatefulSet younger than
	// this is bootstrapping; an older one is presumed formed (its members
	// are unknown, and a template that says "new" is stale). Default 10m.
	BootstrapWindow time.Duration `json:"bootstrapWindow,omitempty"`
	// WALLagThreshold: a Patroni replica whose replay is more than this
	// many bytes behind the primary's WAL position is lagging
	// (replica_lagging). Zero means the cluster's maximum_lag_on_failover,
	// else the engine's default (1 MiB).
	WALLagThreshold uint64 `json:"walLagThreshold,omitempty"`
	// CertWarn: a member whose serving certificate expires within this
	// is reported cert_expiring (an expired one is cert_expired).
	// Default 30 days.
	CertWarn time.Duration `json:"certWarn,omitempty"`
	// Rules are the verdict rules of the engines, by engine: each engine
	// keeps its own in its package. A cluster whose engine has none here
	// is engine_unsupported. Handed in by whoever holds the engines (see
	// engine.VerdictRules); never saved with a plan.
	Rules map[Engine]VerdictRules `json:"-"`
}
