package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// TestHTTPReplaceRecreatesAMember: pg-healthy read through the http
// engine with the shipped Patroni mapping (replace: recreate). Replacing
// the leader and reseeding are refused and change nothing; replacing a
// replica deletes its volume and pod (fenced, under the lock), and the
// member Patroni rebuilds on the new volume holds a row written through
// the leader before, read on its own PostgreSQL. The plan is saved first
// and applied only after Patroni itself rewrote the replica's status
// annotation (the row moved its replayed position): what the members
// write on their own pods (the mapping's selfWrittenAnnotations) is no
// change to the confirmed plan. The cluster is then failover-ready
// natively again.
func TestHTTPReplaceRecreatesAMember(t *testing.T) {
	skipShort(t)
	name, ns := cluster(t, "pg-healthy")
	ctx := context.Background()
	_, relabel := s.AsHTTP(t, ns, name, "patroni")
	relabel(true)
	var cs status.ClusterStatus
	statusOf := func() int {
		out, errOut, code := kubectl(t, "hactl", "status", name, "-n", ns, "-o", "json")
		cs = status.ClusterStatus{}
		if err := json.Unmarshal([]byte(out), &cs); err != nil {
			t.Fatalf("not a ClusterStatus (exit %d): %v\n%s", code, err, errOut)
		}
		return code
	}
	poll.Until(t, 2*time.Minute, name+" failover-ready through the http engine", func() error {
		if code := statusOf(); code != 0 || cs.Engine != "http" || cs.Leader == "" {
			return fmt.Errorf("exit %d, engine %q, leader %q: %v", code, cs.Engine, cs.Leader, codesOf(cs))
		}
		return nil
	}, poll.Every(time.Second))
	leader, target := cs.Leader, ""
	for _, m := range cs.Members {
		if m.Name != leader {
			target = m.Name
		}
	}
	uids := func(member string) (pod, pvc string) {
		p, err := s.KC.CoreV1().Pods(ns).Get(ctx, member, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.KC.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "pgdata-"+member, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(p.UID), string(v.UID)
	}
	leaderPod, leaderPVC := uids(leader)
	for _, c := range []struct {
		args []string
		code string
	}{
		{[]string{"replace", name, leader}, "target_is_leader"},
		{[]string{"reseed", name, target}, "action_unsupported"},
	} {
		r := s.Run(t, time.Minute, append(append([]string{"hactl"}, c.args...), "-n", ns, "--yes")...)
		if r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, c.code) {
			t.Fatalf("%v: exit %d, want a refusal naming %s\n%s\n%s", c.args, r.Code, c.code, r.Stdout, r.Stderr)
		}
	}
	if p, v := uids(leader); p != leaderPod || v != leaderPVC {
		t.Fatalf("the refused replace changed %s's pod or volume", leader)
	}

	beforePod, beforePVC := uids(target)
	r := s.Run(t, time.Minute, "hactl", "replace", name, target, "-n", ns, "--dry-run=client", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("the plan to replace %s: exit %d\n%s\n%s", target, r.Code, r.Stdout, r.Stderr)
	}
	plan := filepath.Join(t.TempDir(), "replace.json")
	if err := os.WriteFile(plan, []byte(r.Stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	annotation := func() string {
		p, err := s.KC.CoreV1().Pods(ns).Get(ctx, target, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Annotations["status"]
	}
	planned := annotation()
	row := s.WriteRow(t, ns, name, leader, "http-replace")
	poll.Until(t, time.Minute, "Patroni to rewrite "+target+"'s status annotation", func() error {
		if a := annotation(); a == planned {
			return fmt.Errorf("still %s", a)
		}
		return nil
	}, poll.Every(500*time.Millisecond))
	r = s.Run(t, 5*time.Minute, "hactl", "apply", "-f", plan, "-n", ns, "--yes")
	if r.Code != 0 {
		t.Fatalf("replace of %s: exit %d\n%s\n%s", target, r.Code, r.Stdout, r.Stderr)
	}
	if p, v := uids(target); p == beforePod || v == beforePVC {
		t.Fatalf("replace of %s said done, yet its pod (%s → %s) or volume claim (%s → %s) is the old one", target, beforePod, p, beforePVC, v)
	}
	s.AssertRowOn(t, ns, name, row, []string{target})
	l, err := actions.ReadLedger(ctx, s.KC, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	var done bool
	for _, e := range l.Entries {
		done = done || (e.Action == model.ActionReplace && e.Member == target && e.State == model.EntryDone)
	}
	if !done {
		t.Errorf("the ledger has no done replace of %s: %+v", target, l.Entries)
	}

	relabel(false)
	poll.Until(t, 2*time.Minute, name+" failover-ready natively", func() error {
		if code := statusOf(); code != 0 || cs.Engine != "patroni" {
			return fmt.Errorf("exit %d, engine %q: %v", code, cs.Engine, codesOf(cs))
		}
		return nil
	}, poll.Every(time.Second))
}
