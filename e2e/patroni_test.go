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

// cluster finds the sandbox cluster a scenario set up, or skips.
func cluster(t *testing.T, scenario string) (name, ns string) {
	t.Helper()
	for _, c := range s.SB.State.Clusters {
		if c.Scenario == scenario {
			return c.Name, c.Namespace
		}
	}
	t.Skipf("no %s scenario in this sandbox", scenario)
	return "", ""
}

// TestPatroniTableThroughKubectl: a healthy Patroni cluster of real
// members is failover-ready (exit 0) through the real kubectl, with
// Patroni's own roles, each member's state and timeline, and lag in bytes
// of WAL against the primary's position read in the same round.
func TestPatroniTableThroughKubectl(t *testing.T) {
	skipShort(t)
	name, ns := cluster(t, "pg-healthy")
	var out, errOut string
	var code int
	err := poll.Wait(2*time.Minute, func() error {
		out, errOut, code = kubectl(t, "hactl", "status", name, "-n", ns, "--color", "never")
		if code != 0 {
			return fmt.Errorf("exit %d", code)
		}
		return nil
	}, poll.Every(time.Second))
	if err != nil {
		t.Fatalf("pg-healthy never failover-ready: %v\n%s\n%s", err, out, errOut)
	}
	for _, want := range []string{"patroni/self-registering", "failover-ready", "leader " + name + "-", "ROLE", "STATE", "TL", "primary", "replica", "running"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, " replica "); n != 2 {
		t.Errorf("%d replica rows, want 2:\n%s", n, out)
	}
	if strings.Contains(out, " ? ") {
		t.Errorf("a lag is unknown in a healthy cluster:\n%s", out)
	}
	t.Logf("%s", out)
}

// TestPatroniReplayStallIsLag: the lagging replica's replay is stalled
// while it keeps receiving; the lag hactl reports is the primary's WAL
// position minus what the replica replayed, both read in the same round,
// and it exceeds the cluster's maximum_lag_on_failover (which Patroni's
// own /cluster lag, computed from received positions, would not show).
func TestPatroniReplayStallIsLag(t *testing.T) {
	skipShort(t)
	name, ns := cluster(t, "pg-replica-lagging")
	var cs status.ClusterStatus
	err := poll.Wait(2*time.Minute, func() error {
		out, errOut, _ := kubectl(t, "hactl", "status", name, "-n", ns, "-o", "json")
		if err := json.Unmarshal([]byte(out), &cs); err != nil {
			return fmt.Errorf("not a ClusterStatus: %v\n%s", err, errOut)
		}
		for _, r := range cs.Verdict.Reasons {
			if r.Code == "replica_lagging" {
				return nil
			}
		}
		return fmt.Errorf("reasons %v", codesOf(cs))
	}, poll.Every(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if cs.Patroni == nil || cs.Patroni.MaximumLagOnFailover <= 0 {
		t.Fatalf("no maximum_lag_on_failover read from the config ConfigMap: %+v", cs.Patroni)
	}
	var primary *status.MemberStatus
	for i := range cs.Members {
		if cs.Members[i].Role == "primary" {
			primary = &cs.Members[i]
		}
	}
	if primary == nil || primary.Patroni == nil || primary.Patroni.WALLocation == nil {
		t.Fatalf("no primary with a WAL position: %+v", cs.Members)
	}
	lagging := 0
	for _, m := range cs.Members {
		if !strings.Contains(strings.Join(m.Reasons, ","), "replica_lagging") {
			continue
		}
		lagging++
		p := m.Patroni
		if m.Lag == nil || p == nil || p.ReplayedLocation == nil || p.ReceivedLocation == nil {
			t.Fatalf("%s: lag or positions missing: %+v", m.Name, m)
		}
		if got, want := *m.Lag, *primary.Patroni.WALLocation-*p.ReplayedLocation; got != want {
			t.Errorf("%s: lag %d, want the primary's position minus replayed = %d", m.Name, got, want)
		}
		if *m.Lag <= cs.Patroni.MaximumLagOnFailover {
			t.Errorf("%s: lag %d within maximum_lag_on_failover %d, yet reported lagging", m.Name, *m.Lag, cs.Patroni.MaximumLagOnFailover)
		}
		if *p.ReceivedLocation <= *p.ReplayedLocation {
			t.Errorf("%s: received %d <= replayed %d: replay is not what stalled", m.Name, *p.ReceivedLocation, *p.ReplayedLocation)
		}
	}
	if lagging != 1 {
		t.Errorf("%d lagging replicas, want 1: %+v", lagging, cs.Verdict.Reasons)
	}
}

// TestPatroniFrozenPrimaryIsOneTimeout: in pg-lock-stale the primary's
// Patroni is frozen (it accepts connections and never answers): it is
// reported unreachable by a timeout while the other members still answer
// in the same round, and the stale lock is read from the API server.
func TestPatroniFrozenPrimaryIsOneTimeout(t *testing.T) {
	skipShort(t)
	name, ns := cluster(t, "pg-lock-stale")
	var cs status.ClusterStatus
	var code, frozen, answered int
	// On a loaded machine a live member may miss a round too: poll until
	// one round shows the frozen primary timing out while both replicas
	// answer in the same round.
	err := poll.Wait(2*time.Minute, func() error {
		out, errOut, exit := kubectl(t, "hactl", "status", name, "-n", ns, "-o", "json", "--probe-timeout", "3s")
		code = exit
		if err := json.Unmarshal([]byte(out), &cs); err != nil {
			return fmt.Errorf("not a ClusterStatus: %v\n%s", err, errOut)
		}
		if !strings.Contains(strings.Join(codesOf(cs), ","), "leader_lock_stale") {
			return fmt.Errorf("reasons %v", codesOf(cs))
		}
		frozen, answered = 0, 0
		for _, m := range cs.Members {
			switch {
			case m.Reachable == nil:
			case !*m.Reachable:
				frozen++
			default:
				answered++
			}
		}
		if frozen != 1 || answered != 2 {
			return fmt.Errorf("frozen %d, answered %d; want 1 and 2", frozen, answered)
		}
		return nil
	}, poll.Every(time.Second))
	if err != nil {
		t.Fatalf("%v: %+v", err, cs.Members)
	}
	if code != 4 {
		t.Errorf("exit %d, want 4 (not control-ready)", code)
	}
	if cs.Patroni == nil || cs.Patroni.LockHolder == "" {
		t.Fatalf("the lock holder was not read: %+v", cs.Patroni)
	}
	for _, m := range cs.Members {
		if m.Reachable != nil && !*m.Reachable && !strings.Contains(m.ProbeError, "deadline") && !strings.Contains(m.ProbeError, "no reply") {
			t.Errorf("%s: probe error %q is not a timeout", m.Name, m.ProbeError)
		}
		if m.Reachable != nil && !*m.Reachable && m.Name != cs.Patroni.LockHolder {
			t.Errorf("%s timed out, but the frozen member is the lock holder %s", m.Name, cs.Patroni.LockHolder)
		}
	}
}
