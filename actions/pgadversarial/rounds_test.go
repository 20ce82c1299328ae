package pgadversarial

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/fault"
	"github.com/hactl-dev/hactl/status"
)

const (
	// envSeed replays a run; envRounds runs more rounds than one of each
	// kind.
	envSeed   = "HACTL_PG_ADVERSARIAL_SEED"
	envRounds = "HACTL_PG_ADVERSARIAL_ROUNDS"
	// envKinds, a comma-separated list of round kinds, runs only those.
	envKinds = "HACTL_PG_ADVERSARIAL_KINDS"
	// procBound is how long a hactl process of a round may run: every
	// wait is bounded by --timeout, so one still running after this
	// waits forever.
	procBound = 4 * time.Minute
	// waitTimeout is the --timeout the rounds give each action's waits.
	waitTimeout = "90s"
	// rowsPerRound are the rows committed before each round.
	rowsPerRound = 3
)

// history is what the rounds leave for the checks.
type history struct {
	mu       sync.Mutex
	tl       *timeline
	run      e2esuite.Run
	entries  map[string]model.LedgerEntry
	external []externalSwitch
	// stopped are the identities of the processes a round SIGKILLed or
	// froze.
	stopped map[string]bool
	rows    []string
	changes int
	dir     string
}

// ended records the lock identity of a round's process the round
// SIGKILLed or froze.
func (h *history) ended(p *e2esuite.Proc) {
	if p.Stopped {
		h.mu.Lock()
		h.stopped[e2esuite.Identity(p.Output())] = true
		h.mu.Unlock()
	}
}

// TestPGAdversarialRounds runs the rounds (each kind once, in a seeded
// order; HACTL_PG_ADVERSARIAL_ROUNDS more picks kinds at random), checking
// after every round.
func TestPGAdversarialRounds(t *testing.T) {
	if testing.Short() || s == nil {
		t.Skip("end-to-end test (the sandbox) skipped with -short")
	}
	seed, rng := e2esuite.Seeded(t, envSeed, "-run TestPGAdversarialRounds ./actions/pgadversarial")
	kinds := roundKinds()
	if v := os.Getenv(envKinds); v != "" {
		var picked []roundKind
		for _, k := range kinds {
			if slices.Contains(strings.Split(v, ","), k.name) {
				picked = append(picked, k)
			}
		}
		if len(picked) == 0 {
			t.Fatalf("%s=%q names no round kind", envKinds, v)
		}
		kinds = picked
	}
	rounds := e2esuite.Count(t, envRounds, len(kinds))
	h := &history{tl: &timeline{}, entries: map[string]model.LedgerEntry{}, stopped: map[string]bool{}, dir: t.TempDir()}
	s.WaitFailoverReady(t, cluster)
	p := startProbe(h.tl)
	defer p.Stop()
	// 50 ms each way: a distant API server (its port-forwards too)
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
			t.Errorf("round %d (%s) failed: seed %d (%s=%d replays it)", i, k.name, seed, envSeed, seed)
			if err := settled(); err != nil {
				t.Errorf("stopped after round %d: %v", i, err)
				break
			}
		}
	}
	p.Stop()
	for _, v := range checkChanged(h.changes) {
		t.Error(v)
	}
	t.Logf("%d rounds in %s: %s; probe: %s", rounds, time.Since(start).Round(time.Second), &h.run, h.tl)
}

// settled says why the next round cannot start on what a failed round
// left (nil if it can): an action still in progress, or a cluster that
// does not become failover-ready.
func settled() error {
	l, err := actions.ReadLedger(context.Background(), s.KC, namespace, cluster)
	if err != nil {
		return err
	}
	for _, e := range l.Entries {
		if e.State == model.EntryInProgress {
			return fmt.Errorf("%s %s (%s) is still in progress", e.Action, e.Member, e.ID)
		}
	}
	return poll.Wait(3*time.Minute, func() error { return s.FailoverReady(cluster) }, poll.Every(time.Second))
}

// round is one round: its processes, their progress lines, its faults.
type round struct {
	*e2esuite.Round
	h     *history
	since time.Time
}

type roundKind struct {
	name string
	run  func(r *round)
}

func roundKinds() []roundKind {
	return []roundKind{
		{"switchover-race", switchoverRace},
		{"same-member", sameMember},
		{"different-members", differentMembers},
		{"frozen-holder", frozenHolder},
		{"promoted-target", promotedTarget},
		{"frozen-takeover", frozenTakeover},
		{"killed-switchover", killedSwitchover},
		{"http-replaces", httpReplaces},
	}
}

