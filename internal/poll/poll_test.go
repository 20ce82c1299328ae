package poll_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/poll"
)

// fakeTB records Fatalf and, like testing.T, ends the goroutine that
// called it.
type fakeTB struct {
	testing.TB
	fatal []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = append(f.fatal, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// until runs poll.Until against f in a goroutine of its own (Fatalf ends
// that goroutine) and reports whether Until returned.
func until(f *fakeTB, timeout time.Duration, what string, cond func() error, opts ...poll.Option) (returned bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		poll.Until(f, timeout, what, cond, opts...)
		returned = true
	}()
	<-done
	return returned
}

func TestUntilFailsWhenTheConditionNeverHolds(t *testing.T) {
	f := &fakeTB{}
	calls := 0
	returned := until(f, 50*time.Millisecond, "the member to answer", func() error {
		calls++
		return fmt.Errorf("connection refused (call %d)", calls)
	})
	if returned {
		t.Fatal("Until returned although the condition never held")
	}
	if len(f.fatal) != 1 {
		t.Fatalf("Fatalf called %d times, want once: %q", len(f.fatal), f.fatal)
	}
	msg := f.fatal[0]
	for _, want := range []string{"the member to answer", "50ms", fmt.Sprintf("connection refused (call %d)", calls)} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure message %q lacks %q", msg, want)
		}
	}
	if calls < 2 {
		t.Errorf("condition called %d times within the timeout, want it asked again at the deadline", calls)
	}
}

func TestUntilReturnsAsSoonAsTheConditionHolds(t *testing.T) {
	f := &fakeTB{}
	calls := 0
	// An hour: had Until waited for the deadline, the test would time out.
	returned := until(f, time.Hour, "the third call", func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if !returned || len(f.fatal) != 0 {
		t.Fatalf("returned %v, Fatalf %q: want a return and no failure", returned, f.fatal)
	}
	if calls != 3 {
		t.Fatalf("condition called %d times, want 3 (no call after it held)", calls)
	}
}

func TestWaitReturnsTheLastError(t *testing.T) {
	last := errors.New("still two leaders")
	err := poll.Wait(20*time.Millisecond, func() error { return last })
	var te *poll.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, last) {
		t.Fatalf("Wait = %v, want a *TimeoutError wrapping the last error", err)
	}
	if te.Timeout != 20*time.Millisecond || te.Calls < 1 {
		t.Errorf("TimeoutError %+v", te)
	}
}

func TestWaitCallsOnceWithNoTime(t *testing.T) {
	calls := 0
	if err := poll.Wait(0, func() error { calls++; return nil }); err != nil || calls != 1 {
		t.Fatalf("Wait(0) = %v after %d calls, want nil after 1", err, calls)
	}
	calls = 0
	if err := poll.Wait(0, func() error { calls++; return errors.New("no") }); err == nil || calls != 1 {
		t.Fatalf("Wait(0) = %v after %d calls, want an error after 1", err, calls)
	}
}

// TestEveryPausesNoLongerThanTheDeadline: with a pause longer than the
// timeout, the condition is asked at the start and once more at the
// deadline, not after the whole pause.
func TestEveryPausesNoLongerThanTheDeadline(t *testing.T) {
	calls := 0
	err := poll.Wait(20*time.Millisecond, func() error { calls++; return errors.New("no") }, poll.Every(time.Hour))
	if err == nil || calls != 2 {
		t.Fatalf("Wait = %v after %d calls, want an error after 2", err, calls)
	}
}
