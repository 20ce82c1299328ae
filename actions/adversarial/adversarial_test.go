package adversarial

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
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

// history is what the rounds leave for the checks of the whole run.
type history struct {
	mu      sync.Mutex
	outputs []string
	procs   int
	faults  []string
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

var (
	uidRE    = regexp.MustCompile(`uid=([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`)
	holderRE = regexp.MustCompile(`took lease \S+ as (hactl/[^\s;]+)`)
)

// identityOf is the lock identity a process's output names (its
// acquire-lock receipt), "" if it never took the lock.
func identityOf(out string) string {
	if m := holderRE.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}

// shownUIDs maps each lock identity to the UIDs of the objects the plan
// its process printed before its first receipt named: what its user saw
// before confirming.
func (h *history) shownUIDs() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, o := range h.outputs {
		id := identityOf(o)
		if id == "" {
			continue
		}
		if out[id] == nil {
			out[id] = map[string]bool{}
		}
		for _, l := range strings.Split(o, "\n") {
			if strings.HasPrefix(l, "  [") {
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
	seed := time.Now().UnixNano()
	if v := os.Getenv("HACTL_ADVERSARIAL_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("HACTL_ADVERSARIAL_SEED: %v", err)
		}
	}
	t.Logf("seed %d (replay: HACTL_ADVERSARIAL_SEED=%d go test ./actions/adversarial)", seed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	kinds := roundKinds()
	rounds := len(kinds)
	if v := os.Getenv("HACTL_ADVERSARIAL_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("HACTL_ADVERSARIAL_ROUNDS=%q: want a positive number", v)
		}
		rounds = n
	}

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

	order := rng.Perm(len(kinds))
	start := time.Now()
	for i := 0; i < rounds; i++ {
		k := kinds[rng.IntN(len(kinds))]
		if i < len(order) {
			k = kinds[order[i]]
		}
		ok := t.Run(fmt.Sprintf("%d-%s", i, k.name), func(t *testing.T) {
			r := &round{t: t, rng: rng, h: h, kubeconfig: kubeconfig, lines: make(chan procLine, 4096)}
			r.run(k)
		})
		if !ok {
			t.Errorf("stopped after a failed round: the ledger's receipts are not checked (a killed action may have been left unfinished)")
			h.failed = true
			break
		}
	}
	checkRun(t, h)
	t.Logf("%d rounds in %s: %d hactl processes, %d faults: %s", rounds, time.Since(start).Round(time.Second), h.procs, len(h.faults), strings.Join(h.faults, "; "))
}

// checkRun checks the whole run from the audit log: only the lock holder
// wrote the cluster's objects, every delete named a UID a plan showed, and
// the ledger has a receipt for each delete.
func checkRun(t *testing.T, h *history) {
	t.Helper()
	var events []auditEvent
	// the log is written as requests complete: read it every second until
	// it stops growing (or for 30 s, then check what it holds)
	prev := -1
	_ = poll.Wait(30*time.Second, func() error {
		var err error
		if events, err = readAudit(auditLog); err != nil {
			t.Fatal(err)
		}
		if len(events) != prev {
			prev = len(events)
			return fmt.Errorf("%d events, still growing", prev)
		}
		return nil
	}, poll.Every(time.Second))
	violations, checked := checkLockDiscipline(events, cluster)
	if checked == 0 {
		t.Fatalf("the audit log holds no write by a hactl process (%d writes in all): the user agent no longer names the lock identity, or the policy records nothing", len(events))
	}
	for _, v := range violations {
		t.Errorf("lock discipline: %s", v)
	}
	shown := h.shownUIDs()
	// what the ledger says of each delete: "sending" (written ahead) or
	// how it ended
	sending, ended := map[string]bool{}, map[string]bool{}
	for _, rc := range h.receipts {
		for _, f := range rc.Fences {
			key := string(rc.Step) + " " + f.UID
			switch {
			case rc.Outcome == model.OutcomeSending:
				sending[key] = true
			case changed(rc.Outcome):
				ended[key] = true
			}
		}
	}
	deletes := 0
	for _, e := range events {
		if e.holder() == "" || e.Verb != "delete" || !guarded(e, cluster) {
			continue
		}
		uid := deletedUID(e)
		if e.ObjectRef.Resource == "pods" && strings.HasPrefix(e.ObjectRef.Name, actions.CapturePodName("")) {
			// hactl's own capture pod, not a member: no plan shows it, but
			// it too is deleted by the lock holder (checked above), fenced.
			if uid == "" {
				t.Errorf("%s had no UID precondition", e)
			}
			continue
		}
		deletes++
		switch {
		case uid == "":
			t.Errorf("%s had no UID precondition", e)
		case !shown[e.holder()][uid]:
			t.Errorf("%s deleted uid %s, which the plan its process showed did not name", e, uid)
		}
		step := model.StepDeletePod
		if e.ObjectRef.Resource == "persistentvolumeclaims" {
			step = model.StepDeletePVC
		}
		key := string(step) + " " + uid
		switch {
		case h.failed:
		case !sending[key] && !ended[key]:
			t.Errorf("%s (uid %s) has no %s receipt in the ledger", e, uid, step)
		case !ended[key] && !h.killed[e.holder()]:
			// only a process killed between the request and its answer
			// may leave "sending" as the last word
			t.Errorf("%s (uid %s): the ledger says only that it was being sent, although its process was not killed", e, uid)
		}
	}
	if !h.failed && (deletes == 0 || h.changes == 0) {
		t.Errorf("the run deleted %d objects and changed the members %d times: no action ran, so nothing was proven", deletes, h.changes)
	}
	t.Logf("audit: %d writes, %d by hactl to the cluster's objects under the lock checked, %d deletes, %d member changes; %d violations", len(events), checked, deletes, h.changes, len(violations))
}

// changed reports whether a receipt says its step changed something (or
// may have: unknown, or written ahead of a request whose answer was never
// recorded).
func changed(o model.Outcome) bool {
	return o == model.OutcomeDone || o == model.OutcomeAlready || o == model.OutcomeUnknown || o == model.OutcomeSending
}

// round is one round: its processes, their progress lines, its faults.
type round struct {
	t          *testing.T
	rng        *rand.Rand
	h          *history
	kubeconfig string // through the latency proxy
	lines      chan procLine
	procs      []*proc
}

type proc struct {
	name   string
	killed bool
	*e2esuite.Started
}

// kill SIGKILLs the process (the round's fault).
func (p *proc) kill() {
	p.killed = true
	_ = p.Cmd.Process.Signal(syscall.SIGKILL)
}

type procLine struct {
	p    *proc
	line string
}

// roundKind is one kind of round: run starts processes and faults and
// waits for them; allowed maps a process name's prefix to its allowed
// exit codes (-9: SIGKILLed by the round).
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
	t := r.t
	s.WaitFailoverReady(t, cluster)
	want := s.PutSentinel(t, cluster)
	p := startProbe(cluster)
	defer p.stop()
	defer r.reap()
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

// launch starts kubectl-hactl ARGS, through the latency proxy if slow.
func (r *round) launch(name string, slow bool, args ...string) *proc {
	var env []string
	if slow {
		env = []string{"KUBECONFIG=" + r.kubeconfig}
		name += "(slow API)"
	}
	switch args[0] {
	case "replace", "reseed", "restore":
		args = append(args, probeTimeout(slow)...)
	}
	p := &proc{name: name, Started: s.Start(r.t, env, args...)}
	go func() {
		for l := range p.Lines {
			select {
			case r.lines <- procLine{p, l}:
			default:
			}
		}
	}()
	r.procs = append(r.procs, p)
	r.h.mu.Lock()
	r.h.procs++
	r.h.mu.Unlock()
	return p
}

// breakMember injects a member fault; a member whose process is not
// running (its pod being replaced) is skipped, and said so.
func (r *round) breakMember(member string, k fault.Kind, why string) bool {
	if err := s.SB.Break(context.Background(), namespace+"/"+member, k); err != nil {
		r.t.Logf("fault %s %s skipped: %v", k, member, err)
		return false
	}
	r.fault("%s member %s %s", k, member, why)
	return true
}

func (r *round) fault(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	r.t.Logf("fault: %s", msg)
	r.h.mu.Lock()
	r.h.faults = append(r.h.faults, msg)
	r.h.mu.Unlock()
}

// jitter sleeps a random time up to max.
func (r *round) jitter(max time.Duration) {
	time.Sleep(time.Duration(r.rng.Int64N(int64(max))))
}

// awaitLine returns the first progress line (of any process of the round)
// for which match holds, or false if every process ended first or the
// timeout passed.
func (r *round) awaitLine(match func(string) bool, timeout time.Duration) (procLine, bool) {
	deadline := time.After(timeout)
	for {
		select {
		case pl := <-r.lines:
			if match(pl.line) {
				return pl, true
			}
		case <-deadline:
			return procLine{}, false
		case <-time.After(200 * time.Millisecond):
			if r.allDone() {
				// drain what is left
				for {
					select {
					case pl := <-r.lines:
						if match(pl.line) {
							return pl, true
						}
					default:
						return procLine{}, false
					}
				}
			}
		}
	}
}

func (r *round) allDone() bool {
	for _, p := range r.procs {
		select {
		case <-p.Done:
		default:
			return false
		}
	}
	return true
}

// wait waits for every process of the round, records its output and
// checks its exit code against allowed (by name prefix).
func (r *round) wait(allowed map[string][]int) map[string]int {
	r.t.Helper()
	codes := map[string]int{}
	for _, p := range r.procs {
		select {
		case <-p.Done:
		case <-time.After(8 * time.Minute):
			_ = p.Cmd.Process.Kill()
			<-p.Done
			r.t.Errorf("%s did not end within 8m", p.name)
		}
		out := p.Stdout() + p.All.String()
		r.h.output(out)
		if p.killed {
			r.h.mu.Lock()
			if r.h.killed == nil {
				r.h.killed = map[string]bool{}
			}
			r.h.killed[identityOf(out)] = true
			r.h.mu.Unlock()
		}
		codes[p.name] = p.Code
		r.t.Logf("%s %s: exit %d", p.name, strings.Join(p.Cmd.Args[1:], " "), p.Code)
		ok := false
		for prefix, want := range allowed {
			if strings.HasPrefix(p.name, prefix) {
				for _, c := range want {
					ok = ok || c == p.Code
				}
			}
		}
		if !ok {
			r.t.Errorf("%s exited %d (allowed %v):\n%s", p.name, p.Code, allowed, out)
		}
	}
	r.procs = nil
	return codes
}

// reap ends what a failed round left running (SIGKILL) and keeps its
// output for the whole-run checks.
func (r *round) reap() {
	for _, p := range r.procs {
		_ = p.Cmd.Process.Signal(syscall.SIGCONT)
		_ = p.Cmd.Process.Kill()
		<-p.Done
		r.h.output(p.Stdout() + p.All.String())
	}
	r.procs = nil
}

// settle finishes every action the round left in progress, by running the
// same command again as an operator would.
func (r *round) settle() {
	t := r.t
	for attempt := 0; attempt < 6; attempt++ {
		var open []model.LedgerEntry
		for _, e := range s.Ledger(t, cluster).Entries {
			if e.State == model.EntryInProgress {
				open = append(open, e)
			}
		}
		if len(open) == 0 {
			return
		}
		for _, e := range open {
			if e.Action != model.ActionReplace && e.Action != model.ActionReseed {
				t.Fatalf("the round left a %s in progress (%s)", e.Action, e.ID)
			}
			res := s.Hactl(t, string(e.Action), cluster, e.Member, "--yes", "--probe-timeout", "5s")
			r.h.output(res.Stdout + res.Stderr)
			r.h.mu.Lock()
			r.h.procs++
			r.h.mu.Unlock()
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
	t := r.t
	led := s.Ledger(t, cluster)
	for _, c := range p.changes() {
		found := false
		for _, e := range led.Entries {
			for _, rc := range e.Receipts {
				if rc.Step == c.step && changed(rc.Outcome) && (rc.MemberID == c.id || strings.Contains(rc.Detail, c.id)) {
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

func stepLine(step model.StepKind) func(string) bool {
	return func(l string) bool { return strings.Contains(l, "] "+string(step)+" ") }
}

// sameMember: three processes replace the same follower at once, one of
// them through a slow API; the one that prints a random step's progress
// first is SIGKILLed there.
func sameMember(r *round) {
	_, followers := s.Roles(r.t, cluster)
	target := followers[r.rng.IntN(len(followers))]
	slow := r.rng.IntN(3)
	for i := 0; i < 3; i++ {
		r.jitter(300 * time.Millisecond)
		r.launch(fmt.Sprintf("replace-%d", i), i == slow, "replace", cluster, target, "--yes")
	}
	step := replaceKillPoints[r.rng.IntN(len(replaceKillPoints))]
	if pl, ok := r.awaitLine(stepLine(step), 5*time.Minute); ok {
		pl.p.kill()
		r.fault("SIGKILL %s after %s", pl.p.name, step)
	}
	// a contender that looks while the winner changes the members may be
	// refused for what it sees (exit 5) besides the held lock
	codes := r.wait(map[string][]int{"replace": {0, 5, 6, 7, -9}})
	zero := 0
	for _, c := range codes {
		if c == 0 {
			zero++
		}
	}
	if zero > 1 {
		r.t.Errorf("%d processes replaced %s: %v", zero, target, codes)
	}
}

// differentMembers: replace of both followers, a restore and a generation
// GC at once; one member is killed at a random moment.
func differentMembers(r *round) {
	_, followers := s.Roles(r.t, cluster)
	r.rng.Shuffle(len(followers), func(i, j int) { followers[i], followers[j] = followers[j], followers[i] })
	cmds := []struct {
		name string
		args []string
	}{
		{"replace-a", []string{"replace", cluster, followers[0], "--yes"}},
		{"replace-b", []string{"replace", cluster, followers[1], "--yes"}},
		{"restore", []string{"restore", cluster, "--generation", "adv-2", "--yes"}},
		{"gc", []string{"generations", "gc", cluster, "--keep", "1", "--yes"}},
	}
	r.rng.Shuffle(len(cmds), func(i, j int) { cmds[i], cmds[j] = cmds[j], cmds[i] })
	slow := r.rng.IntN(len(cmds))
	killAfter := time.Second + time.Duration(r.rng.Int64N(int64(7*time.Second)))
	started := time.Now()
	for i, c := range cmds {
		r.jitter(700 * time.Millisecond)
		r.launch(c.name, i == slow, c.args...)
	}
	time.Sleep(time.Until(started.Add(killAfter)))
	// Kill the member a running replace targets: a fault on any other
	// member while one is being replaced would break quorum by itself.
	// Poll (up to 10s) for a replace holding the lock.
	killed := false
	_ = poll.Wait(10*time.Second, func() error {
		if r.allDone() {
			return nil // nothing left to kill a member under
		}
		lease, err := s.KC.CoordinationV1().Leases(namespace).Get(context.Background(), actions.LockName(cluster), metav1.GetOptions{})
		if m, ok := strings.CutPrefix(lease.GetAnnotations()[actions.AnnotationAction], "replace "); err == nil && ok && lease.Spec.HolderIdentity != nil {
			r.breakMember(strings.TrimSpace(m), fault.Kill, fmt.Sprintf("(the running replace's target) %s after the start", time.Since(started).Round(time.Millisecond)))
			killed = true
			return nil
		}
		return errors.New("no replace holds the lock")
	}, poll.Every(200*time.Millisecond))
	if !killed {
		r.t.Logf("no replace held the lock: no member killed")
	}
	r.wait(map[string][]int{"replace": {0, 5, 6, 7}, "restore": {5, 7}, "gc": {0, 7}})
	if res := s.Hactl(r.t, "generations", "verify", cluster, "adv-2"); res.Code != 0 {
		r.t.Errorf("the newest generation is gone or damaged after the round: %s", res)
	}
}

// frozenHolder: a replace is frozen (SIGSTOP) while it waits between
// steps, long enough for its lease to expire; a second replace takes the
// lock over and resumes; the first is woken and must stop by itself.
func frozenHolder(r *round) {
	_, followers := s.Roles(r.t, cluster)
	target := followers[r.rng.IntN(len(followers))]
	first := r.launch("replace-frozen", false, "replace", cluster, target, "--yes")
	step := []model.StepKind{model.StepDeletePod, model.StepAwaitPodRecreated}[r.rng.IntN(2)]
	if _, ok := r.awaitLine(func(l string) bool { return stepLine(step)(l) && strings.Contains(l, " done") }, 5*time.Minute); !ok {
		<-first.Done
		r.t.Fatalf("the replace printed no %s:\n%s%s", step, first.Stdout(), first.All)
	}
	if err := first.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		r.t.Fatal(err)
	}
	frozen := time.Now()
	r.fault("SIGSTOP %s after %s", first.name, step)
	// past the lease's duration by any clock: the holder renewed at the
	// latest when it was frozen
	time.Sleep(31 * time.Second)
	second := r.launch("replace-takeover", r.rng.IntN(2) == 0, "replace", cluster, target, "--yes")
	if _, ok := r.awaitLine(func(l string) bool { return strings.Contains(l, "] ") && strings.Contains(l, "acquire-lock") }, 3*time.Minute); !ok {
		r.t.Errorf("%s never took the lock (its output follows below)", second.name)
	}
	if err := first.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		r.t.Fatal(err)
	}
	r.fault("SIGCONT %s after %s", first.name, time.Since(frozen).Round(time.Second))
	r.wait(map[string][]int{"replace-frozen": {7}, "replace-takeover": {0}})
}

// pausedPeer: with the other follower frozen, two replaces of a follower
// must refuse (quorum would break); once it is back, a replace through a
// slow API runs while its own target is frozen for 3 s at a random moment.
func pausedPeer(r *round) {
	_, followers := s.Roles(r.t, cluster)
	r.rng.Shuffle(len(followers), func(i, j int) { followers[i], followers[j] = followers[j], followers[i] })
	target, peer := followers[0], followers[1]
	ctx := context.Background()
	if err := s.SB.Break(ctx, namespace+"/"+peer, fault.Pause); err != nil {
		r.t.Fatal(err)
	}
	r.fault("pause member %s", peer)
	for i := 0; i < 2; i++ {
		r.launch(fmt.Sprintf("replace-refused-%d", i), i == 1, "replace", cluster, target, "--yes")
	}
	r.wait(map[string][]int{"replace-refused": {5, 7}})
	if err := s.SB.Break(ctx, namespace+"/"+peer, fault.Resume); err != nil {
		r.t.Fatal(err)
	}
	r.fault("resume member %s", peer)
	s.WaitFailoverReady(r.t, cluster)

	r.launch("replace", true, "replace", cluster, target, "--yes")
	r.jitter(6 * time.Second)
	if r.breakMember(target, fault.Pause, "(the target) for 3s") {
		time.Sleep(3 * time.Second)
		r.breakMember(target, fault.Resume, "")
	}
	r.wait(map[string][]int{"replace": {0, 5, 6}})
}
