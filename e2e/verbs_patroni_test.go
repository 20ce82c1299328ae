package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/status"
)

// This file runs after status_test.go (tests run in file order): its
// verbs repair scenarios the status tests expect broken.

// TestReseedOfADivergedReplicaThroughKubectl: pg-diverged has a replica
// on a forked history that Patroni cannot rewind. `kubectl hactl reseed`
// (Patroni's reinitialize) rebuilds it from the primary: the cluster is
// failover-ready again, and a row written through the primary before the
// reseed is on every member afterwards, each read on its own PostgreSQL.
func TestReseedOfADivergedReplicaThroughKubectl(t *testing.T) {
	skipShort(t)
	name, ns := cluster(t, "pg-diverged")
	var cs status.ClusterStatus
	statusOf := func() int {
		out, errOut, code := kubectl(t, "hactl", "status", name, "-n", ns, "-o", "json")
		if err := json.Unmarshal([]byte(out), &cs); err != nil {
			t.Fatalf("not a ClusterStatus (exit %d): %v\n%s", code, err, errOut)
		}
		return code
	}
	diverged, primary := "", ""
	poll.Until(t, 2*time.Minute, "a diverged replica and a primary", func() error {
		statusOf()
		diverged, primary = "", ""
		for _, m := range cs.Members {
			if strings.Contains(strings.Join(m.Reasons, ","), "replica_diverged") {
				diverged = m.Name
			}
			if m.Role == "primary" {
				primary = m.Name
			}
		}
		if diverged == "" || primary == "" {
			return fmt.Errorf("diverged %q, primary %q: %v", diverged, primary, codesOf(cs))
		}
		return nil
	}, poll.Every(time.Second))
	row := s.WriteRow(t, ns, name, primary, "reseed-diverged")

	r := s.Run(t, 5*time.Minute, "hactl", "reseed", name, diverged, "-n", ns, "--yes")
	if r.Code != 0 {
		t.Fatalf("reseed of %s: exit %d\n%s\n%s", diverged, r.Code, r.Stdout, r.Stderr)
	}
	poll.Until(t, 2*time.Minute, name+" failover-ready", func() error {
		if code := statusOf(); code != 0 {
			return fmt.Errorf("exit %d: %v", code, codesOf(cs))
		}
		return nil
	}, poll.Every(time.Second))
	var members []string
	for _, m := range cs.Members {
		members = append(members, m.Name)
	}
	s.AssertRowOn(t, ns, name, row, members)
}
