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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hactl-dev/hactl/sandbox/internal/reap"
)

// process is one run of a container: a host process in its own process
// group (so signals reach everything a wrapper script started), with its
// output in a CRI-format log file (what kwok serves to `kubectl logs`) and
// a pid file so the sandbox can end it after a crash.
//
// A process of the container may leave its group and session (setsid):
// PostgreSQL's postmaster under Patroni does, and so does every child of
// the postmaster. The runner finds such escapees among the container's
// descendants (see track), records each in a pid file of its own (pid and
// start time, beside the container's) and signals them, and everything
// they started, with the container: a container's stop, kill or pause
// reaches its whole tree, as a cgroup would, and nothing it started
// outlives it.
type process struct {
	pid       int
	sid       int // the session the container runs in: 0 is a real one (init's, or one whose leader is outside our pid namespace); -1 if unknown
	startedAt time.Time
	pidFile   string
	logPath   string
	done      chan struct{}
	// set before done is closed
	exitCode int
	signal   syscall.Signal
	finished time.Time

	// marker is the value of MarkerEnv in the process's environment,
	// which its descendants inherit: it tells the container's orphans
	// the runner adopted (as child subreaper) from anyone else's.
	marker string

	escMu   sync.Mutex
	escaped map[int]reap.Stat // escapees by pid, each recorded in escapeeFile
	ended   bool              // the main process exited: record no more escapees
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
	path, args, dir := l.command()
	cmd := &exec.Cmd{Path: path, Args: args, Env: l.Env, Dir: dir, Stdout: outW, Stderr: errW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: l.Credential, AmbientCaps: l.AmbientCaps}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		logf.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	p := &process{pid: cmd.Process.Pid, startedAt: time.Now(), pidFile: pidFile, logPath: logPath, done: make(chan struct{}),
		escaped: map[int]reap.Stat{}, marker: envValue(l.Env, MarkerEnv), sid: -1}
	if st, err := reap.ReadStat(p.pid); err == nil {
		p.sid = st.Session
	}
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
		// The container is gone: so is everything it left in its group
		// and every escapee, which closes the last writers of its output
		// pipes (and keeps a restarted container from adopting an old
		// postmaster).
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		p.killEscapees()
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

// command returns the executable, argument vector and working directory
// that start l. A process that keeps ambient capabilities gets them only
// at exec, after the kernel would have had to enter its working
// directory: it then starts as /bin/sh, which enters the directory and
// execs the container's command (same pid; argv[0] becomes l.Path).
func (l Launch) command() (path string, args []string, dir string) {
	if len(l.AmbientCaps) == 0 || l.Dir == "" {
		return l.Path, l.Argv, l.Dir
	}
	args = append([]string{"sh", "-c", `cd -- "$0" && exec "$@"`, l.Dir, l.Path}, l.Argv[1:]...)
	return "/bin/sh", args, ""
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

// signalMain sends sig to the container's main process only.
func (p *process) signalMain(sig syscall.Signal) {
	if !p.exited() {
		_ = syscall.Kill(p.pid, sig)
	}
}

// signalAll sends sig to every process of the container: its group, its
// descendants and its escapees with theirs (the main process first).
func (p *process) signalAll(sig syscall.Signal) {
	all := reap.All()
	if !p.exited() {
		p.track(all)
		_ = syscall.Kill(p.pid, sig)
		_ = syscall.Kill(-p.pid, sig)
	}
	for _, s := range p.tree(all) {
		if s.Pid != p.pid {
			_ = syscall.Kill(s.Pid, sig)
		}
	}
}

// tree lists the container's live processes in all: the main process's
// group and descendants, and the escapees and theirs.
func (p *process) tree(all []reap.Stat) []reap.Stat {
	var roots []reap.Stat
	alive := !p.exited()
	for _, s := range all {
		if alive && (s.Pid == p.pid || s.PGid == p.pid) {
			roots = append(roots, s)
		}
	}
	p.escMu.Lock()
	for _, e := range p.escaped {
		for _, s := range all {
			if s.Pid == e.Pid && s.Start == e.Start {
				roots = append(roots, s)
			}
		}
	}
	p.escMu.Unlock()
	return reap.DescendantsIn(all, roots)
}

// find returns the container's live processes whose command line (the
// process title PostgreSQL sets, such as "postgres: c: startup recovering
// 0000…") satisfies match.
func (p *process) find(match func(cmdline string) bool) []reap.Stat {
	all := reap.All()
	if !p.exited() {
		p.track(all)
	}
	var out []reap.Stat
	for _, s := range p.tree(all) {
		if match(reap.Cmdline(s.Pid)) {
			out = append(out, s)
		}
	}
	return out
}

// MarkerEnv is set in every container's environment to a value unique to
// the container's run (namespace/pod/uid/container/restart). Processes
// keep it when they leave the container's session, and the runner tells
// by it which container an orphan it adopted came from.
const MarkerEnv = "HACTL_SANDBOX_CONTAINER"

// mySession is the runner's own session.
var mySession = func() int {
	s, err := reap.ReadStat(os.Getpid())
	if err != nil {
		return -1
	}
	return s.Session
}()

// adoptees lists the processes in all the runner adopted as child
// subreaper whose environment carries marker: a container's processes
// whose parent left them behind (Patroni starts the postmaster through a
// short-lived process, so it is the runner's child at once).
func adoptees(all []reap.Stat, marker string) []reap.Stat {
	if marker == "" {
		return nil
	}
	self := os.Getpid()
	var out []reap.Stat
	for _, s := range all {
		if s.PPid != self || s.Session == mySession || !s.Alive() {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(s.Pid) + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if kv == MarkerEnv+"="+marker {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// track records the container's new escapees found in all — descendants
// of the main process that left its session (whose parent had not), and
// orphans the runner adopted that carry the container's marker — and
// forgets those that are gone.
func (p *process) track(all []reap.Stat) {
	if p.sid < 0 {
		return
	}
	var main []reap.Stat
	for _, s := range all {
		if s.Pid == p.pid {
			main = append(main, s)
		}
	}
	sessions := map[int]int{}
	for _, s := range all {
		sessions[s.Pid] = s.Session
	}
	var found []reap.Stat
	if len(main) > 0 && !p.exited() {
		for _, s := range reap.DescendantsIn(all, main) {
			if s.Session != p.sid && sessions[s.PPid] == p.sid {
				found = append(found, s)
			}
		}
		found = append(found, adoptees(all, p.marker)...)
	}
	p.escMu.Lock()
	defer p.escMu.Unlock()
	if p.ended {
		return
	}
	for _, s := range found {
		if e, ok := p.escaped[s.Pid]; ok && e.Start == s.Start {
			continue
		}
		if err := reap.WritePidFile(p.escapeeFile(s.Pid), s.Pid, "escaped from "+filepath.Base(p.pidFile)); err == nil {
			p.escaped[s.Pid] = s
		}
	}
	for pid, e := range p.escaped {
		live := false
		for _, s := range all {
			if s.Pid == pid && s.Start == e.Start && s.Alive() {
				live = true
				break
			}
		}
		if !live {
			delete(p.escaped, pid)
			_ = os.Remove(p.escapeeFile(pid))
		}
	}
}

// escapeeFile is the pid file of escapee pid: beside the container's.
func (p *process) escapeeFile(pid int) string {
	return strings.TrimSuffix(p.pidFile, reap.PidFileSuffix) + ".escaped-" + strconv.Itoa(pid) + reap.PidFileSuffix
}

// killEscapees SIGKILLs the escapees and everything they started, waits
// (briefly) for them to be gone and removes their pid files.
func (p *process) killEscapees() {
	all := reap.All()
	p.escMu.Lock()
	p.ended = true
	// Orphans not tracked yet (the main process's children became the
	// runner's when it died) carry the container's marker.
	for _, s := range adoptees(all, p.marker) {
		p.escaped[s.Pid] = s
	}
	p.escMu.Unlock()
	left := p.tree(all)
	if len(left) == 0 {
		p.escMu.Lock()
		for pid := range p.escaped {
			_ = os.Remove(p.escapeeFile(pid))
		}
		p.escaped = map[int]reap.Stat{}
		p.escMu.Unlock()
		return
	}
	_ = reap.Kill(left, 5*time.Second)
	p.escMu.Lock()
	for pid := range p.escaped {
		_ = os.Remove(p.escapeeFile(pid))
	}
	p.escaped = map[int]reap.Stat{}
	p.escMu.Unlock()
}

// stop sends SIGTERM to the group (and SIGCONT to the whole tree, in case
// it is paused), waits up to grace, then SIGKILLs every process of the
// container and waits for the exit.
func (p *process) stop(grace time.Duration) {
	// SIGCONT first: it also records escapees the runner has not seen
	// yet, while the main process still links them to the container.
	p.signalAll(syscall.SIGCONT)
	p.signalGroup(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return
	case <-t.C:
	}
	p.signalAll(syscall.SIGKILL)
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
