package reap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// TestRecordedSkipsVolumesAndForeignFiles: pid files inside volume
// directories (PostgreSQL's postmaster.pid in a PVC, even one naming a
// live process in our format) and files that are no pid record are not
// the sandbox's records, and no error.
func TestRecordedSkipsVolumesAndForeignFiles(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	for _, p := range []string{
		filepath.Join(dir, "volumes", "ns", "data-pg-0", "pgroot", "data", "live.pid"),
		filepath.Join(dir, "runner", "pods", "ns_pg-0_uid", "volumes", "scratch", "live.pid"),
	} {
		if err := WritePidFile(p, pid, "in a volume"); err != nil {
			t.Fatal(err)
		}
	}
	postmaster := filepath.Join(dir, "volumes", "ns", "data-pg-0", "pgroot", "data", "postmaster.pid")
	if err := os.WriteFile(postmaster, []byte(strconv.Itoa(pid)+"\n"+filepath.Dir(postmaster)+"\n1796150821\n5432\n\n127.0.0.1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stray.pid"), []byte("not a pid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := Recorded(dir)
	if err != nil || len(rec) != 0 {
		t.Fatalf("Recorded = %+v, %v; want nothing, no error", rec, err)
	}
	if err := WritePidFile(filepath.Join(dir, "runner", "pids", "ns_pg-0_main.pid"), pid, "ns/pg-0/main"); err != nil {
		t.Fatal(err)
	}
	rec, err = Recorded(dir)
	if err != nil || len(rec) != 1 || rec[0].Pid != pid {
		t.Fatalf("Recorded = %+v, %v; want pid %d", rec, err, pid)
	}
}

// TestDescendants follows children that left their parent's session.
func TestDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "setsid sleep 61 & exec sleep 62")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	root, err := ReadStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := Descendants([]Stat{root})
		// Only once setsid has exec'd sleep is the child in its own
		// session ("setsid sleep 61" has not called setsid yet).
		if len(d) == 2 && strings.HasPrefix(Cmdline(d[1].Pid), "sleep 61") {
			if d[1], err = ReadStat(d[1].Pid); err != nil {
				t.Fatal(err)
			}
			if d[1].Session == root.Session {
				t.Fatalf("setsid child kept the session: %+v", d[1])
			}
			_ = Kill(d, 5*time.Second)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Descendants = %+v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
