package tui

import (
	"context"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/internal/remedy"
)

// These tests drive the components on their own, without the root model.

// decidedDialog is a replace dialog for member of obs, sized w×h, that
// received the real classifier's decision.
func decidedDialog(t *testing.T, obs model.Observation, member string, w, h int) dialog {
	t.Helper()
	req := Request{Namespace: obs.Cluster.Namespace, Cluster: obs.Cluster.Name,
		Intent: model.Intent{Action: model.ActionReplace, Member: member}}
	d := newDialog(7, req, false, NewTheme(true))
	d.SetSize(w, h)
	dec, err := classifyOn(obs)(req)
	if err != nil {
		t.Fatal(err)
	}
	d, out, _ := d.Update(decidedMsg{id: 7, decision: dec})
	if out != dialogKeep || d.state != dialogDecided {
		t.Fatalf("decision: outcome %v state %v", out, d.state)
	}
	return d
}

// dialogKeys sends keys to a dialog and returns the last outcome.
func dialogKeys(d dialog, keys ...string) (dialog, dialogOutcome) {
	out := dialogKeep
	for _, k := range keys {
		d, out, _ = d.Update(keyMsg(k))
	}
	return d, out
}

func typeInDialog(d dialog, s string) dialog {
	for _, r := range s {
		d, _, _ = d.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return d
}

func TestDialogTypedNameGatesEnter(t *testing.T) {
	d := decidedDialog(t, degradedObs("db", "etcd-b"), "etcd-b-2", 80, 40)
	if !d.needsName() || !d.typing() {
		t.Fatal("a replace that deletes the member's data does not ask for its name")
	}
	d, out := dialogKeys(d, "enter")
	if out != dialogKeep || !strings.Contains(d.hint, "type etcd-b-2 exactly") {
		t.Fatalf("enter without the name: outcome %v hint %q", out, d.hint)
	}
	d = typeInDialog(d, "etcd-b-1")
	if d.hint != "" {
		t.Errorf("typing kept the hint %q", d.hint)
	}
	if d, out = dialogKeys(d, "enter"); out != dialogKeep {
		t.Fatalf("a wrong name: outcome %v", out)
	}
	for range len("etcd-b-1") {
		d, _, _ = d.Update(tea.KeyPressMsg{Code: tea.KeyBackspace})
	}
	d = typeInDialog(d, "etcd-b-2")
	d, out = dialogKeys(d, "enter")
	if out != dialogConfirm {
		t.Fatalf("the typed name: outcome %v, want confirm (hint %q)", out, d.hint)
	}
	if d.req.Intent.Member != "etcd-b-2" || !runnable(d.decision) {
		t.Errorf("confirmed %+v (runnable %v)", d.req.Intent, runnable(d.decision))
	}
}

func TestDialogTakesOnlyItsDecision(t *testing.T) {
	req := Request{Namespace: "db", Cluster: "etcd-b", Intent: model.Intent{Action: model.ActionReplace, Member: "etcd-b-2"}}
	d := newDialog(3, req, false, NewTheme(true))
	d, _, _ = d.Update(decidedMsg{id: 2, decision: model.Decision{Verb: model.VerbProceed}})
	if d.state != dialogDeciding {
		t.Fatalf("a decision for another dialog was taken: state %v", d.state)
	}
	d, _, _ = d.Update(decidedMsg{id: 3, err: context.DeadlineExceeded})
	if d.state != dialogFailed {
		t.Fatalf("state %v after a failed decision, want failed", d.state)
	}
	if _, out := dialogKeys(d, "enter"); out != dialogClose {
		t.Errorf("enter on a failure: outcome %v, want close", out)
	}
}

func TestDialogEscapeCancels(t *testing.T) {
	th := NewTheme(true)
	seed := Request{Namespace: "db", Cluster: "etcd-a", Intent: model.Intent{Action: model.ActionSeed}}
	replace := Request{Namespace: "db", Cluster: "etcd-b", Intent: model.Intent{Action: model.ActionReplace, Member: "etcd-b-2"}}
	for name, d := range map[string]dialog{
		"asking":   newDialog(1, seed, false, th),
		"deciding": newDialog(1, replace, false, th),
		"decided":  decidedDialog(t, degradedObs("db", "etcd-b"), "etcd-b-2", 80, 24),
		"typing":   typeInDialog(decidedDialog(t, degradedObs("db", "etcd-b"), "etcd-b-2", 80, 24), "etcd"),
	} {
		for _, k := range []string{"esc", "ctrl+c"} {
			if _, out := dialogKeys(d, k); out != dialogCancel {
				t.Errorf("%s: %s gave %v, want cancel", name, k, out)
			}
		}
	}
}

func TestDialogAsksForGeneration(t *testing.T) {
	req := Request{Namespace: "db", Cluster: "etcd-a", Intent: model.Intent{Action: model.ActionSeed}}
	d := newDialog(1, req, false, NewTheme(true))
	if d.state != dialogAsking {
		t.Fatalf("a seed without a generation: state %v, want asking", d.state)
	}
	if cmd := d.ask(""); cmd == nil {
		t.Error("asking did not focus the input")
	}
	d, out := dialogKeys(d, "enter")
	if out != dialogKeep || !strings.Contains(d.hint, "required") {
		t.Fatalf("enter on an empty ID: outcome %v hint %q", out, d.hint)
	}
	d = typeInDialog(d, "nightly")
	d, out = dialogKeys(d, "enter")
	if out != dialogDecide || d.state != dialogDeciding || d.req.Intent.Options.Generation != "nightly" {
		t.Errorf("outcome %v state %v generation %q", out, d.state, d.req.Intent.Options.Generation)
	}
}

func TestDialogOverrideAsksForANewDecision(t *testing.T) {
	d := decidedDialog(t, healthyObs("db", "etcd-b"), "etcd-b-0", 80, 40)
	if runnable(d.decision) {
		t.Fatal("replacing the leader is runnable: the test needs a refusal")
	}
	d, out := dialogKeys(d, "enter")
	if out != dialogKeep || !strings.Contains(d.hint, "cannot run") {
		t.Fatalf("enter on a refusal: outcome %v hint %q", out, d.hint)
	}
	d, out = dialogKeys(d, "1")
	if out != dialogRedecide || d.state != dialogDeciding || !d.req.Intent.Options.MoveLeader {
		t.Fatalf("1: outcome %v state %v move-leader %v", out, d.state, d.req.Intent.Options.MoveLeader)
	}
	if d.width != 80 || d.height != 40 {
		t.Errorf("the new decision's dialog lost its size: %dx%d", d.width, d.height)
	}
}

func TestDialogSetSizeWraps(t *testing.T) {
	const sentence = "This removes the member and deletes its data. Type etcd-b-2 to confirm:"
	d := decidedDialog(t, degradedObs("db", "etcd-b"), "etcd-b-2", 110, 60)
	whole := func(d dialog) bool {
		for _, l := range d.View() {
			if strings.Contains(ansi.Strip(l), sentence) {
				return true
			}
		}
		return false
	}
	wide := d.View()
	if !whole(d) {
		t.Fatalf("at 110 cells the question is not on one line:\n%s", ansi.Strip(strings.Join(wide, "\n")))
	}
	d.SetSize(50, 60)
	narrow := d.View()
	if whole(d) {
		t.Error("at 50 cells the question was not wrapped")
	}
	for i, l := range narrow {
		if w := ansi.StringWidth(l); w > 50 {
			t.Errorf("line %d is %d cells wide at width 50", i, w)
		}
	}
	if rows(narrow) <= rows(wide) {
		t.Errorf("the narrow box has %d rows, the wide one %d: nothing wrapped", rows(narrow), rows(wide))
	}
	// A short area shows part of the decision and scrolls.
	d.SetSize(50, 16)
	if f := ansi.Strip(strings.Join(d.View(), "\n")); !strings.Contains(f, "more lines (pgdn)") {
		t.Fatalf("a short dialog does not say there is more:\n%s", f)
	}
	d, _ = dialogKeys(d, "pgdown")
	if d.scroll == 0 || !strings.Contains(ansi.Strip(strings.Join(d.View(), "\n")), "lines above (pgup)") {
		t.Errorf("pgdown did not scroll (scroll %d)", d.scroll)
	}
}

// rows counts the lines that are not blank.
func rows(lines []string) int {
	n := 0
	for _, l := range lines {
		if strings.TrimSpace(ansi.Strip(l)) != "" {
			n++
		}
	}
	return n
}

func testTable(cols ...column) table {
	return newTable(NewTheme(true), DefaultKeyMap(), cols...)
}

func TestTableSetSizeRefitsColumns(t *testing.T) {
	tb := testTable(
		column{title: "NAME", min: 4, max: 20},
		column{title: "RESTARTS", short: "RST", max: 8},
		column{title: "NODE", min: 4, max: 12, drop: 1},
	)
	tb.SetRows([][]cell{
		{plain("etcd-main-0"), plain("0"), plain("node-a")},
		{plain("etcd-main-1"), plain("4"), plain("node-b")},
	})
	header := func() string { return ansi.Strip(tb.View()[0]) }
	tb.SetSize(80, 5)
	if h := header(); h != " NAME        RESTARTS NODE" {
		t.Errorf("at 80 cells the header is %q", h)
	}
	tb.SetSize(24, 5)
	if h := header(); h != " NAME        RST NODE" {
		t.Errorf("at 24 cells the header is %q, want the short title", h)
	}
	tb.SetSize(12, 5)
	if h := header(); h != " NAME RST" {
		t.Errorf("at 12 cells the header is %q, want NODE dropped", h)
	}
	if row := ansi.Strip(tb.View()[1]); row != "›etc… 0" {
		t.Errorf("at 12 cells the first row is %q", row)
	}
	tb.SetSize(80, 5)
	if h := header(); h != " NAME        RESTARTS NODE" {
		t.Errorf("widened again, the header is %q: the short titles stuck", h)
	}
}

func TestTableCursorFollowsWindow(t *testing.T) {
	tb := testTable(column{title: "N"})
	var rs [][]cell
	for _, s := range []string{"r0", "r1", "r2", "r3", "r4", "r5"} {
		rs = append(rs, []cell{plain(s)})
	}
	tb.SetRows(rs)
	tb.SetSize(20, 4) // the header and three rows
	for range 4 {
		tb, _ = tb.Update(keyMsg("down"))
	}
	if tb.cursor != 4 {
		t.Fatalf("cursor %d after four downs, want 4", tb.cursor)
	}
	if got := ansi.Strip(strings.Join(tb.View(), "|")); got != " N| r2| r3|›r4" {
		t.Errorf("window %q, want rows 2 to 4 with 4 marked", got)
	}
	for range 5 {
		tb, _ = tb.Update(keyMsg("down"))
	}
	if tb.cursor != 5 {
		t.Errorf("cursor %d past the end, want 5", tb.cursor)
	}
	tb.SetRows(rs[:2])
	tb.clamp()
	if tb.cursor != 1 {
		t.Errorf("cursor %d after the rows shrank to 2, want 1", tb.cursor)
	}
	tb.static = true
	tb, _ = tb.Update(keyMsg("up"))
	if tb.cursor != 1 || strings.Contains(strings.Join(tb.View(), ""), "›") {
		t.Errorf("a static table moved (%d) or marked a row", tb.cursor)
	}
}

func TestTableGrowColumnTakesTheRest(t *testing.T) {
	tb := testTable(column{title: "A", max: 5}, column{title: "HIST", min: 4, grow: true})
	tb.SetRows([][]cell{{plain("abcde"), plain("")}})
	for _, tc := range []struct{ width, want int }{{30, 23}, {20, 13}} {
		tb.SetSize(tc.width, 2)
		got := -1
		tb.fill(1, func(_, w int) cell { got = w; return plain(strings.Repeat("x", w)) })
		if got != tc.want {
			t.Errorf("at %d cells the growing column got %d, want %d", tc.width, got, tc.want)
		}
		if w := ansi.StringWidth(tb.View()[1]); w != tc.width {
			t.Errorf("at %d cells the filled row is %d wide", tc.width, w)
		}
		tb.SetRows([][]cell{{plain("abcde"), plain("")}})
	}
}

func TestClusterListFilters(t *testing.T) {
	rs := []status.Result{evaluate(healthyObs("db", "etcd-a")), evaluate(degradedObs("db", "etcd-b"))}
	c := newClusterList(NewTheme(true), DefaultKeyMap(), "db")
	c.SetSize(80, 20)
	c.setData(rs, "")
	c, _ = c.Update(keyMsg("down"))
	if r, ok := c.selected(); !ok || r.Observation.Cluster.Name != "etcd-b" {
		t.Fatalf("down selects %v", r.Observation.Cluster.Name)
	}
	c.setData(rs, "not_ready")
	c.clamp()
	if len(c.visible) != 1 {
		t.Fatalf("the filter keeps %d clusters, want 1", len(c.visible))
	}
	if r, ok := c.selected(); !ok || r.Observation.Cluster.Name != "etcd-b" {
		t.Errorf("filtered, the selection is %q", r.Observation.Cluster.Name)
	}
	f := ansi.Strip(strings.Join(c.View(), "\n"))
	if strings.Contains(f, "etcd-a") || !strings.Contains(f, "pod_not_ready") {
		t.Errorf("filtered view:\n%s", f)
	}
	c.setData(rs, "zookeeper")
	if _, ok := c.selected(); ok || !strings.Contains(strings.Join(c.View(), "\n"), "no cluster matches the filter") {
		t.Error("a filter that matches nothing is not said")
	}
}

func TestMemberViewSizeAndPane(t *testing.T) {
	v := newMemberView(NewTheme(true), DefaultKeyMap(), remedy.Load(), clock, cfgViews)
	v.SetSize(120, 20)
	v.setData(evaluate(degradedObs("db", "etcd-b")), "")
	id := memberID(1)
	if f := ansi.Strip(strings.Join(v.View(), "\n")); !strings.Contains(f, id) {
		t.Fatalf("at 120 cells the member ID %s is not whole:\n%s", id, f)
	}
	v.SetSize(80, 20)
	f := ansi.Strip(strings.Join(v.View(), "\n"))
	if strings.Contains(f, id) || !strings.Contains(f, id[:8]) {
		t.Errorf("at 80 cells the member ID is not shortened to %s:\n%s", id[:8], f)
	}
	if n := len(v.View()); n < 20 {
		t.Fatalf("the tab draws %d lines in 20: the pane does not fill it", n)
	}
	v, _ = v.Update(keyMsg("pgdown"))
	if v.lower != 5 || !strings.Contains(ansi.Strip(strings.Join(v.View(), "\n")), "[lines 6–") {
		t.Errorf("pgdown: pane at %d", v.lower)
	}
	for range 50 {
		v, _ = v.Update(keyMsg("pgdown"))
	}
	if last := len(v.pane()) - 1; v.lower != last {
		t.Errorf("the pane scrolled to %d, past its last line %d", v.lower, last)
	}
	v, _ = v.Update(keyMsg("down"))
	if v.cursor != 1 {
		t.Errorf("down: cursor %d", v.cursor)
	}
}

// genSource lists fixed generations.
type genSource []Generation

func (g genSource) List(context.Context, string, string) ([]Generation, error) { return g, nil }

func TestSeedViewListsGenerations(t *testing.T) {
	r := evaluate(healthyObs("db", "etcd-a"))
	v := newSeedView(NewTheme(true), DefaultKeyMap(), clock, genSource{{ID: "etcd-a-nightly", Created: now, Complete: true}}, cfgViews)
	v.SetSize(80, 6)
	v.setData("db/etcd-a", r, nil)
	cmd := v.load(context.Background(), "db/etcd-a", r.Observation.Cluster)
	if cmd == nil {
		t.Fatal("load issued no listing")
	}
	if again := v.load(context.Background(), "db/etcd-a", r.Observation.Cluster); again != nil {
		t.Error("a second listing started while one is under way")
	}
	if f := strings.Join(v.View(), "\n"); !strings.Contains(f, "listing…") {
		t.Errorf("no listing shown:\n%s", f)
	}
	v, _ = v.Update(cmd())
	if f := ansi.Strip(strings.Join(v.View(), "\n")); !strings.Contains(f, "etcd-a-nightly") || !strings.Contains(f, "complete") {
		t.Errorf("the generation is not listed:\n%s", f)
	}
	if n := len(v.View()); n != len(v.lines()) {
		t.Fatalf("unscrolled, the view cut %d of %d lines", len(v.lines())-n, len(v.lines()))
	}
	for range 10 {
		v, _ = v.Update(keyMsg("pgdown"))
	}
	if got, want := len(v.View()), v.height; got != want {
		t.Errorf("scrolled to the end, the view shows %d lines, want a full %d", got, want)
	}
}

func TestDialogOutcomesHaveNames(t *testing.T) {
	for o := dialogKeep; o <= dialogConfirm; o++ {
		if o.String() == "unknown" {
			t.Errorf("dialog outcome %d has no name", o)
		}
	}
}

func TestDialogRestoreNeedsClusterName(t *testing.T) {
	req := Request{Namespace: "db", Cluster: "etcd-a", Intent: model.Intent{Action: model.ActionRestore}}
	d := newDialog(4, req, false, NewTheme(true))
	if d.state != dialogPicking {
		t.Fatalf("a restore without a generation starts %v, want picking", d.state)
	}
	d.pick(clock, false)
	d.SetSize(80, 30)
	d, _, _ = d.Update(generationsMsg{key: "db/other", gens: restoreGens()})
	if d.picker.listed {
		t.Fatal("the picker took another cluster's generations")
	}
	d, _, _ = d.Update(generationsMsg{key: "db/etcd-a", gens: restoreGens()})
	d, out := dialogKeys(d, "j", "enter")
	if out != dialogDecide || d.req.Intent.Options.Generation != "etcd-a-old" || d.state != dialogDeciding {
		t.Fatalf("picking: outcome %v intent %+v state %v", out, d.req.Intent, d.state)
	}
	// A decision that deletes nothing still needs the cluster's name.
	dec := model.Decision{Intent: d.req.Intent, Verb: model.VerbProceed, Flow: model.FlowRestore,
		Steps: []model.Step{{Kind: model.StepScaleDown}}}
	d, _, _ = d.Update(decidedMsg{id: 4, decision: dec})
	if dec.Deletes() || !d.needsName() || d.confirmName() != "etcd-a" {
		t.Fatalf("restore: needsName %v confirmName %q", d.needsName(), d.confirmName())
	}
	if d, out = dialogKeys(d, "enter"); out != dialogKeep || !strings.Contains(d.hint, "type etcd-a exactly") {
		t.Fatalf("enter without the name: %v %q", out, d.hint)
	}
	if d, out = dialogKeys(typeInDialog(d, "etcd-a"), "enter"); out != dialogConfirm {
		t.Errorf("the cluster name: outcome %v (hint %q)", out, d.hint)
	}
}

// cellWidth measures what ansi.StringWidth measures, by length where it
// may (ASCII, with or without CSI styling).
func TestCellWidth(t *testing.T) {
	th := NewTheme(true)
	for _, s := range []string{
		"", "etcd-main-0", "  12 ms", th.Warn.Render("no"), th.Bold.Render("leader") + " x",
		"\x1b[38;2;1;2;3mrgb\x1b[0m", "▁▂▃█ lag", "naïve", "日本語", "a\tb", "\x1b]8;;http://x\x07link\x1b]8;;\x07",
		"\x1b[", "trailing \x1b", "\x1b[1", "emoji 👍",
	} {
		if got, want := cellWidth(s), ansi.StringWidth(s); got != want {
			t.Errorf("cellWidth(%q) = %d, ansi.StringWidth = %d", s, got, want)
		}
	}
}

// The seed tab's member phases read in the cluster's engine's roles and
// unit of lag: a Patroni replica behind the primary is a replica some
// bytes of WAL behind, never a raft learner or voter.
func TestSeedViewPhaseNotesInTheEnginesWords(t *testing.T) {
	r := evaluate(patroniObs("db", "pg"))
	v := newSeedView(NewTheme(true), DefaultKeyMap(), clock, nil, cfgViews)
	v.SetSize(100, 40)
	v.setData("db/pg", r, nil)
	frame := strings.Join(v.View(), "\n")
	if !strings.Contains(frame, "replica, 6.4MiB behind") {
		t.Errorf("the lagging replica's note is not in Patroni's words:\n%s", frame)
	}
	for _, not := range []string{"learner", "voter"} {
		if strings.Contains(frame, not) {
			t.Errorf("a Patroni cluster's seed tab says %q:\n%s", not, frame)
		}
	}
}
