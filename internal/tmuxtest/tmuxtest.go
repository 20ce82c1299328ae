// Package tmuxtest runs a command on a real terminal for tests and
// benchmarks: a tmux server of its own, one pane of a given size, whose
// Screen is read as text and whose keys are sent as a user types them.
package tmuxtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/poll"
)

// Session is one tmux server (its own socket) running one command in a
// pane of a given size.
type Session struct {
	t      testing.TB
	socket string
	name   string
	// exitFile receives the command's exit status, written by the shell
	// that runs it (tmux does not always reap a pane's process in time to
	// report its status); pidFile receives its process id.
	exitFile, pidFile string
}

// Start runs argv in a new detached tmux session of the given size,
// in an environment holding only env (and TERM), its stdin, stdout and
// stderr on the pane's terminal as for a user.
func Start(t testing.TB, width, height int, env []string, argv ...string) *Session {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	dir := t.TempDir()
	s := &Session{t: t, socket: fmt.Sprintf("hactl-e2e-%d-%d", os.Getpid(), time.Now().UnixNano()), name: "tui",
		exitFile: filepath.Join(dir, "exit"), pidFile: filepath.Join(dir, "pid")}
	var cmd strings.Builder
	cmd.WriteString("env -i TERM=tmux-256color")
	for _, e := range env {
		cmd.WriteString(" " + shellQuote(e))
	}
	for _, a := range argv {
		cmd.WriteString(" " + shellQuote(a))
	}
	// The shell runs the command in the foreground and records its pid and
	// exit status.
	script := "echo $$ >" + shellQuote(s.pidFile) + "; exec " + cmd.String()
	script = "sh -c " + shellQuote(script) + "; echo $? >" + shellQuote(s.exitFile)
	s.tmux("-f", "/dev/null", "new-session", "-d", "-s", s.name, "-x", strconv.Itoa(width), "-y", strconv.Itoa(height), script)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last screen:\n%s", s.Screen())
		}
		_ = exec.Command("tmux", "-L", s.socket, "kill-server").Run()
	})
	return s
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (s *Session) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Screen is the pane's text, without colours.
func (s *Session) Screen() string {
	out, err := exec.Command("tmux", "-L", s.socket, "capture-pane", "-p", "-t", s.name).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(capture failed: %v: %s)", err, out)
	}
	return string(out)
}

// Keys sends tmux key names ("Down", "Enter", "Escape", "q").
func (s *Session) Keys(keys ...string) {
	s.t.Helper()
	s.tmux(append([]string{"send-keys", "-t", s.name}, keys...)...)
}

// Resize sets the pane's size, as a user resizing the terminal.
func (s *Session) Resize(width, height int) {
	s.t.Helper()
	s.tmux("resize-window", "-t", s.name, "-x", strconv.Itoa(width), "-y", strconv.Itoa(height))
}

// Text types literal text.
func (s *Session) Text(txt string) {
	s.t.Helper()
	s.tmux("send-keys", "-t", s.name, "-l", txt)
}

// WaitFor polls the screen until every want appears, failing after
// timeout. It returns the screen that matched.
func (s *Session) WaitFor(timeout time.Duration, want ...string) string {
	s.t.Helper()
	var scr string
	poll.Until(s.t, timeout, fmt.Sprintf("the screen to show %q", want), func() error {
		scr = s.Screen()
		for _, w := range want {
			if !strings.Contains(scr, w) {
				return fmt.Errorf("no %q on the screen", w)
			}
		}
		return nil
	})
	return scr
}

// WaitGone polls until none of gone appears on the screen.
func (s *Session) WaitGone(timeout time.Duration, gone ...string) string {
	s.t.Helper()
	var scr string
	poll.Until(s.t, timeout, fmt.Sprintf("%q to leave the screen", gone), func() error {
		scr = s.Screen()
		for _, g := range gone {
			if strings.Contains(scr, g) {
				return fmt.Errorf("%q still on the screen", g)
			}
		}
		return nil
	})
	return scr
}

// WaitMatch polls until the screen matches re.
func (s *Session) WaitMatch(timeout time.Duration, re *regexp.Regexp) string {
	s.t.Helper()
	var scr string
	poll.Until(s.t, timeout, fmt.Sprintf("the screen to match %s", re), func() error {
		if scr = s.Screen(); !re.MatchString(scr) {
			return errors.New("no match")
		}
		return nil
	})
	return scr
}

// Exited waits for the command to end and returns its exit status.
func (s *Session) Exited(timeout time.Duration) int {
	s.t.Helper()
	code := -1
	poll.Until(s.t, timeout, "the command to exit", func() error {
		var err error
		code, err = readNumber(s.t, s.exitFile)
		return err
	})
	return code
}

// Finished reports, without waiting, whether the command has ended, and
// its exit status if it has.
func (s *Session) Finished() (code int, ok bool) {
	s.t.Helper()
	code, err := readNumber(s.t, s.exitFile)
	return code, err == nil
}

// PID is the command's process id.
func (s *Session) PID() int {
	s.t.Helper()
	var pid int
	poll.Until(s.t, 30*time.Second, "the command's pid", func() error {
		var err error
		pid, err = readNumber(s.t, s.pidFile)
		return err
	})
	return pid
}

// readNumber reads the number the pane's shell wrote to path: an error
// while the line is not complete yet, a test failure if it is not a
// number.
func readNumber(t testing.TB, path string) (int, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		return 0, fmt.Errorf("%s: %q is not a complete line yet", path, b)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n, nil
}
