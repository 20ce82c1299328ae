package actions

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// NewIdentity returns a lock holder identity unique to this process:
// hactl/<host>/<pid>/<random>. The host and pid let a later run on the same
// host tell that a holder's process has ended (HolderGone).
func NewIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("hactl/%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b))
}

// HolderGone reports whether identity names a process on this host that no
// longer runs. An identity of another host, or one it cannot parse, is
// never gone: only the lease's expiry can free it.
func HolderGone(identity string) bool {
	parts := strings.Split(identity, "/")
	if len(parts) != 4 || parts[0] != "hactl" {
		return false
	}
	host, err := os.Hostname()
	if err != nil || host != parts[1] {
		return false
	}
	pid, err := strconv.Atoi(parts[2])
	if err != nil || pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return false
	}
	return processGone(pid)
}
