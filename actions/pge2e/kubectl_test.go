package pge2e

import (
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
}
