package actions_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
)

const sentinelKey, sentinelValue = "/hactl-test/sentinel", "written-before-the-action"

// follower returns a member that does not lead (the classifier refuses
// the leader without --move-leader).
func (e *env) follower() string {
	e.t.Helper()
	res, _, err := e.observer().Observe(context.Background(), e.ns, "etcd")
	if err != nil {
		e.t.Fatal(err)
	}
	for _, m := range res.Observation.Members {
		if m.Name != res.Analysis.LeaderMember {
			return m.Name
		}
	}
	e.t.Fatal("no follower")
	return ""
}

func (e *env) client(member string) *etcdengine.Client {
	e.t.Helper()
	c, err := etcdengine.Open(context.Background(), engine.Target{Member: member, Namespace: e.ns, Pod: member, Port: 2379},
		engine.ProbeOptions{Dial: e.dialer.dial, Timeout: 5 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (e *env) putSentinel() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.client("etcd-0").Put(ctx, sentinelKey, sentinelValue); err != nil {
		e.t.Fatal(err)
	}
}

// assertSentinelEverywhere reads the sentinel from every member on its
// own (a serializable read from that member's store).
func (e *env) assertSentinelEverywhere() {
	e.t.Helper()
	for _, m := range []string{"etcd-0", "etcd-1", "etcd-2"} {
		err := poll.Wait(20*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			v, found, err := e.client(m).Get(ctx, sentinelKey)
			if err != nil || !found || v != sentinelValue {
				return fmt.Errorf("sentinel %q found=%v (err %v), want %q", v, found, err, sentinelValue)
			}
			return nil
		}, poll.Every(100*time.Millisecond))
		if err != nil {
			e.t.Errorf("%s: %v", m, err)
		}
	}
}

func (e *env) decide(x *actions.Executor, member string) model.Decision {
	e.t.Helper()
	d, _, _, err := x.Decide(context.Background(), e.ns, "etcd", model.Intent{Action: model.ActionReplace, Member: member})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) voters() map[string]model.Peer {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ps, err := e.client("etcd-0").MemberList(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]model.Peer{}
	for _, p := range ps {
		out[p.ID] = p
	}
	return out
}

// TestFenceConflictChangesNothing: the pod is edited between the decision
// and the execution; the executor stops with a fence conflict before
// removing the member or deleting anything.
func TestFenceConflictChangesNothing(t *testing.T) {
	e := newEnv(t, true)
	target := e.follower()
	x := e.executor()
	d := e.decide(x, target)
	if d.Verb != model.VerbProceed {
		t.Fatalf("decision %s:\n%s", d.Verb, strings.Join(classify.Describe(d), "\n"))
	}
	before := e.pod(target)
	membersBefore := e.voters()
	p := before.DeepCopy()
	p.Labels["edited"] = "between-decision-and-execution"
	if _, err := e.cs.CoreV1().Pods(e.ns).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := x.Execute(context.Background(), d, actions.ExecOptions{})
	if !errors.Is(err, actions.ErrFenceConflict) {
		t.Fatalf("err = %v, want a fence conflict", err)
	}
	if !strings.Contains(err.Error(), "Pod "+e.ns+"/"+target+" changed: resourceVersion "+before.ResourceVersion) {
		t.Errorf("the conflict does not say what changed: %v", err)
	}
	after := e.pod(target)
	if after.UID != before.UID || after.DeletionTimestamp != nil {
		t.Fatal("the pod was deleted")
	}
	if c := e.pvc("data-" + target); c.DeletionTimestamp != nil {
		t.Fatal("the volume was deleted")
	}
	if got := e.voters(); len(got) != len(membersBefore) {
		t.Fatalf("members %v, before %v", got, membersBefore)
	}
	f, _ := actions.ReadLock(context.Background(), e.cs, e.ns, "etcd")
	if f == nil || f.Holder != "" {
		t.Fatalf("lock not released: %+v", f)
	}
}

// TestServerDryRunChecksFencesAndChangesNothing.
func TestServerDryRunChecksFencesAndChangesNothing(t *testing.T) {
	e := newEnv(t, true)
	target := e.follower()
	x := e.executor()
	d := e.decide(x, target)
	before := e.pod(target)
	res, err := x.Execute(context.Background(), d, actions.ExecOptions{DryRun: actions.DryRunServer})
	if err != nil {
		t.Fatal(err)
	}
	var deletes int
	for _, r := range res.Receipts {
		if r.DryRun != "server" || r.Outcome != model.OutcomeDryRun {
			t.Errorf("receipt %+v is not a server dry run", r)
		}
		if r.Step == model.StepDeletePod || r.Step == model.StepDeletePVC {
			deletes++
		}
	}
	if deletes != 2 {
		t.Errorf("%d dry-run deletes, want 2", deletes)
	}
	if p := e.pod(target); p.UID != before.UID || p.DeletionTimestamp != nil || p.ResourceVersion != before.ResourceVersion {
		t.Fatal("a server dry run changed the pod")
	}
	if len(e.voters()) != 3 {
		t.Fatal("a server dry run changed the members")
	}
	if l, _ := actions.ReadLedger(context.Background(), e.cs, e.ns, "etcd"); len(l.Entries) != 0 {
		t.Fatalf("a dry run wrote the ledger: %+v", l.Entries)
	}
}

// TestReplaceLearnerFlow replaces a member end to end against real etcd
// members: the sentinel written before is read from every member on its
// own afterwards, the member has a new ID, pod and volume, receipts and
// Events record every phase, and the cluster is failover-ready again.
func TestReplaceLearnerFlow(t *testing.T) {
	e := newEnv(t, true)
	k := e.startKubelet()
	target := e.follower()
	e.putSentinel()
	x := e.executor()
	d := e.decide(x, target)
	if d.Verb != model.VerbProceed || d.Flow != model.FlowLearner {
		t.Fatalf("decision:\n%s", strings.Join(classify.Describe(d), "\n"))
	}
	oldPod, oldPVC := e.pod(target), e.pvc("data-"+target)
	oldID := d.MemberFence.ID
	var streamed []model.Receipt
	res, err := x.Execute(context.Background(), d, actions.ExecOptions{OnReceipt: func(r model.Receipt) { streamed = append(streamed, r) }})
	if err != nil {
		t.Fatalf("execute: %v\nreceipts: %s", err, receiptsText(res.Receipts))
	}
	if res.Final.Verb != model.VerbDone {
		t.Fatalf("final decision %s", res.Final.Verb)
	}
	if len(streamed) != len(res.Receipts) {
		t.Errorf("streamed %d receipts, result has %d", len(streamed), len(res.Receipts))
	}
	// Every receipt names the leader the run saw (a follower is
	// replaced: the leader is another member).
	for _, r := range res.Receipts {
		if r.Leader == "" || r.Leader == target {
			t.Errorf("receipt %s/%s names leader %q (target %s)", r.Step, r.Outcome, r.Leader, target)
		}
	}
	// Phases in order, ending ready.
	var phases []model.ActionPhase
	for _, r := range res.Receipts {
		if len(phases) == 0 || phases[len(phases)-1] != r.Phase {
			phases = append(phases, r.Phase)
		}
	}
	want := []model.ActionPhase{model.ActionPhaseRequested, model.ActionPhaseFencing, model.ActionPhaseRemoving,
		model.ActionPhaseRestoring, model.ActionPhaseRemoving, model.ActionPhaseRestoring, model.ActionPhaseBootstrapping,
		model.ActionPhaseCatchingUp, model.ActionPhaseReady}
	if !slices.Equal(phases, want) {
		t.Errorf("phases %v, want %v\n%s", phases, want, receiptsText(res.Receipts))
	}
	newPod, newPVC := e.pod(target), e.pvc("data-"+target)
	if newPod.UID == oldPod.UID || newPVC.UID == oldPVC.UID || k.recreated(target) != 1 {
		t.Fatalf("pod %s→%s, pvc %s→%s, recreated %d times", oldPod.UID, newPod.UID, oldPVC.UID, newPVC.UID, k.recreated(target))
	}
	vs := e.voters()
	if _, ok := vs[oldID]; ok || len(vs) != 3 {
		t.Fatalf("members after replace: %v (old %s)", vs, oldID)
	}
	for _, p := range vs {
		if p.IsLearner {
			t.Fatalf("a learner remains: %+v", p)
		}
	}
	e.assertSentinelEverywhere()
	obs, _, err := e.observer().Observe(context.Background(), e.ns, "etcd")
	if err != nil {
		t.Fatal(err)
	}
	if !obs.Verdict.FailoverReady {
		t.Errorf("not failover-ready after replace: %+v", obs.Verdict.Reasons)
	}
	// Ledger: one entry, done, with every receipt numbered.
	l, err := actions.ReadLedger(context.Background(), e.cs, e.ns, "etcd")
	if err != nil || len(l.Entries) != 1 {
		t.Fatalf("ledger %+v %v", l, err)
	}
	en := l.Entries[0]
	// The ledger holds the result's receipts and, written ahead of each
	// changing request, one "sending" receipt that a receipt of the same
	// step follows.
	var shown int
	for i, r := range en.Receipts {
		if r.Outcome != model.OutcomeSending {
			shown++
			continue
		}
		if i+1 >= len(en.Receipts) || en.Receipts[i+1].Step != r.Step {
			t.Errorf("receipt %d (%s sending) is not followed by how the step ended", r.Seq, r.Step)
		}
	}
	if en.State != model.EntryDone || en.Phase != model.ActionPhaseReady || shown != len(res.Receipts) || en.Replaced.PodUID != string(oldPod.UID) {
		t.Errorf("ledger entry %+v", en)
	}
	if l.ClusterID == "" {
		t.Error("the cluster ID was not recorded")
	}
	// Events on the StatefulSet.
	evs, err := e.cs.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.kind=StatefulSet,involvedObject.name=etcd"})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]bool{}
	for _, ev := range evs.Items {
		reasons[ev.Reason] = true
		if ev.Source.Component != actions.EventSource {
			t.Errorf("event %s from %q", ev.Reason, ev.Source.Component)
		}
	}
	for _, r := range []string{"ActionStarted", "FencesVerified", "MemberRemoved", "LearnerAdded", "VolumeDeleted", "PodDeleted", "LearnerPromoted", "ActionReady"} {
		if !reasons[r] {
			t.Errorf("no %s event (have %v)", r, reasons)
		}
	}
	// Rerunning the same command now starts a new replace; it does not
	// resume the finished one.
	if d := e.decide(x, target); d.Resume != "" {
		t.Errorf("a finished action was resumed: %s", d.Resume)
	}
}

func receiptsText(rs []model.Receipt) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "\n  %d %s %s %s: %s", r.Seq, r.Phase, r.Step, r.Outcome, r.Detail)
	}
	return b.String()
}