// run runs one round between the checks: rows committed and seen on every
// member before; afterwards every action left in progress is finished by
// a rerun, as an operator would, and everything is checked.
func (r *round) run(k roundKind) {
	t := r.T
	s.WaitFailoverReady(t, cluster)
	rows := r.commitRows()
	r.since = time.Now()
	defer r.Reap()
	k.run(r)
	r.settle()
	r.repairUnrejoined()
	if err := settled(); err != nil {
		// checked all the same: what the round left is what matters
		t.Errorf("after the round: %v", err)
		tailLogs(t)
	}
	r.check(rows)
}

// repairUnrejoined does what hactl advises (note rejoin_pending) when
// the round left a member that is neither the primary nor a running
// replica after a bounded wait: an old primary whose rejoin Patroni could
// not finish (a crash raced its demotion) is reseeded with kubectl-hactl.
// Bounded: a member still not running afterwards fails the round.
func (r *round) repairUnrejoined() {
	t := r.T
	stuck := func() []string {
		var out []string
		ms, err := s.SB.Members(context.Background())
		if err != nil {
			return nil
		}
		for _, m := range ms {
			if m.Namespace != namespace {
				continue
			}
			smp, ok := readPatroni(m.Address, m.Name)
			if !ok || (!smp.primary() && !(smp.Role == "replica" && smp.State == "running")) {
				out = append(out, m.Name)
			}
		}
		return out
	}
	if poll.Wait(90*time.Second, func() error {
		if st := stuck(); len(st) > 0 {
			return fmt.Errorf("not running: %v", st)
		}
		return nil
	}, poll.Every(time.Second)) == nil {
		return
	}
	for _, m := range stuck() {
		res := s.Hactl(t, "reseed", cluster, m, "--yes", "--timeout", waitTimeout, "--probe-timeout", "5s")
		r.Run.Ran()
		t.Logf("%s did not rejoin as a running replica: reseeded it, as hactl advises: exit %d (%s)", m, res.Code, e2esuite.LastLine(res.Stdout))
		if res.Code != 0 {
			t.Logf("%s", res)
		}
	}
}

// tailLogs logs the end of every member's latest container log.
func tailLogs(t *testing.T) {
	for _, m := range members() {
		files, _ := filepath.Glob(filepath.Join(s.SB.Dir, "runner", "logs", "pods", namespace+"_"+m+"_*", "*", "*.log"))
		var newest string
		var at time.Time
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil && fi.ModTime().After(at) {
				newest, at = f, fi.ModTime()
			}
		}
		if newest == "" {
			continue
		}
		b, _ := os.ReadFile(newest)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		t.Logf("%s: the end of %s:\n%s", m, newest, strings.Join(lines[max(0, len(lines)-20):], "\n"))
	}
}

// members are the pods of the cluster, by name.
func members() []string {
	return []string{cluster + "-0", cluster + "-1", cluster + "-2"}
}

// roles reads every member's /patroni on its own: the running primary and
// the running replicas.
func roles(t *testing.T) (primary string, replicas []string) {
	t.Helper()
	poll.Until(t, time.Minute, "one running primary and two running replicas", func() error {
		ms, err := s.SB.Members(context.Background())
		if err != nil {
			return err
		}
		var prims, reps []string
		for _, m := range ms {
			if m.Namespace != namespace {
				continue
			}
			smp, ok := readPatroni(m.Address, m.Name)
			switch {
			case !ok:
			case smp.primary():
				prims = append(prims, m.Name)
			case smp.Role == "replica" && smp.State == "running":
				reps = append(reps, m.Name)
			}
		}
		sort.Strings(reps)
		if len(prims) != 1 || len(reps) != 2 {
			return fmt.Errorf("primaries %v, replicas %v", prims, reps)
		}
		primary, replicas = prims[0], reps
		return nil
	}, poll.Every(500*time.Millisecond))
	return primary, replicas
}

// commitRows writes rowsPerRound rows through the primary and waits until
// every member has them (read on each one's own PostgreSQL): committed and
// replicated before anything happens.
func (r *round) commitRows() []string {
	t := r.T
	prim, _ := roles(t)
	var vals []string
	for i := 0; i < rowsPerRound; i++ {
		vals = append(vals, fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "."), i, time.Now().UnixNano()))
	}
	sql := "CREATE TABLE IF NOT EXISTS hactl_pgadv (v text PRIMARY KEY); INSERT INTO hactl_pgadv VALUES ('" + strings.Join(vals, "'),('") + "')"
	if _, err := s.Psql(t, namespace, cluster, prim, sql); err != nil {
		t.Fatal(err)
	}
	r.h.mu.Lock()
	r.h.rows = append(r.h.rows, vals...)
	want := append([]string(nil), r.h.rows...)
	r.h.mu.Unlock()
	if v, unread := readRows(t, want, time.Minute); len(checkRows(want, v)) > 0 || len(unread) > 0 {
		t.Fatalf("the rows committed before the round did not reach every member: %v %v", checkRows(want, v), unread)
	}
	return want
}

