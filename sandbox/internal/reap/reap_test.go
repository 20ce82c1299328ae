package reap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseStatWithSpacesInName(t *testing.T) {
	line := "1234 (my (odd) cmd) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 200 18446744073709551615"
	s, err := parseStat(1234, []byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if s.PPid != 1 || s.PGid != 1234 || s.Session != 1234 || s.Start != 98765 || s.State != "S" {
		t.Fatalf("%+v", s)
	}
}

func TestPidFileRoundTripAndKill(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	pf := filepath.Join(dir, "a", "sleep.pid")
	if err := WritePidFile(pf, cmd.Process.Pid, "sleep"); err != nil {
		t.Fatal(err)
	}
	rec, err := Recorded(dir)
	if err != nil || len(rec) != 1 || rec[0].Pid != cmd.Process.Pid {
		t.Fatalf("Recorded = %+v, %v", rec, err)
	}
	sess := Session(cmd.Process.Pid, rec[0].Start)
	if len(sess) != 1 {
		t.Fatalf("Session = %+v", sess)
	}
	if !strings.Contains(Cmdline(cmd.Process.Pid), "sleep 60") {
		t.Fatalf("cmdline %q", Cmdline(cmd.Process.Pid))
	}
	if err := Kill(rec, 5*time.Second); err != nil {
		// The child is a zombie until reaped; Same treats zombies as gone.
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("sleep was not killed")
	}
	if rec, _ := Recorded(dir); len(rec) != 0 {
		t.Fatalf("dead process still recorded as alive: %+v", rec)
	}
	_ = os.Remove(pf)
}
