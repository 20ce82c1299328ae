package e2e

import (
	"context"
	"encoding/json"
	"errors"
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

	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/fault"
)

// replaceAndCheck runs VERB CLUSTER MEMBER --yes -o json through kubectl
// and checks the acceptance: exit 0, the member has a new pod, the
// sentinel written before is on every member, and the cluster is
// failover-ready again.
func replaceAndCheck(t *testing.T, verb, cluster, member string, extra ...string) {
	t.Helper()
	s.WaitFailoverReady(t, cluster)
	want := s.PutSentinel(t, cluster)
	oldUID := s.PodUID(t, member)
	r := s.Hactl(t, append([]string{verb, cluster, member, "--yes", "-o", "json"}, extra...)...)
	if r.Code != 0 {
		t.Fatalf("%s %s: %s", verb, member, r)
	}
	doc := e2esuite.Receipts(t, r)
	if doc.Result != "done" || len(doc.Receipts) == 0 || doc.Receipts[len(doc.Receipts)-1].Phase != model.ActionPhaseReady {
		t.Fatalf("receipts: %+v", doc)
	}
	if s.PodUID(t, member) == oldUID {
		t.Errorf("%s still runs its old pod %s", member, oldUID)
	}
	s.AssertSentinel(t, cluster, want)
	s.WaitFailoverReady(t, cluster)
	if r := s.Hactl(t, "status", cluster); r.Code != 0 {
		t.Errorf("status after %s: %s", verb, r)
	}
	// The action's phases show in status: hactl's Events on the
	// StatefulSet are listed there.
	st := s.Hactl(t, "status", cluster, "-o", "json")
	var stDoc struct {
		Events []model.EventFacts `json:"events"`
	}
	if err := json.Unmarshal([]byte(st.Stdout), &stDoc); err != nil {
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
	_, followers := s.Roles(t, staticCluster)
	replaceAndCheck(t, "replace", staticCluster, followers[0])
}

func TestReseedStaticExisting(t *testing.T) {
	skipShort(t)
	_, followers := s.Roles(t, staticCluster)
	replaceAndCheck(t, "reseed", staticCluster, followers[len(followers)-1])
}

func TestReplaceSelfRegistering(t *testing.T) {
	skipShort(t)
	_, followers := s.Roles(t, selfRegCluster)
	replaceAndCheck(t, "replace", selfRegCluster, followers[0])
	for _, r := range s.Ledger(t, selfRegCluster).Entries {
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
	s.WaitFailoverReady(t, staticCluster)
	leader, _ := s.Roles(t, staticCluster)
	uid := s.PodUID(t, leader)
	r := s.Hactl(t, "replace", staticCluster, leader, "--yes")
	if r.Code != 5 || !strings.Contains(r.Stderr, "target_is_leader") || !strings.Contains(r.Stderr, "--move-leader") {
		t.Fatalf("replacing the leader: %s", r)
	}
	if s.PodUID(t, leader) != uid {
		t.Fatal("the leader's pod was replaced although refused")
	}
	replaceAndCheck(t, "replace", staticCluster, leader, "--move-leader")
}

// TestReplaceRefusedWithAMemberDown: in a 3-member cluster with one member
// down, replacing another exits 5 and names the reason.
func TestReplaceRefusedWithAMemberDown(t *testing.T) {
	skipShort(t)
	s.WaitFailoverReady(t, staticCluster)
	_, followers := s.Roles(t, staticCluster)
	downed, target := followers[0], followers[1]
	ctx := context.Background()
	if err := s.SB.Break(ctx, namespace+"/"+downed, fault.Stop); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.SB.Break(context.Background(), namespace+"/"+downed, fault.Resume); err != nil {
			t.Errorf("resume %s: %v", downed, err)
		}
		s.WaitFailoverReady(t, staticCluster)
	})
	uid := s.PodUID(t, target)
	// Poll until replace refuses for quorum; if it never does, the checks
	// below show what it did.
	var r e2esuite.Result
	_ = poll.Wait(time.Minute, func() error {
		if r = s.Hactl(t, "replace", staticCluster, target, "--yes"); !strings.Contains(r.Stderr, "quorum_would_break") {
			return errors.New("no quorum_would_break")
		}
		return nil
	}, poll.Every(time.Second))
	if r.Code != 5 || !strings.Contains(r.Stderr, "quorum_would_break") || !strings.Contains(r.Stderr, downed) {
		t.Fatalf("replace with %s down: %s", downed, r)
	}
	if s.PodUID(t, target) != uid {
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
	s.WaitFailoverReady(t, staticCluster)
	_, followers := s.Roles(t, staticCluster)
	target := followers[0]
	uid := s.PodUID(t, target)
	tmp := t.TempDir()
	exitFile := filepath.Join(tmp, "exit")
	// A tmux server of its own (-L): a session of a shared server would
	// run in that server's environment, not this test's.
	socket := fmt.Sprintf("hactl-e2e-%d", os.Getpid())
	session := "replace"
	var envArgs []string
	for _, kv := range s.Env() {
		if strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "NO_COLOR=") || strings.HasPrefix(kv, "HOME=") {
			envArgs = append(envArgs, kv)
		}
	}
	script := fmt.Sprintf("%s hactl replace %s %s -n %s; echo $? > %s; sleep 600", s.Kubectl, staticCluster, target, namespace, exitFile)
	tmux := func(args ...string) string {
		cmd := exec.Command("tmux", append([]string{"-L", socket}, args...)...)
		cmd.Env = s.Env()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tmux(append([]string{"new-session", "-d", "-s", session, "-x", "200", "-y", "50", "env"}, append(envArgs, "sh", "-c", script)...)...)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	poll.Until(t, time.Minute, "the [y/N] prompt", func() error {
		if scr := tmux("capture-pane", "-p", "-t", session); !strings.Contains(scr, "[y/N]") {
			return fmt.Errorf("no prompt:\n%s", scr)
		}
		return nil
	})
	p, err := s.KC.CoreV1().Pods(namespace).Get(context.Background(), target, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels["hactl-e2e/edited"] = "while-the-plan-was-shown"
	if _, err := s.KC.CoreV1().Pods(namespace).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tmux("send-keys", "-t", session, "y", "Enter")
	var code []byte
	err = poll.Wait(2*time.Minute, func() error {
		var err error
		if code, err = os.ReadFile(exitFile); err != nil {
			return err
		}
		if len(strings.TrimSpace(string(code))) == 0 {
			return errors.New("the exit status is not written yet")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("no exit (%v):\n%s", err, tmux("capture-pane", "-p", "-t", session))
	}
	screen := tmux("capture-pane", "-p", "-J", "-S", "-100", "-t", session)
	if strings.TrimSpace(string(code)) != "6" || !strings.Contains(screen, "fence conflict") {
		t.Fatalf("exit %s, want 6:\n%s", code, screen)
	}
	if s.PodUID(t, target) != uid {
		t.Fatal("the pod was deleted despite the conflict")
	}
	s.WaitFailoverReady(t, staticCluster)
}

// TestTenConcurrentReplaces: ten replace runs of the same member at once:
// exactly one acts, the others exit 7 or 6, the member's pod is deleted
// once, and writes through another member keep succeeding (quorum holds).
func TestTenConcurrentReplaces(t *testing.T) {
	skipShort(t)
	s.WaitFailoverReady(t, staticCluster)
	leader, followers := s.Roles(t, staticCluster)
	target := followers[0]
	want := s.PutSentinel(t, staticCluster)
	entriesBefore := len(s.Ledger(t, staticCluster).Entries)

	stop := make(chan struct{})
	var (
		wmu       sync.Mutex
		writeErrs []error
		writes    int
	)
	wdone := make(chan struct{})
	writer := s.Member(t, leader)
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
	results := make([]e2esuite.Result, 10)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.Hactl(t, "replace", staticCluster, target, "--yes")
		}()
	}
	wg.Wait()
	close(stop)
	<-wdone
	codes := map[int]int{}
	for _, r := range results {
		codes[r.Code]++
		if r.Code != 0 && r.Code != 6 && r.Code != 7 {
			t.Errorf("unexpected result: %s", r)
		}
	}
	t.Logf("exit codes %v, %d writes", codes, writes)
	if codes[0] != 1 || codes[6]+codes[7] != 9 {
		t.Fatalf("exit codes %v: want exactly one 0, the rest 6 or 7", codes)
	}
	// Exactly one new ledger entry, and it deleted the pod once.
	l := s.Ledger(t, staticCluster)
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
	s.AssertSentinel(t, staticCluster, want)
	s.WaitFailoverReady(t, staticCluster)
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
			s.WaitFailoverReady(t, staticCluster)
			_, followers := s.Roles(t, staticCluster)
			target := followers[0]
			want := s.PutSentinel(t, staticCluster)
			p := s.Start(t, nil, "replace", staticCluster, target, "--yes")
			killed := p.KillAt(t, "] "+string(step)+" ")
			if !killed {
				t.Fatalf("the run finished (exit %d) without a %s step:\n%s", p.Code, step, p.All)
			}
			r := s.Hactl(t, "replace", staticCluster, target, "--yes", "-o", "json")
			if r.Code != 0 {
				t.Fatalf("rerun after SIGKILL at %s: %s", step, r)
			}
			if !strings.Contains(r.Stderr, "took the lock over from stale holder") {
				t.Errorf("the rerun did not report taking over the dead holder's lock:\n%s", r.Stderr)
			}
			doc := e2esuite.Receipts(t, r)
			for _, rc := range doc.Receipts {
				if rc.Step == model.StepRemoveMember && rc.Outcome == model.OutcomeDone && step != model.StepAcquireLock && step != model.StepVerifyFences {
					t.Errorf("the rerun removed a member again: %+v", rc)
				}
			}
			s.AssertSentinel(t, staticCluster, want)
			s.WaitFailoverReady(t, staticCluster)
			l := s.Ledger(t, staticCluster)
			last := l.Entries[len(l.Entries)-1]
			if last.State != model.EntryDone {
				t.Errorf("ledger entry %s is %s", last.ID, last.State)
			}
		})
	}
}