// TestReplaceResumesAfterStoppingAtEachStep interrupts the action after
// each kind of step in turn; deciding and executing again finishes it,
// deleting nothing twice.
func TestReplaceResumesAfterStoppingAtEachStep(t *testing.T) {
	e := newEnv(t, true)
	k := e.startKubelet()
	e.putSentinel()
	// One stop per phase; the end-to-end test kills the real binary at
	// every step.
	stops := []model.StepKind{model.StepRemoveMember, model.StepDeletePVC, model.StepAwaitPodRecreated, model.StepPromoteLearner}
	for i, stopAfter := range stops {
		target := e.follower()
		before := k.recreated(target)
		x := e.executor()
		d := e.decide(x, target)
		if d.Verb != model.VerbProceed {
			t.Fatalf("round %d: %s", i, strings.Join(classify.Describe(d), "\n"))
		}
		ctx, cancel := context.WithCancel(context.Background())
		_, err := x.Execute(ctx, d, actions.ExecOptions{OnReceipt: func(r model.Receipt) {
			if r.Step == stopAfter {
				cancel()
			}
		}})
		cancel()
		if err == nil {
			t.Fatalf("round %d: the action finished although stopped after %s", i, stopAfter)
		}
		// A new process decides again: it resumes the entry.
		x2 := e.executor()
		d2 := e.decide(x2, target)
		if d2.Resume == "" {
			t.Fatalf("round %d (stopped after %s): not resumed:\n%s", i, stopAfter, strings.Join(classify.Describe(d2), "\n"))
		}
		res, err := x2.Execute(context.Background(), d2, actions.ExecOptions{})
		if err != nil {
			t.Fatalf("round %d (stopped after %s): resume: %v%s", i, stopAfter, err, receiptsText(res.Receipts))
		}
		for _, r := range res.Receipts {
			if r.Step == model.StepRemoveMember && r.Outcome == model.OutcomeDone && slices.Index(stops, stopAfter) >= 0 {
				t.Errorf("round %d: the member was removed again after stopping after %s", i, stopAfter)
			}
		}
		if got := k.recreated(target) - before; got != 1 {
			t.Fatalf("round %d (stopped after %s): %s recreated %d times, want once", i, stopAfter, target, got)
		}
	}
	e.assertSentinelEverywhere()
}

