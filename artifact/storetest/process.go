package storetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a store server a test runs: in a process group of its own
// (Stop reaches its children), killed with the test process, its output
// in a log file.
type Process struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan error
}

// StartProcess starts cmd as name, its output appended to logPath.
func StartProcess(name, logPath string, cmd *exec.Cmd) (*Process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{name: name, log: logPath, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// AwaitServing polls serving every 50 ms until it returns nil, the
// process exits (an error with its log) or within passes (the process is
// stopped).
func (p *Process) AwaitServing(ctx context.Context, within time.Duration, serving func(context.Context) error) error {
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		err := serving(wctx)
		if err == nil {
			return nil
		}
		select {
		case werr := <-p.done:
			p.done <- werr
			b, _ := os.ReadFile(p.log)
			return fmt.Errorf("%s exited before serving: %v (log %s)\n%s", p.name, werr, p.log, b)
		case <-wctx.Done():
			_ = p.Stop()
			return fmt.Errorf("%s did not answer within %s: %w", p.name, within, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop terminates the process group and waits for the process.
func (p *Process) Stop() error {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return errors.New(p.name + " ignored SIGTERM for 10s")
	}
}
