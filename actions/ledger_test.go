package actions_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine/registry"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// TestLedgerConcurrentAppends: writers racing on the ConfigMap lose
// nothing (optimistic concurrency: re-read and re-apply on 409), and the
// receipts are numbered without gaps or duplicates.
func TestLedgerConcurrentAppends(t *testing.T) {
	testenv.SkipShort(t)
	cs := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	ctx := context.Background()
	l := &actions.Ledger{Client: cs, Namespace: ns, Cluster: "etcd"}
	at := time.Now().UTC()
	id := actions.NewEntryID(model.ActionReplace, "etcd-1", at)
	e, err := l.Begin(ctx, model.LedgerEntry{ID: id, Action: model.ActionReplace, Member: "etcd-1", Holder: "h",
		Replaced: model.Replaced{PodUID: "u1", PVCUID: "u2", MemberID: "abc", PeerURLs: []string{"http://x:2380"}}}, nil, at)
	if err != nil || e.State != model.EntryInProgress {
		t.Fatalf("begin: %+v %v", e, err)
	}
	const n = 12
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Append(ctx, id, model.Receipt{ActionID: id, Step: model.StepDeletePod, Phase: model.ActionPhaseRemoving,
				Outcome: model.OutcomeDone, At: time.Now().UTC(), Detail: fmt.Sprintf("writer %d", i)}, model.EntryInProgress)
			if err != nil {
				t.Errorf("append %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	got, err := actions.ReadLedger(ctx, cs, ns, "etcd")
	if err != nil || len(got.Entries) != 1 {
		t.Fatalf("read: %+v %v", got, err)
	}
	rs := got.Entries[0].Receipts
	if len(rs) != n {
		t.Fatalf("%d receipts recorded, want %d", len(rs), n)
	}
	var seqs []int
	details := map[string]bool{}
	for _, r := range rs {
		seqs = append(seqs, r.Seq)
		details[r.Detail] = true
	}
	sort.Ints(seqs)
	for i, s := range seqs {
		if s != i+1 {
			t.Fatalf("sequence numbers %v, want 1..%d", seqs, n)
		}
	}
	if len(details) != n {
		t.Fatalf("lost a writer: %v", details)
	}
	if got.Entries[0].Replaced.MemberID != "abc" {
		t.Errorf("replaced identity lost: %+v", got.Entries[0].Replaced)
	}

	// Finishing, superseding, a foreign key and an undecodable key.
	cm, _ := cs.CoreV1().ConfigMaps(ns).Get(ctx, "hactl-etcd", metav1.GetOptions{})
	cm.Data["note"] = "kept"
	cm.Data["action.broken"] = "{not json"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	id2 := actions.NewEntryID(model.ActionReplace, "etcd-2", at.Add(time.Second))
	if _, err := l.Begin(ctx, model.LedgerEntry{ID: id2, Action: model.ActionReplace, Member: "etcd-2", Holder: "h2"}, []string{id}, at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordClusterID(ctx, "cdf818194e3a8c32"); err != nil {
		t.Fatal(err)
	}
	got, _ = actions.ReadLedger(ctx, cs, ns, "etcd")
	if len(got.Entries) != 2 || got.Entries[0].State != model.EntrySuperseded || got.Entries[0].Phase != model.ActionPhaseSuperseded {
		t.Fatalf("superseding: %+v", got.Entries)
	}
	if got.ClusterID != "cdf818194e3a8c32" || len(got.Unreadable) != 1 {
		t.Fatalf("cluster ID %q, unreadable %v", got.ClusterID, got.Unreadable)
	}
	cm, _ = cs.CoreV1().ConfigMaps(ns).Get(ctx, "hactl-etcd", metav1.GetOptions{})
	if cm.Data["note"] != "kept" || cm.Data["action.broken"] != "{not json" {
		t.Fatalf("the ledger dropped keys it does not own: %v", cm.Data)
	}
}

// TestLedgerKeepsBoundedHistory: finished entries beyond the bound go,
// oldest first; in-progress entries always stay.
func TestLedgerKeepsBoundedHistory(t *testing.T) {
	testenv.SkipShort(t)
	cs := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	ctx := context.Background()
	l := &actions.Ledger{Client: cs, Namespace: ns, Cluster: "etcd"}
	base := time.Now().UTC().Add(-time.Hour)
	live := ""
	for i := 0; i < 25; i++ {
		at := base.Add(time.Duration(i) * time.Minute)
		id := actions.NewEntryID(model.ActionReseed, "etcd-0", at)
		if _, err := l.Begin(ctx, model.LedgerEntry{ID: id, Action: model.ActionReseed, Member: "etcd-0"}, nil, at); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			live = id
			continue
		}
		if _, err := l.Append(ctx, id, model.Receipt{Phase: model.ActionPhaseReady, Step: model.StepReleaseLock, Outcome: model.OutcomeDone, At: at}, model.EntryDone); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := actions.ReadLedger(ctx, cs, ns, "etcd")
	if len(got.Entries) != 21 {
		t.Fatalf("%d entries kept, want 20 finished + 1 in progress", len(got.Entries))
	}
	if got.Entries[0].ID != live || got.Entries[0].State != model.EntryInProgress {
		t.Fatalf("the in-progress entry was dropped: %+v", got.Entries[0])
	}
}

// TestLedgerBoundedInBytes: receipts that would take the ConfigMap past
// the API server's 1 MiB (and past hactl's own bound) are compacted and
// finished entries dropped; an action in progress and its latest
// receipts stay, and every write still succeeds.
func TestLedgerBoundedInBytes(t *testing.T) {
	testenv.SkipShort(t)
	cs := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	ctx := context.Background()
	l := &actions.Ledger{Client: cs, Namespace: ns, Cluster: "etcd"}
	big := strings.Repeat("x", 8<<10)
	at := time.Now().UTC().Add(-time.Hour)
	var ids []string
	for i := 0; i < 4; i++ {
		at = at.Add(time.Minute)
		id := actions.NewEntryID(model.ActionReplace, fmt.Sprintf("etcd-%d", i), at)
		ids = append(ids, id)
		if _, err := l.Begin(ctx, model.LedgerEntry{ID: id, Action: model.ActionReplace, Member: fmt.Sprintf("etcd-%d", i)}, nil, at); err != nil {
			t.Fatal(err)
		}
		state := model.EntryDone
		if i == 3 {
			state = model.EntryInProgress
		}
		n := 30
		if i == 3 {
			n = 90 // alone more than the bound
		}
		for j := 0; j < n; j++ { // about 1.4 MiB of receipts in all
			at = at.Add(time.Second)
			if _, err := l.Append(ctx, id, model.Receipt{Phase: model.ActionPhaseRemoving, Step: model.StepAwaitPodGone, Outcome: model.OutcomeDone, At: at,
				Detail: fmt.Sprintf("%d %s", j, big)}, model.EntryInProgress); err != nil {
				t.Fatalf("entry %d receipt %d: %v", i, j, err)
			}
		}
		if state == model.EntryDone {
			if _, err := l.Append(ctx, id, model.Receipt{Phase: model.ActionPhaseReady, Step: model.StepReleaseLock, Outcome: model.OutcomeDone, At: at}, state); err != nil {
				t.Fatal(err)
			}
		}
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "hactl-etcd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for k, v := range cm.Data {
		size += len(k) + len(v)
	}
	if size > 512<<10 {
		t.Errorf("ledger holds %d bytes, over its 512 KiB bound", size)
	}
	got := status.DecodeLedger(cm)
	var live *model.LedgerEntry
	for i := range got.Entries {
		if got.Entries[i].ID == ids[3] {
			live = &got.Entries[i]
		}
	}
	if live == nil || live.State != model.EntryInProgress {
		t.Fatalf("the action in progress was dropped: %d entries", len(got.Entries))
	}
	last := live.Receipts[len(live.Receipts)-1]
	if !strings.HasPrefix(last.Detail, "89 ") {
		t.Errorf("the latest receipt was not kept: %.20q", last.Detail)
	}
	if !slices.ContainsFunc(live.Receipts, func(r model.Receipt) bool { return strings.Contains(r.Detail, "compacted") }) {
		t.Error("no receipt says receipts were compacted")
	}
}

// An action reads its cluster's lock and ledger by name, whatever their
// labels say: a ledger whose label was removed (a GitOps apply, a hand
// edit) still shows its action in progress, and the lock its holder, to
// the observation an action decides with; the next ledger write puts the
// label back, so that namespace-wide reads find it again.
func TestActionsSeeAnUnlabelledLockAndLedger(t *testing.T) {
	testenv.SkipShort(t)
	cs := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	ctx := context.Background()
	fixtures.CreateCluster(t, cs, ns, fixtures.DefaultSpec("etcd"))
	l := &actions.Ledger{Client: cs, Namespace: ns, Cluster: "etcd"}
	at := time.Now().UTC()
	id := actions.NewEntryID(model.ActionReplace, "etcd-1", at)
	if _, err := l.Begin(ctx, model.LedgerEntry{ID: id, Action: model.ActionReplace, Member: "etcd-1", Holder: "hactl/elsewhere/1/abcd"}, nil, at); err != nil {
		t.Fatal(err)
	}
	lock, err := actions.AcquireLock(ctx, cs, ns, "etcd", actions.LockOptions{Identity: "hactl/elsewhere/1/abcd", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Release(context.Background()) })
	unlabel := []byte(`{"metadata":{"labels":{"` + actions.LabelCluster + `":null}}}`)
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, actions.LockName("etcd"), types.MergePatchType, unlabel, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoordinationV1().Leases(ns).Patch(ctx, actions.LockName("etcd"), types.MergePatchType, unlabel, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	res, _, err := (&actions.Observer{Engines: registry.Engines(), Client: cs}).Observe(ctx, ns, "etcd")
	if err != nil {
		t.Fatal(err)
	}
	o := res.Observation
	if len(o.Ledger) != 1 || o.Ledger[0].ID != id || o.Ledger[0].State != model.EntryInProgress {
		t.Errorf("the action's observation lost the unlabelled ledger: %+v", o.Ledger)
	}
	if o.Lock == nil || o.Lock.Holder != "hactl/elsewhere/1/abcd" {
		t.Errorf("the action's observation lost the unlabelled lock: %+v", o.Lock)
	}
	if _, err := l.Append(ctx, id, model.Receipt{ActionID: id, Step: model.StepDeletePod, Outcome: model.OutcomeDone, At: time.Now().UTC()}, model.EntryInProgress); err != nil {
		t.Fatal(err)
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, actions.LockName("etcd"), metav1.GetOptions{})
	if err != nil || cm.Labels[actions.LabelCluster] != "etcd" {
		t.Errorf("the ledger write did not put the label back: %v %v", cm.Labels, err)
	}
}
