package actions

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// NewIdentity returns a lock holder identity unique to this process:
// hactl/<host>/<pid-space>/<pid>/<random>. The pid space names the kernel
// boot and PID namespace the pid belongs to, so that a later run can tell
// that a holder's process has ended (HolderGone) only when it sees the
// same pid space: two containers, or two machines, with one hostname
// never judge each other's pids.
func NewIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	host = strings.ReplaceAll(host, "/", "_")
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("hactl/%s/%s/%d/%s", host, PIDSpace(), os.Getpid(), hex.EncodeToString(b))
}

// ProcessIdentity is this process's one identity (NewIdentity, made once):
// the lock holder it writes and the user agent its API requests carry, so
// that the API server's audit log ties every change to a lock holder.
var ProcessIdentity = sync.OnceValue(NewIdentity)

var pidSpace = sync.OnceValue(func() string {
	id, ok := pidSpaceOf()
	if !ok {
		return "unknown"
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
})

// PIDSpace names this process's pid space: a digest of the kernel's boot
// ID and the PID namespace, "unknown" where the platform cannot tell.
func PIDSpace() string { return pidSpace() }

// HolderGone reports whether identity names a process of this host's pid
// space (same host name, same boot, same PID namespace) that no longer
// runs. An identity of another host or pid space, of an unknown pid space,
// or one it cannot parse (including the older hactl/<host>/<pid>/<random>
// form) is never gone: only the lease's expiry can free it.
func HolderGone(identity string) bool {
	parts := strings.Split(identity, "/")
	if len(parts) != 5 || parts[0] != "hactl" {
		return false
	}
	host, err := os.Hostname()
	if err != nil || strings.ReplaceAll(host, "/", "_") != parts[1] {
		return false
	}
	if parts[2] == "unknown" || parts[2] != PIDSpace() {
		return false
	}
	pid, err := strconv.Atoi(parts[3])
	if err != nil || pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return false
	}
	return processGone(pid)
}
