package e2esuite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/fault"
)

// Seeded is the seed of a randomized run and a generator seeded with it:
// envSeed's value when set (a replay), else the time. It logs the seed
// and how to replay the run (replay: go test's arguments).
func Seeded(t testing.TB, envSeed, replay string) (int64, *rand.Rand) {
	t.Helper()
	seed := time.Now().UnixNano()
	if v := os.Getenv(envSeed); v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("%s: %v", envSeed, err)
		}
	}
	t.Logf("seed %d (replay: %s=%d go test %s)", seed, envSeed, seed, replay)
	return seed, rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
}

// Count is envVar's value, which must be a positive number, or def when
// it is unset.
func Count(t testing.TB, envVar string, def int) int {
	t.Helper()
	v := os.Getenv(envVar)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", envVar, v)
	}
	return n
}

// Order is the kind of each of rounds rounds, as an index into kinds
// kinds: every kind once, in a random order, then random picks.
func Order(rng *rand.Rand, kinds, rounds int) []int {
	out := rng.Perm(kinds)
	for len(out) < rounds {
		out = append(out, rng.IntN(kinds))
	}
	return out[:rounds]
}

// Run is what a run of rounds records for its summary: how many
// kubectl-hactl processes it ran and the faults it injected.
type Run struct {
	mu     sync.Mutex
	procs  int
	faults []string
}

// Ran counts a kubectl-hactl process the run ran besides its rounds'
// (Round.Launch counts those).
func (r *Run) Ran() {
	r.mu.Lock()
	r.procs++
	r.mu.Unlock()
}

// Fault logs a fault on t and records it.
func (r *Run) Fault(t testing.TB, format string, a ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, a...)
	t.Logf("fault: %s", msg)
	r.mu.Lock()
	r.faults = append(r.faults, msg)
	r.mu.Unlock()
}

func (r *Run) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("%d hactl processes, %d faults: %s", r.procs, len(r.faults), strings.Join(r.faults, "; "))
}

// Round is one round of an adversarial suite: its test, the run's seeded
// generator and record, and the round's kubectl-hactl processes.
type Round struct {
	T   *testing.T
	Rng *rand.Rand
	Run *Run
	*Procs
	slowKubeconfig string
}

// NewRound starts round t of run. Launch starts a slow process with
// slowKubeconfig (through a latency proxy: SlowKubeconfig); ended is
// Procs' (NewProcs).
func (s *Suite) NewRound(t *testing.T, rng *rand.Rand, run *Run, slowKubeconfig string, ended func(*Proc)) *Round {
	return &Round{T: t, Rng: rng, Run: run, Procs: s.NewProcs(t, ended), slowKubeconfig: slowKubeconfig}
}

// Launch starts kubectl-hactl ARGS as a process of the round
// (Procs.Start), through the slow kubeconfig if slow (its name then says
// so), and counts it.
func (r *Round) Launch(name string, slow bool, args ...string) *Proc {
	r.T.Helper()
	var env []string
	if slow {
		env = []string{"KUBECONFIG=" + r.slowKubeconfig}
		name += "(slow API)"
	}
	r.Run.Ran()
	return r.Start(name, env, args...)
}

// Fault logs a fault of the round and records it in the run.
func (r *Round) Fault(format string, a ...any) {
	r.T.Helper()
	r.Run.Fault(r.T, format, a...)
}

// Jitter sleeps a random time up to max: where a fault lands.
func (r *Round) Jitter(max time.Duration) {
	time.Sleep(time.Duration(r.Rng.Int64N(int64(max))))
}

// Break injects fault k into member (a pod of the suite's namespace) and
// records it, why saying what the member is to the round. A fault that
// cannot land (the member's process not running: its pod being replaced)
// is skipped, said so, and false returned.
func (r *Round) Break(member string, k fault.Kind, why string) bool {
	r.T.Helper()
	if err := r.s.SB.Break(context.Background(), r.s.Namespace+"/"+member, k); err != nil {
		r.T.Logf("fault %s %s skipped: %v", k, member, err)
		return false
	}
	r.Fault("%s member %s %s", k, member, why)
	return true
}

// KillAt SIGKILLs (Proc.Kill) the first process of the round to print a
// receipt of step (with one of outcomes, if given) within timeout, and
// records the fault. It returns the process, or false (and says so) if
// none printed one.
func (r *Round) KillAt(timeout time.Duration, step model.StepKind, outcomes ...model.Outcome) (*Proc, bool) {
	r.T.Helper()
	what := string(step)
	if len(outcomes) > 0 {
		var names []string
		for _, o := range outcomes {
			names = append(names, string(o))
		}
		what += " " + strings.Join(names, "/")
	}
	pl, ok := r.AwaitLine(StepLine(step, outcomes...), timeout)
	if !ok {
		r.T.Logf("no process printed %s: none killed", what)
		return nil, false
	}
	pl.P.Kill()
	r.Fault("SIGKILL %s after %s", pl.P.Name, what)
	return pl.P, true
}

// Exited counts the processes of codes (Procs.Wait) that exited code.
func Exited(codes map[string]int, code int) int {
	n := 0
	for _, c := range codes {
		if c == code {
			n++
		}
	}
	return n
}

// InProgress are the entries of cluster's ledger still in progress: what
// a round left for a rerun to finish.
func (s *Suite) InProgress(t testing.TB, cluster string) []model.LedgerEntry {
	t.Helper()
	var open []model.LedgerEntry
	for _, e := range s.Ledger(t, cluster).Entries {
		if e.State == model.EntryInProgress {
			open = append(open, e)
		}
	}
	return open
}
