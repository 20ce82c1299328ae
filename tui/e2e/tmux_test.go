package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/testenv"
)

// buildBinary compiles kubectl-hactl into a fresh directory.
func buildBinary(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-hactl"), "../../cmd/kubectl-hactl").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// session is one tmux server (its own socket) running one command in an
// 80x24 (or other) pane.
type session struct {
	t      testing.TB
	socket string
	name   string
}

// startTmux runs argv in a new detached tmux session of the given size,
// in an environment holding only env (and TERM). The pane stays after the
// command exits so its status can be read.
func startTmux(t testing.TB, width, height int, env []string, argv ...string) *session {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	s := &session{t: t, socket: fmt.Sprintf("hactl-e2e-%d-%d", os.Getpid(), time.Now().UnixNano()), name: "tui"}
	var cmd strings.Builder
	cmd.WriteString("exec env -i TERM=tmux-256color")
	for _, e := range env {
		cmd.WriteString(" " + shellQuote(e))
	}
	for _, a := range argv {
		cmd.WriteString(" " + shellQuote(a))
	}
	// One tmux command queue: the option is set before the pane's command
	// can exit.
	s.tmux("-f", "/dev/null", "new-session", "-d", "-s", s.name, "-x", strconv.Itoa(width), "-y", strconv.Itoa(height), cmd.String(),
		";", "set-option", "-t", s.name, "remain-on-exit", "on")
	t.Cleanup(func() {
		if t.Failed() {
			state, _ := exec.Command("tmux", "-L", s.socket, "display-message", "-p", "-t", s.name,
				"pane #{pane_width}x#{pane_height} dead=#{pane_dead} status=#{pane_dead_status} signal=#{pane_dead_signal} pid=#{pane_pid} alternate=#{alternate_on}").CombinedOutput()
			t.Logf("last screen (%s):\n%s", strings.TrimSpace(string(state)), s.screen())
		}
		_ = exec.Command("tmux", "-L", s.socket, "kill-server").Run()
	})
	return s
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (s *session) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is the pane's text, without colours.
func (s *session) screen() string {
	out, err := exec.Command("tmux", "-L", s.socket, "capture-pane", "-p", "-t", s.name).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(capture failed: %v: %s)", err, out)
	}
	return string(out)
}

// keys sends tmux key names ("Down", "Enter", "Escape", "q").
func (s *session) keys(keys ...string) {
	s.t.Helper()
	s.tmux(append([]string{"send-keys", "-t", s.name}, keys...)...)
}

// text types literal text.
func (s *session) text(txt string) {
	s.t.Helper()
	s.tmux("send-keys", "-t", s.name, "-l", txt)
}

// waitFor polls the screen until every want appears, failing after
// timeout. It returns the screen that matched.
func (s *session) waitFor(timeout time.Duration, want ...string) string {
	s.t.Helper()
	var scr string
	testenv.Poll(s.t, timeout, func() (bool, error) {
		scr = s.screen()
		for _, w := range want {
			if !strings.Contains(scr, w) {
				return false, nil
			}
		}
		return true, nil
	})
	return scr
}

// waitGone polls until none of gone appears on the screen.
func (s *session) waitGone(timeout time.Duration, gone ...string) string {
	s.t.Helper()
	var scr string
	testenv.Poll(s.t, timeout, func() (bool, error) {
		scr = s.screen()
		for _, g := range gone {
			if strings.Contains(scr, g) {
				return false, nil
			}
		}
		return true, nil
	})
	return scr
}

// waitMatch polls until the screen matches re.
func (s *session) waitMatch(timeout time.Duration, re *regexp.Regexp) string {
	s.t.Helper()
	var scr string
	testenv.Poll(s.t, timeout, func() (bool, error) {
		scr = s.screen()
		return re.MatchString(scr), nil
	})
	return scr
}

// exited waits for the pane's command to end and returns its status.
func (s *session) exited(timeout time.Duration) int {
	s.t.Helper()
	code := -1
	testenv.Poll(s.t, timeout, func() (bool, error) {
		out := strings.TrimSpace(s.tmux("display-message", "-p", "-t", s.name, "#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}"))
		f := strings.Split(out, "|")
		if len(f) != 3 || f[0] != "1" {
			return false, nil
		}
		if f[2] != "" {
			return false, fmt.Errorf("the command was killed by signal %s", f[2])
		}
		if f[1] == "" {
			return false, nil // not recorded yet
		}
		c, err := strconv.Atoi(f[1])
		if err != nil {
			return false, fmt.Errorf("pane status %q: %v", out, err)
		}
		code = c
		return true, nil
	})
	return code
}

// pid is the pane's process (the command, after exec).
func (s *session) pid() int {
	s.t.Helper()
	p, err := strconv.Atoi(strings.TrimSpace(s.tmux("display-message", "-p", "-t", s.name, "#{pane_pid}")))
	if err != nil {
		s.t.Fatal(err)
	}
	return p
}

// klogLine matches a klog header (E1129 12:00:00.000000 …), which must
// never reach the TUI's screen.
var klogLine = regexp.MustCompile(`(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+`)

// cpuTicks reads a process's user+system CPU time in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	fields := strings.Fields(string(b[i+2:]))
	// Fields after the command: state is [0]; utime is [11], stime [12].
	ut, err := strconv.ParseInt(fields[11], 10, 64)
	if err != nil {
		return 0, err
	}
	st, err := strconv.ParseInt(fields[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return ut + st, nil
}
