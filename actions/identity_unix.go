//go:build unix

package actions

import (
	"errors"
	"os"
	"strings"
	"syscall"
)

// processGone reports whether no process with pid runs in this pid space.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// pidSpaceOf reads the boot ID and this process's PID namespace (Linux);
// false where either cannot be read.
func pidSpaceOf() (string, bool) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", false
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(boot)) + "|" + ns, true
}
