package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/sandbox/internal/reap"
	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// TestPatroniDownAfterSupervisorCrash sets up pg-healthy (real Patroni
// members; PostgreSQL's postmaster leaves its container's session and
// every postmaster child leaves the postmaster's), SIGKILLs the
// supervisor and checks that Down still ends every PostgreSQL process:
// the runner recorded the postmasters in pid files of their own.
func TestPatroniDownAfterSupervisorCrash(t *testing.T) {
	if _, _, _, err := scenario.PostgresUser(); err != nil {
		t.Skip(err)
	}
	dir := sandboxDir(t)
	// An agent given (no pod here runs it), so the supervisor builds none.
	agent := filepath.Join(t.TempDir(), "kubectl-hactl")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sb := startWith(t, Options{Dir: dir, Scenarios: []string{"pg-healthy"}, Agent: agent})
	ctx := context.Background()
	ms, err := sb.Members(ctx)
	if err != nil || len(ms) != 3 {
		t.Fatalf("members %+v: %v", ms, err)
	}
	var postgres int
	for _, p := range reap.Mentioning(dir) {
		if strings.Contains(reap.Cmdline(p.Pid), "postgres -D") {
			postgres++
		}
	}
	if postgres != 3 {
		t.Fatalf("%d postmasters run in %s, want 3", postgres, dir)
	}
	poll.Until(t, 10*time.Second, "the postmasters recorded", func() error {
		files, _ := filepath.Glob(filepath.Join(dir, "runner", "pids", "*escaped*.pid"))
		if len(files) < 3 {
			return errors.New(strings.Join(files, ", "))
		}
		return nil
	})
	if err := syscall.Kill(sb.SupervisorPid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "supervisor dead", func() error {
		if alive(sb.SupervisorPid()) {
			return errors.New("alive")
		}
		return nil
	})
	t.Logf("%d processes of the sandbox outlived its supervisor's SIGKILL", len(reap.Mentioning(dir)))
	if err := Down(ctx, dir, DownOptions{}); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, dir)
}
