//go:build !unix

package actions

// processGone cannot tell on this platform: a holder is never taken for
// gone, and only the lease's expiry frees the lock.
func processGone(int) bool { return false }

// pidSpaceOf cannot tell on this platform.
func pidSpaceOf() (string, bool) { return "", false }
