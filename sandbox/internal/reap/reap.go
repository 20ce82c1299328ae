package reap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Stat is what /proc/<pid>/stat says about a process.
type Stat struct {
	Pid, PPid, PGid, Session int
	State                    string
	// Start is the kernel start time in clock ticks since boot.
	Start uint64
}

// ReadStat reads /proc/<pid>/stat.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, err
	}
	return parseStat(pid, b)
}

func parseStat(pid int, b []byte) (Stat, error) {
	// The command name (field 2) is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid 4, pgrp 5, session 6, starttime 22.
	if len(f) < 20 {
		return Stat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	s := Stat{Pid: pid, State: f[0]}
	var err error
	if s.PPid, err = strconv.Atoi(f[1]); err != nil {
		return Stat{}, err
	}
	if s.PGid, err = strconv.Atoi(f[2]); err != nil {
		return Stat{}, err
	}
	if s.Session, err = strconv.Atoi(f[3]); err != nil {
		return Stat{}, err
	}
	if s.Start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return Stat{}, err
	}
	return s, nil
}

// Alive reports whether the process exists and is not a zombie.
func (s Stat) Alive() bool { return s.State != "Z" && s.State != "X" }

// All lists every process in /proc.
func All() []Stat {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []Stat
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := ReadStat(pid); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// Session lists the live processes of session sid that started no
// earlier than notBefore (the session leader's start time: anything older
// cannot belong to it).
func Session(sid int, notBefore uint64) []Stat {
	var out []Stat
	for _, s := range All() {
		if s.Session == sid && s.Start >= notBefore && s.Alive() && s.Pid != os.Getpid() {
			out = append(out, s)
		}
	}
	return out
}

// Cmdline returns the process's command line, arguments separated by
// spaces ("" if it cannot be read).
func Cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// Mentioning lists live processes (other than this one) whose command
// line, working directory or executable mentions dir.
func Mentioning(dir string) []Stat {
	var out []Stat
	for _, s := range All() {
		if s.Pid == os.Getpid() || !s.Alive() {
			continue
		}
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", s.Pid))
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", s.Pid))
		if strings.Contains(Cmdline(s.Pid), dir) || strings.HasPrefix(cwd, dir) || strings.HasPrefix(exe, dir) {
			out = append(out, s)
		}
	}
	return out
}

// Same reports whether s still names the same process (same pid and start
// time) and it is alive.
func Same(s Stat) bool {
	cur, err := ReadStat(s.Pid)
	return err == nil && cur.Start == s.Start && cur.Alive()
}

// Kill SIGKILLs each process (and its process group) that is still the
// same process, then waits up to timeout for all of them to be gone.
func Kill(procs []Stat, timeout time.Duration) error {
	for _, s := range procs {
		if !Same(s) {
			continue
		}
		_ = syscall.Kill(s.Pid, syscall.SIGCONT)
		_ = syscall.Kill(s.Pid, syscall.SIGKILL)
		if s.PGid == s.Pid {
			_ = syscall.Kill(-s.Pid, syscall.SIGKILL)
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		var left []string
		for _, s := range procs {
			if Same(s) {
				left = append(left, strconv.Itoa(s.Pid))
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes still alive after SIGKILL: %s", strings.Join(left, ", "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// PidFileSuffix ends every pid file (the same suffix sandbox/internal/proc
// uses, so its KillRecorded finds these files too).
const PidFileSuffix = ".pid"

// WritePidFile records pid, its start time and name at path.
func WritePidFile(path string, pid int, name string) error {
	s, err := ReadStat(pid)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%d %d %s\n", pid, s.Start, name), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadPidFile reads a pid file; the returned Stat holds Pid and Start.
func ReadPidFile(path string) (Stat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return Stat{}, fmt.Errorf("%s: malformed pid file", path)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 1 {
		return Stat{}, fmt.Errorf("%s: malformed pid %q", path, f[0])
	}
	start, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("%s: malformed start time %q", path, f[1])
	}
	s := Stat{Pid: pid, Start: start}
	if cur, err := ReadStat(pid); err == nil && cur.Start == start {
		s = cur
	}
	return s, nil
}

// DataDirName names the directories pid-file walks never enter: volume
// directories (DIR/volumes/ with every PVC, a pod's DIR/runner/pods/*/
// volumes/) hold the members' own data, where a file ending in .pid is
// the member's business (PostgreSQL's postmaster.pid), never a record of
// the sandbox's.
const DataDirName = "volumes"

// Recorded reads every pid file under dir (outside volume directories,
// see DataDirName) and returns the processes that are still alive as
// recorded. A file that does not parse as a pid record is not one and is
// skipped.
func Recorded(dir string) ([]Stat, error) {
	var out []Stat
	var errs []error
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if path != dir && d.Name() == DataDirName {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, PidFileSuffix) {
			return nil
		}
		s, err := ReadPidFile(path)
		if err != nil {
			return nil
		}
		if Same(s) {
			out = append(out, s)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// Descendants returns procs followed by every live process descending
// from one of them (by parent pid, as /proc says now), each once. A
// process that called setsid (PostgreSQL's postmaster and its children)
// has left its parent's session and process group but is still its
// descendant until its parent dies.
func Descendants(procs []Stat) []Stat {
	return DescendantsIn(All(), procs)
}

// DescendantsIn is Descendants over the process list all.
func DescendantsIn(all []Stat, procs []Stat) []Stat {
	children := map[int][]Stat{}
	for _, s := range all {
		if s.Alive() {
			children[s.PPid] = append(children[s.PPid], s)
		}
	}
	seen := map[int]bool{}
	var out []Stat
	queue := append([]Stat(nil), procs...)
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if seen[s.Pid] {
			continue
		}
		seen[s.Pid] = true
		out = append(out, s)
		queue = append(queue, children[s.Pid]...)
	}
	return out
}
