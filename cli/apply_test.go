package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/actions"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
)

// savePlan writes a plan the verb printed to a file.
func savePlan(t *testing.T, out []byte) (string, *planDoc) {
	t.Helper()
	p, err := readPlan(bytes.NewReader(out), "the plan printed")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return file, p
}

// applyOptions returns apply options as Complete and Validate would fill
// them, for the plan in file.
func (e *cliEnv) applyOptions(file string) (*ApplyOptions, *bytes.Buffer, *bytes.Buffer) {
	e.t.Helper()
	var out, errOut bytes.Buffer
	o := NewApplyOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	o.Filename, o.client, o.dial = file, e.cs, e.dial
	o.Capture = string(actions.CapturePortForward) // no kubelet here
	if err := o.Validate(); err != nil {
		e.t.Fatal(err)
	}
	return o, &out, &errOut
}

// TestApplyReplacePlanAgainstRealMembers: replace --dry-run=client -o json
// prints a complete plan; apply --dry-run=client re-checks it; after the
// target pod is edited, apply --yes exits 6 naming the pod and changes
// nothing.
func TestApplyReplacePlanAgainstRealMembers(t *testing.T) {
	e := newCLIEnv(t)
	leader, follower := e.leaderAndFollower()
	uid := e.podUID(follower)
	ctx := context.Background()

	o, out, errOut := e.options(strings.NewReader(""), false, follower)
	o.DryRun, o.Output = "client", "json"
	if err := o.Run(ctx); err != nil {
		t.Fatalf("plan: %v\n%s", err, errOut)
	}
	file, p := savePlan(t, out.Bytes())
	ks, err := e.cs.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Target.KubeSystemUID != string(ks.UID) || p.Decision.Leader != leader || p.Decision.MemberFence == nil ||
		p.Options.Timeout != "30s" || len(p.Receipts) == 0 || p.Receipts[0].DryRun != "client" {
		t.Fatalf("plan: %+v", p)
	}
	e.unchanged(follower, uid)

	a, aout, aerr := e.applyOptions(file)
	a.DryRun = "client"
	if err := a.Run(ctx); err != nil || !strings.Contains(aout.String(), "the plan would apply") {
		t.Fatalf("apply --dry-run=client: %v\n%s\n%s", err, aout, aerr)
	}
	t.Logf("apply --dry-run=client:\n%s", aout)

	pod, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, follower, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Labels["edited-after-the-plan"] = "true"
	if _, err := e.cs.CoreV1().Pods(e.ns).Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a, aout, aerr = e.applyOptions(file)
	a.Yes, a.Output = true, "json"
	err = a.Run(ctx)
	if codeOf(err) != ExitFenceConflict || !strings.Contains(err.Error(), "Pod "+e.ns+"/"+follower+" changed") {
		t.Fatalf("apply after the pod changed: exit %d, %v\n%s", codeOf(err), err, aerr)
	}
	t.Logf("apply after the pod changed: %v", err)
	var doc receiptsDoc
	if json.Unmarshal(aout.Bytes(), &doc) != nil || doc.Kind != "ActionReceipts" || doc.Result != "fence-conflict" {
		t.Fatalf("receipts: %s", aout)
	}
	e.unchanged(follower, uid)
}

// The executor compares the plan once more under the lock, after its own
// fresh decision: a plan whose leader moved between the last check
// before the prompt and the lock is refused there (a *PlanConflictError,
// no ledger entry), although the follower's fences alone still hold; the
// member is not touched (its pod and member ID as before).
func TestApplyPlanCheckedUnderTheLock(t *testing.T) {
	e := newCLIEnv(t)
	ctx := context.Background()
	leader, follower := e.leaderAndFollower()
	uid := e.podUID(follower)
	o, _, _ := e.options(strings.NewReader(""), false, follower)
	x := o.executor()
	d, _, _, err := x.Decide(ctx, e.ns, "etcd", o.intent())
	if err != nil || d.Verb != model.VerbProceed {
		t.Fatalf("decide: %v %s", err, d.Verb)
	}
	// What a prompt left open would let happen: leadership moves, to a
	// member other than the one being replaced.
	moveLeaderAway(t, e, leader, follower)
	x.Plan = &d
	res, err := x.Execute(ctx, d, actions.ExecOptions{})
	var pc *actions.PlanConflictError
	if !errors.As(err, &pc) || res.EntryID != "" {
		t.Fatalf("execute after the leader moved: entry %q, %v; want a plan conflict before any ledger entry", res.EntryID, err)
	}
	t.Logf("under the lock: %v", err)
	e.unchanged(follower, uid)
}

