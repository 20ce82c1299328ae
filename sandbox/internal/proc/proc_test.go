package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/poll"
)

func startShell(t *testing.T, dir, script string) *Process {
	t.Helper()
	p, err := Start(Spec{
		Name:    "sh",
		Path:    "/bin/sh",
		Args:    []string{"-c", script, dir},
		LogPath: filepath.Join(dir, "logs", "sh.log"),
		PidPath: filepath.Join(dir, "pids", "sh.pid"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	return p
}

func TestStartRecordsPidAndStopRemovesIt(t *testing.T) {
	dir := t.TempDir()
	p := startShell(t, dir, "echo hello; exec sleep 600")
	pid, st, err := readPidFile(p.PidPath)
	if err != nil {
		t.Fatal(err)
	}
	if pid != p.Pid() {
		t.Fatalf("pid file says %d, process is %d", pid, p.Pid())
	}
	if cur, err := startTime(pid); err != nil || cur != st {
		t.Fatalf("recorded start time %d, /proc says %d (%v)", st, cur, err)
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Fatalf("process group %d (%v), want its own (%d)", pgid, err, pid)
	}
	// A paused process still stops.
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if Alive(pid) {
		t.Fatal("alive after Stop")
	}
	if _, err := os.Stat(p.PidPath); !os.IsNotExist(err) {
		t.Fatalf("pid file still there: %v", err)
	}
	if log := Tail(p.LogPath, 5); !strings.Contains(log, "hello") || !strings.Contains(log, "=== ") {
		t.Fatalf("log tail %q lacks the header or the output", log)
	}
}

func TestKillRecordedSparesAReusedPid(t *testing.T) {
	dir := t.TempDir()
	// A pid file naming this very test process with another start time,
	// as when a recorded process died and its pid was reused.
	st, err := startTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "pids", "stale.pid")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, fmt.Appendf(nil, "%d %d stale\n", os.Getpid(), st+1), 0o644); err != nil {
		t.Fatal(err)
	}
	live := startShell(t, dir, "exec sleep 600")
	if err := KillRecorded(dir); err != nil {
		t.Fatal(err)
	}
	select {
	case <-live.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("recorded process survived KillRecorded")
	}
	if got, _ := filepath.Glob(filepath.Join(dir, "pids", "*")); len(got) > 0 {
		t.Fatalf("pid files left: %v", got)
	}
	// Reaching this line means KillRecorded did not kill the test itself.
}

func TestAddrInUseLooksAtTheLatestStartOnly(t *testing.T) {
	dir := t.TempDir()
	p := startShell(t, dir, "echo 'listen tcp 127.0.0.1:1: bind: address already in use'")
	<-p.Done()
	if !AddrInUse(p) {
		t.Fatal("AddrInUse missed the bind failure")
	}
	q := startShell(t, dir, "echo 'some other failure'")
	<-q.Done()
	if AddrInUse(q) {
		t.Fatal("AddrInUse blamed an earlier start's bind failure")
	}
}

func TestFreePortsAreDistinct(t *testing.T) {
	ports, err := FreePorts("127.0.0.1", 20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] || p <= 0 {
			t.Fatalf("ports %v", ports)
		}
		seen[p] = true
	}
}

// TestHelperStarter is not a test: TestParentDeath runs the test binary as
// a child that starts a process and exits at once, as a crashing test
// binary would.
func TestHelperStarter(t *testing.T) {
	dir := os.Getenv("HACTL_PROC_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	_, err := Start(Spec{
		Name:    "sleep",
		Path:    "/bin/sh",
		Args:    []string{"-c", "exec sleep 600"},
		LogPath: filepath.Join(dir, "logs", "sleep.log"),
		PidPath: filepath.Join(dir, "pids", "sleep.pid"),
		Detach:  os.Getenv("HACTL_PROC_HELPER_DETACH") == "1",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0) // no cleanup: the parent "crashes"
}

func TestParentDeath(t *testing.T) {
	for _, detach := range []bool{false, true} {
		t.Run(fmt.Sprintf("detach=%v", detach), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStarter$")
			cmd.Env = append(os.Environ(), "HACTL_PROC_HELPER_DIR="+dir)
			if detach {
				cmd.Env = append(cmd.Env, "HACTL_PROC_HELPER_DETACH=1")
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("helper: %v\n%s", err, out)
			}
			pid, _, err := readPidFile(filepath.Join(dir, "pids", "sleep.pid"))
			if err != nil {
				t.Fatal(err)
			}
			if !detach {
				err := poll.Wait(10*time.Second, func() error {
					if Alive(pid) {
						return fmt.Errorf("pid %d alive", pid)
					}
					return nil
				})
				if err != nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("the child outlived the process that started it: %v", err)
				}
				return
			}
			if !Alive(pid) {
				t.Fatal("a detached child died with the process that started it")
			}
			if err := KillRecorded(dir); err != nil {
				t.Fatal(err)
			}
			if Alive(pid) {
				t.Fatal("a detached child survived KillRecorded")
			}
		})
	}
}

// TestKillRecordedSkipsVolumes: a member's own pid files (PostgreSQL's
// postmaster.pid in a volume, even one in our format naming a live
// process) are neither signalled nor removed, and files that are no pid
// record are no error.
func TestKillRecordedSkipsVolumes(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	st, err := startTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	inVolume := filepath.Join(dir, "volumes", "ns", "data-pg-0", "live.pid")
	postmaster := filepath.Join(dir, "volumes", "ns", "data-pg-0", "postmaster.pid")
	stray := filepath.Join(dir, "runner", "stray.pid")
	for path, body := range map[string]string{
		inVolume:   fmt.Sprintf("%d %d member\n", cmd.Process.Pid, st),
		postmaster: fmt.Sprintf("%d\n%s\n", cmd.Process.Pid, filepath.Dir(postmaster)),
		stray:      "not a pid\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := KillRecorded(dir); err != nil {
		t.Fatal(err)
	}
	if !Alive(cmd.Process.Pid) {
		t.Fatal("KillRecorded killed a process recorded inside a volume")
	}
	for _, p := range []string{inVolume, postmaster, stray} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
