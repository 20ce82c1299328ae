package actions

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// Sentinel errors; the typed errors below match them with errors.Is.
var (
	// ErrRefused: the classifier refused the action (CLI exit 5).
	ErrRefused = errors.New("refused")
	// ErrFenceConflict: the world changed between decision and action;
	// nothing the decision did not show was changed (CLI exit 6).
	ErrFenceConflict = errors.New("fence conflict")
	// ErrLockHeld: another hactl action holds the cluster's lock (CLI
	// exit 7).
	ErrLockHeld = errors.New("lock held")
	// ErrLockLost: the lock was taken from this action while it worked.
	ErrLockLost = errors.New("lock lost")
	// ErrTimeout: a wait step did not finish in time; rerun to resume.
	ErrTimeout = errors.New("timed out")
	// ErrUnsupported: the action cannot be executed by this version.
	ErrUnsupported = errors.New("not supported")
	// ErrNotActionable: the decision says await or observe, not proceed.
	ErrNotActionable = errors.New("nothing to execute")
)

// RefusedError carries the decision that refused.
type RefusedError struct {
	Decision model.Decision
	// While is set when the refusal came after the action started.
	While string
}

func (e *RefusedError) Error() string {
	var parts []string
	for _, b := range e.Decision.Blockers {
		s := fmt.Sprintf("%s: %s", b.Code, b.Detail)
		if b.Override != "" {
			s += fmt.Sprintf(" (use %s to override)", b.Override)
		}
		parts = append(parts, s)
	}
	msg := "refused: " + strings.Join(parts, "; ")
	if e.While != "" {
		msg = e.While + ": " + msg
	}
	return msg
}

func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// FenceConflictError says what changed.
type FenceConflictError struct {
	Detail string
}

func (e *FenceConflictError) Error() string {
	return "fence conflict: the cluster changed since the decision: " + e.Detail + "; nothing unconfirmed was changed: run the command again to see the new plan"
}

func (e *FenceConflictError) Is(target error) bool { return target == ErrFenceConflict }

// LockHeldError names the holder.
type LockHeldError struct {
	Lease, Holder   string
	RenewedAt       time.Time
	Duration        time.Duration
	Action, Subject string
}

func (e *LockHeldError) Error() string {
	s := fmt.Sprintf("lock held: lease %s is held by %s", e.Lease, e.Holder)
	if e.Action != "" {
		s += fmt.Sprintf(" (%s)", e.Action)
	}
	if !e.RenewedAt.IsZero() {
		s += fmt.Sprintf(", renewed %s, lease %s", e.RenewedAt.UTC().Format(time.RFC3339), e.Duration)
	}
	return s + "; wait for it to finish"
}

func (e *LockHeldError) Is(target error) bool { return target == ErrLockHeld }
