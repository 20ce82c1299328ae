package verdict

import (
	"time"

	"github.com/hactl-dev/hactl/model"
)

// Defaults for Options. A zero field in Options means "use the default".
const (
	// DefaultLagThreshold is the number of raft entries a voter may trail
	// the leader frontier and still count as a member.
	DefaultLagThreshold uint64 = 1000
	// DefaultStaleAfter is the age at which an observation is stale.
	DefaultStaleAfter = 30 * time.Second
	// DefaultBootstrapWindow is how long after the StatefulSet's creation
	// a cluster that shows no sign of having formed is still taken to be
	// bootstrapping.
	DefaultBootstrapWindow = 10 * time.Minute
	// DefaultCertWarn is how long before a member's serving certificate
	// expires that it is reported (cert_expiring).
	DefaultCertWarn = 30 * 24 * time.Hour
)

// Options are the thresholds of the verdict. The zero value means all
// defaults; so does any zero field. A saved plan shows them under
// decision.intent.options.verdict, by their JSON names.
type Options struct {
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
	Rules map[model.Engine]model.VerdictRules `json:"-"`
}

// DefaultOptions returns Options with every default filled in.
func DefaultOptions() Options { return Options{}.withDefaults() }

func (o Options) withDefaults() Options {
	if o.LagThreshold == 0 {
		o.LagThreshold = DefaultLagThreshold
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.BootstrapWindow <= 0 {
		o.BootstrapWindow = DefaultBootstrapWindow
	}
	if o.CertWarn <= 0 {
		o.CertWarn = DefaultCertWarn
	}
	return o
}

// thresholds are o's thresholds as the engines' rules read them.
func (o Options) thresholds() model.Thresholds {
	return model.Thresholds{Lag: o.LagThreshold, WALLag: o.WALLagThreshold,
		DBQuotaFraction: o.DBQuotaFraction, DefaultQuotaBytes: o.DefaultQuotaBytes}
}
