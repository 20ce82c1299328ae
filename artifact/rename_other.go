//go:build !linux

package artifact

import (
	"errors"
	"io/fs"
	"os"
)

// exchange is not available outside Linux: activation falls back to two
// renames.
func exchange(a, b string) error { return errExchangeUnsupported }

// isMountPoint cannot be told portably; rename reports EBUSY/EXDEV then.
func isMountPoint(dir, parent string) bool { return false }

// renameOverEmpty renames a to b, removing b first if it is an empty
// directory.
func renameOverEmpty(a, b string) error {
	if err := os.Remove(b); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(a, b)
}

// availableBytes cannot be told portably: -1 (unknown) skips the check.
func availableBytes(dir string) (int64, error) { return -1, nil }
