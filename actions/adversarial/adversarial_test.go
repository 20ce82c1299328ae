package adversarial

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/fault"
)

// maxOutage is the longest time a round may go without any member
// answering a linearizable read: an election after a killed or frozen
// member takes a few seconds; a quorum an action broke stays lost far
// longer.
const maxOutage = 15 * time.Second

// procBound is how long a round's hactl processes may run.
const procBound = 8 * time.Minute

// history is what the rounds leave for the checks of the whole run.
type history struct {
	mu      sync.Mutex
	outputs []string
	run     e2esuite.Run
	failed  bool
	// killed are the identities of the processes a round SIGKILLed.
	killed map[string]bool
	// receipts are every receipt the ledger held at the end of a round
	// (the ledger keeps only the latest actions), by action and seq.
	receipts map[string]model.Receipt
	// changes counts the member changes the probes saw.
	changes int
}

func (h *history) output(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.outputs = append(h.outputs, s)
}

// ended records what a round's process printed and, if the round
// SIGKILLed it, its lock identity.
func (h *history) ended(p *e2esuite.Proc) {
	out := p.Output()
	h.output(out)
	if p.Stopped {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.killed == nil {
			h.killed = map[string]bool{}
		}
		h.killed[e2esuite.Identity(out)] = true
	}
}

var uidRE = regexp.MustCompile(`uid=([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`)

// shownUIDs maps each lock identity to the UIDs of the objects the plan
// its process printed before its first receipt named: what its user saw
// before confirming.
func (h *history) shownUIDs() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, o := range h.outputs {
		id := e2esuite.Identity(o)
		if id == "" {
			continue
		}
		if out[id] == nil {
			out[id] = map[string]bool{}
		}
		for _, l := range strings.Split(o, "\n") {
			if _, _, ok := e2esuite.ReceiptLine(l); ok {
				break // the receipts begin: the plan is over
			}
			for _, m := range uidRE.FindAllStringSubmatch(l, -1) {
				out[id][m[1]] = true
			}
		}
	}
	return out
}

// keepReceipts adds the ledger's receipts to the run's record.
func (h *history) keepReceipts(entries []model.LedgerEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.receipts == nil {
		h.receipts = map[string]model.Receipt{}
	}
	for _, e := range entries {
		for _, rc := range e.Receipts {
			h.receipts[fmt.Sprintf("%s/%d", e.ID, rc.Seq)] = rc
		}
	}
}

// TestAdversarialRounds runs the rounds (each kind once, in a seeded
// order; HACTL_ADVERSARIAL_ROUNDS more picks kinds at random), then checks
// the whole run against the API server's audit log and the ledger.
func TestAdversarialRounds(t *testing.T) {
	if testing.Short() || s == nil {
		t.Skip("end-to-end test (the sandbox) skipped with -short")
	}
	_, rng := e2esuite.Seeded(t, "HACTL_ADVERSARIAL_SEED", "./actions/adversarial")
	kinds := roundKinds()
	rounds := e2esuite.Count(t, "HACTL_ADVERSARIAL_ROUNDS", len(kinds))

	h := &history{}
	s.WaitFailoverReady(t, cluster)
	s.SetupStore(t, cluster)
	for _, g := range []string{"adv-1", "adv-2"} {
		r := s.Hactl(t, "seed", cluster, "--generation", g, "--yes")
		h.output(r.Stdout + r.Stderr)
		if r.Code != 0 {
			t.Fatalf("seed %s: %s", g, r)
		}
	}
	// 50 ms each way: a remote API server (the members' probes go through
	// it too, port-forwarded)
	proxy, kubeconfig := s.SlowKubeconfig(t, 50*time.Millisecond)
	defer proxy.Close()

	start := time.Now()
	for i, n := range e2esuite.Order(rng, len(kinds), rounds) {
		k := kinds[n]
		ok := t.Run(fmt.Sprintf("%d-%s", i, k.name), func(t *testing.T) {
			r := &round{Round: s.NewRound(t, rng, &h.run, kubeconfig, h.ended), h: h}
			r.run(k)
		})
		if !ok {
			t.Errorf("stopped after a failed round: the ledger's receipts are not checked (a killed action may have been left unfinished)")
			h.failed = true
			break
		}
	}
	checkRun(t, h)
	t.Logf("%d rounds in %s: %s", rounds, time.Since(start).Round(time.Second), &h.run)
}

