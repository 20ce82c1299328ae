package status

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	patroniengine "github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/model"
)

// TestHistoryJoinsItsSources: Patroni's timeline history and lock, the
// ledger's action with its changes (not its waits), Events and the
// observation come out as one time-sorted list, each row with its source;
// an engine without a record says so.
func TestHistoryJoinsItsSources(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	dcs := &model.PatroniClusterFacts{
		Scope: "pg", LockFound: true, LockHolder: "pg-1", LockAcquired: at(31), LockTransitions: 1,
		History: []model.TimelineSwitch{{Timeline: 1, LSN: 0x5000060, Reason: "no recovery target specified", At: at(30), NewLeader: "pg-1"}},
	}
	r := Result{Observation: model.Observation{At: at(60),
		// The record as Patroni's keeper reads it from the DCS.
		Cluster: model.ClusterFacts{Namespace: "db", Name: "pg", Engine: patroniengine.Name, Patroni: dcs, Record: patroniengine.Record(dcs)},
		Members: []model.Member{{Name: "pg-0", PVC: &model.PVCFacts{Name: "pgdata-pg-0"}}, {Name: "pg-1"}},
		Ledger: []model.LedgerEntry{{ID: "switchover.pg-1.x", Action: model.ActionSwitchover, Member: "pg-1", Holder: "hactl/h/1/a",
			State: model.EntryDone, Phase: model.ActionPhaseReady, StartedAt: at(29), UpdatedAt: at(32), Receipts: []model.Receipt{
				{Step: model.StepAcquireLock, Outcome: model.OutcomeDone, At: at(29)},
				{Step: model.StepSwitchover, Outcome: model.OutcomeDone, At: at(29), Member: "pg-0", Detail: "from pg-0 to pg-1"},
				{Step: model.StepAwaitSwitchover, Outcome: model.OutcomeDone, At: at(31)},
			}}},
	}, Analysis: model.Analysis{LeaderMember: "pg-1"}}
	events := []model.EventFacts{{Reason: "Killing", Object: "Pod/pg-0", Message: "Stopping container", Count: 2, Last: at(45)},
		{Reason: "ActionReady", Object: "StatefulSet/pg", Message: "switchover done", Last: at(32), Controller: EventController}}
	h := History(r, events)
	want := []string{
		"hactl pg-1 switchover-started", "hactl pg-0 switchover", "dcs pg-1 timeline-switch", "dcs pg-1 leader-lock",
		"hactl pg-1 switchover-done", "events pg-0 Killing", "observed pg-1 now",
	}
	var got []string
	for _, row := range h.Rows {
		got = append(got, row.Source+" "+row.Member+" "+row.Event)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := h.Rows[2].Detail; !strings.Contains(d, "timeline 1 ended at 0/5000060") || !strings.Contains(d, "pg-1 leads timeline 2") {
		t.Errorf("timeline switch: %q", d)
	}
	// Not probed: only the lock was read, and it says so (expired too).
	if d := h.Rows[6].Detail; d != "pg-1 holds the leader lock" {
		t.Errorf("observed now: %q", d)
	}
	stale := r
	p := *r.Observation.Cluster.Patroni
	p.LockRenew, p.LockTTL = at(40), 30*time.Second
	stale.Observation.Cluster.Patroni, stale.Observation.Cluster.Record = &p, patroniengine.Record(&p)
	if d := History(stale, nil).Rows; !strings.Contains(d[len(d)-1].Detail, "which has expired") {
		t.Errorf("a stale lock: %q", d[len(d)-1].Detail)
	}
	var b bytes.Buffer
	if err := PrintHistory(&b, h, false); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.HasPrefix(out, "TIME (UTC)") || !strings.Contains(out, "2026-12-06 10:30:00  dcs") || !strings.Contains(out, "note: Kubernetes keeps Events for an hour") {
		t.Errorf("table:\n%s", out)
	}
	r.Observation.Cluster.Engine, r.Observation.Cluster.Patroni, r.Observation.Cluster.Record = etcdengine.Name, nil, nil
	r.Analysis.LeaderMember = ""
	h = History(r, nil)
	if len(h.Notes) != 2 || !strings.Contains(h.Notes[0], "keeps no leadership history") {
		t.Errorf("etcd notes %v", h.Notes)
	}
	// Not probed: the leader is not read, never "no leader agreed".
	if now := h.Rows[len(h.Rows)-1]; now.Source != SourceObserved || !strings.Contains(now.Detail, "leader not read") {
		t.Errorf("last row %+v", now)
	}
}

// TestTableEscapesWhatMembersSay: a member's role and a reason's detail
// holding terminal control sequences are printed as text.
func TestTableEscapesWhatMembersSay(t *testing.T) {
	evil := "leader\x1b]0;owned\x07\x1b[2J"
	cs := &ClusterStatus{Metadata: StatusMeta{Namespace: "db", Name: "kv"}, Engine: "http", Replicas: 1, Leader: evil,
		Members: []MemberStatus{{Name: "kv-0", Role: evil, Phase: "member"}},
		Verdict: VerdictStatus{Reasons: []ReasonStatus{{Code: "member_unreachable", Impact: "failover", Member: "kv-0", Detail: "HTTP 500: " + evil}}},
	}
	var b bytes.Buffer
	if err := PrintTable(&b, []*ClusterStatus{cs}, TableOptions{Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "\x1b") || !strings.Contains(out, "leader^[]0;owned") {
		t.Errorf("control characters reach the terminal:\n%q", out)
	}
}

// TestEventsOfTheClusterOnly: the StatefulSet's, its pods' and its
// claims' Events (a claim replaced since included), in its namespace.
func TestEventsOfTheClusterOnly(t *testing.T) {
	r := Result{Observation: model.Observation{Cluster: model.ClusterFacts{Namespace: "db", Name: "pg"},
		Members: []model.Member{{Name: "pg-0"}, {Name: "pg-1"}}}}
	ev := func(ns, kind, name string) corev1.Event {
		return corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}, Reason: kind + "/" + name}
	}
	got := EventsOf([]corev1.Event{
		ev("db", "StatefulSet", "pg"), ev("db", "Pod", "pg-0"), ev("db", "PersistentVolumeClaim", "pgdata-pg-2"),
		ev("db", "Pod", "pgx-0"), ev("db", "Pod", "pg-0-debug"), ev("other", "Pod", "pg-0"), ev("db", "StatefulSet", "pgx"),
	}, r)
	var reasons []string
	for _, e := range got {
		reasons = append(reasons, e.Reason)
	}
	if strings.Join(reasons, " ") != "StatefulSet/pg Pod/pg-0 PersistentVolumeClaim/pgdata-pg-2" {
		t.Errorf("events %v", reasons)
	}
	h := History(r, got)
	for _, row := range h.Rows {
		if row.Event == "PersistentVolumeClaim/pgdata-pg-2" && row.Member != "pg-2" {
			t.Errorf("the claim's event is not pg-2's: %+v", row)
		}
	}
}

