package pge2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/poll"
)

// switchoverPlan runs switchover --to to --dry-run=client -o json
// through kubectl, checks the plan it prints (the primary prim is the
// switchover's fence) and saves it to a file.
func switchoverPlan(t *testing.T, prim, to string) string {
	t.Helper()
	r := s.Run(t, 2*time.Minute, "hactl", "switchover", cluster, "--to", to, "-n", namespace, "--dry-run=client", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("switchover --dry-run=client -o json: %s", r)
	}
	var p struct {
		Kind     string `json:"kind"`
		Action   string `json:"action"`
		Member   string `json:"member"`
		Decision struct {
			Verb   string `json:"verb"`
			Leader string `json:"leader"`
			Steps  []struct {
				Kind     string `json:"kind"`
				MemberID string `json:"memberID"`
				From     string `json:"from"`
			} `json:"steps"`
		} `json:"decision"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &p); err != nil {
		t.Fatalf("the plan does not parse: %v\n%s", err, r)
	}
	if p.Kind != "ActionPlan" || p.Action != "switchover" || p.Member != to || p.Decision.Verb != "proceed" || p.Decision.Leader != prim ||
		len(p.Decision.Steps) == 0 || p.Decision.Steps[0].Kind != "switchover" || p.Decision.Steps[0].From != prim || p.Decision.Steps[0].MemberID != to {
		t.Fatalf("plan: %+v\n%s", p, r.Stdout)
	}
	file := filepath.Join(t.TempDir(), "switchover.json")
	if err := os.WriteFile(file, []byte(r.Stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestApplySavedSwitchoverPlan: a switchover saved with --dry-run=client
// -o json changes nothing; apply -f executes it: the candidate is the
// one writable primary, and the old primary rejoins as a replica, as the
// members themselves answer. A second plan, applied after the primary was moved
// by someone else, is refused with exit 6 (its fence, the primary, no
// longer holds) and changes nothing: the roles are as the other
// operator left them, and the ledger has no new entry.
func TestApplySavedSwitchoverPlan(t *testing.T) {
	skipShort(t)
	waitFailoverReady(t)
	prim, reps := primary(t)
	to := reps[0]
	file := switchoverPlan(t, prim, to)
	if p, _ := primary(t); p != prim {
		t.Fatalf("planning moved the primary: %s, was %s", p, prim)
	}
	r := s.Run(t, 4*time.Minute, "hactl", "apply", "-f", file, "--yes")
	if r.Code != 0 || !strings.Contains(r.Stdout, "done, as planned") {
		t.Fatalf("apply of the switchover plan: %s", r)
	}
	if p, _ := roles(t); !slices.Equal(p, []string{to}) {
		t.Fatalf("after apply: primaries %v; want %s alone primary\n%s", p, to, r.Stdout)
	}
	// The old primary rejoins as a replica (Patroni restarts it).
	poll.Until(t, 2*time.Minute, prim+" to answer as a replica of "+to, func() error {
		if p, rs := roles(t); !slices.Equal(p, []string{to}) || !slices.Contains(rs, prim) {
			return fmt.Errorf("primaries %v, replicas %v", p, rs)
		}
		return nil
	}, poll.Every(500*time.Millisecond))
	waitFailoverReady(t)

	// Another plan; then the primary moves behind hactl's back.
	prim, reps = primary(t)
	want, other := reps[0], reps[1]
	file = switchoverPlan(t, prim, want)
	switchDirectly(t, prim, other)
	waitFailoverReady(t)
	entries := len(s.Ledger(t, cluster).Entries)
	r = s.Run(t, 4*time.Minute, "hactl", "apply", "-f", file, "--yes")
	if r.Code != 6 || !strings.Contains(r.Stderr, "the leader is now "+other+", the plan's was "+prim) || !strings.Contains(r.Stderr, "nothing was changed") {
		t.Errorf("apply after the primary moved to %s: want exit 6 naming the primary, got %s", other, r)
	}
	for range 3 {
		p, rs := roles(t)
		if !slices.Equal(p, []string{other}) || !slices.Contains(rs, want) || !slices.Contains(rs, prim) {
			t.Fatalf("after the refused apply: primaries %v, replicas %v; want %s alone primary", p, rs, other)
		}
	}
	if got := len(s.Ledger(t, cluster).Entries); got != entries {
		t.Errorf("the refused apply wrote a ledger entry: %d, before %d", got, entries)
	}
	waitFailoverReady(t)
}