// TestApplySeedPlan: seed --dry-run=client -o json prints a plan that
// publishes nothing; apply --yes publishes exactly that generation from
// the planned source; applying it again is a no-op; a seed plan made
// before the leader moved is refused with exit 6.
func TestApplySeedPlan(t *testing.T) {
	e := newSeedEnv(t)
	ctx := context.Background()
	plan := func(g string) (string, *planDoc) {
		o, out, errOut := e.seedOptions(strings.NewReader(""), false, g)
		o.DryRun, o.Output = "client", "json"
		err := o.Run(ctx)
		e.record(out.String(), errOut.String())
		if err != nil {
			t.Fatalf("seed plan: %v\n%s", err, errOut)
		}
		return savePlan(t, out.Bytes())
	}
	file, p := plan("planned-1")
	if p.Action != model.ActionSeed || p.Generation != "planned-1" || p.Options.Store == "" || p.Store == "" || p.Decision.Verb != model.VerbProceed {
		t.Fatalf("seed plan: %+v", p)
	}
	if _, err := e.store().ReadManifest(ctx, "planned-1"); err == nil {
		t.Fatal("the seed plan published the generation")
	}
	// apply --capture pod is honoured: no kubelet here runs a capture pod,
	// so it refuses (rather than falling back) and publishes nothing.
	a, out, errOut := e.applyOptions(file)
	a.Yes, a.Capture = true, string(actions.CaptureInPod)
	err := a.Run(ctx)
	e.record(out.String(), errOut.String())
	if err == nil || !strings.Contains(err.Error(), "cannot capture in a pod") {
		t.Fatalf("apply --capture pod without a kubelet: %v\n%s\n%s", err, out, errOut)
	}
	if _, err := e.store().ReadManifest(ctx, "planned-1"); err == nil {
		t.Fatal("apply --capture pod published the generation")
	}
	a, out, errOut = e.applyOptions(file)
	a.Yes, a.Output = true, "json"
	err = a.Run(ctx)
	e.record(out.String(), errOut.String())
	var doc seedDoc
	if err != nil || json.Unmarshal(out.Bytes(), &doc) != nil || doc.Kind != "SeedReceipt" || doc.Result != "done" || doc.Phase != model.ActionPhasePublished {
		t.Fatalf("apply: %v\n%s\n%s", err, out, errOut)
	}
	m, err := e.store().ReadManifest(ctx, "planned-1")
	if err != nil {
		t.Fatalf("not published: %v", err)
	}
	var src string
	for _, s := range p.Decision.Steps {
		if s.Kind == model.StepCaptureSnapshot {
			src = s.MemberID
		}
	}
	if m.Identity.SourceMemberID != src {
		t.Errorf("captured from member %s, the plan's source was %s", m.Identity.SourceMemberID, src)
	}
	// Applied again: published already, nothing to do.
	a, out, errOut = e.applyOptions(file)
	a.Yes = true
	if err := a.Run(ctx); err != nil || !strings.Contains(out.String(), "already published") {
		t.Fatalf("apply again: %v\n%s\n%s", err, out, errOut)
	}

	// A restore plan of that generation. This fixture's StatefulSet
	// cannot be restored (podManagementPolicy OrderedReady): the plan is a
	// refusal, and apply says so (exit 5) without acting.
	var rout, rerr bytes.Buffer
	ro := NewActionOptions(nil, model.ActionRestore, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &rout, ErrOut: &rerr})
	ro.Cluster, ro.Namespace, ro.Generation, ro.Force, ro.AgentImage = "etcd", e.ns, "planned-1", true, "hactl:test"
	ro.DryRun, ro.Output, ro.client, ro.dial, ro.Timeout = "client", "json", e.cs, e.dial, 30*time.Second
	err = ro.Run(ctx)
	e.record(rout.String(), rerr.String())
	if codeOf(err) != ExitRefused {
		t.Fatalf("restore plan: exit %d, %v\n%s", codeOf(err), err, rerr.String())
	}
	file, p = savePlan(t, rout.Bytes())
	if p.Action != model.ActionRestore || p.Result != "refused" || p.Decision.Verb != model.VerbRefuse || p.Decision.Intent.Options.Source == nil ||
		p.Decision.Intent.Options.Source.Digest != m.Digest || p.Options.Store == "" || p.Options.StoreSecret != "seed-store" {
		t.Fatalf("restore plan: %+v", p)
	}
	a, out, errOut = e.applyOptions(file)
	a.Yes = true
	err = a.Run(ctx)
	e.record(out.String(), errOut.String())
	if codeOf(err) != ExitRefused || !strings.Contains(err.Error(), "the plan is a refusal") || !strings.Contains(err.Error(), "restore_unsupported") {
		t.Fatalf("apply of a refusing restore plan: exit %d, %v", codeOf(err), err)
	}

	// A plan, then the leader moves: refused.
	file, p = plan("planned-2")
	moveLeaderAway(t, e.cliEnv, p.Decision.Leader)
	a, out, errOut = e.applyOptions(file)
	a.Yes = true
	err = a.Run(ctx)
	e.record(out.String(), errOut.String())
	if codeOf(err) != ExitFenceConflict || !strings.Contains(err.Error(), "the leader is now") {
		t.Fatalf("apply after the leader moved: exit %d, %v", codeOf(err), err)
	}
	if _, err := e.store().ReadManifest(ctx, "planned-2"); err == nil {
		t.Fatal("a refused seed plan published its generation")
	}
	e.assertNoCredentials()
}

// moveLeaderAway moves leadership from leader to another member and
// waits until a probe says so.
func moveLeaderAway(t *testing.T, e *cliEnv, leader string, avoid ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := etcdengine.Open(ctx, targetOf(e.ns, leader), probeOpts(e.dial))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	peers, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var to string
	for _, p := range peers {
		if p.Name != leader && !slices.Contains(avoid, p.Name) {
			to = p.ID
			break
		}
	}
	if err := cli.MoveLeader(ctx, to); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "leadership to leave "+leader, func() error {
		if l, _ := e.leaderAndFollower(); l == leader {
			return context.DeadlineExceeded
		}
		return nil
	})
}
