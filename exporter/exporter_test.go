package exporter

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// observing is a scripted Observing: each Observe returns the next
// answer (the last one again once they ran out).
type observing struct {
	mu      sync.Mutex
	answers []answer
	calls   int
	changes chan struct{}
	stale   error
	// advance, when set, moves the test's clock during each Observe.
	advance func()
}

type answer struct {
	results []status.Result
	err     error
}

func (o *observing) Observe(_ context.Context, name string, probe bool) ([]status.Result, status.Warnings, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if name != "" || !probe {
		return nil, nil, errors.New("the exporter must observe every cluster, probing")
	}
	a := o.answers[min(o.calls, len(o.answers)-1)]
	o.calls++
	if o.advance != nil {
		o.advance()
	}
	return a.results, nil, a.err
}

func (o *observing) Changes() <-chan struct{} { return o.changes }

func (o *observing) Stale(time.Duration) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stale
}

func (o *observing) setStale(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stale = err
}

func (o *observing) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls
}

func result(name string, failoverReady bool) status.Result {
	return status.Result{
		Observation: model.Observation{Cluster: model.ClusterFacts{Name: name, Namespace: "db", Engine: etcdengine.Name, Replicas: 3}},
		Verdict:     model.Verdict{ControlReady: true, FailoverReady: failoverReady},
	}
}

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func scrape(t *testing.T, h http.Handler, accept string) (string, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String(), rec.Header().Get("Content-Type")
}

// gauge is the value of family's series for cluster ("": the one series
// without labels), gauge or counter.
func gauge(t *testing.T, text, family, cluster string) (float64, bool) {
	t.Helper()
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the text parser refuses the exposition: %v\n%s", err, text)
	}
	for _, m := range mfs[family].GetMetric() {
		got := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == "cluster" {
				got = l.GetValue()
			}
		}
		if got != cluster {
			continue
		}
		if m.GetGauge() != nil {
			return m.GetGauge().GetValue(), true
		}
		return m.GetCounter().GetValue(), true
	}
	return 0, false
}

