package sandbox

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/sandbox/internal/reap"
)

// TestDownEndsOrphansOfACrashedSupervisor stands in for a supervisor that
// died by SIGKILL and left a process of its session behind (one that
// had no parent-death signal, like a wrapper script's child): Down finds
// it by session and ends it.
func TestDownEndsOrphansOfACrashedSupervisor(t *testing.T) {
	dir := t.TempDir()
	l := layout{dir: dir}
	if err := os.WriteFile(l.marker(), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	leader := exec.Command("sh", "-c", "sleep 300 & echo $! ; exec sleep 301")
	leader.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := leader.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	var orphanPid int
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	for _, c := range buf[:n] {
		if c >= '0' && c <= '9' {
			orphanPid = orphanPid*10 + int(c-'0')
		}
	}
	st, err := reap.ReadStat(leader.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(l.supervisor(), supervisorRecord{Pid: st.Pid, Start: st.Start}, 0o644); err != nil {
		t.Fatal(err)
	}
	orphan, err := reap.ReadStat(orphanPid)
	if err != nil || orphan.Session != st.Pid {
		t.Fatalf("orphan %d: %+v %v", orphanPid, orphan, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(orphanPid, syscall.SIGKILL) })

	_ = leader.Process.Kill()
	_ = leader.Wait()
	if !reap.Same(orphan) {
		t.Fatal("the orphan died with its leader: nothing to test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Down(ctx, dir, DownOptions{}); err != nil {
		t.Fatal(err)
	}
	if reap.Same(orphan) {
		t.Fatalf("orphan %d survived Down", orphanPid)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s not removed: %v", dir, err)
	}
}
