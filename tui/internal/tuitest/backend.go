package tuitest

import (
	"context"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/status"
)

// StubBackend answers Observe from a function and counts the probe
// rounds and cache reads; it stands in for the informer caches only in
// the TUI's pure tests (KubeBackend is tested against a real API
// server).
type StubBackend struct {
	mu sync.Mutex
	// Answer gives what a read brings (probe: a probe round).
	Answer func(probe bool) []status.Result
	// Changed and Errs are what Changes and Errors deliver.
	Changed chan struct{}
	Errs    chan error
	probes  int
	reads   int
}

// Start implements the Backend: the watches sync at once.
func (b *StubBackend) Start(context.Context) error { return nil }

// Changes implements the Backend.
func (b *StubBackend) Changes() <-chan struct{} { return b.Changed }

// Errors implements the Backend.
func (b *StubBackend) Errors() <-chan error { return b.Errs }

// Observe implements the Backend: Answer's results, counted.
func (b *StubBackend) Observe(_ context.Context, probe bool) ([]status.Result, status.Warnings, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probes++
	} else {
		b.reads++
	}
	return b.Answer(probe), nil, nil
}

// Counts are the probe rounds and the cache reads so far.
func (b *StubBackend) Counts() (probes, reads int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.probes, b.reads
}

// DirectBackend is a StubBackend whose watches take until Release is
// closed to sync and which reads directly meanwhile (a DirectObserver):
// Direct.
type DirectBackend struct {
	StubBackend
	Release chan struct{}
	Direct  []status.Result
}

// Start implements the Backend: it returns once Release is closed.
func (b *DirectBackend) Start(ctx context.Context) error {
	select {
	case <-b.Release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ExpectDirect implements the DirectObserver.
func (b *DirectBackend) ExpectDirect() {}

// ObserveDirect implements the DirectObserver: Direct.
func (b *DirectBackend) ObserveDirect(context.Context) ([]status.Result, status.Warnings, error) {
	return b.Direct, nil, nil
}

// RunFiltered runs only the commands of cmd (and of those it batches)
// that finish at once, not timers, and returns their messages.
func RunFiltered(t testing.TB, cmd tea.Cmd) []tea.Msg {
	t.Helper()
	if cmd == nil {
		return nil
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		if b, ok := msg.(tea.BatchMsg); ok {
			var out []tea.Msg
			for _, c := range b {
				out = append(out, RunFiltered(t, c)...)
			}
			return out
		}
		if msg == nil {
			return nil
		}
		return []tea.Msg{msg}
	case <-time.After(300 * time.Millisecond):
		return nil // a timer (tick, blink): not part of this exchange
	}
}
