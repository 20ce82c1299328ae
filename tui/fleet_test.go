package tui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/status"
)

// fleetOf is a fleet view over three contexts: prod (a healthy and a
// degraded cluster), staging (one healthy) and dev (unreadable), drawn at
// 110×20.
func fleetOf(t *testing.T) fleet {
	t.Helper()
	contexts := []FleetContext{
		{Name: "staging", Results: []status.Result{evaluate(healthyObs("db", "etcd-s"))}},
		{Name: "prod", Results: []status.Result{evaluate(healthyObs("db", "etcd-a")), evaluate(degradedObs("db", "etcd-b"))}},
		{Name: "dev", Err: errors.New("Get \"https://dev:6443\": dial tcp: connection refused")},
	}
	f := newFleet(context.Background(), FleetOptions{Read: func(context.Context) []FleetContext { return contexts }, First: contexts,
		Interval: 30 * time.Second, Now: func() time.Time { return now }})
	return fleetSend(t, f, tea.WindowSizeMsg{Width: 110, Height: 20})
}

func fleetSend(t *testing.T, f fleet, msgs ...tea.Msg) fleet {
	t.Helper()
	for _, msg := range msgs {
		nm, _ := f.Update(msg)
		f = nm.(fleet)
	}
	return f
}

func fleetPress(t *testing.T, f fleet, keys ...string) (fleet, tea.Cmd) {
	t.Helper()
	var cmd tea.Cmd
	for _, k := range keys {
		var nm tea.Model
		nm, cmd = f.Update(keyMsg(k))
		f = nm.(fleet)
	}
	return f, cmd
}

// TestFleetGroupsSortsFiltersAndOpens: every cluster of every context in
// one table, grouped by context; s sorts by verdict, worst first (the
// unreadable context, then the degraded cluster); / filters; enter on a
// cluster opens it in its own context; enter on an unreadable context
// says why instead.
func TestFleetGroupsSortsFiltersAndOpens(t *testing.T) {
	f := fleetOf(t)
	screen := ansi.Strip(f.render())
	checkFrame(t, screen, 110, 20)
	for _, want := range []string{"3 contexts · 3 clusters", "1 NOT failover-ready", "1 unreadable", "UNREADABLE", "connection refu"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the fleet view lacks %q:\n%s", want, screen)
		}
	}
	order := func(f fleet) string {
		var names []string
		for _, r := range f.visible {
			if r.err != nil {
				names = append(names, r.context)
			} else {
				names = append(names, r.context+"/"+r.result.Observation.Cluster.Name)
			}
		}
		return strings.Join(names, " ")
	}
	if got := order(f); got != "dev prod/etcd-a prod/etcd-b staging/etcd-s" {
		t.Errorf("grouped by context: %s", got)
	}
	f, _ = fleetPress(t, f, "s")
	if got := order(f); got != "dev prod/etcd-b prod/etcd-a staging/etcd-s" {
		t.Errorf("sorted by verdict: %s", got)
	}

	// Enter on the unreadable context: a note, no choice.
	f, cmd := fleetPress(t, f, "enter")
	if f.opened || cmd != nil || !strings.Contains(ansi.Strip(f.render()), "context dev could not be read") {
		t.Errorf("enter on an unreadable context: opened %v\n%s", f.opened, ansi.Strip(f.render()))
	}

	f, _ = fleetPress(t, f, "/", "s", "t", "a", "g", "enter")
	if got := order(f); got != "staging/etcd-s" {
		t.Errorf("filtered by \"stag\": %s", got)
	}
	f, cmd = fleetPress(t, f, "enter")
	if !f.opened || f.chosen != (FleetChoice{Context: "staging", Namespace: "db", Cluster: "etcd-s"}) || cmd == nil {
		t.Errorf("enter opened %v %+v", f.opened, f.chosen)
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("opening a cluster does not end the fleet view")
	}
}

