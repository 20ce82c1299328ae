package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/tui/internal/feed"
)

func TestGoldenClusters(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db"}, Deps{}, healthyObs("db", "etcd-main"), degradedObs("db", "etcd-orders"))
	golden(t, m, "clusters")
}

func TestGoldenClustersAllNamespaces(t *testing.T) {
	m := newTestModel(t, Config{}, Deps{}, healthyObs("db", "etcd-main"), degradedObs("payments", "etcd-orders"))
	m = press(t, m, "down")
	golden(t, m, "clusters-all-namespaces")
}

func TestGoldenClusterDegraded(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db"}, Deps{}, healthyObs("db", "etcd-main"), degradedObs("db", "etcd-orders"))
	m = press(t, m, "down", "down", "enter")
	golden(t, m, "cluster-degraded")
}

func TestGoldenClusterHealthy(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db"}, Deps{}, healthyObs("db", "etcd-main"))
	m = press(t, m, "enter")
	golden(t, m, "cluster-healthy")
}

func TestGoldenReadiness(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db"}, Deps{}, learnerObs("db", "etcd-main"))
	// Twelve more probes: the learner catches up from 4000 entries behind;
	// in the middle one probe found no frontier.
	for i := 1; i <= 12; i++ {
		o := learnerObs("db", "etcd-main")
		o.Members[2].Engine.RaftApplied = 1000 + uint64(i)*350
		if i == 6 {
			o.Members[0].Engine.Reachable = false
		}
		r := evaluate(o)
		m = send(t, m, feed.ObservedMsg{Seq: uint64(i), Probed: true, Results: []status.Result{r}, At: now})
	}
	m = press(t, m, "enter", "3")
	golden(t, m, "readiness")
}

func TestGoldenSeedPhase(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db"}, Deps{}, learnerObs("db", "etcd-main"))
	m = press(t, m, "enter", "2")
	golden(t, m, "seed-phase")
}

func TestGoldenHelp(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db", ReadOnly: true, ReadOnlyReason: "--readonly"}, Deps{}, healthyObs("db", "etcd-main"))
	m = press(t, m, "?")
	golden(t, m, "help")
}

// TestGoldenConfirmDialog: the dialog names the context the action runs
// in (opened from the fleet view, it is one of several).
func TestGoldenConfirmDialog(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db", Context: "prod-eu"}, Deps{Actions: &stubActions{decide: classifyOn(degradedObs("db", "etcd-b"))}}, degradedObs("db", "etcd-b"))
	m = press(t, m, "enter", "down", "down")
	m, cmd := pressCmd(t, m, "r")
	m = settle(t, m, cmd)
	m = typeText(t, m, "etcd-b")
	golden(t, m, "confirm-replace")
}

func TestGoldenRefusedDialog(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db"}, Deps{Actions: &stubActions{decide: classifyOn(healthyObs("db", "etcd-b"))}}, healthyObs("db", "etcd-b"))
	m = press(t, m, "enter")
	m, cmd := pressCmd(t, m, "r")
	m = settle(t, m, cmd)
	golden(t, m, "confirm-refused")
}