// TestHistoryShowsTheLeaderChangesHactlSaw: the leaders an action's
// receipts recorded give a row where they change (across entries, in
// time order, dry runs left out), and so do the changes a long-running
// view kept in its LeaderLog (an observation that read no leader, or the
// same leader again, adds nothing).
func TestHistoryShowsTheLeaderChangesHactlSaw(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	cl := model.ClusterFacts{Namespace: "db", Name: "etcd", Engine: etcdengine.Name}
	r := Result{Observation: model.Observation{At: at(60), Cluster: cl, EngineProbed: true,
		Ledger: []model.LedgerEntry{
			{ID: "replace.etcd-2.b", Action: model.ActionReplace, Member: "etcd-2", StartedAt: at(20), Receipts: []model.Receipt{
				{Step: model.StepAcquireLock, Outcome: model.OutcomeDone, At: at(20), Leader: "etcd-1"},
				{Step: model.StepAwaitCaughtUp, Outcome: model.OutcomeDone, At: at(25), Leader: "etcd-0"},
			}},
			{ID: "replace.etcd-0.a", Action: model.ActionReplace, Member: "etcd-0", StartedAt: at(10), Receipts: []model.Receipt{
				{Step: model.StepAcquireLock, Outcome: model.OutcomeDone, At: at(10), Leader: "etcd-0"},
				{Step: model.StepAcquireLock, Outcome: model.OutcomeDone, At: at(11), Leader: "etcd-2", DryRun: "client"},
				{Step: model.StepDeletePod, Outcome: model.OutcomeDone, At: at(12), Leader: "etcd-1"},
			}},
		}}}
	log := LeaderLog{}
	for i, leader := range []string{"etcd-1", "etcd-1", "", "etcd-2"} {
		x := Result{Observation: model.Observation{At: at(40 + i), Cluster: cl, EngineProbed: true,
			Members: []model.Member{{Name: "etcd-2", Engine: &model.EngineFacts{Reachable: true, RaftTerm: 9}}}},
			Analysis: model.Analysis{LeaderMember: leader}}
		log.Add([]Result{x})
	}
	if got := log.Of(cl); len(got) != 2 || got[1].Leader != "etcd-2" || got[1].Term != 9 || !got[1].At.Equal(at(43)) || !got[0].LastSeen.Equal(at(41)) {
		t.Fatalf("log = %+v", got)
	}
	h := History(r, nil, log.Of(cl)...)
	var got []string
	for _, row := range h.Rows {
		if row.Event == "leader-change" {
			got = append(got, row.When()+" "+row.Member+": "+row.Detail)
		}
	}
	want := []string{
		"2026-12-06 10:12:00 etcd-1: etcd-1 leads, as replace replace.etcd-0.a decided its step; etcd-0 led when replace replace.etcd-0.a decided the step it recorded at 2026-12-06 10:10:00",
		"2026-12-06 10:25:00 etcd-0: etcd-0 leads, as replace replace.etcd-2.b decided its step; etcd-1 led when replace replace.etcd-2.b decided the step it recorded at 2026-12-06 10:20:00",
		"2026-12-06 10:43:00 etcd-2: etcd-2 leads (term 9); etcd-1 led until at least 2026-12-06 10:41:00, as this view saw",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("leader changes\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
