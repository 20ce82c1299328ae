package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// StragglerGrace is how long ProbeEach waits past a member's deadline for
// its probe to wind down before reporting it unanswered regardless. The
// engines' clients honour the deadline; this only guards against a dialer
// that does not.
const StragglerGrace = 500 * time.Millisecond

// AskFunc asks one member about itself within ctx (the member's own
// deadline); start is when its probe began.
type AskFunc func(ctx context.Context, t Target, start time.Time) model.EngineFacts

// ProbeEach is the body of every engine's Probe: each target asked on its
// own, all in parallel, each bounded by o.Timeout (o with its defaults)
// and ctx. A member whose ask does not return within its deadline and
// StragglerGrace is reported unanswered (its ask finishes in the
// background). A target without a Member name takes its Pod's.
func ProbeEach(ctx context.Context, targets []Target, o ProbeOptions, ask AskFunc) []model.EngineFacts {
	o = o.WithDefaults()
	if len(targets) == 1 {
		// One member (status probes each on its own): no goroutine to
		// wait for; probeOne still bounds the ask.
		return []model.EngineFacts{probeOne(ctx, targets[0], o, ask)}
	}
	out := make([]model.EngineFacts, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { out[i] = probeOne(ctx, t, o, ask) })
	}
	wg.Wait()
	return out
}

func probeOne(ctx context.Context, t Target, o ProbeOptions, ask AskFunc) model.EngineFacts {
	start := time.Now()
	mctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if t.Member == "" {
		t.Member = t.Pod
	}
	done := make(chan model.EngineFacts, 1)
	go func() { done <- ask(mctx, t, start) }()
	deadline, _ := mctx.Deadline()
	guard := time.NewTimer(time.Until(deadline) + StragglerGrace)
	defer guard.Stop()
	select {
	case f := <-done:
		return f
	case <-guard.C:
		took := time.Since(start)
		return model.EngineFacts{
			ProbedAt: start,
			Took:     took,
			Failure:  model.ProbeFailureTimeout,
			Err:      fmt.Sprintf("deadline exceeded after %s probing %s (the dial did not give up in time)", RoundDuration(took), t.Member),
		}
	}
}

// RoundDuration rounds a duration for messages: milliseconds under a
// second, tenths of a second above.
func RoundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
