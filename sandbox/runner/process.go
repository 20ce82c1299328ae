package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hactl-dev/hactl/sandbox/internal/reap"
)

// process is one run of a container: a host process in its own process
// group (so signals reach everything a wrapper script started), with its
// output in a CRI-format log file (what kwok serves to `kubectl logs`) and
// a pid file so the sandbox can end it after a crash.
type process struct {
	pid       int
	startedAt time.Time
	pidFile   string
	logPath   string
	done      chan struct{}
	// set before done is closed
	exitCode int
	signal   syscall.Signal
	finished time.Time
}

// startProcess starts l, appending its output to logPath.
func startProcess(l Launch, logPath, pidFile, name string) (*process, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	if l.Dir != "" {
		if err := os.MkdirAll(l.Dir, 0o755); err != nil {
			return nil, err
		}
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	w := &criWriter{f: logf}
	outR, outW, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		logf.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := &exec.Cmd{Path: l.Path, Args: l.Argv, Env: l.Env, Dir: l.Dir, Stdout: outW, Stderr: errW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		logf.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	p := &process{pid: cmd.Process.Pid, startedAt: time.Now(), pidFile: pidFile, logPath: logPath, done: make(chan struct{})}
	if err := reap.WritePidFile(pidFile, p.pid, name); err != nil {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
	var copying sync.WaitGroup
	copying.Add(2)
	go func() { defer copying.Done(); w.copy("stdout", outR) }()
	go func() { defer copying.Done(); w.copy("stderr", errR) }()
	go func() {
		err := cmd.Wait()
		p.finished = time.Now()
		p.exitCode = 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
				if ws.Signaled() {
					p.signal = ws.Signal()
					p.exitCode = 128 + int(ws.Signal())
				} else {
					p.exitCode = ws.ExitStatus()
				}
			} else {
				p.exitCode = 1
			}
		} else if err != nil {
			p.exitCode = 1
		}
		// The container is gone: so is everything it left in its group,
		// which closes the last writers of its output pipes.
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		drained := make(chan struct{})
		go func() { copying.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(2 * time.Second):
		}
		outR.Close()
		errR.Close()
		_ = os.Remove(pidFile)
		w.mu.Lock()
		logf.Close()
		w.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signalGroup sends sig to the process group.
func (p *process) signalGroup(sig syscall.Signal) {
	if !p.exited() {
		_ = syscall.Kill(-p.pid, sig)
	}
}

// stop sends SIGTERM (and SIGCONT, in case it is paused), waits up to
// grace, then SIGKILLs the group and waits for the exit.
func (p *process) stop(grace time.Duration) {
	p.signalGroup(syscall.SIGTERM)
	p.signalGroup(syscall.SIGCONT)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return
	case <-t.C:
	}
	p.signalGroup(syscall.SIGKILL)
	<-p.done
}

// criWriter writes lines in the CRI log format the kubelet uses and kwok
// reads: "<RFC3339Nano> <stream> <F|P> <text>".
type criWriter struct {
	mu sync.Mutex
	f  *os.File
}

func (w *criWriter) copy(stream string, r io.Reader) {
	br := bufio.NewReaderSize(r, 16<<10)
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 || (err == nil && !isPrefix) {
			tag := "F"
			if isPrefix {
				tag = "P"
			}
			w.mu.Lock()
			fmt.Fprintf(w.f, "%s %s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), stream, tag, line)
			w.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// Limits of a termination message read from the log (the API's documented
// FallbackToLogsOnError limits: "2048 bytes or 80 lines, whichever is
// smaller").
const (
	logMessageLines = 80
	logMessageBytes = 2048
)

// logTail returns the end of the output logged at path (a CRI-format log):
// the container's own text, stdout and stderr interleaved as written, at
// most maxLines lines and maxBytes bytes.
func logTail(path string, maxLines, maxBytes int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	// Each CRI line adds a timestamp and two tags to the text: reading
	// this much of the end is enough for maxLines lines of maxBytes.
	window := int64(maxBytes + maxLines*64)
	var off int64
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		off = fi.Size() - window
	}
	b, err := io.ReadAll(io.NewSectionReader(f, off, window))
	if err != nil {
		return ""
	}
	lines := bytes.Split(b, []byte("\n"))
	if off > 0 && len(lines) > 0 {
		lines = lines[1:] // the window began inside this one
	}
	var text []byte
	for _, l := range lines {
		// <RFC3339Nano> <stream> <F|P> <text>
		parts := bytes.SplitN(l, []byte(" "), 4)
		if len(parts) < 3 {
			continue
		}
		if len(parts) == 4 {
			text = append(text, parts[3]...)
		}
		if string(parts[2]) != "P" {
			text = append(text, '\n')
		}
	}
	out := bytes.SplitAfter(text, []byte("\n"))
	if len(out) > 0 && len(out[len(out)-1]) == 0 {
		out = out[:len(out)-1]
	}
	if len(out) > maxLines {
		out = out[len(out)-maxLines:]
	}
	text = bytes.Join(out, nil)
	if len(text) > maxBytes {
		text = text[len(text)-maxBytes:]
	}
	return string(text)
}
