package artifact

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// exchange atomically swaps the directories a and b (renameat2 with
// RENAME_EXCHANGE). It fails with errExchangeUnsupported where the kernel
// or file system cannot.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) {
		return errExchangeUnsupported
	}
	return err
}

// isMountPoint reports whether dir is on another device than its parent.
func isMountPoint(dir, parent string) bool {
	var a, b syscall.Stat_t
	if syscall.Stat(dir, &a) != nil || syscall.Stat(parent, &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

// renameOverEmpty renames a to b, replacing b if it is an empty directory
// (rename(2) does; os.Rename refuses any existing directory).
func renameOverEmpty(a, b string) error {
	if err := unix.Rename(a, b); err != nil {
		return &os.LinkError{Op: "rename", Old: a, New: b, Err: err}
	}
	return nil
}

// availableBytes reports the bytes an unprivileged writer may still use
// on dir's file system (statfs f_bavail).
func availableBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