func status200(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// TestAFailedRoundKeepsTheLastAnswer: a round that fails leaves the
// metrics of the round before (never "no clusters", which would read as
// "every alert resolved"), counts the failure, and makes /readyz say so;
// the next good round replaces them.
func TestAFailedRoundKeepsTheLastAnswer(t *testing.T) {
	obs := &observing{changes: make(chan struct{}), answers: []answer{
		{results: []status.Result{result("a", true), result("b", false)}},
		{err: errors.New("the API server is gone")},
		{results: []status.Result{result("a", false)}},
	}}
	e := New(obs, Options{})
	h := e.Handler()
	if code, body := status200(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not observed yet") {
		t.Errorf("/readyz before any round: %d %q", code, body)
	}
	ctx := context.Background()
	if err := e.Round(ctx); err != nil {
		t.Fatal(err)
	}
	text, _ := scrape(t, h, "")
	if v, ok := gauge(t, text, "hactl_cluster_failover_ready", "a"); !ok || v != 1 {
		t.Errorf("a: %v %v, want 1", v, ok)
	}
	if v, ok := gauge(t, text, "hactl_cluster_failover_ready", "b"); !ok || v != 0 {
		t.Errorf("b: %v %v, want 0", v, ok)
	}
	if code, _ := status200(t, h, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after a round: %d", code)
	}

	if err := e.Round(ctx); err == nil {
		t.Fatal("the failed round returned no error")
	}
	text, _ = scrape(t, h, "")
	if _, ok := gauge(t, text, "hactl_cluster_failover_ready", "b"); !ok {
		t.Error("a failed round dropped the clusters of the round before")
	}
	if v, _ := gauge(t, text, "hactl_exporter_round_errors_total", ""); v != 1 {
		t.Errorf("round errors %v, want 1", v)
	}
	if code, body := status200(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "the API server is gone") {
		t.Errorf("/readyz after a failed round: %d %q", code, body)
	}
	if code, _ := status200(t, h, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz after a failed round: %d (the loop is alive)", code)
	}

	if err := e.Round(ctx); err != nil {
		t.Fatal(err)
	}
	text, _ = scrape(t, h, "")
	if _, ok := gauge(t, text, "hactl_cluster_failover_ready", "b"); ok {
		t.Error("b is still exported after a round that no longer found it")
	}
	if v, _ := gauge(t, text, "hactl_cluster_failover_ready", "a"); v != 0 {
		t.Errorf("a: %v, want 0 from the latest round", v)
	}
	if v, _ := gauge(t, text, "hactl_exporter_rounds_total", ""); v != 3 {
		t.Errorf("rounds %v, want 3", v)
	}
}

// TestScrapesDoNotObserve: however many scrapes come, only rounds observe.
func TestScrapesDoNotObserve(t *testing.T) {
	obs := &observing{changes: make(chan struct{}), answers: []answer{{results: []status.Result{result("a", true)}}}}
	e := New(obs, Options{})
	if err := e.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := e.Handler()
	for range 50 {
		scrape(t, h, "")
	}
	if n := obs.count(); n != 1 {
		t.Errorf("50 scrapes after one round observed %d times, want 1", n)
	}
}

// TestOpenMetricsWhenAsked: a scraper asking for OpenMetrics gets it
// (ending "# EOF"), one that does not gets Prometheus' text format.
func TestOpenMetricsWhenAsked(t *testing.T) {
	obs := &observing{changes: make(chan struct{}), answers: []answer{{results: []status.Result{result("a", true)}}}}
	e := New(obs, Options{})
	if err := e.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	om, ct := scrape(t, e.Handler(), "application/openmetrics-text;version=1.0.0")
	if !strings.HasPrefix(ct, "application/openmetrics-text") || !strings.HasSuffix(om, "# EOF\n") {
		t.Errorf("asked for OpenMetrics, got %q ending %q", ct, om[max(0, len(om)-20):])
	}
	text, ct := scrape(t, e.Handler(), "")
	if !strings.HasPrefix(ct, "text/plain") || strings.Contains(text, "# EOF") {
		t.Errorf("asked for nothing, got %q", ct)
	}
}

// TestHealthzSaysWhenTheLoopIsStuck: the loop is alive while a round
// ended within three intervals (or, before the first, since start); a
// round that hangs past that makes /healthz 503.
func TestHealthzSaysWhenTheLoopIsStuck(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	obs := &observing{changes: make(chan struct{}), answers: []answer{{results: []status.Result{result("a", true)}}}}
	e := New(obs, Options{Interval: 10 * time.Second, Now: c.now})
	h := e.Handler()
	if code, _ := status200(t, h, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz right after start: %d", code)
	}
	c.add(31 * time.Second)
	if code, body := status200(t, h, "/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "no round has ended") {
		t.Errorf("/healthz 31s after start without a round: %d %q", code, body)
	}
	if err := e.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, _ := status200(t, h, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz after a round: %d", code)
	}
	c.add(29 * time.Second)
	if code, _ := status200(t, h, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz 29s after a round (interval 10s): %d", code)
	}
	c.add(2 * time.Second)
	if code, body := status200(t, h, "/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "stuck") {
		t.Errorf("/healthz 31s after the last round: %d %q", code, body)
	}
}

// TestRunFollowsChanges: Run observes at once, and again after a change,
// not waiting for the interval.
func TestRunFollowsChanges(t *testing.T) {
	obs := &observing{changes: make(chan struct{}, 1), answers: []answer{{results: []status.Result{result("a", true)}}}}
	e := New(obs, Options{Interval: time.Hour, MinGap: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitFor(t, "the first round", func() bool { return obs.count() >= 1 })
	obs.changes <- struct{}{}
	waitFor(t, "a round after the change", func() bool { return obs.count() >= 2 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recorder is a transport that counts what reaches it.
type recorder struct{ methods []string }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.methods = append(r.methods, req.Method)
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

// TestReadOnlySendsNoChange: GET, HEAD and OPTIONS pass; every other
// method, and a GET that upgrades the connection, is refused before it
// reaches the transport below.
func TestReadOnlySendsNoChange(t *testing.T) {
	rec := &recorder{}
	rt := ReadOnly(rec)
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodOptions} {
		if _, err := rt.RoundTrip(httptest.NewRequest(m, "https://api/api/v1/pods", nil)); err != nil {
			t.Errorf("%s refused: %v", m, err)
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		_, err := rt.RoundTrip(httptest.NewRequest(m, "https://api/apis/coordination.k8s.io/v1/namespaces/db/leases", strings.NewReader("{}")))
		if err == nil || !strings.Contains(err.Error(), "only reads") {
			t.Errorf("%s: %v, want refused", m, err)
		}
	}
	up := httptest.NewRequest(http.MethodGet, "https://api/api/v1/namespaces/db/pods/etcd-0/portforward", nil)
	up.Header.Set("Upgrade", "websocket")
	if _, err := rt.RoundTrip(up); err == nil || !strings.Contains(err.Error(), "only reads") {
		t.Errorf("a GET that upgrades (port-forward): %v, want refused", err)
	}
	if strings.Join(rec.methods, ",") != "GET,HEAD,OPTIONS" {
		t.Errorf("reached the transport: %v", rec.methods)
	}
}

// TestStaleCachesFailTheRound: while a required watch fails (the API
// server cannot be reached), the caches no longer follow the cluster: the
// round fails without observing, the metrics keep the last good round
// (with its observation time, so staleness alerts fire), /readyz says so.
func TestStaleCachesFailTheRound(t *testing.T) {
	obs := &observing{changes: make(chan struct{}), answers: []answer{{results: []status.Result{result("a", true)}}}}
	e := New(obs, Options{})
	ctx := context.Background()
	if err := e.Round(ctx); err != nil {
		t.Fatal(err)
	}
	obs.setStale(errors.New("the watch caches may be stale: watch *v1.Pod: connection refused"))
	if err := e.Round(ctx); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("a round over stale caches: %v", err)
	}
	if n := obs.count(); n != 1 {
		t.Errorf("observed %d times, want only the first round's", n)
	}
	h := e.Handler()
	if code, body := status200(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "stale") {
		t.Errorf("/readyz over stale caches: %d %q", code, body)
	}
	text, _ := scrape(t, h, "")
	if v, ok := gauge(t, text, "hactl_cluster_failover_ready", "a"); !ok || v != 1 {
		t.Errorf("the last good round's value is gone: %v %v", v, ok)
	}
	obs.setStale(nil)
	if err := e.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if code, _ := status200(t, h, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz once the watches recovered: %d", code)
	}
}

// TestAChangeLongAfterARoundIsNotDelayed: the spacing of change rounds
// follows how long the last round took, not how long ago it began. A
// change an hour after a quick round starts the next at once (the clock
// is the test's: a delay computed from the idle hour would be an hour).
func TestAChangeLongAfterARoundIsNotDelayed(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	obs := &observing{changes: make(chan struct{}, 1), answers: []answer{{results: []status.Result{result("a", true)}}}}
	e := New(obs, Options{Interval: 24 * time.Hour, MinGap: time.Millisecond, Now: c.now})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitFor(t, "the first round", func() bool { return obs.count() >= 1 })
	c.add(time.Hour)
	obs.changes <- struct{}{}
	waitFor(t, "a round right after the change", func() bool { return obs.count() >= 2 })
	cancel()
	<-done
}

// TestOpenMetricsHasOneFamilyPerName: OpenMetrics (what Prometheus asks
// for first) allows one TYPE per metric family; the Go collector's
// MemStats names would pair a gauge and a counter under one.
func TestOpenMetricsHasOneFamilyPerName(t *testing.T) {
	obs := &observing{changes: make(chan struct{}), answers: []answer{{results: []status.Result{result("a", true)}}}}
	e := New(obs, Options{})
	if err := e.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	om, _ := scrape(t, e.Handler(), "application/openmetrics-text;version=1.0.0")
	seen := map[string]bool{}
	for _, l := range strings.Split(om, "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			if seen[f[2]] {
				t.Errorf("two TYPE lines for family %s", f[2])
			}
			seen[f[2]] = true
		}
	}
	if !seen["hactl_cluster_failover_ready"] || !seen["go_goroutines"] {
		t.Errorf("families missing: %v", seen)
	}
}
