package cli

import (
	"errors"
	"fmt"
)

// Exit codes. They are part of hactl's interface: scripts gate on them.
const (
	// ExitOK: success; for status, the cluster is failover-ready.
	ExitOK = 0
	// ExitError: an error (API, network, bad state) prevented an answer.
	ExitError = 1
	// ExitUsage: the command line was wrong.
	ExitUsage = 2
	// ExitNotFailoverReady: control-ready, but losing one member would
	// not be survivable.
	ExitNotFailoverReady = 3
	// ExitNotControlReady: the cluster does not work now.
	ExitNotControlReady = 4
	// ExitRefused: the classifier refused the action.
	ExitRefused = 5
	// ExitFenceConflict: the world changed between decision and action.
	ExitFenceConflict = 6
	// ExitLockHeld: another hactl action holds the cluster's lock.
	ExitLockHeld = 7
)

// exitCodeHelp is shown in --help of the commands that use these codes.
const exitCodeHelp = `Exit codes:
  0  failover-ready (every cluster shown)
  1  error: no answer could be given (API, RBAC, network)
  2  usage error
  3  control-ready, but not failover-ready
  4  not control-ready
  5  refused by the classifier (actions)
  6  fence conflict: the world changed, nothing was deleted (actions)
  7  lock held by another hactl action (actions)`

// exitError carries an exit code with the error that caused it.
type exitError struct {
	Code int
	Err  error
}

func (e *exitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *exitError) Unwrap() error { return e.Err }

// withCode wraps err so Run exits with code.
func withCode(code int, err error) error { return &exitError{Code: code, Err: err} }

// usageError marks err as a command-line mistake (exit 2).
func usageError(format string, a ...any) error {
	return withCode(ExitUsage, fmt.Errorf(format, a...))
}

// codeOf returns the exit code an error asks for.
func codeOf(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitError
}

// errSilent carries an exit code whose explanation was already printed
// (status prints the verdict; the code says the rest).
var errSilent = errors.New("")
