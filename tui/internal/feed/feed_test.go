package feed

import (
	"context"
	"errors"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/tui/internal/tuitest"
)

var (
	now         = tuitest.Now
	healthyObs  = tuitest.HealthyObs
	degradedObs = tuitest.DegradedObs
	evaluate    = tuitest.Evaluate
	cfgVerdict  = tuitest.Judged(model.VerdictOptions{})
)

// newFeed is a feed of b as the root makes it with probes on and the
// default probe interval.
func newFeed(b Backend) Feed {
	return New(context.Background(), b, Config{ProbeInterval: 5 * time.Second, Probes: true, Now: tuitest.Clock})
}

// send passes one message to Update and returns the new feed.
func send(t *testing.T, f Feed, msg tea.Msg) (Feed, tea.Cmd) {
	t.Helper()
	nf, cmd, _, ok := f.Update(msg)
	if !ok {
		t.Fatalf("%T is not the feed's", msg)
	}
	return nf, cmd
}

// settle feeds the observations that cmd brings back into the feed,
// skipping ticks and the waits for watch events, until none is left.
func settle(t *testing.T, f Feed, cmd tea.Cmd) Feed {
	t.Helper()
	queue := tuitest.RunFiltered(t, cmd)
	for len(queue) > 0 {
		msg := queue[0]
		queue = queue[1:]
		if _, ok := msg.(ObservedMsg); !ok {
			continue
		}
		var c tea.Cmd
		f, c = send(t, f, msg)
		queue = append(queue, tuitest.RunFiltered(t, c)...)
	}
	return f
}

// shown is the result of the cluster key (namespace/name) among the
// feed's results.
func shown(f Feed, key string) (status.Result, bool) {
	for _, r := range f.Results() {
		if common.ClusterKey(r.Observation.Cluster) == key {
			return r, true
		}
	}
	return status.Result{}, false
}

// A burst of watch events becomes one cache read, whose verdict (the
// backend's: its watcher judges a read with the members' last answers,
// status.TestWatcherJudgesWatchEventsWithTheLastProbe) the view shows as
// it came, probing no one.
func TestWatchEventsAreCoalesced(t *testing.T) {
	probed := evaluate(healthyObs("db", "etcd-a"))
	// From the caches: member 1's pod lost readiness.
	cached := healthyObs("db", "etcd-a")
	cached.EngineProbed = false
	for i := range cached.Members {
		cached.Members[i].Engine = nil
	}
	cached.Members[1].Pod.Ready = false
	b := &tuitest.StubBackend{Changed: make(chan struct{}, 1), Errs: make(chan error, 1), Answer: func(probe bool) []status.Result {
		if probe {
			return []status.Result{probed}
		}
		return []status.Result{status.Evaluate(cached, now, cfgVerdict)}
	}}
	f := newFeed(b)
	f, cmd := send(t, f, SyncedMsg{})
	if !f.probing {
		t.Fatal("sync did not start a probe")
	}
	f = settle(t, f, cmd)
	if len(f.results) != 1 || !f.results[0].Verdict.FailoverReady {
		t.Fatalf("after the first probe: %+v", f.results)
	}
	// A burst of changes schedules one refresh.
	f, cmd1 := send(t, f, ChangedMsg{})
	f, cmd2 := send(t, f, ChangedMsg{})
	if !f.refreshQueued || cmd1 == nil || cmd2 == nil {
		t.Fatal("changes did not queue a refresh")
	}
	f, cmd = send(t, f, RefreshMsg{})
	f = settle(t, f, cmd)
	probes, reads := b.Counts()
	if reads != 1 {
		t.Errorf("%d cache reads for a burst, want 1", reads)
	}
	r := f.results[0]
	if r.Verdict.FailoverReady {
		t.Error("the cache read did not reach the verdict")
	}
	if probes != 1 {
		t.Errorf("watch events probed members (%d probes)", probes)
	}
}