// round is one round: its processes, their progress lines, its faults.
type round struct {
	*e2esuite.Round
	h *history
}

// roundKind is one kind of round: run starts processes and faults and
// waits for them.
type roundKind struct {
	name string
	run  func(r *round)
}

func roundKinds() []roundKind {
	return []roundKind{
		{"same-member", sameMember},
		{"different-members", differentMembers},
		{"frozen-holder", frozenHolder},
		{"paused-peer", pausedPeer},
	}
}

// run runs one round between the checks: a sentinel written before, the
// probe beside it; afterwards every in-progress action is finished by a
// rerun, and quorum, the sentinel and the member changes' receipts are
// checked.
func (r *round) run(k roundKind) {
	t := r.T
	s.WaitFailoverReady(t, cluster)
	want := s.PutSentinel(t, cluster)
	p := startProbe(cluster)
	defer p.stop()
	defer r.Reap()
	k.run(r)
	r.settle()
	s.WaitFailoverReady(t, cluster)
	p.stop()
	r.h.keepReceipts(s.Ledger(t, cluster).Entries)
	t.Logf("probe: %s", p)
	if p.maxOutage > maxOutage {
		t.Errorf("quorum lost: no member answered a linearizable read for %s (from %s)", p.maxOutage.Round(time.Millisecond), p.outageAt.Format("15:04:05.000"))
	}
	s.AssertSentinel(t, cluster, want)
	r.checkMemberReceipts(p)
}

// probeTimeout is what the suite's actions give each member's probe: the
// machine runs other sandboxes beside this one, and the point here is
// safety, not probe latency.
func probeTimeout(slow bool) []string {
	if slow {
		return []string{"--probe-timeout", "8s"}
	}
	return []string{"--probe-timeout", "5s"}
}

// launch starts kubectl-hactl ARGS (e2esuite.Round.Launch), with the
// suite's probe timeout for the actions that probe the members.
func (r *round) launch(name string, slow bool, args ...string) *e2esuite.Proc {
	switch args[0] {
	case "replace", "reseed", "restore":
		args = append(args, probeTimeout(slow)...)
	}
	return r.Launch(name, slow, args...)
}

// wait waits for the round's processes (e2esuite.Procs.Wait).
func (r *round) wait(allowed map[string][]int) map[string]int {
	r.T.Helper()
	return r.Wait(procBound, allowed)
}

// settle finishes every action the round left in progress, by running the
// same command again as an operator would.
func (r *round) settle() {
	t := r.T
	for attempt := 0; attempt < 6; attempt++ {
		open := s.InProgress(t, cluster)
		if len(open) == 0 {
			return
		}
		for _, e := range open {
			if e.Action != model.ActionReplace && e.Action != model.ActionReseed {
				t.Fatalf("the round left a %s in progress (%s)", e.Action, e.ID)
			}
			res := s.Hactl(t, string(e.Action), cluster, e.Member, "--yes", "--probe-timeout", "5s")
			r.h.output(res.Stdout + res.Stderr)
			r.Run.Ran()
			t.Logf("rerun %s %s: exit %d", e.Action, e.Member, res.Code)
			switch res.Code {
			case 0:
			case 5, 6, 7:
				// refused for what it saw (a member not answering yet):
				// look again shortly, as an operator would
				t.Logf("%s", res)
				time.Sleep(3 * time.Second)
			default:
				t.Fatalf("rerun of %s %s to finish it: %s", e.Action, e.Member, res)
			}
		}
	}
	t.Fatalf("actions still in progress after 6 reruns: %+v", s.Ledger(t, cluster).Entries)
}

