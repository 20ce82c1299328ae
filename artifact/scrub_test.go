package artifact

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A scrubbed error hands out no error that still carries the credential:
// not through its message, not through Unwrap (errors.Unwrap, errors.As).
// Only a cancelled or expired context stays testable.
func TestScrubbedErrorHidesTheOriginal(t *testing.T) {
	const secret = "wJalrXUtnFEMI/K7MDENG"
	s := &Store{secrets: []string{secret}}
	raw := &wrapError{msg: "signature mismatch for key " + secret, err: context.DeadlineExceeded}
	err := s.scrub(raw)
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("message shows the secret: %v", err)
	}
	for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), secret) {
			t.Fatalf("Unwrap exposes the unscrubbed error: %v", e)
		}
	}
	var target *wrapError
	if errors.As(err, &target) {
		t.Fatalf("errors.As finds the unscrubbed error: %v", target)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("the expired context is no longer testable")
	}
}

type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg + ": " + e.err.Error() }
func (e *wrapError) Unwrap() error { return e.err }