// TestFleetComesBackToTheClusterOpened: back from a cluster, the cursor is
// on it again; q quits without a choice.
func TestFleetComesBackToTheClusterOpened(t *testing.T) {
	contexts := []FleetContext{
		{Name: "a", Results: []status.Result{evaluate(healthyObs("db", "etcd-1")), evaluate(healthyObs("db", "etcd-2"))}},
		{Name: "b", Results: []status.Result{evaluate(healthyObs("db", "etcd-3"))}},
	}
	f := newFleet(context.Background(), FleetOptions{Read: func(context.Context) []FleetContext { return contexts },
		First: contexts, Selected: FleetChoice{Context: "b", Namespace: "db", Cluster: "etcd-3"}})
	f = fleetSend(t, f, tea.WindowSizeMsg{Width: 100, Height: 12})
	if r, ok := f.current(); !ok || r.choice() != (FleetChoice{Context: "b", Namespace: "db", Cluster: "etcd-3"}) {
		t.Errorf("cursor on %+v, want b/db/etcd-3", r.choice())
	}
	// A new read keeps it there.
	f = fleetSend(t, f, fleetReadMsg{contexts: contexts})
	if r, _ := f.current(); r.choice().Cluster != "etcd-3" {
		t.Errorf("after a read, cursor on %+v", r.choice())
	}
	f, cmd := fleetPress(t, f, "q")
	if f.opened || cmd == nil {
		t.Errorf("q: opened %v", f.opened)
	}
}

// TestGoldenFleet: the fleet view's first screen.
func TestGoldenFleet(t *testing.T) {
	got := ansi.Strip(fleetOf(t).render())
	checkFrame(t, got, 110, 20)
	compareGolden(t, "fleet", got)
}

// TestFleetRunsOneLoopOfReads: a read asked for with p while a tick is
// pending makes that tick stale: it starts no second loop of reads; a
// tick while a read runs starts none either.
func TestFleetRunsOneLoopOfReads(t *testing.T) {
	f := fleetOf(t) // First handed in: its own read is running
	if !f.reading {
		t.Fatal("the first read is not marked running")
	}
	if _, cmd := f.Update(fleetTickMsg{seq: 0}); cmd != nil {
		t.Error("a tick while a read runs started another")
	}
	f = fleetSend(t, f, fleetReadMsg{contexts: f.contexts}) // read 1 answers; tick 1 pending
	f, cmd := fleetPress(t, f, "p")                         // read 2 starts
	if cmd == nil || !f.reading {
		t.Fatal("p started no read")
	}
	f = fleetSend(t, f, fleetReadMsg{contexts: f.contexts}) // read 2 answers; tick 2 pending
	if _, cmd := f.Update(fleetTickMsg{seq: 1}); cmd != nil {
		t.Error("the tick scheduled before p started a second loop of reads")
	}
	if _, cmd := f.Update(fleetTickMsg{seq: 2}); cmd == nil {
		t.Error("the current tick started no read")
	}
}

// TestFleetFitsAnyTerminal: the screen is exactly the terminal's size, at
// most its width on every line, down to one line; a size of 0 (a detached
// terminal) is ignored; ctrl+c quits even while filtering.
func TestFleetFitsAnyTerminal(t *testing.T) {
	for _, sz := range [][2]int{{110, 20}, {50, 8}, {30, 3}, {12, 1}} {
		f := fleetSend(t, fleetOf(t), tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		checkFrame(t, ansi.Strip(f.render()), sz[0], sz[1])
	}
	f := fleetSend(t, fleetOf(t), tea.WindowSizeMsg{Width: 0, Height: 0})
	if f.width != 110 || f.height != 20 {
		t.Errorf("a size of 0 was taken: %dx%d", f.width, f.height)
	}
	f, _ = fleetPress(t, f, "/", "p")
	if _, cmd := fleetPress(t, f, "ctrl+c"); cmd == nil {
		t.Fatal("ctrl+c while filtering did nothing")
	} else if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("ctrl+c while filtering does not quit")
	}
}
