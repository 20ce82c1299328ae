package tui

import (
	"strings"
	"testing"
)

// TestPatroniViews: a Patroni cluster shows Patroni's roles, lag in bytes
// of WAL against the primary's position, the leader lock, and the
// primary's replication list instead of raft learners.
func TestPatroniViews(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db"}, Deps{}, patroniObs("db", "pg"))
	m = press(t, m, "enter")
	members := frame(m)
	for _, want := range []string{"patroni · self-registering · leader pg-0", "lock pg-0, renewed 4s ago", "primary", "replica", "6.4MiB", "replica_lagging", "STATE", "running", "TL", "frontier 0/A000000"} {
		if !strings.Contains(members, want) {
			t.Errorf("members view lacks %q:\n%s", want, members)
		}
	}
	m = press(t, m, "3")
	readiness := frame(m)
	for _, want := range []string{"frontier: WAL position 0/A000000 of primary pg-0", "lag threshold 1048576 bytes of WAL",
		"Replication", "pg-1: streaming from the primary (async)", "pg-2: streaming from the primary (async)"} {
		if !strings.Contains(readiness, want) {
			t.Errorf("readiness view lacks %q:\n%s", want, readiness)
		}
	}
	if strings.Contains(readiness, "Learners") {
		t.Errorf("a Patroni cluster has no learners:\n%s", readiness)
	}
}
