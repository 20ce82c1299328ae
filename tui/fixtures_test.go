package tui

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/internal/feed"
	"github.com/hactl-dev/hactl/tui/internal/tuitest"
)

var update = flag.Bool("update", false, "rewrite the golden frames in testdata/")

// The fixtures the TUI's packages share (tuitest).
var (
	now         = tuitest.Now
	clock       = tuitest.Clock
	memberID    = tuitest.MemberID
	healthyObs  = tuitest.HealthyObs
	degradedObs = tuitest.DegradedObs
	learnerObs  = tuitest.LearnerObs
	patroniObs  = tuitest.PatroniObs
	evaluate    = tuitest.Evaluate
	keyMsg      = tuitest.KeyMsg
	classifyOn  = tuitest.ClassifyOn
	restoreGens = tuitest.RestoreGens
)

const testClusterID = tuitest.ClusterID

// newTestModel is a model at 80x24 holding results, with no backend.
func newTestModel(t *testing.T, cfg Config, deps Deps, obs ...model.Observation) Model {
	t.Helper()
	cfg.Now = clock
	if cfg.ProbeInterval == 0 {
		cfg.ProbeInterval = 5 * time.Second
	}
	cfg.Probes = true
	cfg.Verdict = judged(cfg.Verdict)
	if cfg.Views == nil {
		cfg.Views = cfgViews
	}
	m := New(context.Background(), cfg, deps)
	var rs []status.Result
	for _, o := range obs {
		rs = append(rs, evaluate(o))
	}
	m = send(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	m = send(t, m, feed.ObservedMsg{Seq: 0, Probed: true, Results: rs, At: now})
	return m
}

// send passes one message to Update and returns the new model.
func send(t *testing.T, m Model, msg tea.Msg) Model {
	t.Helper()
	nm, _ := m.Update(msg)
	return nm.(Model)
}

// press sends key presses, one per key name ("down", "enter", "q", "x").
func press(t *testing.T, m Model, keys ...string) Model {
	t.Helper()
	for _, k := range keys {
		m = send(t, m, keyMsg(k))
	}
	return m
}

// typeText presses one key per rune.
func typeText(t *testing.T, m Model, s string) Model {
	t.Helper()
	for _, r := range s {
		m = send(t, m, tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return m
}

// frame is the screen without colours or attributes (the fixed profile of
// the golden frames).
func frame(m Model) string { return ansi.Strip(m.Render()) }

// golden compares the model's frame with testdata/<name>.golden.
func golden(t *testing.T, m Model, name string) {
	t.Helper()
	got := frame(m)
	checkFrame(t, got, m.width, m.height)
	compareGolden(t, name, got)
}

// compareGolden compares a frame with testdata/<name>.golden (with
// -update, writes it).
func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("frame %s differs from the golden file (go test ./tui -update to accept):\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

// checkFrame asserts the frame is exactly height lines of at most width
// cells.
func checkFrame(t *testing.T, f string, width, height int) {
	t.Helper()
	lines := strings.Split(f, "\n")
	if len(lines) != height {
		t.Errorf("frame has %d lines, want %d", len(lines), height)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > width {
			t.Errorf("line %d is %d cells wide, more than %d: %q", i, w, width, l)
		}
	}
}
