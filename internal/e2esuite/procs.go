package e2esuite

import (
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// receiptLineRE is a progress line kubectl-hactl prints for a receipt:
// "  [phase] step outcome: detail". A line of the plan it prints before
// ("  1. [phase] detail") does not match.
var receiptLineRE = regexp.MustCompile(`^\s*\[[^\]\s]*\] (\S+) (\S+):`)

// ReceiptLine parses a progress line of a receipt: the step it reports
// and how it ended; ok is false for any other line, the plan's included
// (a step planned is not a step done).
func ReceiptLine(l string) (step model.StepKind, outcome model.Outcome, ok bool) {
	m := receiptLineRE.FindStringSubmatch(l)
	if m == nil {
		return "", "", false
	}
	return model.StepKind(m[1]), model.Outcome(m[2]), true
}

// StepLine matches the progress lines of step's receipts; with outcomes,
// only those with one of them.
func StepLine(step model.StepKind, outcomes ...model.Outcome) func(string) bool {
	return func(l string) bool {
		s, o, ok := ReceiptLine(l)
		if !ok || s != step {
			return false
		}
		for _, want := range outcomes {
			if o == want {
				return true
			}
		}
		return len(outcomes) == 0
	}
}

var identityInOutput = regexp.MustCompile(`took lease \S+ as (hactl/[^\s;]+)`)

// Identity is the lock identity a process's output names (its
// acquire-lock receipt), "" if it never took the lock.
func Identity(out string) string {
	if m := identityInOutput.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}

// LastLine is the last line of s, blank lines at its end left out.
func LastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return l[len(l)-1]
}

// Proc is one kubectl-hactl process of a round (Procs).
type Proc struct {
	Name string
	// Stopped is set once the round SIGKILLed the process (Kill) or froze
	// it (a round that freezes one sets it): only such a process may end
	// by SIGKILL (Procs.Wait), or leave "sending" as the last word of a
	// change (DeleteReceipts.Check).
	Stopped bool
	*Started
}

// Kill SIGKILLs p (a round's fault) and marks it stopped.
func (p *Proc) Kill() {
	p.Stopped = true
	_ = p.Cmd.Process.Signal(syscall.SIGKILL)
}

// Output is everything p printed, stdout then stderr, once it is Done.
func (p *Proc) Output() string { return p.Stdout() + p.All.String() }

// ProcLine is one progress line of a round's process.
type ProcLine struct {
	P    *Proc
	Line string
}

// Procs are the kubectl-hactl processes a round runs side by side, their
// progress lines merged into one stream in the order they came.
type Procs struct {
	s     *Suite
	t     testing.TB
	ended func(*Proc)
	lines chan ProcLine
	procs []*Proc
}

// NewProcs starts the processes of a round of t. ended, if not nil, is
// called with each process Wait or Reap saw end (once it is Done).
func (s *Suite) NewProcs(t testing.TB, ended func(*Proc)) *Procs {
	return &Procs{s: s, t: t, ended: ended, lines: make(chan ProcLine, 4096)}
}

// Start runs kubectl-hactl ARGS (Suite.Start, with extraEnv) as one of
// ps, named name (Wait's allowed exit codes go by its prefix).
func (ps *Procs) Start(name string, extraEnv []string, args ...string) *Proc {
	ps.t.Helper()
	p := &Proc{Name: name, Started: ps.s.Start(ps.t, extraEnv, args...)}
	go func() {
		for l := range p.Lines {
			select {
			case ps.lines <- ProcLine{p, l}:
			default: // nobody reads: the line stays in Stdout
			}
		}
	}()
	ps.procs = append(ps.procs, p)
	return p
}

// AllDone reports whether every process started since the last Wait has
// ended.
func (ps *Procs) AllDone() bool {
	for _, p := range ps.procs {
		select {
		case <-p.Done:
		default:
			return false
		}
	}
	return true
}

// AwaitLine returns the first progress line (of any process) for which
// match holds, or false if every process ended first or timeout passed.
func (ps *Procs) AwaitLine(match func(string) bool, timeout time.Duration) (ProcLine, bool) {
	return ps.AwaitProcLine(func(pl ProcLine) bool { return match(pl.Line) }, timeout)
}

// AwaitProcLine is AwaitLine matching the process too.
func (ps *Procs) AwaitProcLine(match func(ProcLine) bool, timeout time.Duration) (ProcLine, bool) {
	deadline := time.After(timeout)
	for {
		select {
		case pl := <-ps.lines:
			if match(pl) {
				return pl, true
			}
		case <-deadline:
			return ProcLine{}, false
		case <-time.After(200 * time.Millisecond):
			if ps.AllDone() {
				// what is left in the stream
				for {
					select {
					case pl := <-ps.lines:
						if match(pl) {
							return pl, true
						}
					default:
						return ProcLine{}, false
					}
				}
			}
		}
	}
}

// Wait waits for every process (all of them within bound: each of
// hactl's waits is bounded, so one still running after it waits forever,
// and is failed and killed) and checks its exit code against allowed (by
// the prefix of its name; a process the round stopped may also end by
// SIGKILL). It returns the exit codes by name; the processes are then
// forgotten.
func (ps *Procs) Wait(bound time.Duration, allowed map[string][]int) map[string]int {
	t := ps.t
	t.Helper()
	codes := map[string]int{}
	deadline := time.After(bound)
	for _, p := range ps.procs {
		select {
		case <-p.Done:
		case <-deadline:
			_ = p.Cmd.Process.Signal(syscall.SIGCONT)
			_ = p.Cmd.Process.Kill()
			<-p.Done
			t.Errorf("%s did not end within %s: an action waits forever:\n%s", p.Name, bound, p.Output())
		}
		if ps.ended != nil {
			ps.ended(p)
		}
		codes[p.Name] = p.Code
		t.Logf("%s %s: exit %d (%s)", p.Name, strings.Join(p.Cmd.Args[1:], " "), p.Code, LastLine(p.Stdout()))
		ok := p.Stopped && p.Code == -int(syscall.SIGKILL)
		for prefix, want := range allowed {
			if strings.HasPrefix(p.Name, prefix) {
				for _, c := range want {
					ok = ok || c == p.Code
				}
			}
		}
		if !ok {
			t.Errorf("%s exited %d (allowed %v):\n%s", p.Name, p.Code, allowed, p.Output())
		}
	}
	ps.procs = nil
	return codes
}

// Reap ends what a failed round left running (woken, then SIGKILLed);
// the processes are then forgotten.
func (ps *Procs) Reap() {
	for _, p := range ps.procs {
		_ = p.Cmd.Process.Signal(syscall.SIGCONT)
		_ = p.Cmd.Process.Kill()
		<-p.Done
		if ps.ended != nil {
			ps.ended(p)
		}
	}
	ps.procs = nil
}

// Loop calls a function at an interval in a goroutine of its own until
// stopped: a probe beside a round.
type Loop struct {
	stopc, done chan struct{}
	once        sync.Once
}

// StartLoop calls tick every interval (after each call returns) until
// Stop.
func StartLoop(every time.Duration, tick func()) *Loop {
	l := &Loop{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			select {
			case <-l.stopc:
				return
			case <-time.After(every):
			}
			tick()
		}
	}()
	return l
}

// Stop ends the loop once the call of tick running, if any, has returned.
// It reports whether this call stopped it (later calls only wait).
func (l *Loop) Stop() bool {
	stopped := false
	l.once.Do(func() {
		close(l.stopc)
		stopped = true
	})
	<-l.done
	return stopped
}