func TestGoldenSeedPhaseRunning(t *testing.T) {
	o := learnerObs("db", "etcd-main")
	o.Ledger = []model.LedgerEntry{{
		ID: "a1", Action: model.ActionReplace, Member: "etcd-main-1", Holder: "alice@laptop", State: model.EntryDone,
		Phase: model.ActionPhaseReady, StartedAt: now.Add(-2 * time.Hour), UpdatedAt: now.Add(-time.Hour),
	}}
	m := newTestModel(t, Config{Namespace: "db"}, Deps{Actions: &stubActions{decide: classifyOn(o)}}, o)
	m = press(t, m, "enter", "2")
	m.action = &common.RunningAction{
		Req:      Request{Namespace: "db", Cluster: "etcd-main", Intent: model.Intent{Action: model.ActionReplace, Member: "etcd-main-2"}},
		Started:  now.Add(-time.Minute),
		Decision: must(classifyOn(o)(Request{Namespace: "db", Cluster: "etcd-main", Intent: model.Intent{Action: model.ActionReplace, Member: "etcd-main-2"}})),
		Receipts: []model.Receipt{
			{ActionID: "a2", Phase: model.ActionPhaseRemoving, Step: model.StepRemoveMember, Outcome: model.OutcomeDone, At: now.Add(-50 * time.Second), Detail: "member 82d82d82d82d3285 removed"},
			{ActionID: "a2", Phase: model.ActionPhaseRemoving, Step: model.StepDeletePVC, Outcome: model.OutcomeDone, At: now.Add(-45 * time.Second)},
			{ActionID: "a2", Phase: model.ActionPhaseRemoving, Step: model.StepDeletePod, Outcome: model.OutcomeDone, At: now.Add(-44 * time.Second)},
			{ActionID: "a2", Phase: model.ActionPhaseRestoring, Step: model.StepAddLearner, Outcome: model.OutcomeDone, At: now.Add(-40 * time.Second)},
		},
	}
	golden(t, m, "seed-phase-running")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestGoldenHistory: the history tab, newest first: an action from the
// ledger with its changes, an Event and the leader observed now.
func TestGoldenHistory(t *testing.T) {
	o := healthyObs("db", "etcd-main")
	o.Ledger = []model.LedgerEntry{{
		ID: "replace.etcd-main-1.a1", Action: model.ActionReplace, Member: "etcd-main-1", Holder: "alice@laptop", State: model.EntryDone,
		Phase: model.ActionPhaseReady, StartedAt: now.Add(-2 * time.Hour), UpdatedAt: now.Add(-time.Hour - 50*time.Minute),
		Receipts: []model.Receipt{
			{Step: model.StepRemoveMember, Outcome: model.OutcomeDone, At: now.Add(-2*time.Hour + time.Minute), Member: "etcd-main-1", Detail: "member 82d82d82d82d3285 removed"},
			{Step: model.StepDeletePod, Outcome: model.OutcomeDone, At: now.Add(-2*time.Hour + 2*time.Minute), Member: "etcd-main-1", Detail: "deleted Pod etcd-main-1"},
			{Step: model.StepAwaitPodGone, Outcome: model.OutcomeDone, At: now.Add(-2*time.Hour + 3*time.Minute)},
		},
	}}
	o.Events = []model.EventFacts{{Type: "Normal", Reason: "Killing", Object: "Pod/etcd-main-2", Message: "Stopping container etcd", Count: 1, Last: now.Add(-10 * time.Minute)}}
	m := newTestModel(t, Config{Namespace: "db"}, Deps{}, o)
	// The next probe finds etcd-main-2 leading (term 8): the view saw
	// the change.
	o2 := o
	o2.Members = slices.Clone(o.Members)
	for i := range o2.Members {
		e := *o2.Members[i].Engine
		e.LeaderID, e.RaftTerm = memberID(2), 8
		o2.Members[i].Engine = &e
	}
	r2 := evaluate(o2)
	r2.Observation.At = now.Add(time.Minute)
	m = send(t, m, feed.ObservedMsg{Seq: 1, Probed: true, Results: []status.Result{r2}, At: now.Add(time.Minute)})
	m = press(t, m, "enter", "4", "down", "down")
	golden(t, m, "history")
	if !strings.Contains(frame(m), "Pod/etcd-main-2: Stopping container etcd") || strings.Contains(frame(m), "await-pod-gone") {
		t.Errorf("the history tab shows the Event and the changes, not the waits:\n%s", frame(m))
	}
	if !strings.Contains(frame(m), "leader-change") || !slices.Contains(m.timeline.Details(), "observed · leader-change: etcd-main-2 leads (term 8); etcd-main-0 led until at least 2026-11-29 12:00:00, as this view saw") {
		t.Errorf("the history tab does not show the leader change the view saw:\n%s", frame(m))
	}
}
