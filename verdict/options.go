package verdict

import (
	"time"

	"github.com/hactl-dev/hactl/model"
)

// Defaults for Options. A zero field in Options means "use the default".
const (
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

// DefaultOptions returns Options with every default filled in.
func DefaultOptions() model.VerdictOptions { return withDefaults(model.VerdictOptions{}) }

func withDefaults(o model.VerdictOptions) model.VerdictOptions {
	if o.LagThreshold == 0 {
		o.LagThreshold = model.DefaultLagThreshold
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
func thresholds(o model.VerdictOptions) model.Thresholds {
	return model.Thresholds{Lag: o.LagThreshold, WALLag: o.WALLagThreshold,
		DBQuotaFraction: o.DBQuotaFraction, DefaultQuotaBytes: o.DefaultQuotaBytes}
}