// checkMemberReceipts checks that every change the probe saw in the member
// list has a receipt in the ledger: the ledger tells the truth.
func (r *round) checkMemberReceipts(p *probe) {
	t := r.T
	led := s.Ledger(t, cluster)
	for _, c := range p.changes() {
		found := false
		for _, e := range led.Entries {
			for _, rc := range e.Receipts {
				if rc.Step == c.step && e2esuite.Changed(rc.Outcome) && (rc.MemberID == c.id || strings.Contains(rc.Detail, c.id)) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("member %s: %s happened (the probe saw it) but the ledger has no receipt for it", c.id, c.step)
		}
	}
	t.Logf("%d member changes seen, each with its receipt", len(p.changes()))
	r.h.mu.Lock()
	r.h.changes += len(p.changes())
	r.h.mu.Unlock()
}

// replaceKillPoints are the progress lines after which a replace may be
// SIGKILLed.
var replaceKillPoints = []model.StepKind{
	model.StepAcquireLock, model.StepVerifyFences, model.StepRemoveMember, model.StepAddLearner, model.StepDeletePVC,
	model.StepDeletePod, model.StepAwaitPodRecreated, model.StepAwaitMemberStarted, model.StepAwaitCaughtUp,
}

// sameMember: three processes replace the same follower at once, one of
// them through a slow API; the one that prints a random step's progress
// first is SIGKILLed there.
func sameMember(r *round) {
	_, followers := s.Roles(r.T, cluster)
	target := followers[r.Rng.IntN(len(followers))]
	slow := r.Rng.IntN(3)
	for i := 0; i < 3; i++ {
		r.Jitter(300 * time.Millisecond)
		r.launch(fmt.Sprintf("replace-%d", i), i == slow, "replace", cluster, target, "--yes")
	}
	r.KillAt(5*time.Minute, replaceKillPoints[r.Rng.IntN(len(replaceKillPoints))])
	// a contender that looks while the winner changes the members may be
	// refused for what it sees (exit 5) besides the held lock; the killed
	// one ends -9
	codes := r.wait(map[string][]int{"replace": {0, 5, 6, 7}})
	if n := e2esuite.Exited(codes, 0); n > 1 {
		r.T.Errorf("%d processes replaced %s: %v", n, target, codes)
	}
}

// differentMembers: replace of both followers, a restore and a generation
// GC at once; one member is killed at a random moment.
func differentMembers(r *round) {
	_, followers := s.Roles(r.T, cluster)
	r.Rng.Shuffle(len(followers), func(i, j int) { followers[i], followers[j] = followers[j], followers[i] })
	cmds := []struct {
		name string
		args []string
	}{
		{"replace-a", []string{"replace", cluster, followers[0], "--yes"}},
		{"replace-b", []string{"replace", cluster, followers[1], "--yes"}},
		{"restore", []string{"restore", cluster, "--generation", "adv-2", "--yes"}},
		{"gc", []string{"generations", "gc", cluster, "--keep", "1", "--yes"}},
	}
	r.Rng.Shuffle(len(cmds), func(i, j int) { cmds[i], cmds[j] = cmds[j], cmds[i] })
	slow := r.Rng.IntN(len(cmds))
	killAfter := time.Second + time.Duration(r.Rng.Int64N(int64(7*time.Second)))
	started := time.Now()
	for i, c := range cmds {
		r.Jitter(700 * time.Millisecond)
		r.launch(c.name, i == slow, c.args...)
	}
	time.Sleep(time.Until(started.Add(killAfter)))
	// Kill the member a running replace targets: a fault on any other
	// member while one is being replaced would break quorum by itself.
	// Poll (up to 10s) for a replace holding the lock.
	killed := false
	_ = poll.Wait(10*time.Second, func() error {
		if r.AllDone() {
			return nil // nothing left to kill a member under
		}
		lease, err := s.KC.CoordinationV1().Leases(namespace).Get(context.Background(), actions.LockName(cluster), metav1.GetOptions{})
		if m, ok := strings.CutPrefix(lease.GetAnnotations()[actions.AnnotationAction], "replace "); err == nil && ok && lease.Spec.HolderIdentity != nil {
			r.Break(strings.TrimSpace(m), fault.Kill, fmt.Sprintf("(the running replace's target) %s after the start", time.Since(started).Round(time.Millisecond)))
			killed = true
			return nil
		}
		return errors.New("no replace holds the lock")
	}, poll.Every(200*time.Millisecond))
	if !killed {
		r.T.Logf("no replace held the lock: no member killed")
	}
	r.wait(map[string][]int{"replace": {0, 5, 6, 7}, "restore": {5, 7}, "gc": {0, 7}})
	if res := s.Hactl(r.T, "generations", "verify", cluster, "adv-2"); res.Code != 0 {
		r.T.Errorf("the newest generation is gone or damaged after the round: %s", res)
	}
}

// frozenHolder: a replace is frozen (SIGSTOP) while it waits between
// steps, long enough for its lease to expire; a second replace takes the
// lock over and resumes; the first is woken and must stop by itself.
func frozenHolder(r *round) {
	_, followers := s.Roles(r.T, cluster)
	target := followers[r.Rng.IntN(len(followers))]
	first := r.launch("replace-frozen", false, "replace", cluster, target, "--yes")
	step := []model.StepKind{model.StepDeletePod, model.StepAwaitPodRecreated}[r.Rng.IntN(2)]
	if _, ok := r.AwaitLine(e2esuite.StepLine(step, model.OutcomeDone), 5*time.Minute); !ok {
		<-first.Done
		r.T.Fatalf("the replace printed no %s done:\n%s", step, first.Output())
	}
	if err := first.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		r.T.Fatal(err)
	}
	frozen := time.Now()
	r.Fault("SIGSTOP %s after %s", first.Name, step)
	// past the lease's duration by any clock: the holder renewed at the
	// latest when it was frozen
	time.Sleep(31 * time.Second)
	second := r.launch("replace-takeover", r.Rng.IntN(2) == 0, "replace", cluster, target, "--yes")
	if _, ok := r.AwaitProcLine(func(pl e2esuite.ProcLine) bool {
		return pl.P == second && e2esuite.StepLine(model.StepAcquireLock, model.OutcomeDone)(pl.Line)
	}, 3*time.Minute); !ok {
		r.T.Errorf("%s never took the lock (its output follows below)", second.Name)
	}
	if err := first.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		r.T.Fatal(err)
	}
	r.Fault("SIGCONT %s after %s", first.Name, time.Since(frozen).Round(time.Second))
	r.wait(map[string][]int{"replace-frozen": {7}, "replace-takeover": {0}})
}

