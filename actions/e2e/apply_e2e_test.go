package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/fault"
)

// Saved plans: `replace … --dry-run=client -o json > plan.json`, then
// `apply -f plan.json`, through the real kubectl and the plugin binary.

// savedPlan is the part of a plan document the tests read.
type savedPlan struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Action     string    `json:"action"`
	Member     string    `json:"member"`
	Result     string    `json:"result"`
	CreatedAt  time.Time `json:"createdAt"`
	Target     struct {
		Namespace      string `json:"namespace"`
		StatefulSet    string `json:"statefulSet"`
		StatefulSetUID string `json:"statefulSetUID"`
		KubeSystemUID  string `json:"kubeSystemUID"`
	} `json:"target"`
	Decision struct {
		Verb   string        `json:"verb"`
		Leader string        `json:"leader"`
		Fences []model.Fence `json:"fences"`
		// MemberFence is the member the plan removes.
		MemberFence *model.MemberFence `json:"memberFence"`
	} `json:"decision"`
}

// world is what a refused apply must leave as it was: the target's pod
// and volume (by UID), the member list (by ID) and the ledger.
type world struct {
	podUID, pvcUID string
	members        []string
	entries        int
}

func observeWorld(t *testing.T, cluster, member string) world {
	t.Helper()
	pvc, err := s.KC.CoreV1().PersistentVolumeClaims(namespace).Get(context.Background(), "data-"+member, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	peers, err := s.Member(t, cluster+"-0").MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range peers {
		ids = append(ids, p.ID)
	}
	sort.Strings(ids)
	return world{podUID: s.PodUID(t, member), pvcUID: string(pvc.UID), members: ids, entries: len(s.Ledger(t, cluster).Entries)}
}

func (w world) String() string {
	return fmt.Sprintf("pod %s, volume %s, members %v, %d ledger entries", w.podUID, w.pvcUID, w.members, w.entries)
}

// makePlan runs VERB CLUSTER MEMBER --dry-run=client -o json through
// kubectl, checks the plan it prints and saves it to a file.
func makePlan(t *testing.T, cluster, member string) (string, savedPlan) {
	t.Helper()
	r := s.Hactl(t, "replace", cluster, member, "--dry-run=client", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("plan: %s", r)
	}
	var p savedPlan
	if err := json.Unmarshal([]byte(r.Stdout), &p); err != nil {
		t.Fatalf("the plan does not parse: %v\n%s", err, r)
	}
	ks, err := s.KC.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sts, err := s.KC.AppsV1().StatefulSets(namespace).Get(context.Background(), cluster, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.APIVersion != "hactl.dev/v1alpha1" || p.Kind != "ActionPlan" || p.Action != "replace" || p.Member != member || p.Result != "done" ||
		p.Decision.Verb != "proceed" || p.CreatedAt.IsZero() || p.Target.Namespace != namespace || p.Target.StatefulSet != cluster ||
		p.Target.StatefulSetUID != string(sts.UID) || p.Target.KubeSystemUID != string(ks.UID) || p.Decision.Leader == "" || p.Decision.MemberFence == nil {
		t.Fatalf("plan: %+v\n%s", p, r.Stdout)
	}
	uid := s.PodUID(t, member)
	fenced := false
	for _, f := range p.Decision.Fences {
		fenced = fenced || (f.Kind == "Pod" && f.Name == member && f.UID == uid && f.ResourceVersion != "")
	}
	if !fenced {
		t.Fatalf("the plan does not fence pod %s (uid %s): %+v", member, uid, p.Decision.Fences)
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(file, []byte(r.Stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, p
}

// editPlan rewrites a saved plan with edit applied to it as a document.
func editPlan(t *testing.T, file string, edit func(m map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "edited.json")
	if err := os.WriteFile(out, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

func field(m map[string]any, path ...string) map[string]any {
	for _, k := range path {
		m = m[k].(map[string]any)
	}
	return m
}

// assertRefused checks a refused apply: its exit code, that it names
// want, and that the world is as before.
func assertRefused(t *testing.T, r e2esuite.Result, code int, want string, cluster, member string, before world) {
	t.Helper()
	if r.Code != code || !strings.Contains(r.Stderr, want) {
		t.Errorf("want exit %d naming %q, got %s", code, want, r)
	}
	if after := observeWorld(t, cluster, member); after.String() != before.String() {
		t.Errorf("a refused apply changed the cluster:\nbefore %s\nafter  %s", before, after)
	}
}

// TestApplySavedReplacePlan: a replace planned with --dry-run=client -o
// json changes nothing; apply --dry-run=client says it would apply; apply
// --yes executes it: the member's pod and volume are new, the sentinel is
// on every member, the cluster is failover-ready again.
func TestApplySavedReplacePlan(t *testing.T) {
	skipShort(t)
	cluster := staticCluster
	s.WaitFailoverReady(t, cluster)
	_, followers := s.Roles(t, cluster)
	member := followers[0]
	want := s.PutSentinel(t, cluster)
	before := observeWorld(t, cluster, member)
	file, plan := makePlan(t, cluster, member)
	if after := observeWorld(t, cluster, member); after.String() != before.String() {
		t.Fatalf("planning changed the cluster:\nbefore %s\nafter  %s", before, after)
	}

	r := s.Hactl(t, "apply", "-f", file, "--dry-run=client")
	if r.Code != 0 || !strings.Contains(r.Stdout, "the plan would apply") {
		t.Fatalf("apply --dry-run=client: %s", r)
	}
	// No terminal and no --yes: shown, not applied.
	r = s.Hactl(t, "apply", "-f", file)
	if r.Code != 1 || !strings.Contains(r.Stderr, "--yes") {
		t.Fatalf("apply without --yes: %s", r)
	}
	if after := observeWorld(t, cluster, member); after.String() != before.String() {
		t.Fatalf("a dry or unconfirmed apply changed the cluster:\nbefore %s\nafter  %s", before, after)
	}

	r = s.Hactl(t, "apply", "-f", file, "--yes", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("apply: %s", r)
	}
	doc := e2esuite.Receipts(t, r)
	if doc.Result != "done" || len(doc.Receipts) == 0 || doc.Receipts[len(doc.Receipts)-1].Phase != model.ActionPhaseReady {
		t.Fatalf("receipts: %+v\n%s", doc, r)
	}
	var removed string
	for _, rc := range doc.Receipts {
		if rc.Step == model.StepRemoveMember && rc.Outcome == model.OutcomeDone {
			removed = rc.MemberID
		}
	}
	if removed != plan.Decision.MemberFence.ID {
		t.Errorf("removed member %q, the plan's was %s", removed, plan.Decision.MemberFence.ID)
	}
	// Observed on their own: new pod, new volume, the sentinel everywhere,
	// failover-ready.
	after := observeWorld(t, cluster, member)
	if after.podUID == before.podUID || after.pvcUID == before.pvcUID {
		t.Errorf("%s kept its pod or volume: before %s, after %s", member, before, after)
	}
	s.AssertSentinel(t, cluster, want)
	s.WaitFailoverReady(t, cluster)
	if r := s.Hactl(t, "status", cluster); r.Code != 0 {
		t.Errorf("status after apply: %s", r)
	}
	// The same plan again: its pod is gone, so it no longer matches.
	r = s.Hactl(t, "apply", "-f", file, "--yes")
	assertRefused(t, r, 6, "was replaced", cluster, member, after)
}

// TestApplyRefusesWhenTheClusterChanged: a plan, then the leader moves or
// the target's pod is recreated: apply exits 6, names the change, and
// deletes nothing.
func TestApplyRefusesWhenTheClusterChanged(t *testing.T) {
	skipShort(t)
	cluster := staticCluster

	t.Run("leader moved", func(t *testing.T) {
		s.WaitFailoverReady(t, cluster)
		leader, followers := s.Roles(t, cluster)
		member, next := followers[0], followers[1]
		file, _ := makePlan(t, cluster, member)
		moveLeader(t, cluster, leader, next)
		before := observeWorld(t, cluster, member)
		r := s.Hactl(t, "apply", "-f", file, "--yes")
		assertRefused(t, r, 6, fmt.Sprintf("the leader is now %s, the plan's was %s", next, leader), cluster, member, before)
		t.Logf("apply after the leader moved: %s", strings.TrimSpace(r.Stderr[strings.LastIndex(r.Stderr, "error: "):]))
		if !strings.Contains(r.Stderr, "make a new plan (kubectl hactl replace "+cluster+" "+member) {
			t.Errorf("the refusal does not say to make a new plan:\n%s", r.Stderr)
		}
	})

	t.Run("pod recreated", func(t *testing.T) {
		s.WaitFailoverReady(t, cluster)
		_, followers := s.Roles(t, cluster)
		member := followers[0]
		file, _ := makePlan(t, cluster, member)
		old := s.PodUID(t, member)
		if r := s.Run(t, 2*time.Minute, "delete", "pod", member, "-n", namespace, "--wait=false"); r.Code != 0 {
			t.Fatalf("kubectl delete pod: %s", r)
		}
		poll.Until(t, 2*time.Minute, member+" to be recreated", func() error {
			p, err := s.KC.CoreV1().Pods(namespace).Get(context.Background(), member, metav1.GetOptions{})
			if err != nil || string(p.UID) == old {
				return fmt.Errorf("pod %s not recreated yet (%v)", member, err)
			}
			return nil
		}, poll.Every(time.Second))
		s.WaitFailoverReady(t, cluster)
		before := observeWorld(t, cluster, member)
		r := s.Hactl(t, "apply", "-f", file, "--yes", "-o", "json")
		assertRefused(t, r, 6, fmt.Sprintf("Pod %s/%s was replaced: uid %s, the plan's %s", namespace, member, before.podUID, old), cluster, member, before)
		if doc := e2esuite.Receipts(t, r); doc.Result != "fence-conflict" {
			t.Errorf("receipts document: %+v", doc)
		}
	})
}

// moveLeader hands leadership from leader to next and waits until the
// members agree.
func moveLeader(t *testing.T, cluster, leader, next string) {
	t.Helper()
	res, _, err := s.Observer().Observe(context.Background(), namespace, cluster)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for _, m := range res.Observation.Members {
		if m.Name == next && m.Engine != nil {
			id = m.Engine.MemberID
		}
	}
	if id == "" {
		t.Fatalf("no member ID for %s", next)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Member(t, leader).MoveLeader(ctx, id); err != nil {
		t.Fatalf("moving the leader to %s: %v", next, err)
	}
	poll.Until(t, time.Minute, "the members to agree that "+next+" leads", func() error {
		res, _, err := s.Observer().Observe(context.Background(), namespace, cluster)
		if err != nil {
			return err
		}
		if got := res.Analysis.LeaderMember; got != next {
			return fmt.Errorf("leader %q", got)
		}
		return nil
	}, poll.Every(time.Second))
}

// TestApplyRefusesAnExpiredPlan: a plan whose createdAt lies an hour back
// is refused (exit 6) with its age and how to re-plan; --max-age 0 lifts
// the expiry (checked with a dry run).
func TestApplyRefusesAnExpiredPlan(t *testing.T) {
	skipShort(t)
	cluster := staticCluster
	s.WaitFailoverReady(t, cluster)
	_, followers := s.Roles(t, cluster)
	member := followers[0]
	file, plan := makePlan(t, cluster, member)
	old := editPlan(t, file, func(m map[string]any) {
		m["createdAt"] = plan.CreatedAt.Add(-time.Hour).Format(time.RFC3339Nano)
	})
	before := observeWorld(t, cluster, member)
	r := s.Hactl(t, "apply", "-f", old, "--yes")
	assertRefused(t, r, 6, "older than --max-age 15m0s", cluster, member, before)
	if !strings.Contains(r.Stderr, "the plan is 1h") || !strings.Contains(r.Stderr, "kubectl hactl replace "+cluster+" "+member) {
		t.Errorf("the refusal does not give the age and how to re-plan:\n%s", r.Stderr)
	}
	if r := s.Hactl(t, "apply", "-f", old, "--max-age", "2h", "--dry-run=client"); r.Code != 0 {
		t.Errorf("--max-age 2h: %s", r)
	}
	if r := s.Hactl(t, "apply", "-f", old, "--max-age", "0", "--dry-run=client"); r.Code != 0 {
		t.Errorf("--max-age 0 (no expiry): %s", r)
	}
}

// TestApplyRefusesForeignAndTamperedPlans: a plan for another
// StatefulSet (UID) or another Kubernetes cluster (kube-system UID), a
// plan edited inconsistently, a fence edited consistently, and an unknown
// apiVersion are all refused; nothing changes.
func TestApplyRefusesForeignAndTamperedPlans(t *testing.T) {
	skipShort(t)
	cluster := staticCluster
	s.WaitFailoverReady(t, cluster)
	_, followers := s.Roles(t, cluster)
	member, other := followers[0], followers[1]
	file, plan := makePlan(t, cluster, member)
	before := observeWorld(t, cluster, member)
	otherUID := s.PodUID(t, other)
	for _, c := range []struct {
		name string
		edit func(m map[string]any)
		code int
		want string
	}{
		{"another StatefulSet", func(m map[string]any) {
			field(m, "target")["statefulSetUID"] = "00000000-0000-0000-0000-000000000001"
			field(m, "decision", "cluster")["uid"] = "00000000-0000-0000-0000-000000000001"
		}, 6, "is another one now"},
		{"another Kubernetes cluster", func(m map[string]any) {
			field(m, "target")["kubeSystemUID"] = "00000000-0000-0000-0000-000000000002"
		}, 6, "made against another Kubernetes cluster"},
		{"member edited", func(m map[string]any) { m["member"] = other }, 2, "was it edited?"},
		{"fence pointed at another pod", func(m map[string]any) {
			d := field(m, "decision")
			for _, f := range d["fences"].([]any) {
				if f := f.(map[string]any); f["kind"] == "Pod" {
					f["uid"] = otherUID
				}
			}
			for _, st := range d["steps"].([]any) {
				if f, ok := st.(map[string]any)["fence"].(map[string]any); ok && f["kind"] == "Pod" {
					f["uid"] = otherUID
				}
			}
		}, 6, fmt.Sprintf("Pod %s/%s was replaced: uid %s, the plan's %s", namespace, member, before.podUID, otherUID)},
		{"unknown apiVersion", func(m map[string]any) { m["apiVersion"] = "hactl.dev/v9" }, 2, `apiVersion "hactl.dev/v9"`},
		{"receipts, not a plan", func(m map[string]any) { m["kind"] = "ActionReceipts" }, 2, "not a plan"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.Hactl(t, "apply", "-f", editPlan(t, file, c.edit), "--yes")
			assertRefused(t, r, c.code, c.want, cluster, member, before)
		})
	}
	if s.PodUID(t, other) != otherUID {
		t.Errorf("%s was replaced by a tampered plan", other)
	}
	// Untouched, the same plan still applies (a dry run, the plan read
	// from stdin): the refusals above came from the edits.
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Kubectl, "hactl", "apply", "-f", "-", "--dry-run=client", "-n", namespace)
	cmd.Env, cmd.Stdin = s.Env(), bytes.NewReader(b)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "the plan would apply") || !strings.Contains(string(out), "replace "+member) {
		t.Errorf("the untouched plan from stdin: %v\n%s", err, out)
	}
	if plan.Decision.MemberFence == nil {
		t.Fatalf("plan: %+v", plan)
	}
}

// memberIDs lists the cluster's members by ID as pod answers (its own
// member list), sorted.
func memberIDs(t *testing.T, pod string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	peers, err := s.Member(t, pod).MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range peers {
		ids = append(ids, p.ID)
	}
	sort.Strings(ids)
	return ids
}

// memberID is member's etcd member ID as observed.
func memberID(t *testing.T, cluster, member string) string {
	t.Helper()
	res, _, err := s.Observer().Observe(context.Background(), namespace, cluster)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Observation.Members {
		if m.Name == member && m.Engine != nil && m.Engine.MemberID != "" {
			return m.Engine.MemberID
		}
	}
	t.Fatalf("no member ID for %s", member)
	return ""
}

// putKeys writes n keys through pod, eight at a time.
func putKeys(t *testing.T, pod string, n int) {
	t.Helper()
	c := s.Member(t, pod)
	work, errs := make(chan int), make(chan error, n)
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range work {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := c.Put(ctx, fmt.Sprintf("/hactl-e2e/lag/%06d", i), strings.Repeat("x", 64))
				cancel()
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	for range 8 {
		<-done
	}
	close(errs)
	if err := <-errs; err != nil {
		t.Fatalf("writing %d keys through %s: %v", n, pod, err)
	}
}

// TestApplyRefusesAnEditedLagThreshold: a replace planned while every
// voter is healthy; then a voter is cut off from its peers while 2000
// entries land, so that it trails the leader by more than the lag
// threshold: removing the target would leave one healthy voter of three.
// The plan as made is refused (exit 6: the decision is now a refusal);
// so is the plan with its lag threshold edited to 2^62, which would count
// the lagging voter as healthy (exit 6, both with a dry run and with
// --yes), and no member is removed, as the members' own list says.
func TestApplyRefusesAnEditedLagThreshold(t *testing.T) {
	skipShort(t)
	cluster := staticCluster
	s.WaitFailoverReady(t, cluster)
	leader, followers := s.Roles(t, cluster)
	member, lagging := followers[0], followers[1]
	file, _ := makePlan(t, cluster, member)
	edited := editPlan(t, file, func(m map[string]any) {
		const huge = uint64(1) << 62
		field(m, "options")["lagThreshold"] = huge
		// The same in the decision, where the plan shows it, so that the
		// plan agrees with itself.
		if v, ok := field(m, "decision", "intent", "options")["verdict"].(map[string]any); ok {
			v["lagThreshold"] = huge
		}
	})

	ctx := context.Background()
	if err := s.SB.Break(ctx, namespace+"/"+lagging, fault.Isolate); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.SB.Break(context.Background(), namespace+"/"+lagging, fault.Heal); err != nil {
			t.Errorf("healing %s: %v", lagging, err)
		}
		s.WaitFailoverReady(t, cluster)
	})
	putKeys(t, leader, 2000)
	poll.Until(t, 2*time.Minute, lagging+" to trail the leader by more than 1000 entries", func() error {
		res, _, err := s.Observer().Observe(context.Background(), namespace, cluster)
		if err != nil {
			return err
		}
		for _, m := range res.Observation.Members {
			if m.Name == lagging {
				if m.Lag == nil || *m.Lag <= 1000 || m.Phase != model.PhaseCatchingUp {
					return fmt.Errorf("%s: phase %s, lag %v", m.Name, m.Phase, m.Lag)
				}
				return nil
			}
		}
		return fmt.Errorf("%s not observed", lagging)
	}, poll.Every(time.Second))

	ids := memberIDs(t, leader)
	entries := len(s.Ledger(t, cluster).Entries)
	unchanged := func(what string) {
		t.Helper()
		if got := memberIDs(t, leader); strings.Join(got, ",") != strings.Join(ids, ",") {
			t.Fatalf("%s removed a member: members %v, before %v", what, got, ids)
		}
		if got := len(s.Ledger(t, cluster).Entries); got != entries {
			t.Errorf("%s wrote a ledger entry: %d, before %d", what, got, entries)
		}
	}
	// The plan as reviewed: refused, the quorum would break.
	r := s.Hactl(t, "apply", "-f", file, "--dry-run=client")
	if r.Code != 6 || !strings.Contains(r.Stderr, "quorum_would_break") {
		t.Fatalf("the plan as made, with %s lagging: want exit 6 naming quorum_would_break, got %s", lagging, r)
	}
	unchanged("apply --dry-run=client of the plan as made")
	// Edited: refused too, first by a dry run (a failure here stops
	// before the real apply, which would break the quorum).
	r = s.Hactl(t, "apply", "-f", edited, "--dry-run=client")
	if r.Code != 6 || !strings.Contains(r.Stderr, "quorum_would_break") {
		t.Fatalf("the plan with its lag threshold edited to 2^62, dry run: want exit 6 naming quorum_would_break, got %s", r)
	}
	unchanged("apply --dry-run=client of the edited plan")
	r = s.Hactl(t, "apply", "-f", edited, "--yes")
	if r.Code != 6 || !strings.Contains(r.Stderr, "nothing was changed") {
		t.Errorf("the plan with its lag threshold edited to 2^62: want exit 6, got %s", r)
	}
	t.Logf("apply of the edited plan: %s", strings.TrimSpace(r.Stderr[strings.LastIndex(r.Stderr, "error: "):]))
	unchanged("apply --yes of the edited plan")
}

// TestApplyRefusesASwappedMemberID: a replace plan whose remove-member
// step is edited to name the leader's member ID (alone, and together
// with the member fence and what is replaced, so that the plan agrees
// with itself) is refused; no member is removed, as the members' own
// list says, and nothing else changes.
func TestApplyRefusesASwappedMemberID(t *testing.T) {
	skipShort(t)
	cluster := staticCluster
	s.WaitFailoverReady(t, cluster)
	leader, followers := s.Roles(t, cluster)
	member := followers[0]
	file, plan := makePlan(t, cluster, member)
	leaderID, memberIDNow := memberID(t, cluster, leader), plan.Decision.MemberFence.ID
	swapStep := func(m map[string]any) {
		for _, st := range field(m, "decision")["steps"].([]any) {
			if st := st.(map[string]any); st["kind"] == string(model.StepRemoveMember) {
				if st["memberID"] != memberIDNow {
					t.Fatalf("the remove step names %v, the member fence %s", st["memberID"], memberIDNow)
				}
				st["memberID"] = leaderID
			}
		}
	}
	before := observeWorld(t, cluster, member)
	ids := memberIDs(t, leader)
	for _, c := range []struct {
		name string
		edit func(m map[string]any)
		code int
		want string
	}{
		{"the remove step only", swapStep, 6, "step 1 (remove-member) now names member " + member + " (id " + memberIDNow},
		{"the remove step, the member fence and what is replaced", func(m map[string]any) {
			swapStep(m)
			field(m, "decision", "memberFence")["id"] = leaderID
			field(m, "decision", "replaced")["memberID"] = leaderID
		}, 6, "the member to remove is now " + memberIDNow},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.Hactl(t, "apply", "-f", editPlan(t, file, c.edit), "--yes")
			assertRefused(t, r, c.code, c.want, cluster, member, before)
			if got := memberIDs(t, leader); strings.Join(got, ",") != strings.Join(ids, ",") {
				t.Errorf("members %v, before %v", got, ids)
			}
		})
	}
	if got := s.Hactl(t, "status", cluster); got.Code != 0 {
		t.Errorf("status after the refusals: %s", got)
	}
}