// readRows reads the table on every member until each has every row of
// want, or timeout passes; it returns what each member had last (a member
// never read is left out, and its error returned).
func readRows(t *testing.T, want []string, timeout time.Duration) (map[string]map[string]bool, map[string]error) {
	have := map[string]map[string]bool{}
	unread := map[string]error{}
	_ = poll.Wait(timeout, func() error {
		var errs []string
		for _, m := range members() {
			out, err := s.Psql(t, namespace, cluster, m, "SELECT v FROM hactl_pgadv")
			if err != nil {
				errs = append(errs, err.Error())
				if have[m] == nil {
					unread[m] = err
				}
				continue
			}
			delete(unread, m)
			got := map[string]bool{}
			for _, l := range strings.Split(out, "\n") {
				got[strings.TrimSpace(l)] = true
			}
			have[m] = got
		}
		if v := checkRows(want, have); len(v) > 0 || len(errs) > 0 {
			return fmt.Errorf("%v %v", v, errs)
		}
		return nil
	}, poll.Every(time.Second))
	return have, unread
}

// launch starts kubectl-hactl ARGS (e2esuite.Round.Launch), with the
// suite's bounds for the actions that wait.
func (r *round) launch(name string, slow bool, args ...string) *e2esuite.Proc {
	switch args[0] {
	case "replace", "reseed", "switchover", "apply":
		args = append(args, "--timeout", waitTimeout, "--probe-timeout", "5s")
	}
	return r.Launch(name, slow, args...)
}

// launchShuffled launches cmds (each its process's name, then its
// arguments) in a random order, a random time up to gap apart, one of
// them through the slow API.
func (r *round) launchShuffled(cmds [][]string, gap time.Duration) {
	r.Rng.Shuffle(len(cmds), func(i, j int) { cmds[i], cmds[j] = cmds[j], cmds[i] })
	slow := r.Rng.IntN(len(cmds))
	for i, c := range cmds {
		r.Jitter(gap)
		r.launch(c[0], i == slow, c[1:]...)
	}
}