// pausedPeer: with the other follower frozen, two replaces of a follower
// must refuse (quorum would break); once it is back, a replace through a
// slow API runs while its own target is frozen for 3 s at a random moment.
func pausedPeer(r *round) {
	_, followers := s.Roles(r.T, cluster)
	r.Rng.Shuffle(len(followers), func(i, j int) { followers[i], followers[j] = followers[j], followers[i] })
	target, peer := followers[0], followers[1]
	ctx := context.Background()
	if err := s.SB.Break(ctx, namespace+"/"+peer, fault.Pause); err != nil {
		r.T.Fatal(err)
	}
	r.Fault("pause member %s", peer)
	for i := 0; i < 2; i++ {
		r.launch(fmt.Sprintf("replace-refused-%d", i), i == 1, "replace", cluster, target, "--yes")
	}
	r.wait(map[string][]int{"replace-refused": {5, 7}})
	if err := s.SB.Break(ctx, namespace+"/"+peer, fault.Resume); err != nil {
		r.T.Fatal(err)
	}
	r.Fault("resume member %s", peer)
	s.WaitFailoverReady(r.T, cluster)

	r.launch("replace", true, "replace", cluster, target, "--yes")
	r.Jitter(6 * time.Second)
	if r.Break(target, fault.Pause, "(the target) for 3s") {
		time.Sleep(3 * time.Second)
		r.Break(target, fault.Resume, "")
	}
	r.wait(map[string][]int{"replace": {0, 5, 6}})
}
