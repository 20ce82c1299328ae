package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/fault"
)

// replaceAndCheck runs VERB CLUSTER MEMBER --yes -o json through kubectl
// and checks the acceptance: exit 0, the member has a new pod, the
// sentinel written before is on every member, and the cluster is
// failover-ready again.
func replaceAndCheck(t *testing.T, verb, cluster, member string, extra ...string) {
	t.Helper()
	s.waitFailoverReady(t, cluster)
	want := s.putSentinel(t, cluster)
	oldUID := s.podUID(t, member)
	r := s.hactl(t, append([]string{verb, cluster, member, "--yes", "-o", "json"}, extra...)...)
	if r.code != 0 {
		t.Fatalf("%s %s: %s", verb, member, r)
	}
	doc := receipts(t, r)
	if doc.Result != "done" || len(doc.Receipts) == 0 || doc.Receipts[len(doc.Receipts)-1].Phase != model.ActionPhaseReady {
		t.Fatalf("receipts: %+v", doc)
	}
	if s.podUID(t, member) == oldUID {
		t.Errorf("%s still runs its old pod %s", member, oldUID)
	}
	s.assertSentinel(t, cluster, want)
	s.waitFailoverReady(t, cluster)
	if r := s.hactl(t, "status", cluster); r.code != 0 {
		t.Errorf("status after %s: %s", verb, r)
	}
	// The action's phases show in status: hactl's Events on the
	// StatefulSet are listed there.
	st := s.hactl(t, "status", cluster, "-o", "json")
	var stDoc struct {
		Events []model.EventFacts `json:"events"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &stDoc); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, st)
	}
	seen := false
	for _, ev := range stDoc.Events {
		if ev.Reason == "ActionReady" && strings.Contains(ev.Message, "phase ready") && strings.Contains(ev.Message, member) {
			seen = true
		}
	}
	if !seen {
		t.Errorf("status -o json does not show the action's ready phase: %+v", stDoc.Events)
	}
	t.Logf("%s %s: %d receipts", verb, member, len(doc.Receipts))
}

func TestReplaceStaticExisting(t *testing.T) {
	skipShort(t)
	_, followers := s.roles(t, staticCluster)
	replaceAndCheck(t, "replace", staticCluster, followers[0])
}

func TestReseedStaticExisting(t *testing.T) {
	skipShort(t)
	_, followers := s.roles(t, staticCluster)
	replaceAndCheck(t, "reseed", staticCluster, followers[len(followers)-1])
}

func TestReplaceSelfRegistering(t *testing.T) {
	skipShort(t)
	_, followers := s.roles(t, selfRegCluster)
	replaceAndCheck(t, "replace", selfRegCluster, followers[0])
	for _, r := range s.ledger(t, selfRegCluster).Entries {
		for _, rc := range r.Receipts {
			if rc.Step == model.StepAddLearner || rc.Step == model.StepPromoteLearner {
				t.Errorf("hactl added or promoted a learner on a self-registering cluster: %+v", rc)
			}
		}
	}
}

// TestReplaceLeader: refused without --move-leader (exit 5, naming the
// flag), done with it.
func TestReplaceLeader(t *testing.T) {
	skipShort(t)
	s.waitFailoverReady(t, staticCluster)
	leader, _ := s.roles(t, staticCluster)
	uid := s.podUID(t, leader)
	r := s.hactl(t, "replace", staticCluster, leader, "--yes")
	if r.code != 5 || !strings.Contains(r.stderr, "target_is_leader") || !strings.Contains(r.stderr, "--move-leader") {
		t.Fatalf("replacing the leader: %s", r)
	}
	if s.podUID(t, leader) != uid {
		t.Fatal("the leader's pod was replaced although refused")
	}
	replaceAndCheck(t, "replace", staticCluster, leader, "--move-leader")
}

// TestReplaceRefusedWithAMemberDown: in a 3-member cluster with one member
// down, replacing another exits 5 and names the reason.
func TestReplaceRefusedWithAMemberDown(t *testing.T) {
	skipShort(t)
	s.waitFailoverReady(t, staticCluster)
	_, followers := s.roles(t, staticCluster)
	downed, target := followers[0], followers[1]
	ctx := context.Background()
	if err := s.sb.Break(ctx, namespace+"/"+downed, fault.Stop); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.sb.Break(context.Background(), namespace+"/"+downed, fault.Resume); err != nil {
			t.Errorf("resume %s: %v", downed, err)
		}
		s.waitFailoverReady(t, staticCluster)
	})
	uid := s.podUID(t, target)
	var r result
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		r = s.hactl(t, "replace", staticCluster, target, "--yes")
		if strings.Contains(r.stderr, "quorum_would_break") {
			break
		}
		time.Sleep(time.Second)
	}
	if r.code != 5 || !strings.Contains(r.stderr, "quorum_would_break") || !strings.Contains(r.stderr, downed) {
		t.Fatalf("replace with %s down: %s", downed, r)
	}
	if s.podUID(t, target) != uid {
		t.Fatal("the pod was replaced although refused")
	}
}

// TestFenceConflictInTerminal runs replace in a real terminal (tmux),
// edits the pod while the plan waits for "y", answers "y": exit 6,
// nothing deleted.
func TestFenceConflictInTerminal(t *testing.T) {
	skipShort(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	s.waitFailoverReady(t, staticCluster)
	_, followers := s.roles(t, staticCluster)
	target := followers[0]
	uid := s.podUID(t, target)
	tmp := t.TempDir()
	exitFile := filepath.Join(tmp, "exit")
	// A tmux server of its own (-L): a session of a shared server would
	// run in that server's environment, not this test's.
	socket := fmt.Sprintf("hactl-e2e-%d", os.Getpid())
	session := "replace"
	var envArgs []string
	for _, kv := range s.env() {
		if strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "NO_COLOR=") || strings.HasPrefix(kv, "HOME=") {
			envArgs = append(envArgs, kv)
		}
	}
	script := fmt.Sprintf("%s hactl replace %s %s -n %s; echo $? > %s; sleep 600", s.kubectl, staticCluster, target, namespace, exitFile)
	tmux := func(args ...string) string {
		cmd := exec.Command("tmux", append([]string{"-L", socket}, args...)...)
		cmd.Env = s.env()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tmux(append([]string{"new-session", "-d", "-s", session, "-x", "200", "-y", "50", "env"}, append(envArgs, "sh", "-c", script)...)...)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(tmux("capture-pane", "-p", "-t", session), "[y/N]") {
		if time.Now().After(deadline) {
			t.Fatalf("no prompt:\n%s", tmux("capture-pane", "-p", "-t", session))
		}
		time.Sleep(200 * time.Millisecond)
	}
	p, err := s.kc.CoreV1().Pods(namespace).Get(context.Background(), target, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels["hactl-e2e/edited"] = "while-the-plan-was-shown"
	if _, err := s.kc.CoreV1().Pods(namespace).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tmux("send-keys", "-t", session, "y", "Enter")
	deadline = time.Now().Add(2 * time.Minute)
	var code []byte
	for {
		code, err = os.ReadFile(exitFile)
		if err == nil && len(strings.TrimSpace(string(code))) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no exit:\n%s", tmux("capture-pane", "-p", "-t", session))
		}
		time.Sleep(200 * time.Millisecond)
	}
	screen := tmux("capture-pane", "-p", "-J", "-S", "-100", "-t", session)
	if strings.TrimSpace(string(code)) != "6" || !strings.Contains(screen, "fence conflict") {
		t.Fatalf("exit %s, want 6:\n%s", code, screen)
	}
	if s.podUID(t, target) != uid {
		t.Fatal("the pod was deleted despite the conflict")
	}
	s.waitFailoverReady(t, staticCluster)
}

// TestTenConcurrentReplaces: ten replace runs of the same member at once:
// exactly one acts, the others exit 7 or 6, the member's pod is deleted
// once, and writes through another member keep succeeding (quorum holds).
func TestTenConcurrentReplaces(t *testing.T) {
	skipShort(t)
	s.waitFailoverReady(t, staticCluster)
	leader, followers := s.roles(t, staticCluster)
	target := followers[0]
	want := s.putSentinel(t, staticCluster)
	entriesBefore := len(s.ledger(t, staticCluster).Entries)

	stop := make(chan struct{})
	var (
		wmu       sync.Mutex
		writeErrs []error
		writes    int
	)
	wdone := make(chan struct{})
	writer := s.member(t, leader)
	go func() {
		defer close(wdone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := writer.Put(ctx, "/hactl-e2e/quorum", strconv.Itoa(i))
			cancel()
			wmu.Lock()
			writes++
			if err != nil {
				writeErrs = append(writeErrs, err)
			}
			wmu.Unlock()
		}
	}()

	var wg sync.WaitGroup
	results := make([]result, 10)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.hactl(t, "replace", staticCluster, target, "--yes")
		}()
	}
	wg.Wait()
	close(stop)
	<-wdone
	codes := map[int]int{}
	for _, r := range results {
		codes[r.code]++
		if r.code != 0 && r.code != 6 && r.code != 7 {
			t.Errorf("unexpected result: %s", r)
		}
	}
	t.Logf("exit codes %v, %d writes", codes, writes)
	if codes[0] != 1 || codes[6]+codes[7] != 9 {
		t.Fatalf("exit codes %v: want exactly one 0, the rest 6 or 7", codes)
	}
	// Exactly one new ledger entry, and it deleted the pod once.
	l := s.ledger(t, staticCluster)
	var deletes int
	for _, e := range l.Entries[entriesBefore:] {
		for _, r := range e.Receipts {
			if r.Step == model.StepDeletePod && r.Outcome == model.OutcomeDone {
				deletes++
			}
		}
	}
	if len(l.Entries)-entriesBefore != 1 || deletes != 1 {
		t.Fatalf("%d new ledger entries, %d pod deletes; want 1 and 1", len(l.Entries)-entriesBefore, deletes)
	}
	if len(writeErrs) > 0 {
		t.Fatalf("%d of %d writes failed during the runs (quorum lost?): %v", len(writeErrs), writes, writeErrs[0])
	}
	s.assertSentinel(t, staticCluster, want)
	s.waitFailoverReady(t, staticCluster)
}

// TestSIGKILLAtEachStepResumes kills kubectl-hactl with SIGKILL right
// after each step in turn, then reruns the same command, which takes the
// dead holder's lock over (reported), resumes and finishes; the sentinel
// is on every member every time.
func TestSIGKILLAtEachStepResumes(t *testing.T) {
	skipShort(t)
	steps := []model.StepKind{
		model.StepAcquireLock, model.StepVerifyFences, model.StepRemoveMember, model.StepAddLearner,
		model.StepDeletePVC, model.StepDeletePod, model.StepAwaitPodGone, model.StepAwaitPodRecreated,
		model.StepAwaitMemberStarted, model.StepAwaitCaughtUp, model.StepPromoteLearner,
	}
	for _, step := range steps {
		t.Run(string(step), func(t *testing.T) {
			s.waitFailoverReady(t, staticCluster)
			_, followers := s.roles(t, staticCluster)
			target := followers[0]
			want := s.putSentinel(t, staticCluster)
			p := s.start(t, "replace", staticCluster, target, "--yes")
			killed := p.killAt(t, "] "+string(step)+" ")
			if !killed {
				t.Fatalf("the run finished (exit %d) without a %s step:\n%s", p.code, step, p.all)
			}
			r := s.hactl(t, "replace", staticCluster, target, "--yes", "-o", "json")
			if r.code != 0 {
				t.Fatalf("rerun after SIGKILL at %s: %s", step, r)
			}
			if !strings.Contains(r.stderr, "took the lock over from stale holder") {
				t.Errorf("the rerun did not report taking over the dead holder's lock:\n%s", r.stderr)
			}
			doc := receipts(t, r)
			for _, rc := range doc.Receipts {
				if rc.Step == model.StepRemoveMember && rc.Outcome == model.OutcomeDone && step != model.StepAcquireLock && step != model.StepVerifyFences {
					t.Errorf("the rerun removed a member again: %+v", rc)
				}
			}
			s.assertSentinel(t, staticCluster, want)
			s.waitFailoverReady(t, staticCluster)
			l := s.ledger(t, staticCluster)
			last := l.Entries[len(l.Entries)-1]
			if last.State != model.EntryDone {
				t.Errorf("ledger entry %s is %s", last.ID, last.State)
			}
		})
	}
}
