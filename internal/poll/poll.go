// Package poll is how hactl's tests wait: call a condition until it holds
// or a deadline passes, never sleep a fixed time and hope. It uses the
// standard library only, so any test package can import it, including
// the packages internal/testenv itself imports.
package poll

import (
	"fmt"
	"testing"
	"time"
)

const (
	// firstInterval is the default pause after the first call; each later
	// pause doubles, up to maxInterval.
	firstInterval = 10 * time.Millisecond
	maxInterval   = 250 * time.Millisecond
)

// Option changes how Until and Wait pace their calls.
type Option func(*pacing)

type pacing struct {
	first, max time.Duration
}

// Every pauses d between one call's end and the next call, instead of
// the default pauses (10 ms, doubling up to 250 ms). It suits conditions
// that are costly to evaluate (running a command, probing every member).
func Every(d time.Duration) Option {
	return func(p *pacing) { p.first, p.max = d, d }
}

// TimeoutError is what Wait returns when the condition did not hold in
// time: how long it waited, how often it asked, and the condition's last
// answer.
type TimeoutError struct {
	Timeout time.Duration
	Calls   int
	Last    error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("not within %s (%d calls), last: %v", e.Timeout, e.Calls, e.Last)
}

// Unwrap returns the condition's last error.
func (e *TimeoutError) Unwrap() error { return e.Last }

// Wait calls cond until it returns nil, and returns nil then. If timeout
// passes first it returns a *TimeoutError holding cond's last error. cond
// is called at least once, and once more at the deadline if the pauses
// did not end exactly there. A cond may fail its test itself (t.Fatal)
// to stop at once.
func Wait(timeout time.Duration, cond func() error, opts ...Option) error {
	p := pacing{first: firstInterval, max: maxInterval}
	for _, o := range opts {
		o(&p)
	}
	deadline := time.Now().Add(timeout)
	interval := p.first
	for calls := 1; ; calls++ {
		err := cond()
		if err == nil {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return &TimeoutError{Timeout: timeout, Calls: calls, Last: err}
		}
		time.Sleep(min(interval, left))
		interval = min(2*interval, p.max)
	}
}

// Until is Wait that fails t when timeout passes first: the message says
// what was awaited (what, e.g. "every member to answer"), how long, and
// cond's last error. cond returns nil once the condition holds, else an
// error saying why it does not hold yet.
func Until(t testing.TB, timeout time.Duration, what string, cond func() error, opts ...Option) {
	t.Helper()
	if err := Wait(timeout, cond, opts...); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
