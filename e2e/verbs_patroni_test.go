package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/sandbox/scenario"
	"github.com/hactl-dev/hactl/status"
)

// This file runs after status_test.go (tests run in file order): its
// verbs repair scenarios the status tests expect broken.

// TestReseedOfADivergedReplicaThroughKubectl: pg-diverged has a replica
// on a forked history that Patroni cannot rewind. `kubectl hactl reseed`
// (Patroni's reinitialize) rebuilds it from the primary: the cluster is
// failover-ready again, and a row written through the primary before the
// reseed is on every member afterwards, each read on its own PostgreSQL.
// Its REST API asks for basic auth: first with a wrong password in the
// Secret the StatefulSet names, which must change nothing.
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

	// pg-diverged's REST API asks for basic auth on POST, from the Secret
	// its StatefulSet names. With a wrong password there, the member
	// refuses the reinitialize: reseed fails, says which Secret to fix and
	// never prints a password, and the member's PostgreSQL was not
	// restarted (its own postmaster start time, read on it).
	secretName := name + "-rest-auth"
	started := func() string {
		v, err := s.Psql(t, ns, name, diverged, "SELECT pg_postmaster_start_time()")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := started()
	setPassword := func(pw string) {
		t.Helper()
		patch := fmt.Sprintf(`{"stringData":{"password":%q}}`, pw)
		if _, err := s.KC.CoreV1().Secrets(ns).Patch(context.Background(), secretName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const wrong = "not-the-rest-password"
	setPassword(wrong)
	// A refusal for a primary the probes missed this round (a member
	// slow to answer on a loaded machine) changes nothing: asked again.
	var r e2esuite.Result
	poll.Until(t, time.Minute, "a reseed not refused for an unknown primary", func() error {
		r = s.Run(t, 3*time.Minute, "hactl", "reseed", name, diverged, "-n", ns, "--yes")
		if r.Code == 5 && strings.Contains(r.Stdout+r.Stderr, "primary_unknown") {
			return fmt.Errorf("refused: primary_unknown")
		}
		return nil
	}, poll.Every(2*time.Second))
	out := r.Stdout + r.Stderr
	if r.Code == 0 || !strings.Contains(out, "refused the credentials") || !strings.Contains(out, secretName) {
		t.Fatalf("reseed with a wrong REST password: exit %d, want a failure naming Secret %s\n%s", r.Code, secretName, out)
	}
	for _, pw := range []string{wrong, scenario.RESTPassword} {
		if strings.Contains(out, pw) {
			t.Fatalf("reseed printed a REST password:\n%s", out)
		}
	}
	if after := started(); after != before {
		t.Fatalf("%s's PostgreSQL restarted (%s, then %s) although its REST API refused the reinitialize", diverged, before, after)
	}
	setPassword(scenario.RESTPassword)

	r = s.Run(t, 5*time.Minute, "hactl", "reseed", name, diverged, "-n", ns, "--yes")
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
