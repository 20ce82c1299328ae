package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/sandbox"
)

// buildCmd compiles the command in ../cmd/<name> into a fresh directory
// and returns the binary's path.
func buildCmd(b *testing.B, name string) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/"+name).CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", name, err, out)
	}
	return bin
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
// down when b's cleanups run.
func startSandbox(b *testing.B, scenarios ...string) *sandbox.Sandbox {
	b.Helper()
	exe := buildCmd(b, "hactl-sandbox")
	dir := filepath.Join(b.TempDir(), "sandbox")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sb, err := sandbox.Start(ctx, sandbox.Options{Dir: dir, BinDir: testenv.BinDir(b), Scenarios: scenarios, Executable: exe})
	if err != nil {
		b.Fatalf("starting the sandbox: %v", err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := sandbox.Down(ctx, dir, sandbox.DownOptions{}); err != nil {
			b.Errorf("sandbox down: %v", err)
		}
	})
	return sb
}