// TestTenConcurrentReplaces: ten executors decide and execute the same
// replace at once; exactly one acts, the others are refused by the lock or
// a fence, the member is recreated once and writes keep succeeding.
func TestTenConcurrentReplaces(t *testing.T) {
	e := newEnv(t, true)
	k := e.startKubelet()
	e.putSentinel()
	target := e.follower()

	stop := make(chan struct{})
	var writeErrs []error
	var wmu sync.Mutex
	writer := e.client("etcd-0")
	if target == "etcd-0" {
		writer = e.client("etcd-2")
	}
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := writer.Put(ctx, "/hactl-test/quorum", fmt.Sprint(i))
			cancel()
			if err != nil {
				wmu.Lock()
				writeErrs = append(writeErrs, err)
				wmu.Unlock()
			}
		}
	}()

	var (
		wg                    sync.WaitGroup
		mu                    sync.Mutex
		done, held, conflicts int
		others                []error
	)
	start := make(chan struct{})
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := e.executor()
			<-start
			d, _, _, err := x.Decide(context.Background(), e.ns, "etcd", model.Intent{Action: model.ActionReplace, Member: target})
			if err == nil {
				_, err = x.Execute(context.Background(), d, actions.ExecOptions{})
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				done++
			case errors.Is(err, actions.ErrLockHeld), errors.Is(err, actions.ErrRefused) && d.OnlyLockHeld():
				held++
			case errors.Is(err, actions.ErrFenceConflict):
				conflicts++
			default:
				others = append(others, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(stop)
	<-wdone
	t.Logf("done %d, lock held %d, fence conflicts %d", done, held, conflicts)
	if done != 1 || held+conflicts != 9 || len(others) > 0 {
		t.Fatalf("done %d, lock held %d, conflicts %d, other errors %v; want exactly one to act", done, held, conflicts, others)
	}
	if n := k.recreated(target); n != 1 {
		t.Fatalf("%s recreated %d times: deleted twice", target, n)
	}
	if len(writeErrs) > 0 {
		t.Fatalf("writes failed during the replace (quorum lost?): %v", writeErrs)
	}
	e.assertSentinelEverywhere()
}

// TestFencedDeleteConflictIsNotRetried: a delete whose fence went stale
// gets a real 409 from the API server; the executor reports a conflict,
// deletes nothing, and the next decision (not a retry) carries the new
// resourceVersion.
func TestFencedDeleteConflictIsNotRetried(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	p := e.pod("etcd-1")
	stale := &metav1.Preconditions{UID: &p.UID, ResourceVersion: &p.ResourceVersion}
	cp := p.DeepCopy()
	cp.Labels["touched"] = "yes"
	if _, err := e.cs.CoreV1().Pods(e.ns).Update(ctx, cp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := e.cs.CoreV1().Pods(e.ns).Delete(ctx, "etcd-1", metav1.DeleteOptions{Preconditions: stale})
	if err == nil || !strings.Contains(err.Error(), "precondition") {
		t.Fatalf("stale-fence delete: %v, want a 409 precondition failure", err)
	}
	if got := e.pod("etcd-1"); got.UID != p.UID || got.DeletionTimestamp != nil {
		t.Fatal("deleted despite the stale fence")
	}
	// The executor's own delete path, through a step built from a stale
	// observation.
	obs, _, err := e.observer().Observe(ctx, e.ns, "etcd")
	if err != nil {
		t.Fatal(err)
	}
	if obs.Observation.EngineProbed {
		t.Fatal("expected no probes without a dialer")
	}
	var pf *model.PodFacts
	for _, m := range obs.Observation.Members {
		if m.Name == "etcd-1" {
			pf = m.Pod
		}
	}
	cp = e.pod("etcd-1").DeepCopy()
	cp.Labels["touched"] = "again"
	if _, err := e.cs.CoreV1().Pods(e.ns).Update(ctx, cp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, detail, err := actions.DeleteFenced(ctx, e.cs, model.Fence{Kind: "Pod", Namespace: e.ns, Name: "etcd-1", UID: pf.UID, ResourceVersion: pf.ResourceVersion}, false)
	if err != nil || out != model.OutcomeConflict || !strings.Contains(detail, "not retried") {
		t.Fatalf("delete with a stale fence: %s %q %v", out, detail, err)
	}
	if got := e.pod("etcd-1"); got.DeletionTimestamp != nil {
		t.Fatal("deleted despite the stale fence")
	}
	cur := e.pod("etcd-1")
	out, _, err = actions.DeleteFenced(ctx, e.cs, model.Fence{Kind: "Pod", Namespace: e.ns, Name: "etcd-1", UID: string(cur.UID), ResourceVersion: cur.ResourceVersion}, false)
	if err != nil || out != model.OutcomeDone {
		t.Fatalf("delete with the current fence: %s %v", out, err)
	}
	if got := e.pod("etcd-1"); got.DeletionTimestamp == nil {
		t.Fatal("not deleted with the current fence")
	}
}

// TestStatusOnlyChangeIsNotAConflict: the kubelet reporting status (a
// restart) moves the pod's resourceVersion but not what anyone changed
// about it; that passes the verification (the fresh resourceVersion is
// used), while a label edit does not.
func TestStatusOnlyChangeIsNotAConflict(t *testing.T) {
	e := newEnv(t, true)
	target := e.follower()
	x := e.executor()
	ctx := context.Background()
	d := e.decide(x, target)
	p := e.pod(target)
	p.Status.ContainerStatuses[0].RestartCount++
	if _, err := e.cs.CoreV1().Pods(e.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if e.pod(target).ResourceVersion == d.Fences[1].ResourceVersion {
		t.Fatal("the status update did not move the resourceVersion; the test proves nothing")
	}
	if _, err := x.Execute(ctx, d, actions.ExecOptions{DryRun: actions.DryRunServer}); err != nil {
		t.Fatalf("a status update was taken for a fence conflict: %v", err)
	}
	p = e.pod(target)
	p.Labels["edited"] = "yes"
	if _, err := e.cs.CoreV1().Pods(e.ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Execute(ctx, d, actions.ExecOptions{DryRun: actions.DryRunServer}); !errors.Is(err, actions.ErrFenceConflict) {
		t.Fatalf("a label edit: %v, want a fence conflict", err)
	}
}
