package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/sandbox"
)

// releaseBuild builds kubectl-hactl (and hactl-capture) the way `make
// build` does (static, stripped, the release flags: what users run) and
// returns the path of a copy of its own, which later builds leave alone
// (hactl-capture's copy beside it). What a binary costs at
// run time (its peak RSS, its start) is measured on this build, not on the
// test build (e2esuite.Build: dynamically linked, with symbols, about
// twice the size).
func releaseBuild(b *testing.B) string {
	b.Helper()
	cmd := exec.Command("make", "-s", "build")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("make build: %v\n%s", err, out)
	}
	// hactl-capture beside it: the sandbox's capture pods run it.
	dir := b.TempDir()
	for _, c := range []string{"kubectl-hactl", "hactl-capture"} {
		data, err := os.ReadFile(filepath.Join("..", "bin", c))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, c), data, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	return filepath.Join(dir, "kubectl-hactl")
}

// run is one finished child process: its wall time, its CPU time (user
// and system), its peak resident set (KiB; see peakRSS), its exit code and
// its output.
type run struct {
	wall     time.Duration
	cpu      time.Duration
	maxRSS   int64
	code     int
	out, err bytes.Buffer
}

// measure runs cmd to its end and reads its wall time and peak RSS. A
// non-zero exit is returned in code, not as an error.
func measure(cmd *exec.Cmd) (*run, error) {
	r := &run{}
	cmd.Stdout, cmd.Stderr = &r.out, &r.err
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return r, err
	}
	rss := peakRSS(cmd.Process.Pid)
	err := cmd.Wait()
	r.wall = time.Since(start)
	if r.maxRSS = rss(); r.maxRSS == 0 {
		return r, fmt.Errorf("%s: no peak RSS read (it ended before the first sample)", cmd.Path)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		return r, err
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return r, nil
}

// peakRSS follows a running process's peak resident set (VmHWM, KiB),
// read every 5 ms until the process has gone; the returned function, called
// after the process was waited for, gives the last value read (a peak
// reached in the last 5 ms of its life is missed).
//
// The rusage of a child (Maxrss) cannot be used: Go starts a child with
// vfork, so until its exec the child runs in this process's memory, and
// Linux keeps the larger of that and the child's own peak. A child of a
// 200 MiB test process reports at least 200 MiB, even /bin/true.
func peakRSS(pid int) func() int64 {
	var peak atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		path := fmt.Sprintf("/proc/%d/status", pid)
		for {
			data, err := os.ReadFile(path)
			if err != nil {
				return
			}
			v, ok := statusKiB(data, "VmHWM:")
			if !ok {
				return // a zombie: its memory is gone
			}
			peak.Store(v)
			time.Sleep(5 * time.Millisecond) // the sampling period
		}
	}()
	return func() int64 {
		<-done
		return peak.Load()
	}
}

// statusKiB reads a "Key:  123 kB" line of /proc/PID/status.
func statusKiB(status []byte, key string) (int64, bool) {
	for l := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(l, key); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// childEnv is the environment of a measured child: nothing of this
// process's (no KUBECONFIG, no AWS_* variables), a HOME of its own.
func childEnv(b *testing.B) []string {
	return []string{"HOME=" + b.TempDir(), "PATH=" + os.Getenv("PATH")}
}

// startSandbox starts a sandbox (real control plane with controllers, kwok
// nodes serving port-forwards, real etcd members) with the given
// scenarios, its supervisor the real hactl-sandbox binary, and takes it
// down when b's cleanups run (e2esuite.StartTest).
func startSandbox(b *testing.B, scenarios ...string) *sandbox.Sandbox {
	b.Helper()
	return e2esuite.StartTest(b, e2esuite.Options{Scenarios: scenarios, SandboxBinary: true, Timeout: 5 * time.Minute}).SB
}

// followProcess finds, by polling /proc every 10 ms, the first process
// whose command line holds every one of args (a capture pod's agent, run by
// the sandbox's runner as a host process) and follows it to its end; the
// returned function, called once that process should have ended, waits
// for its end and gives its peak RSS (VmHWM, KiB; 0 if it was never seen) and its CPU
// time (user and system, read from /proc/PID/stat at the last sample).
func followProcess(args ...string) func() (int64, time.Duration) {
	var (
		peak atomic.Int64
		cpu  atomic.Int64
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	ticks := int64(100) // USER_HZ on Linux
	go func() {
		defer close(done)
		pid := 0
		for pid == 0 {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			pid = findProcess(args)
		}
		for {
			status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if err != nil {
				return
			}
			v, ok := statusKiB(status, "VmHWM:")
			if !ok {
				return
			}
			peak.Store(v)
			if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
				// fields after the command's closing parenthesis: utime is
				// the 12th, stime the 13th.
				if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
					f := strings.Fields(string(stat)[i+1:])
					if len(f) > 12 {
						u, _ := strconv.ParseInt(f[11], 10, 64)
						s, _ := strconv.ParseInt(f[12], 10, 64)
						cpu.Store((u + s) * int64(time.Second) / ticks)
					}
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return func() (int64, time.Duration) {
		close(stop) // ends the search; a process found is followed to its end
		<-done
		return peak.Load(), time.Duration(cpu.Load())
	}
}

// findProcess returns the PID of a process whose command line holds every
// one of args, 0 if none.
func findProcess(args []string) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		parts := strings.Split(string(b), "\x00")
		all := true
		for _, a := range args {
			if !slices.Contains(parts, a) {
				all = false
				break
			}
		}
		if all {
			return pid
		}
	}
	return 0
}
