package tui

import (
	"bytes"
	"context"
	"errors"
	"image/color"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"k8s.io/klog/v2"

	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/internal/tuitest"
)

// lockedBuffer is a bytes.Buffer safe for the program's writer and the
// test's reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunRoutesKlogAndQuits runs the real program headless: klog lines
// written while it runs go to Options.Log, never to the screen, and q
// ends it.
func TestRunRoutesKlogAndQuits(t *testing.T) {
	in, inW := io.Pipe()
	var screen, logs lockedBuffer
	// klog writes to os.Stderr, which is the terminal in production:
	// capture it for the duration.
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = errW
	var stderrText bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&stderrText, errR); close(copied) }()
	defer func() { os.Stderr = stderr }()
	b := &tuitest.StubBackend{Changed: make(chan struct{}), Errs: make(chan error), Answer: func(bool) []status.Result {
		klog.ErrorS(errors.New("boom"), "client-go says hello from a probe")
		return []status.Result{evaluate(healthyObs("db", "etcd-a"))}
	}}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{
			Config: Config{Namespace: "db", Probes: true, ProbeInterval: time.Hour},
			Deps:   Deps{Backend: b},
			In:     in, Out: &screen, Env: []string{"TERM=xterm", "NO_COLOR=1"}, Log: &logs, Width: 80, Height: 24,
		})
	}()
	testenv.Poll(t, 30*time.Second, func() (bool, error) { return strings.Contains(screen.String(), "etcd-a"), nil })
	klog.Flush()
	if _, err := inW.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("q did not end the program")
	}
	_ = inW.Close()
	if !strings.Contains(logs.String(), "client-go says hello") {
		t.Errorf("klog output did not reach Options.Log: %q", logs.String())
	}
	os.Stderr = stderr
	_ = errW.Close()
	<-copied
	if strings.Contains(screen.String(), "client-go says hello") || strings.Contains(stderrText.String(), "client-go says hello") {
		t.Errorf("klog output reached the terminal: stderr %q", stderrText.String())
	}
	// Restored: klog writes to its own output again, not to ours.
	before := logs.String()
	klog.ErrorS(nil, "after the TUI")
	klog.Flush()
	if logs.String() != before {
		t.Error("klog still writes to the TUI's log after Run returned")
	}
}

func TestRunNeedsABackend(t *testing.T) {
	if err := Run(context.Background(), Options{}); !errors.Is(err, ErrNoBackend) {
		t.Errorf("Run without a backend: %v", err)
	}
}

// runOnce runs the program headless with env until it drew etcd-a, then
// quits it, and returns what it wrote.
func runOnce(t *testing.T, env []string) string {
	t.Helper()
	in, inW := io.Pipe()
	defer inW.Close()
	var screen lockedBuffer
	b := &tuitest.StubBackend{Changed: make(chan struct{}), Errs: make(chan error), Answer: func(bool) []status.Result {
		return []status.Result{evaluate(degradedObs("db", "etcd-a"))}
	}}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Config: Config{Namespace: "db", Probes: true, ProbeInterval: time.Hour},
			Deps: Deps{Backend: b}, In: in, Out: &screen, Env: env, Width: 80, Height: 24})
	}()
	testenv.Poll(t, 30*time.Second, func() (bool, error) { return strings.Contains(screen.String(), "NOT failover-ready"), nil })
	if _, err := inW.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return screen.String()
}

// colourSGR matches an SGR sequence that sets a foreground colour.
var colourSGR = regexp.MustCompile(`\x1b\[[0-9;]*(3[0-7]|38;[25];[0-9;]+|9[0-7])m`)

// TestNoColorIsHonoured: the program takes its colour profile from the
// environment it is given (TTY_FORCE stands in for a terminal here).
func TestNoColorIsHonoured(t *testing.T) {
	if out := runOnce(t, []string{"TTY_FORCE=1", "TERM=xterm-256color", "COLORTERM=truecolor"}); !colourSGR.MatchString(out) {
		t.Fatal("no colour on a colour terminal: the check below could not fail")
	}
	if out := runOnce(t, []string{"TTY_FORCE=1", "TERM=xterm-256color", "COLORTERM=truecolor", "NO_COLOR=1"}); colourSGR.MatchString(out) {
		t.Errorf("colours with NO_COLOR set: %q", colourSGR.FindString(out))
	}
}

func TestBackgroundPicksTheTheme(t *testing.T) {
	m := newTestModel(t, Config{}, Deps{}, healthyObs("db", "etcd-a"))
	dark := m.theme.Good.GetForeground()
	m = send(t, m, tea.BackgroundColorMsg{Color: color.White})
	if light := m.theme.Good.GetForeground(); light == dark {
		t.Error("a light background kept the dark theme's colours")
	}
	m = send(t, m, tea.BackgroundColorMsg{Color: color.Black})
	if m.theme.Good.GetForeground() != dark {
		t.Error("a dark background did not bring the dark theme back")
	}
}