// plan saves the plan of ARGS (--dry-run=client -o json) for apply.
func (r *round) plan(name string, args ...string) string {
	res := s.Hactl(r.T, append(args, "--dry-run=client", "-o", "json")...)
	if res.Code != 0 {
		r.T.Fatalf("saving the plan of %v: %s", args, res)
	}
	path := filepath.Join(r.h.dir, fmt.Sprintf("%s-%d.json", name, time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(res.Stdout), 0o644); err != nil {
		r.T.Fatal(err)
	}
	return path
}

// wait waits for the round's processes (e2esuite.Procs.Wait: all within
// procBound).
func (r *round) wait(allowed map[string][]int) map[string]int {
	r.T.Helper()
	return r.Wait(procBound, allowed)
}

// settle finishes every action the round left in progress by running its
// command again, as an operator would: a member that became the primary
// meanwhile is handed over first (--switchover-first) once a rerun
// refuses for that. Bounded: an action still in progress after that waits
// forever.
func (r *round) settle() {
	t := r.T
	first := map[string]bool{}
	for attempt := 0; attempt < 6; attempt++ {
		open := s.InProgress(t, cluster)
		if len(open) == 0 {
			return
		}
		for _, e := range open {
			var args []string
			switch e.Action {
			case model.ActionReplace, model.ActionReseed:
				args = []string{string(e.Action), cluster, e.Member}
				if first[e.ID] {
					args = append(args, "--switchover-first")
				}
			case model.ActionSwitchover:
				args = []string{"switchover", cluster}
				if e.Member != "" {
					args = append(args, "--to", e.Member)
				}
			default:
				t.Fatalf("the round left a %s in progress (%s)", e.Action, e.ID)
			}
			res := s.Hactl(t, append(args, "--yes", "--timeout", waitTimeout, "--probe-timeout", "5s")...)
			r.Run.Ran()
			t.Logf("rerun %s to finish %s: exit %d (%s)", strings.Join(args, " "), e.ID, res.Code, e2esuite.LastLine(res.Stdout))
			switch res.Code {
			case 0:
			case 5:
				// the target is the primary now (target_is_primary,
				// target_promoted): hand it over first
				if strings.Contains(res.Stdout+res.Stderr, "--switchover-first to override") {
					first[e.ID] = true
				}
				fallthrough
			case 1, 6, 7:
				t.Logf("%s", res)
				waitQuiet(t)
			default:
				t.Fatalf("rerun %v: %s", args, res)
			}
		}
	}
	t.Errorf("actions still in progress after 6 reruns each: %+v", s.Ledger(t, cluster).Entries)
}

// waitQuiet waits (bounded) until no live holder names the lock and the
// members answer as one running primary and two running replicas: what an
// operator waits for before running a refused command again.
func waitQuiet(t *testing.T) {
	_ = poll.Wait(90*time.Second, func() error {
		l, err := actions.ReadLock(context.Background(), s.KC, namespace, cluster)
		if err != nil {
			return err
		}
		if l.Held(time.Now()) {
			return fmt.Errorf("held by %s", l.Holder)
		}
		ms, err := s.SB.Members(context.Background())
		if err != nil {
			return err
		}
		prim, reps := 0, 0
		for _, m := range ms {
			if smp, ok := readPatroni(m.Address, m.Name); ok && m.Namespace == namespace {
				switch {
				case smp.primary():
					prim++
				case smp.Role == "replica" && smp.State == "running":
					reps++
				}
			}
		}
		if prim != 1 || reps != 2 {
			return fmt.Errorf("%d primaries, %d replicas", prim, reps)
		}
		return nil
	}, poll.Every(time.Second))
}

// check runs every check on what the round left.
func (r *round) check(rows []string) {
	t := r.T
	for _, e := range s.Ledger(t, cluster).Entries {
		r.h.entries[e.ID] = e
	}
	var entries []model.LedgerEntry
	for _, e := range r.h.entries {
		entries = append(entries, e)
	}
	events := s.Audit(t)
	ev := &evidence{since: r.since, events: events, tl: r.h.tl, entries: entries, external: r.h.external,
		removals: patroniRemovals(t), frozenOrKilled: r.h.stopped}
	report := func(what string, vs []string) {
		for _, v := range vs {
			t.Errorf("%s: %s", what, v)
		}
	}
	have, unread := readRows(t, rows, time.Minute)
	report("rows", checkRows(rows, have))
	for m, err := range unread {
		t.Errorf("rows: %s could not be read after the round: %v", m, err)
	}
	report("primary deleted", checkPrimaryDeletes(ev))
	report("reinitialize of the primary", checkReinitTargets(ev))
	lv, checked := checkLockDiscipline(ev)
	report("lock discipline", lv)
	report("engine request", checkEngineRequests(ev))
	report("reinitialize not carried out", checkReinitCarriedOut(ev))
	report("switchover not seen", checkSwitchoverSeen(ev))
	rv, changes := checkReceipts(ev)
	report("receipt", rv)
	report("unsettled", checkSettled(ev))
	r.h.mu.Lock()
	r.h.changes += changes
	r.h.mu.Unlock()
	switchovers, removals := 0, 0
	for _, e := range events {
		if l, c, ok := failoverRequest(e); ok && !e.RequestReceived.Before(r.since) {
			switchovers++
			t.Logf("Patroni accepted a switchover from %s to %s: %s", l, c, e)
		}
	}
	for _, l := range ev.removals {
		if !l.At.Before(r.since) {
			removals++
		}
	}
	t.Logf("checked: %d rows on 3 members, %d hactl writes under the lock, %d changes (deletes, primary changes, rebuilds), %d switchovers Patroni accepted (audit), %d data directories removed (Patroni's logs); probe %s",
		len(rows), checked, changes, switchovers, removals, r.h.tl)
}

// patroniRemovals reads every member's container log (all incarnations,
// as the sandbox's runner keeps them, one CRI line each: "<RFC 3339 time
// the runner read it> stderr F <Patroni's line>") for Patroni's "Removing
// data directory" lines that wiped a data directory (see removalsIn).
func patroniRemovals(t *testing.T) []logEvent {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(s.SB.Dir, "runner", "logs", "pods", namespace+"_"+cluster+"-*", "*", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Errorf("no member log under %s: Patroni's log cannot be read", filepath.Join(s.SB.Dir, "runner", "logs", "pods"))
	}
	var out []logEvent
	for _, f := range files {
		pod := strings.TrimPrefix(filepath.Base(filepath.Dir(filepath.Dir(f))), namespace+"_")
		member := pod
		if i := strings.LastIndex(pod, "_"); i > 0 {
			member = pod[:i]
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		rs, err := removalsIn(member, b)
		if err != nil {
			t.Errorf("reading %s: %v: removals after that line are not checked", f, err)
		}
		out = append(out, rs...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// removalsIn reads one incarnation's log of member for the data
// directories Patroni wiped: a reinitialize carried out. Patroni also
// logs "Removing data directory" when it clears what a failed copy left
// (pg_basebackup's retry after "Error when fetching backup", and
// clone()'s "failed to bootstrap"): a new member whose leader did not
// answer, as a replaced member's first copy while the primary's
// PostgreSQL is down. That removal, within cleanupWithin of the failure,
// wipes only the failed copy, so it is not one; the removal after a copy
// that succeeded ("bootstrapped") is.
func removalsIn(member string, log []byte) ([]logEvent, error) {
	var out []logEvent
	var failedAt time.Time // the last failed copy not yet cleaned up
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.Contains(l, "ERROR: Error when fetching backup"), strings.Contains(l, "ERROR: failed to bootstrap"):
			if at, ok := lineTime(l); ok {
				failedAt = at
			}
		case strings.Contains(l, "INFO: bootstrapped "):
			failedAt = time.Time{}
		default:
			e, ok := removalLine(member, l)
			if !ok {
				continue
			}
			if !failedAt.IsZero() && e.At.Sub(failedAt) <= cleanupWithin {
				failedAt = time.Time{}
				continue
			}
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// cleanupWithin bounds how long after a failed copy Patroni's removal of
// it comes: at once after "failed to bootstrap", five seconds later on
// pg_basebackup's retry.
const cleanupWithin = 10 * time.Second

// lineTime is when the runner read a CRI log line.
func lineTime(l string) (time.Time, bool) {
	ts, _, ok := strings.Cut(l, " ")
	if !ok {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, ts)
	return at, err == nil
}

// removalLine parses one CRI log line of member's container: a Patroni
// "Removing data directory" line, timed when the runner read it.
func removalLine(member, l string) (logEvent, bool) {
	if !strings.Contains(l, "INFO: Removing data directory") {
		return logEvent{}, false
	}
	at, ok := lineTime(l)
	if !ok {
		return logEvent{}, false
	}
	_, rest, _ := strings.Cut(l, " ")
	return logEvent{At: at, Member: member, Line: rest}, true
}

// switchDirectly asks the primary's own Patroni REST API for a switchover
// to candidate, as another operator would (patronictl), and waits until
// the candidate answers as the primary; the suite's checks know it was
// not hactl's. It reports whether Patroni carried it out.
func (r *round) switchDirectly(prim, candidate string) bool {
	t := r.T
	from := time.Now()
	m, err := s.SB.Member(context.Background(), namespace+"/"+prim)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"leader":%q,"candidate":%q}`, prim, candidate)
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Post("http://"+net.JoinHostPort(m.Address, "8008")+"/switchover", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("switchover from %s to %s through Patroni: %v", prim, candidate, err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.h.mu.Lock()
	r.h.external = append(r.h.external, externalSwitch{From: from, To: time.Now().Add(time.Minute), Candidate: candidate,
		Accepted: resp.StatusCode == http.StatusOK})
	r.h.mu.Unlock()
	if resp.StatusCode != http.StatusOK {
		t.Logf("Patroni refused the switchover from %s to %s: %d %s", prim, candidate, resp.StatusCode, answer)
		return false
	}
	r.Fault("another operator switched over from %s to %s", prim, candidate)
	poll.Until(t, time.Minute, candidate+" to answer as the primary", func() error {
		if smp, ok := r.h.tl.primaryAt(candidate, time.Now()); !ok {
			return fmt.Errorf("%s: %+v", candidate, smp)
		}
		return nil
	}, poll.Every(500*time.Millisecond))
	return true
}

// The round kinds.

// switchoverRace: a switchover choosing its candidate, one to a named
// replica, the apply of a switchover plan saved before, and a reseed of a
// replica, all at once (one through the slow API); meanwhile the primary's
// Patroni is frozen for a few seconds, or its PostgreSQL crashes.
func switchoverRace(r *round) {
	prim, reps := roles(r.T)
	plan := r.plan("switchover", "switchover", cluster)
	to := reps[r.Rng.IntN(2)]
	other := reps[0]
	if other == to {
		other = reps[1]
	}
	cmds := [][]string{
		{"switchover", "switchover", cluster, "--yes"},
		{"switchover-to", "switchover", cluster, "--to", to, "--yes"},
		{"apply-switchover", "apply", "-f", plan, "--yes"},
		{"reseed", "reseed", cluster, other, "--yes"},
	}
	r.launchShuffled(cmds, 400*time.Millisecond)
	switch r.Rng.IntN(2) {
	case 0:
		r.Jitter(3 * time.Second)
		d := 2*time.Second + time.Duration(r.Rng.Int64N(int64(6*time.Second)))
		if r.Break(prim, fault.FreezePatroni, fmt.Sprintf("(the primary) for %s", d.Round(time.Millisecond))) {
			time.Sleep(d)
			r.Break(prim, fault.Resume, "")
		}
	default:
		r.Jitter(3 * time.Second)
		r.Break(prim, fault.CrashPostgres, "(the primary)")
	}
	r.wait(map[string][]int{"switchover": {0, 1, 5, 6, 7}, "apply": {0, 1, 5, 6, 7}, "reseed": {0, 1, 5, 6, 7}})
}

// killedSwitchover: a switchover choosing its candidate, one to a named
// replica (one of them through the slow API) and the apply of a
// switchover plan saved before, at once; the process that prints the
// switchover request's receipt, or its wait's, first is SIGKILLed there;
// the rerun must finish the entry (never leave it waiting).
func killedSwitchover(r *round) {
	_, reps := roles(r.T)
	plan := r.plan("switchover", "switchover", cluster)
	cmds := [][]string{
		{"switchover", "switchover", cluster, "--yes"},
		{"switchover-to", "switchover", cluster, "--to", reps[r.Rng.IntN(2)], "--yes"},
		{"apply-switchover", "apply", "-f", plan, "--yes"},
	}
	r.launchShuffled(cmds, 300*time.Millisecond)
	step := []model.StepKind{model.StepSwitchover, model.StepAwaitSwitchover}[r.Rng.IntN(2)]
	r.KillAt(2*time.Minute, step)
	r.wait(map[string][]int{"switchover": {0, 1, 5, 6, 7}, "apply": {0, 1, 5, 6, 7}})
}

// patroniKillPoints are the progress lines after which a process may be
// SIGKILLed.
var patroniKillPoints = []model.StepKind{
	model.StepAcquireLock, model.StepVerifyFences, model.StepReinitialize, model.StepAwaitRebuild,
	model.StepDeletePVC, model.StepDeletePod, model.StepAwaitPodGone, model.StepAwaitPodRecreated, model.StepAwaitStreaming,
}

// sameMember: reseed, replace and the apply of a replace plan saved
// before, all of the same replica at once (one through the slow API); the
// one that prints a random step first is SIGKILLed there, and the rerun
// resumes.
func sameMember(r *round) {
	_, reps := roles(r.T)
	target := reps[r.Rng.IntN(2)]
	plan := r.plan("replace", "replace", cluster, target)
	cmds := [][]string{
		{"reseed", "reseed", cluster, target, "--yes"},
		{"replace", "replace", cluster, target, "--yes"},
		{"apply-replace", "apply", "-f", plan, "--yes"},
	}
	r.launchShuffled(cmds, 300*time.Millisecond)
	r.KillAt(3*time.Minute, patroniKillPoints[r.Rng.IntN(len(patroniKillPoints))])
	codes := r.wait(map[string][]int{"reseed": {0, 1, 5, 6, 7}, "replace": {0, 1, 5, 6, 7}, "apply": {0, 1, 5, 6, 7}})
	if n := e2esuite.Exited(codes, 0); n > 1 {
		r.T.Errorf("%d processes acted on %s at once and all say done: %v", n, target, codes)
	}
}

// differentMembers: reseed of one replica, replace of the other, the apply
// of a reseed plan saved before and a switchover to one of them, at once;
// the primary's PostgreSQL crashes, or a replica's Patroni freezes, at a
// random moment.
func differentMembers(r *round) {
	prim, reps := roles(r.T)
	r.Rng.Shuffle(2, func(i, j int) { reps[i], reps[j] = reps[j], reps[i] })
	plan := r.plan("reseed", "reseed", cluster, reps[0])
	cmds := [][]string{
		{"reseed", "reseed", cluster, reps[0], "--yes"},
		{"replace", "replace", cluster, reps[1], "--yes"},
		{"apply-reseed", "apply", "-f", plan, "--yes"},
		{"switchover", "switchover", cluster, "--to", reps[r.Rng.IntN(2)], "--yes"},
	}
	r.launchShuffled(cmds, 500*time.Millisecond)
	r.Jitter(6 * time.Second)
	if r.Rng.IntN(2) == 0 {
		r.Break(prim, fault.CrashPostgres, "(the primary when the round began)")
	} else {
		m := reps[r.Rng.IntN(2)]
		if r.Break(m, fault.FreezePatroni, "(a replica) for 3s") {
			time.Sleep(3 * time.Second)
			r.Break(m, fault.Resume, "")
		}
	}
	r.wait(map[string][]int{"reseed": {0, 1, 5, 6, 7}, "replace": {0, 1, 5, 6, 7}, "apply": {0, 1, 5, 6, 7}, "switchover": {0, 1, 5, 6, 7}})
}

// freezeAt freezes (SIGSTOP) p, a process of the round, once it prints
// the receipt of a step picked at random from points, and returns when;
// a p that ends without printing it fails the round.
func (r *round) freezeAt(p *e2esuite.Proc, points []model.StepKind) time.Time {
	step := points[r.Rng.IntN(len(points))]
	if _, ok := r.AwaitLine(e2esuite.StepLine(step), 3*time.Minute); !ok {
		<-p.Done
		r.T.Fatalf("%s printed no %s:\n%s", p.Name, step, p.Output())
	}
	if err := p.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		r.T.Fatal(err)
	}
	p.Stopped = true
	r.Fault("SIGSTOP %s after %s", p.Name, step)
	return time.Now()
}

// thaw wakes p (SIGCONT), frozen since frozen; note is added to the
// fault's record.
func (r *round) thaw(p *e2esuite.Proc, frozen time.Time, note string) {
	if err := p.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		r.T.Fatal(err)
	}
	r.Fault("SIGCONT %s after %s%s", p.Name, time.Since(frozen).Round(time.Second), note)
}

// frozenHolder: a replace or reseed of a replica is frozen (SIGSTOP) after
// a random step, past two thirds of its lease; a switchover tried
// meanwhile must find the lock held or the action in progress; woken, the
// frozen process must stop by itself (exit 7) without changing anything
// more, and the rerun resumes.
func frozenHolder(r *round) {
	_, reps := roles(r.T)
	target := reps[r.Rng.IntN(2)]
	verb := []string{"replace", "reseed"}[r.Rng.IntN(2)]
	first := r.launch(verb+"-frozen", r.Rng.IntN(2) == 0, verb, cluster, target, "--yes")
	points := map[string][]model.StepKind{
		"replace": {model.StepVerifyFences, model.StepDeletePVC, model.StepDeletePod, model.StepAwaitPodGone},
		"reseed":  {model.StepVerifyFences, model.StepReinitialize, model.StepAwaitRebuild},
	}[verb]
	frozen := r.freezeAt(first, points)
	r.Jitter(5 * time.Second)
	r.launch("switchover-contender", r.Rng.IntN(2) == 0, "switchover", cluster, "--yes")
	// past two thirds of the lease by any clock: the holder renewed at
	// the latest when it was frozen
	d := leaseDuration*2/3 + time.Second + time.Duration(r.Rng.Int64N(int64(5*time.Second)))
	time.Sleep(time.Until(frozen.Add(d)))
	r.thaw(first, frozen, "")
	r.wait(map[string][]int{verb + "-frozen": {7}, "switchover-contender": {5, 7}})
}

// frozenTakeover: a replace or reseed of a replica is frozen (SIGSTOP)
// after a random step, past its whole lease; the same command run again
// watches the expired lease for a whole duration, takes it over and
// resumes; the frozen process, woken once the takeover holds the lock,
// must stop by itself (exit 7) and change nothing more.
func frozenTakeover(r *round) {
	_, reps := roles(r.T)
	target := reps[r.Rng.IntN(2)]
	verb := []string{"replace", "reseed"}[r.Rng.IntN(2)]
	first := r.launch(verb+"-frozen", r.Rng.IntN(2) == 0, verb, cluster, target, "--yes")
	points := map[string][]model.StepKind{
		"replace": {model.StepAcquireLock, model.StepVerifyFences, model.StepDeletePVC, model.StepDeletePod, model.StepAwaitPodGone},
		"reseed":  {model.StepAcquireLock, model.StepVerifyFences, model.StepReinitialize},
	}[verb]
	frozen := r.freezeAt(first, points)
	// the lease has expired by the holder's own last renewal; the
	// takeover still watches it for a whole duration before taking it
	time.Sleep(time.Until(frozen.Add(leaseDuration + time.Second)))
	second := r.launch(verb+"-takeover", r.Rng.IntN(2) == 0, verb, cluster, target, "--yes")
	if _, ok := r.AwaitProcLine(func(pl e2esuite.ProcLine) bool {
		return pl.P == second && e2esuite.StepLine(model.StepAcquireLock, model.OutcomeDone)(pl.Line)
	}, 3*time.Minute); !ok {
		r.T.Errorf("%s never took the lock over (its output follows)", second.Name)
	}
	r.thaw(first, frozen, ", the lock taken over")
	r.wait(map[string][]int{verb + "-frozen": {7}, verb + "-takeover": {0, 5}})
}

// promotedTarget: a replace of a replica (through the slow API) is
// SIGKILLed right after its volume's delete; another operator then
// switches the primary role over to that very member; the rerun must not
// delete the pod of what is now the primary (it refuses, or hands over
// first with --switchover-first).
func promotedTarget(r *round) {
	prim, reps := roles(r.T)
	target := reps[r.Rng.IntN(2)]
	uid := s.PodUID(r.T, target)
	p := r.launch("replace", true, "replace", cluster, target, "--yes")
	r.KillAt(3*time.Minute, model.StepDeletePVC, model.OutcomeDone)
	r.wait(map[string][]int{"replace": {0}})
	if p.Code != -int(syscall.SIGKILL) {
		r.T.Logf("the replace ended before it was killed: no member to promote under it")
		return
	}
	// the target still runs on its old pod (its volume deleted, held by
	// the pod): another operator makes it the primary
	if smp, ok := r.h.tl.lastBefore(target, time.Now()); !ok || smp.PodUID != uid || smp.State != "running" {
		r.T.Logf("%s no longer runs on its old pod (%+v): the replace got further than its volume", target, smp)
		return
	}
	r.switchDirectly(prim, target)
}

// httpKillPoints are the progress lines of a replace through the http
// engine after which a process may be SIGKILLed.
var httpKillPoints = []model.StepKind{
	model.StepAcquireLock, model.StepVerifyFences, model.StepDeletePVC, model.StepDeletePod,
	model.StepAwaitPodGone, model.StepAwaitPodRecreated, model.StepAwaitCaughtUp,
}

// httpReplaces: the round reads the cluster through the http engine
// with the shipped Patroni mapping (replace: recreate), whose leader is
// the primary: a replace of each replica, a replace of the primary and
// the apply of a replace plan saved before, at once; a process is
// SIGKILLed after a random step, or the primary's Patroni freezes for
// 3 s. Replacing the primary is refused whatever happens (the checks see
// from the audit log that no pod or volume of the primary was deleted).
// What the round left in progress is finished through the http engine,
// as an operator would, before the cluster is read natively again.
func httpReplaces(r *round) {
	t := r.T
	prim, reps := roles(t)
	_, relabel := s.AsHTTP(t, namespace, cluster, "patroni")
	relabel(true)
	defer relabel(false)
	poll.Until(t, 2*time.Minute, cluster+" failover-ready through the http engine", func() error {
		res := s.Hactl(t, "status", cluster, "-o", "json")
		var cs status.ClusterStatus
		if err := json.Unmarshal([]byte(res.Stdout), &cs); err != nil || res.Code != 0 || cs.Engine != "http" {
			return fmt.Errorf("exit %d, engine %q: %s", res.Code, cs.Engine, e2esuite.LastLine(res.Stderr))
		}
		return nil
	}, poll.Every(time.Second))
	plan := r.plan("replace", "replace", cluster, reps[r.Rng.IntN(2)])
	cmds := [][]string{
		{"replace-replica-a", "replace", cluster, reps[0], "--yes"},
		{"replace-replica-b", "replace", cluster, reps[1], "--yes"},
		{"replace-primary", "replace", cluster, prim, "--yes"},
		{"apply-replace", "apply", "-f", plan, "--yes"},
	}
	r.launchShuffled(cmds, 300*time.Millisecond)
	if r.Rng.IntN(2) == 0 {
		r.KillAt(3*time.Minute, httpKillPoints[r.Rng.IntN(len(httpKillPoints))])
	} else if r.Break(prim, fault.FreezePatroni, "(the primary) for 3s") {
		time.Sleep(3 * time.Second)
		r.Break(prim, fault.Resume, "")
	}
	// The primary's replace never says done: 0 is not allowed.
	r.wait(map[string][]int{"replace-replica": {0, 1, 5, 6, 7}, "replace-primary": {1, 5, 6, 7}, "apply": {0, 1, 5, 6, 7}})
	r.settle()
	// Every process may have been refused (the lock does not wait): then
	// a replica is replaced once more on its own, as an operator would,
	// so that each round replaces a member through the http engine.
	if !replacedSince(t, r.since) {
		waitQuiet(t)
		if res := s.Hactl(t, "replace", cluster, reps[r.Rng.IntN(2)], "--yes", "--timeout", waitTimeout); res.Code != 0 {
			t.Errorf("no replace was done in the round, and one on its own failed: %s", res)
		}
	}
}

// replacedSince reports whether the ledger holds a replace that started
// at since or later and is done.
func replacedSince(t *testing.T, since time.Time) bool {
	for _, e := range s.Ledger(t, cluster).Entries {
		if e.Action == model.ActionReplace && e.State == model.EntryDone && !e.StartedAt.Before(since) {
			return true
		}
	}
	return false
}
