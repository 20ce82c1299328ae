// Package exporter serves hactl's verdicts as Prometheus metrics from
// inside a cluster (kubectl-hactl agent exporter): a loop observes the
// clusters from a watch-based observer (status.Watcher: informer caches,
// so a round lists nothing) and probes every member, bounded by the
// observer's probe timeout, once per interval and after changes; a scrape
// of /metrics encodes the latest round with the Prometheus client
// library's registry and exposition (the metrics status -o openmetrics
// prints, plus the exporter's own), so scrapes cost no API call and no
// probe however often they come. /healthz and /readyz say whether the
// loop is alive and whether it has observed.
//
// The exporter only reads: it holds no lock and sends no changing request
// (cli wraps its client in a transport that refuses them).
package exporter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hactl-dev/hactl/status"
)

// Observing is what the exporter needs of a status.Watcher.
type Observing interface {
	Observe(ctx context.Context, name string, probe bool) ([]status.Result, status.Warnings, error)
	Changes() <-chan struct{}
	// Stale is an error while the caches may no longer follow the API
	// server (a required watch failed within window).
	Stale(window time.Duration) error
}

// staleWindow is how recent a watch failure makes a round fail: longer
// than the watches' longest retry back-off (about a minute), and than two
// intervals.
func (e *Exporter) staleWindow() time.Duration { return max(2*e.opts.Interval, 90*time.Second) }

// Options configure an Exporter.
type Options struct {
	// Interval is how often members are probed again (DefaultInterval
	// when zero).
	Interval time.Duration
	// MinGap is the least time between the starts of two rounds that
	// watched changes bring (DefaultMinGap when zero; twice the last
	// round's duration when that is longer): Patroni renews its leader
	// object every loop_wait, so changes come all the time.
	MinGap time.Duration
	// Logf, when set, receives one line per round that failed and per
	// change of warnings.
	Logf func(format string, args ...any)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Defaults of Options.
const (
	DefaultInterval = 30 * time.Second
	DefaultMinGap   = 5 * time.Second
)

// Exporter observes in a loop (Run) and serves the latest round (Handler).
type Exporter struct {
	obs  Observing
	opts Options
	reg  *prometheus.Registry

	rounds      prometheus.Counter
	roundErrors prometheus.Counter
	duration    prometheus.Gauge
	lastRound   prometheus.Gauge
	clusters    prometheus.Gauge

	mu       sync.Mutex
	docs     []*status.ClusterStatus
	observed bool      // a round succeeded once
	created  time.Time // when New ran
	ended    time.Time // when the last round ended (successful or not)
	lastErr  error     // the last round's error
	warned   status.Warnings
}

// New returns an exporter of what obs observes.
func New(obs Observing, o Options) *Exporter {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.MinGap <= 0 {
		o.MinGap = DefaultMinGap
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	e := &Exporter{obs: obs, opts: o, reg: prometheus.NewRegistry(), created: o.Now()}
	e.rounds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "hactl_exporter_rounds_total",
		Help: "Observation rounds (every cluster read from the watch caches, every member probed) the exporter ran.",
	})
	e.roundErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "hactl_exporter_round_errors_total",
		Help: "Rounds that failed: the metrics then keep the last successful round's values (see hactl_exporter_last_round_timestamp_seconds).",
	})
	e.duration = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hactl_exporter_round_duration_seconds",
		Help: "How long the last successful round took.",
	})
	e.lastRound = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hactl_exporter_last_round_timestamp_seconds",
		Help: "When the last successful round ended (Unix time); alert when it is older than a few intervals.",
	})
	e.clusters = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hactl_exporter_clusters",
		Help: "The HA clusters the last successful round found.",
	})
	e.reg.MustRegister(e.rounds, e.roundErrors, e.duration, e.lastRound, e.clusters,
		status.NewCollector(e.snapshot),
		// Without the MemStats names: OpenMetrics, which Prometheus asks
		// for first, allows one family per name, and those pair a gauge
		// and a counter (go_memstats_alloc_bytes and …_total).
		collectors.NewGoCollector(collectors.WithGoCollectorMemStatsMetricsDisabled()),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return e
}

// snapshot is the latest successful round's documents.
func (e *Exporter) snapshot() []*status.ClusterStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.docs
}