func TestProbeOvertakenByCacheReadIsReadAgainNotShown(t *testing.T) {
	f := newFeed(nil)
	f, _ = send(t, f, ObservedMsg{Seq: 0, Probed: true, Results: []status.Result{evaluate(healthyObs("db", "etcd-a"))}, At: now})
	f.seq, f.appliedSeq = 10, 9
	cached := evaluate(degradedObs("db", "etcd-a"))
	// The cache read (seq 9 applied) is newer than a probe with seq 8.
	f, _ = send(t, f, ObservedMsg{Seq: 8, Probed: true, Results: []status.Result{cached}, At: now})
	if f.appliedSeq != 9 {
		t.Errorf("an older probe was applied over a newer read (applied %d)", f.appliedSeq)
	}
	if !f.refreshing {
		t.Error("no fresh cache read was asked for: the older probe's answers would not be shown")
	}
	// An older cache read is dropped.
	f, _ = send(t, f, ObservedMsg{Seq: 5, Results: nil, At: now})
	if len(f.results) != 1 {
		t.Error("an older cache read replaced newer results")
	}
}

// When the watches sync while the direct read is still probing, their
// first probe round waits for it instead of probing every member a second
// time at once: a cache read follows it (carrying its answers: the
// watcher's, status.TestWatcherJudgesWatchEventsWithTheLastProbe), and
// the rounds go on at the probe interval. A direct read that fails, or
// does not answer within a probe interval, no longer holds them back.
func TestSyncBeforeTheDirectReadWaitsForIt(t *testing.T) {
	probed := evaluate(healthyObs("db", "etcd-a"))
	cached := healthyObs("db", "etcd-a")
	cached.EngineProbed = false
	cached.Members[2].Pod.Ready = false
	for i := range cached.Members {
		cached.Members[i].Engine = nil
	}
	backend := func() *tuitest.DirectBackend {
		return &tuitest.DirectBackend{
			StubBackend: tuitest.StubBackend{Changed: make(chan struct{}, 1), Errs: make(chan error, 1), Answer: func(bool) []status.Result {
				return []status.Result{status.Evaluate(cached, now, cfgVerdict)}
			}},
			Release: make(chan struct{}),
		}
	}
	setup := func() (*tuitest.DirectBackend, Feed) {
		b := backend()
		f, cmd := send(t, newFeed(b), SyncedMsg{})
		return b, settle(t, f, cmd)
	}

	b, f := setup()
	if p, r := b.Counts(); p != 0 || r != 0 {
		t.Fatalf("the watches synced during the direct read: %d probe rounds, %d cache reads (want none yet)", p, r)
	}
	direct := ObservedMsg{Direct: true, Probed: true, Results: []status.Result{probed}, At: now}
	f, cmd := send(t, f, direct)
	f = settle(t, f, cmd)
	if p, r := b.Counts(); p != 0 || r != 1 {
		t.Fatalf("after the direct read: %d probe rounds, %d cache reads (want 0 and 1)", p, r)
	}
	r, _ := shown(f, "db/etcd-a")
	if r.Observation.Members[2].Pod.Ready {
		t.Fatal("the cache read after the direct read is not shown")
	}
	f, cmd = send(t, f, ProbeTickMsg{})
	settle(t, f, cmd)
	if p, _ := b.Counts(); p != 1 {
		t.Fatalf("the probe tick after the direct read started %d rounds, want 1", p)
	}

	b, f = setup()
	f, cmd = send(t, f, ObservedMsg{Direct: true, Err: errors.New("list pods: connection refused"), At: now})
	settle(t, f, cmd)
	if p, _ := b.Counts(); p != 1 {
		t.Fatalf("a failed direct read after the sync: %d probe rounds, want 1 at once", p)
	}

	// A round already running at the sync (p) schedules the next itself:
	// neither the sync nor the direct read starts another beside it.
	b = backend()
	f = newFeed(b)
	f.probing = true
	f, cmd = send(t, f, SyncedMsg{})
	f = settle(t, f, cmd)
	f, cmd = send(t, f, direct)
	f = settle(t, f, cmd)
	if p, _ := b.Counts(); p != 0 || !f.probing || f.afterDirect {
		t.Fatalf("with a round running at the sync: %d more rounds started, probing %v, waiting %v", p, f.probing, f.afterDirect)
	}

	b, f = setup()
	f, cmd = send(t, f, DirectOverdueMsg{})
	f = settle(t, f, cmd)
	f, cmd = send(t, f, direct)
	settle(t, f, cmd)
	if p, _ := b.Counts(); p != 1 {
		t.Fatalf("a direct read overdue after the sync, then late: %d probe rounds, want 1", p)
	}
}

