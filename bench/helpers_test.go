package bench

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/sandbox"
)

// buildCmd builds the command in ../cmd/<name> into a fresh directory
// (e2esuite.Build) and returns the binary's path.
func buildCmd(b *testing.B, name string) string {
	b.Helper()
	dir := b.TempDir()
	if err := e2esuite.Build(dir, name); err != nil {
		b.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// run is one finished child process: its wall time, its CPU time (user
// and system), its peak resident set (rusage Maxrss, KiB on Linux), its
// exit code and its output.
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
	err := cmd.Run()
	r.wall = time.Since(start)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		return r, err
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss
		r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return r, nil
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
