package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// PidFileSuffix ends the name of every pid file this package writes.
const PidFileSuffix = ".pid"

// Spec describes one process to start.
type Spec struct {
	// Name identifies the process in errors (for example "etcd-0").
	Name string
	// Path is the executable.
	Path string
	// Args are the arguments after the executable.
	Args []string
	// Env is the environment; nil means the current environment minus
	// variables that would silently change a server's flags (ETCD_*,
	// KUBECONFIG).
	Env []string
	// LogPath receives stdout and stderr (appended).
	LogPath string
	// PidPath is where the pid and start time are recorded.
	PidPath string
	// Detach lets the process outlive the process that started it (no
	// parent-death signal); KillRecorded cleans it up later.
	Detach bool
}

// Process is a running (or finished) supervised process.
type Process struct {
	Name    string
	LogPath string
	PidPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed

	mu      sync.Mutex
	stopped bool
}

// Start launches s in its own process group and records its pid.
func Start(s Spec) (*Process, error) {
	if err := os.MkdirAll(filepath.Dir(s.LogPath), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(s.PidPath), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== %s: starting %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), s.Path, strings.Join(s.Args, " "))

	cmd := exec.Command(s.Path, s.Args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Env = s.Env
	if cmd.Env == nil {
		cmd.Env = cleanEnv(os.Environ())
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !s.Detach {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", s.Name, err)
	}
	p := &Process{Name: s.Name, LogPath: s.LogPath, PidPath: s.PidPath, cmd: cmd, done: make(chan struct{})}
	// Read the start time before anything reaps the child: until then it
	// stays in /proc even if it already exited.
	st, err := startTime(cmd.Process.Pid)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err == nil {
		err = writeFileAtomic(s.PidPath, fmt.Appendf(nil, "%d %d %s\n", cmd.Process.Pid, st, s.Name))
	}
	if err != nil {
		_ = p.Kill()
		return nil, fmt.Errorf("recording pid of %s: %w", s.Name, err)
	}
	return p, nil
}

func cleanEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, "ETCD_") || strings.HasPrefix(kv, "KUBECONFIG=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Pid is the process id (also its process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitError describes how the process ended; only valid once Done is closed.
func (p *Process) ExitError() error {
	<-p.done
	if p.err == nil {
		return fmt.Errorf("%s exited with status 0", p.Name)
	}
	return fmt.Errorf("%s exited: %w", p.Name, p.err)
}

// Signal sends sig to the process group while the process is alive.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return fmt.Errorf("%s is not running", p.Name)
	}
	if err := syscall.Kill(-p.Pid(), sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling %s: %w", p.Name, err)
	}
	return nil
}

// Stopped reports whether every thread of the process is stopped (by
// SIGSTOP or a tracer): a signal is sent at once, but a thread stops only
// when it next leaves the kernel, so a caller that needs the process
// frozen waits for this.
func (p *Process) Stopped() bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.Pid()))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", p.Pid(), t.Name()))
		if err != nil {
			return false
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
			return false
		}
	}
	return true
}

// Stop sends SIGTERM (and SIGCONT, in case the process is paused), waits up
// to grace, then SIGKILLs the group, waits for the exit and removes the pid
// file. Stopping a process that already exited only cleans up.
func (p *Process) Stop(grace time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.Exited() {
		_ = syscall.Kill(-p.Pid(), syscall.SIGTERM)
		_ = syscall.Kill(-p.Pid(), syscall.SIGCONT)
		t := time.NewTimer(grace)
		select {
		case <-p.done:
			t.Stop()
		case <-t.C:
		}
	}
	return p.killLocked()
}

// Kill SIGKILLs the process group, waits for the exit and removes the pid
// file.
func (p *Process) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killLocked()
}

func (p *Process) killLocked() error {
	if !p.Exited() {
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, p.Pid())
		}
	}
	// The group leader is gone; anything it left in its group goes too.
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	if !p.stopped {
		p.stopped = true
		if err := os.Remove(p.PidPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Tail returns up to n last lines of the file at path (or a note saying it
// could not be read).
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const max = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(fi.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	b = bytes.TrimRight(b, "\n")
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// FailureError wraps a start failure with the tail of the component's log.
func FailureError(p *Process, err error) error {
	return fmt.Errorf("%w\n--- last lines of %s ---\n%s", err, p.LogPath, Tail(p.LogPath, 40))
}

// AddrInUse reports whether the log of p says a listener could not bind,
// which happens when a port picked by FreePorts was taken before the
// process bound it; the caller retries with new ports.
func AddrInUse(p *Process) bool {
	t := Tail(p.LogPath, 60)
	// Only the latest start counts: Start writes a "=== " header first.
	if i := strings.LastIndex(t, "\n=== "); i >= 0 {
		t = t[i:]
	}
	return strings.Contains(t, "address already in use")
}

// FreePorts returns n distinct TCP ports that were free on host a moment
// ago. They are only a guess: another process may take one before ours
// binds it (see AddrInUse).
func FreePorts(host string, n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("finding a free port on %s: %w", host, err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Wait polls check every interval until it returns nil, any of procs exits
// (the error then carries that process's log tail), or ctx ends (the error
// then carries check's last error and the log tail of procs[0]).
func Wait(ctx context.Context, interval time.Duration, procs []*Process, check func(context.Context) error) error {
	var last error
	for {
		for _, p := range procs {
			if p.Exited() {
				return FailureError(p, p.ExitError())
			}
		}
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = check(attempt)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			err := fmt.Errorf("%w (last check: %v)", ctx.Err(), last)
			if len(procs) > 0 {
				return FailureError(procs[0], err)
			}
			return err
		case <-time.After(interval):
		}
	}
}

// KillRecorded SIGKILLs every process recorded in a pid file anywhere under
// dir (outside directories named "volumes", which hold members' data)
// whose pid still belongs to the recorded process (same kernel start
// time), waits for them to disappear and removes the pid files. Files
// that do not parse as pid records are left alone.
func KillRecorded(dir string) error {
	var errs []error
	var waitFor []int
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			// Volume directories hold members' data: a .pid file there
			// (PostgreSQL's postmaster.pid) is not a record of ours.
			if path != dir && d.Name() == "volumes" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, PidFileSuffix) {
			return nil
		}
		pid, st, err := readPidFile(path)
		if err != nil {
			// Not a pid record (of ours): leave it alone.
			return nil
		}
		if cur, err := startTime(pid); err == nil && cur == st {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			waitFor = append(waitFor, pid)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range waitFor {
		for Alive(pid) {
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("pid %d still alive after SIGKILL", pid))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}

func readPidFile(path string) (pid int, start uint64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, 0, fmt.Errorf("%s: malformed pid file", path)
	}
	pid, err = strconv.Atoi(f[0])
	if err != nil || pid <= 1 {
		return 0, 0, fmt.Errorf("%s: malformed pid %q", path, f[0])
	}
	start, err = strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: malformed start time %q", path, f[1])
	}
	return pid, start, nil
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	state, _, err := stat(pid)
	return err == nil && state != "Z" && state != "X"
}

// startTime returns the kernel start time (clock ticks since boot) of pid,
// which together with the pid identifies a process across pid reuse.
func startTime(pid int) (uint64, error) {
	_, st, err := stat(pid)
	return st, err
}

func stat(pid int) (state string, start uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 {
		return "", 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	return f[0], start, err
}

func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