// Update reports what the root shows: new results, the lag history and
// leader log taking in a probe, an error for the status line and its
// end, the results dropped when the watches could not sync; a message
// not the feed's is left alone.
func TestUpdateReportsWhatChanged(t *testing.T) {
	f := newFeed(nil)
	rs := []status.Result{evaluate(healthyObs("db", "etcd-b")), evaluate(healthyObs("db", "etcd-a"))}
	f, _, c, _ := f.Update(ObservedMsg{Seq: 1, Probed: true, Results: rs, At: now})
	if c != (Changes{Results: true, History: true}) {
		t.Errorf("a probe: %+v", c)
	}
	if res := f.Results(); len(res) != 2 || res[0].Observation.Cluster.Name != "etcd-a" || !f.Loaded() || !f.ProbedAt().Equal(now) {
		t.Errorf("a probe's results: %d, loaded %v, probed at %v (want sorted, loaded, at now)", len(res), f.Loaded(), f.ProbedAt())
	}
	if len(f.History()) == 0 {
		t.Error("the probe did not reach the lag history")
	}
	boom := errors.New("list pods: connection refused")
	f, _, c, _ = f.Update(ObservedMsg{Seq: 2, Err: boom, At: now})
	if c != (Changes{Status: boom}) || f.Err() != boom {
		t.Errorf("a failed read: %+v, Err %v", c, f.Err())
	}
	f, _, c, _ = f.Update(ObservedMsg{Seq: 3, Results: rs, Warnings: status.Warnings{"events: forbidden"}, At: now})
	if c != (Changes{Results: true, ClearStatus: true}) || f.Err() != nil || len(f.Warnings()) != 1 {
		t.Errorf("a read after a failed one: %+v, Err %v, warnings %v", c, f.Err(), f.Warnings())
	}
	f, _, c, _ = f.Update(SyncedMsg{Err: boom})
	if c != (Changes{Status: boom, Dropped: true}) || f.Loaded() || f.Results() != nil {
		t.Errorf("a failed sync: %+v, loaded %v, %d results", c, f.Loaded(), len(f.Results()))
	}
	if _, cmd, c, ok := f.Update(tea.KeyPressMsg{Code: 'p'}); ok || cmd != nil || c != (Changes{}) {
		t.Errorf("a key press was taken as the feed's: ok %v, changes %+v", ok, c)
	}
}

// Probe starts one round at a time, and none without a backend.
func TestProbeStartsOneRound(t *testing.T) {
	if f, cmd := newFeed(nil).Probe(); cmd != nil || f.Probing() {
		t.Error("a feed without a backend probed")
	}
	b := &tuitest.StubBackend{Changed: make(chan struct{}), Errs: make(chan error), Answer: func(bool) []status.Result { return nil }}
	f, cmd := newFeed(b).Probe()
	if cmd == nil || !f.Probing() {
		t.Fatal("Probe did not start a round")
	}
	if _, again := f.Probe(); again != nil {
		t.Error("Probe started a second round beside the running one")
	}
	settle(t, f, cmd)
	if p, _ := b.Counts(); p != 1 {
		t.Errorf("%d probe rounds, want 1", p)
	}
}
