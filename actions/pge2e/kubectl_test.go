package pge2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestThroughKubectl runs the verbs as a user does: the built plugin
// through the real kubectl, every member dialled through a port-forward.
// A reseed of the primary without --switchover-first is refused (exit 5)
// and changes nothing; a switchover then a reseed of a replica converge to
// failover-ready with a row written before on every member, each read on
// its own.
func TestThroughKubectl(t *testing.T) {
	skipShort(t)
	waitFailoverReady(t)
	prim, replicas := primary(t)
	row := writeRow(t, prim, "kubectl")

	r := s.Run(t, 2*time.Minute, "hactl", "reseed", cluster, prim, "-n", namespace, "--yes")
	if r.Code != 5 {
		t.Fatalf("reseed of the primary %s: exit %d, want 5 (refused)\n%s\n%s", prim, r.Code, r.Stdout, r.Stderr)
	}
	if p, _ := primary(t); p != prim {
		t.Fatalf("a refused reseed changed the primary: %s, was %s", p, prim)
	}

	to := replicas[0]
	before := time.Now()
	r = s.Run(t, 4*time.Minute, "hactl", "switchover", cluster, "--to", to, "-n", namespace, "--yes")
	if r.Code != 0 {
		t.Fatalf("switchover to %s: exit %d\n%s\n%s", to, r.Code, r.Stdout, r.Stderr)
	}
	if p, rs, ok := awaitRejoined(t, to, prim); !ok {
		t.Errorf("after the switchover: primaries %v, replicas %v; want %s primary, %s a replica", p, rs, to, prim)
	}

	r = s.Run(t, 4*time.Minute, "hactl", "reseed", cluster, prim, "-n", namespace, "--yes")
	if r.Code != 0 {
		t.Fatalf("reseed of the replica %s: exit %d\n%s\n%s", prim, r.Code, r.Stdout, r.Stderr)
	}
	waitFailoverReady(t)
	assertRowEverywhere(t, row)
	status := s.Run(t, time.Minute, "hactl", "status", cluster, "-n", namespace)
	if status.Code != 0 {
		t.Errorf("status after the actions: exit %d\n%s", status.Code, status.Stdout)
	}
	checkHistory(t, before, prim, to)
}

// checkHistory: `kubectl hactl history` lists, oldest first, Patroni's
// own record of the promotion of to (the DCS's timeline history),
// hactl's switchover of prim to to and its reseed of prim, and the change
// of leader the actions' receipts recorded.
func checkHistory(t *testing.T, since time.Time, prim, to string) {
	t.Helper()
	r := s.Run(t, time.Minute, "hactl", "history", cluster, "-n", namespace, "-o", "json")
	var h struct {
		Kind string
		Rows []struct {
			At                            time.Time
			Source, Member, Event, Detail string
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &h); err != nil || r.Code != 0 || h.Kind != "ClusterHistory" {
		t.Fatalf("history -o json: exit %d, %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	seen := map[string]bool{}
	for i, row := range h.Rows {
		if i > 0 && row.At.Before(h.Rows[i-1].At) {
			t.Errorf("row %d (%s) is older than the one before it", i, row.At)
		}
		switch {
		case row.Source == "dcs" && row.Event == "timeline-switch" && row.Member == to && !row.At.Before(since.Add(-time.Second)):
			seen["promotion"] = true
		case row.Source == "hactl" && row.Event == "switchover-done":
			seen["switchover"] = true
		case row.Source == "hactl" && row.Event == "reinitialize" && row.Member == prim:
			seen["reinitialize"] = true
		case row.Source == "observed" && row.Event == "leader-change" && row.Member == to:
			// The switchover's receipts name prim as the leader, the
			// reseed's name to.
			seen["observed leader change"] = true
		}
	}
	for _, k := range []string{"promotion", "switchover", "reinitialize", "observed leader change"} {
		if !seen[k] {
			t.Errorf("history has no %s row:\n%s", k, r.Stdout)
		}
	}
	table := s.Run(t, time.Minute, "hactl", "history", cluster, "-n", namespace)
	if table.Code != 0 || !strings.Contains(table.Stdout, "TIME (UTC)") || !strings.Contains(table.Stdout, "timeline-switch") {
		t.Errorf("history table: exit %d\n%s\n%s", table.Code, table.Stdout, table.Stderr)
	}
}