// Round observes every cluster once, probing its members, and keeps the
// result for the scrapes that follow. A round fails, keeping the last
// answer, when the observation fails or the watch caches may be stale
// (the API server cannot be watched): an answer from caches that no
// longer follow the cluster must not read as current.
func (e *Exporter) Round(ctx context.Context) error {
	start := e.opts.Now()
	err := e.obs.Stale(e.staleWindow())
	var results []status.Result
	var warn status.Warnings
	if err == nil {
		results, warn, err = e.obs.Observe(ctx, "", true)
		if errors.Is(err, status.ErrClusterNotFound) {
			err = nil
		}
	}
	var docs []*status.ClusterStatus
	if err == nil {
		docs = make([]*status.ClusterStatus, 0, len(results))
		for _, r := range results {
			docs = append(docs, status.Document(r))
		}
	}
	end := e.opts.Now()
	e.rounds.Inc()
	e.mu.Lock()
	e.ended, e.lastErr = end, err
	if err != nil {
		e.roundErrors.Inc()
		e.mu.Unlock()
		e.opts.Logf("round failed (the metrics keep the last successful round): %v", err)
		return err
	}
	e.docs, e.observed = docs, true
	e.duration.Set(end.Sub(start).Seconds())
	e.lastRound.Set(float64(end.UnixMilli()) / 1000)
	e.clusters.Set(float64(len(docs)))
	warned := e.warned
	e.warned = warn
	e.mu.Unlock()
	// Each warning is logged once while it lasts.
	for _, w := range warn {
		if !slices.Contains(warned, w) {
			e.opts.Logf("warning: %s", w)
		}
	}
	return nil
}

// Run runs rounds until ctx ends: one at once, then one every Interval
// and one after watched objects changed (at most one every MinGap).
// Errors of rounds are counted and logged, not returned: the API server
// may come back.
func (e *Exporter) Run(ctx context.Context) error {
	tick := time.NewTicker(e.opts.Interval)
	defer tick.Stop()
	for {
		started := e.opts.Now()
		_ = e.Round(ctx)
		took := e.opts.Now().Sub(started)
		if ctx.Err() != nil {
			return nil
		}
		// The next periodic round is an interval after this one.
		tick.Reset(e.opts.Interval)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-e.obs.Changes():
			// A burst of changes is one round, MinGap after the last
			// round began, and never sooner than twice what it took
			// after it began: changes alone keep the exporter busy half
			// the time at most.
			gap := max(e.opts.MinGap, 2*took)
			if wait := gap - e.opts.Now().Sub(started); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil
				case <-t.C:
				}
			}
			select {
			case <-e.obs.Changes():
			default:
			}
		}
	}
}

// Handler serves /metrics (OpenMetrics when the scraper asks for it, else
// Prometheus' text format), /healthz and /readyz.
func (e *Exporter) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { e.answer(w, e.Healthy()) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { e.answer(w, e.Ready()) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "hactl exporter: /metrics, /healthz, /readyz")
	})
	return mux
}

func (e *Exporter) answer(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, err)
		return
	}
	fmt.Fprintln(w, "ok")
}

// Healthy is nil while the loop is alive: a round ended (successful or
// not) within three intervals, or, before the first one ended, New was
// less than three intervals ago. A round that hangs makes it an error.
func (e *Exporter) Healthy() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	last, what := e.ended, "the last round ended"
	if last.IsZero() {
		last, what = e.created, "no round has ended since the exporter started"
	}
	if age := e.opts.Now().Sub(last); age > 3*e.opts.Interval {
		return fmt.Errorf("%s %s ago (interval %s): the loop is stuck", what, age.Round(time.Second), e.opts.Interval)
	}
	return nil
}

// Ready is nil once a round succeeded and the last one did not fail: the
// metrics then say what the cluster is now.
func (e *Exporter) Ready() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case !e.observed && e.lastErr != nil:
		return fmt.Errorf("not observed yet: %v", e.lastErr)
	case !e.observed:
		return errors.New("not observed yet")
	case e.lastErr != nil:
		return fmt.Errorf("the last round failed (the metrics are the round before's): %v", e.lastErr)
	}
	return nil
}
