package tui

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/components/dialog"
	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/tui/internal/feed"
	"github.com/hactl-dev/hactl/tui/internal/tuitest"
)

func TestNavigation(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db"}, Deps{}, healthyObs("db", "etcd-a"), degradedObs("db", "etcd-b"))
	if m.screen != screenClusters {
		t.Fatalf("starts on %v, want clusters", m.screen)
	}
	m = press(t, m, "down", "enter")
	if m.screen != screenCluster || m.focus != "db/etcd-b" || m.tab != tabMembers {
		t.Fatalf("after down+enter: screen %v focus %q tab %v", m.screen, m.focus, m.tab)
	}
	if !strings.Contains(frame(m), "pod_not_ready") {
		t.Error("the degraded cluster's view does not show its reason")
	}
	m = press(t, m, "tab")
	if m.tab != tabSeed {
		t.Errorf("tab → %v, want seed phase", m.tab)
	}
	m = press(t, m, "tab")
	if m.tab != tabReadiness {
		t.Errorf("tab → %v, want readiness", m.tab)
	}
	m = press(t, m, "tab")
	if m.tab != tabHistory {
		t.Errorf("tab → %v, want history", m.tab)
	}
	m = press(t, m, "tab")
	if m.tab != tabMembers {
		t.Errorf("tab wraps to %v, want members", m.tab)
	}
	m = press(t, m, "shift+tab")
	if m.tab != tabHistory {
		t.Errorf("shift+tab → %v, want history", m.tab)
	}
	m = press(t, m, "3")
	if m.tab != tabReadiness {
		t.Errorf("3 → %v, want readiness", m.tab)
	}
	m = press(t, m, "1")
	if m.tab != tabMembers {
		t.Errorf("1 → %v, want members", m.tab)
	}
	m = press(t, m, "down", "down", "down")
	if m.members.Cursor() != 2 {
		t.Errorf("member cursor %d after three downs in 3 members, want 2", m.members.Cursor())
	}
	m = press(t, m, "esc")
	if m.screen != screenClusters {
		t.Errorf("esc → %v, want clusters", m.screen)
	}
	if m.clusters.Cursor() != 1 {
		t.Errorf("cluster cursor %d after coming back, want 1 (kept)", m.clusters.Cursor())
	}
}

func TestOpenClusterByName(t *testing.T) {
	m := newTestModel(t, Config{Cluster: "etcd-b"}, Deps{}, healthyObs("db", "etcd-a"), degradedObs("other", "etcd-b"))
	if m.screen != screenCluster || m.focus != "other/etcd-b" {
		t.Fatalf("screen %v focus %q, want cluster other/etcd-b", m.screen, m.focus)
	}
	m = press(t, m, "esc")
	if m.screen != screenClusters {
		t.Errorf("esc → %v", m.screen)
	}
}

func TestMissingClusterIsSaid(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db", Cluster: "nope"}, Deps{}, healthyObs("db", "etcd-a"))
	if f := frame(m); !strings.Contains(f, "db/nope is not in scope") {
		t.Errorf("frame does not say the cluster is missing:\n%s", f)
	}
}

func TestFilter(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db"}, Deps{}, healthyObs("db", "etcd-a"), degradedObs("db", "etcd-b"), healthyObs("db", "zk-c"))
	m = press(t, m, "/")
	if !m.filtering {
		t.Fatal("/ did not open the filter")
	}
	m = typeText(t, m, "etcd-")
	if n := len(m.visibleClusters()); n != 2 {
		t.Errorf("filter etcd- shows %d clusters, want 2", n)
	}
	m = press(t, m, "enter")
	if m.filtering || m.filter.Value() != "etcd-" {
		t.Errorf("enter: filtering %v value %q", m.filtering, m.filter.Value())
	}
	if f := frame(m); strings.Contains(f, "zk-c") || !strings.Contains(f, "filter: etcd-") {
		t.Errorf("filtered frame:\n%s", f)
	}
	// Filtering by reason code finds the degraded cluster.
	m = press(t, m, "/")
	for range "etcd-" {
		m = send(t, m, tea.KeyPressMsg{Code: tea.KeyBackspace})
	}
	m = typeText(t, m, "not_ready")
	if vis := m.visibleClusters(); len(vis) != 1 || vis[0].Observation.Cluster.Name != "etcd-b" {
		t.Errorf("filter not_ready shows %d clusters", len(vis))
	}
	m = press(t, m, "enter", "esc")
	if m.filter.Value() != "" || len(m.visibleClusters()) != 3 {
		t.Errorf("esc did not clear the filter: %q", m.filter.Value())
	}
	if m.screen != screenClusters {
		t.Error("esc with a filter left the screen instead of clearing the filter")
	}
	// In a cluster, the filter narrows the members.
	m = press(t, m, "down", "enter", "/")
	m = typeText(t, m, "etcd-b-2")
	m = press(t, m, "enter")
	r, _ := m.focused()
	if ms := m.visibleMembers(r); len(ms) != 1 || ms[0].Name != "etcd-b-2" {
		t.Errorf("member filter shows %d members", len(ms))
	}
}

func TestHelpAndQuit(t *testing.T) {
	m := newTestModel(t, Config{}, Deps{}, healthyObs("db", "etcd-a"))
	m = press(t, m, "?")
	if !m.showHelp || !strings.Contains(frame(m), "Keys") {
		t.Fatal("? did not open the help")
	}
	m = press(t, m, "esc")
	if m.showHelp {
		t.Fatal("esc did not close the help")
	}
	for _, k := range []string{"q", "ctrl+c"} {
		_, cmd := m.Update(keyMsg(k))
		if cmd == nil {
			t.Fatalf("%s returned no command", k)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("%s did not quit", k)
		}
	}
}

func TestResizeKeepsFrameInBounds(t *testing.T) {
	m := newTestModel(t, Config{}, Deps{}, healthyObs("db", "etcd-a"), degradedObs("payments", "etcd-orders-with-a-long-name"))
	for _, size := range [][2]int{{80, 24}, {120, 40}, {60, 20}, {40, 12}, {200, 60}, {20, 6}} {
		m = send(t, m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		for _, keys := range [][]string{nil, {"down", "enter"}, {"tab"}, {"tab"}, {"?"}, {"esc", "esc", "esc"}} {
			m = press(t, m, keys...)
			checkFrame(t, frame(m), size[0], size[1])
		}
	}
}

func TestUnknownSizeKeepsTheFrame(t *testing.T) {
	m := newTestModel(t, Config{}, Deps{}, healthyObs("db", "etcd-a"))
	m = send(t, m, tea.WindowSizeMsg{Width: 0, Height: 0})
	f := frame(m)
	checkFrame(t, f, 80, 24)
	if !strings.Contains(f, "etcd-a") {
		t.Errorf("a zero window size blanked the screen:\n%s", f)
	}
}

func TestReadOnlyDisablesActions(t *testing.T) {
	acts := &stubActions{}
	m := newTestModel(t, Config{Namespace: "db", ReadOnly: true, ReadOnlyReason: "--readonly"}, Deps{Actions: acts}, degradedObs("db", "etcd-b"))
	m = press(t, m, "enter", "down", "down")
	for _, k := range []string{"r", "R", "s"} {
		m = press(t, m, k)
		if m.dialog != nil {
			t.Fatalf("%s opened a dialog in read-only mode", k)
		}
		if !m.statusError || !strings.Contains(m.statusText, "read-only") || !strings.Contains(m.statusText, "--readonly") {
			t.Errorf("%s: status %q, want the read-only reason", k, m.statusText)
		}
	}
	if strings.Contains(frame(m), "replace member") {
		t.Error("the help line still offers replace")
	}
	// Explain only shows a decision: allowed.
	m = press(t, m, "x")
	if m.dialog == nil || !m.dialog.Explain() {
		t.Fatal("x did not open an explain dialog in read-only mode")
	}
	if acts.calls() != 0 {
		t.Error("Decide ran synchronously in Update")
	}
}

// flat is a frame's text inside a dialog box, joined into one line (so a
// wrapped sentence can be found whole).
func flat(f string) string {
	var parts []string
	for _, l := range strings.Split(f, "\n") {
		l = strings.Trim(l, " │╭╮╰╯─")
		if l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

// stubActions decides from a table and records executions. It stands in
// for the classifier and executor only in these pure component tests.
type stubActions struct {
	mu       sync.Mutex
	decide   func(Request) (model.Decision, error)
	executed []Request
	// confirmed are the decisions Execute was given, one per execution.
	confirmed []model.Decision
	receipts  []model.Receipt
	execErr   error
	n         int
}

func (s *stubActions) calls() int { s.mu.Lock(); defer s.mu.Unlock(); return s.n }

func (s *stubActions) Decide(_ context.Context, req Request) (model.Decision, error) {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	if s.decide == nil {
		return model.Decision{Intent: req.Intent, Verb: model.VerbProceed}, nil
	}
	return s.decide(req)
}

func (s *stubActions) Execute(_ context.Context, req Request, d model.Decision, progress func(model.Receipt)) error {
	s.mu.Lock()
	s.executed = append(s.executed, req)
	s.confirmed = append(s.confirmed, d)
	rs := s.receipts
	s.mu.Unlock()
	for _, r := range rs {
		progress(r)
	}
	return s.execErr
}

// run executes cmd (and the commands it batches) and returns the
// messages, waiting at most timeout for each.
func run(t *testing.T, cmd tea.Cmd) []tea.Msg {
	t.Helper()
	if cmd == nil {
		return nil
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("command did not return")
	}
	if b, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Msg
		for _, c := range b {
			out = append(out, run(t, c)...)
		}
		return out
	}
	if msg == nil {
		return nil
	}
	return []tea.Msg{msg}
}

// settle feeds the messages of cmd back into the model, skipping ticks
// and blinking cursors, until nothing is left.
func settle(t *testing.T, m Model, cmd tea.Cmd) Model {
	t.Helper()
	queue := runFiltered(t, cmd)
	for len(queue) > 0 {
		msg := queue[0]
		queue = queue[1:]
		switch msg.(type) {
		case dialog.DecidedMsg, actionReceiptMsg, actionDoneMsg, common.GenerationsMsg, feed.ObservedMsg:
		default:
			continue
		}
		nm, c := m.Update(msg)
		m = nm.(Model)
		queue = append(queue, runFiltered(t, c)...)
	}
	return m
}

// runFiltered runs only the commands that finish at once (no timers).
var runFiltered = tuitest.RunFiltered

func pressCmd(t *testing.T, m Model, k string) (Model, tea.Cmd) {
	t.Helper()
	nm, cmd := m.Update(keyMsg(k))
	return nm.(Model), cmd
}

func TestReplaceThroughDialog(t *testing.T) {
	acts := &stubActions{decide: classifyOn(degradedObs("db", "etcd-b")), receipts: []model.Receipt{
		{Phase: model.ActionPhaseRemoving, Step: model.StepRemoveMember, Outcome: model.OutcomeDone, At: now, Detail: "removed"},
		{Phase: model.ActionPhaseRemoving, Step: model.StepDeletePVC, Outcome: model.OutcomeDone, At: now},
		{Phase: model.ActionPhaseReady, Step: model.StepReleaseLock, Outcome: model.OutcomeDone, At: now},
	}}
	m := newTestModel(t, Config{Namespace: "db"}, Deps{Actions: acts}, degradedObs("db", "etcd-b"))
	m = press(t, m, "enter", "down", "down")
	m, cmd := pressCmd(t, m, "r")
	if m.dialog == nil || m.dialog.State() != dialog.Deciding {
		t.Fatal("r did not open a deciding dialog")
	}
	if !strings.Contains(frame(m), "classifying") {
		t.Error("the dialog does not say it is classifying")
	}
	m = settle(t, m, cmd)
	if m.dialog == nil || m.dialog.State() != dialog.Decided {
		t.Fatalf("no decision in the dialog: %+v", m.dialog)
	}
	f := flat(frame(m))
	for _, want := range []string{"will proceed", "quorum: 3 voters, quorum 2", "without etcd-b-2: 2 healthy >= 2: ok", "Type etcd-b-2 to confirm"} {
		if !strings.Contains(f, want) {
			t.Errorf("dialog at 80x24 lacks %q:\n%s", want, frame(m))
		}
	}
	// Everything else is one scroll away.
	m = press(t, m, "pgdown", "pgdown", "pgdown")
	if f := flat(frame(m)); !strings.Contains(f, "promote the learner etcd-b-2") || !strings.Contains(f, "Type etcd-b-2 to confirm") {
		t.Errorf("scrolled dialog lacks the fences or the question:\n%s", f)
	}
	// Enter without the name does nothing.
	m = press(t, m, "enter")
	if m.dialog == nil || !strings.Contains(m.dialog.Hint(), "type etcd-b-2") {
		t.Fatal("enter without typing the name did not ask for it")
	}
	// A wrong name does nothing either.
	m = typeText(t, m, "etcd-b-1")
	m = press(t, m, "enter")
	if m.dialog == nil || len(acts.executed) != 0 {
		t.Fatal("a wrong name started the action")
	}
	for range len("etcd-b-1") {
		m = send(t, m, tea.KeyPressMsg{Code: tea.KeyBackspace})
	}
	m = typeText(t, m, "etcd-b-2")
	m, cmd = pressCmd(t, m, "enter")
	if m.dialog != nil || m.action == nil || m.tab != tabSeed {
		t.Fatalf("the typed name did not start the action (dialog %v, action %v, tab %v)", m.dialog != nil, m.action != nil, m.tab)
	}
	m = settle(t, m, cmd)
	if len(acts.executed) != 1 || acts.executed[0].Intent.Member != "etcd-b-2" || acts.executed[0].Intent.Action != model.ActionReplace {
		t.Fatalf("executed %+v", acts.executed)
	}
	if !m.action.Done || m.action.Err != nil || len(m.action.Receipts) != 3 {
		t.Fatalf("action = %+v", m.action)
	}
	f = frame(m)
	if !strings.Contains(f, "finished") || !strings.Contains(f, "remove-member done: removed") {
		t.Errorf("the seed-phase view does not show the finished action and its receipts:\n%s", f)
	}
}

func TestActionErrorLandsInStatusLine(t *testing.T) {
	acts := &stubActions{decide: classifyOn(degradedObs("db", "etcd-b")), execErr: errors.New("fence conflict: pod etcd-b-2 changed (uid/resourceVersion)"),
		receipts: []model.Receipt{{Phase: model.ActionPhaseFencing, Step: model.StepVerifyFences, Outcome: model.OutcomeConflict, At: now}}}
	m := newTestModel(t, Config{Namespace: "db"}, Deps{Actions: acts}, degradedObs("db", "etcd-b"))
	m = press(t, m, "enter", "down", "down")
	m, cmd := pressCmd(t, m, "r")
	m = settle(t, m, cmd)
	m = typeText(t, m, "etcd-b-2")
	m, cmd = pressCmd(t, m, "enter")
	m = settle(t, m, cmd)
	if !m.statusError || !strings.Contains(m.statusText, "fence conflict") {
		t.Errorf("status %q (error %v), want the fence conflict", m.statusText, m.statusError)
	}
	lines := strings.Split(frame(m), "\n")
	if !strings.Contains(lines[len(lines)-2], "fence conflict") {
		t.Errorf("status line %q", lines[len(lines)-2])
	}
}

func TestBlockedDecisionAndOverride(t *testing.T) {
	acts := &stubActions{decide: classifyOn(healthyObs("db", "etcd-b"))}
	m := newTestModel(t, Config{Namespace: "db"}, Deps{Actions: acts}, healthyObs("db", "etcd-b"))
	m = press(t, m, "enter") // cursor on etcd-b-0, the leader
	m, cmd := pressCmd(t, m, "r")
	m = settle(t, m, cmd)
	f := flat(frame(m))
	if !strings.Contains(f, "refused target_is_leader") || !strings.Contains(f, "key 1 switches --move-leader (off)") || !strings.Contains(f, "Refused") {
		t.Fatalf("blocked decision not shown:\n%s", f)
	}
	m = press(t, m, "enter")
	if len(acts.executed) != 0 || m.dialog == nil {
		t.Fatal("enter ran a refused decision")
	}
	m, cmd = pressCmd(t, m, "1")
	if m.dialog == nil || !m.dialog.Request().Intent.Options.MoveLeader {
		t.Fatal("1 did not switch --move-leader on")
	}
	m = settle(t, m, cmd)
	if !dialog.Runnable(m.dialog.Decision()) || !strings.Contains(frame(m), "overrides on: --move-leader") {
		t.Errorf("override did not lead to a runnable decision:\n%s", frame(m))
	}
	m = press(t, m, "esc")
	if m.dialog != nil || len(acts.executed) != 0 || !strings.Contains(m.statusText, "nothing was changed") {
		t.Errorf("esc: dialog %v executed %d status %q", m.dialog != nil, len(acts.executed), m.statusText)
	}
}

func TestExplainNeverRuns(t *testing.T) {
	acts := &stubActions{decide: classifyOn(degradedObs("db", "etcd-b"))}
	m := newTestModel(t, Config{Namespace: "db"}, Deps{Actions: acts}, degradedObs("db", "etcd-b"))
	m = press(t, m, "enter", "down", "down")
	m, cmd := pressCmd(t, m, "x")
	m = settle(t, m, cmd)
	if !strings.Contains(frame(m), "explain only") {
		t.Fatalf("not an explain dialog:\n%s", frame(m))
	}
	m, cmd = pressCmd(t, m, "i")
	if m.dialog.Request().Intent.Action != model.ActionReseed {
		t.Errorf("i → %v, want reseed", m.dialog.Request().Intent.Action)
	}
	m = settle(t, m, cmd)
	m = typeText(t, m, "etcd-b-2")
	m = press(t, m, "enter")
	if len(acts.executed) != 0 || m.dialog != nil {
		t.Errorf("explain executed %d or stayed open", len(acts.executed))
	}
}

func TestSeedAsksForGeneration(t *testing.T) {
	var got Request
	acts := &stubActions{decide: func(req Request) (model.Decision, error) {
		got = req
		return model.Decision{Intent: req.Intent, Verb: model.VerbProceed, Flow: model.FlowSeed,
			Steps: []model.Step{{Kind: model.StepCaptureSnapshot}, {Kind: model.StepUpload}, {Kind: model.StepPublish}}}, nil
	}}
	m := newTestModel(t, Config{Namespace: "db"}, Deps{Actions: acts}, healthyObs("db", "etcd-a"))
	m = press(t, m, "enter", "s")
	if m.dialog == nil || m.dialog.State() != dialog.Asking {
		t.Fatal("s did not ask for a generation ID")
	}
	if v := m.dialog.Input(); v != "etcd-a-20261129-120000" {
		t.Errorf("default generation %q", v)
	}
	for range len("120000") {
		m = send(t, m, tea.KeyPressMsg{Code: tea.KeyBackspace})
	}
	m = typeText(t, m, "nightly")
	m, cmd := pressCmd(t, m, "enter")
	m = settle(t, m, cmd)
	if got.Intent.Action != model.ActionSeed || got.Intent.Options.Generation != "etcd-a-20261129-nightly" {
		t.Errorf("decided %+v", got.Intent)
	}
	if m.dialog.NeedsName() {
		t.Error("a seed (deletes nothing) asks for a name")
	}
	m, cmd = pressCmd(t, m, "enter")
	m = settle(t, m, cmd)
	if len(acts.executed) != 1 {
		t.Errorf("seed executed %d times", len(acts.executed))
	}
}

func TestQuitWhileActionRunsAsksFirst(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db"}, Deps{}, healthyObs("db", "etcd-a"))
	m.action = &common.RunningAction{Req: Request{Intent: model.Intent{Action: model.ActionReplace, Member: "etcd-a-2"}}}
	m, cmd := pressCmd(t, m, "q")
	if cmd != nil || !m.quitArmed || !strings.Contains(m.statusText, "press q again") {
		t.Fatalf("first q: cmd %v armed %v status %q", cmd != nil, m.quitArmed, m.statusText)
	}
	_, cmd = pressCmd(t, m, "q")
	if cmd == nil {
		t.Fatal("second q did not quit")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("second q did not quit")
	}
}

var cfgVerdict = judged(Config{}.Verdict)

func TestWatchErrorShownAndReissued(t *testing.T) {
	b := &tuitest.StubBackend{Changed: make(chan struct{}), Errs: make(chan error, 1)}
	m := New(context.Background(), Config{Now: clock, Verdict: cfgVerdict, Views: cfgViews}, Deps{Backend: b})
	nm, cmd := m.Update(feed.WatchErrMsg{Err: errors.New("watch pods: forbidden")})
	m = nm.(Model)
	if !m.statusError || !strings.Contains(m.statusText, "forbidden") {
		t.Errorf("status %q", m.statusText)
	}
	if cmd == nil {
		t.Fatal("the error stream was not read again")
	}
	b.Errs <- errors.New("again")
	if msg := cmd(); msg.(feed.WatchErrMsg).Err.Error() != "again" {
		t.Errorf("next message %v", msg)
	}
}

func TestSyncErrorShown(t *testing.T) {
	m := New(context.Background(), Config{Now: clock, Verdict: cfgVerdict, Views: cfgViews}, Deps{})
	m = send(t, m, feed.SyncedMsg{Err: errors.New("you may not list statefulsets.apps")})
	if f := frame(m); !strings.Contains(f, "Cannot read the clusters") || !strings.Contains(f, "statefulsets.apps") {
		t.Errorf("frame:\n%s", f)
	}
}

func TestEnumsHaveNames(t *testing.T) {
	for s := screenClusters; s <= screenCluster; s++ {
		if s.String() == "unknown" {
			t.Errorf("screen %d has no name", s)
		}
	}
	for tb := tab(0); tb < numTabs; tb++ {
		if tb.String() == "unknown" {
			t.Errorf("tab %d has no name", tb)
		}
	}
}

func TestLongListsFollowTheCursor(t *testing.T) {
	var obs []model.Observation
	for i := range 30 {
		obs = append(obs, healthyObs("db", fmt.Sprintf("etcd-%02d", i)))
	}
	big := healthyObs("db", "etcd-big")
	for i := 3; i < 12; i++ {
		mem := big.Members[1]
		pod := *mem.Pod
		mem.Name, mem.Ordinal, pod.Name = fmt.Sprintf("etcd-big-%d", i), i, fmt.Sprintf("etcd-big-%d", i)
		mem.Pod = &pod
		big.Members = append(big.Members, mem)
	}
	obs = append(obs, big)
	m := newTestModel(t, Config{Namespace: "db"}, Deps{}, obs...)
	for range 29 {
		m = press(t, m, "down")
	}
	if f := frame(m); !strings.Contains(f, "›etcd-29") {
		t.Fatalf("the selected cluster scrolled out of view:\n%s", f)
	}
	m = press(t, m, "down", "enter")
	for range 11 {
		m = press(t, m, "down")
	}
	if f := frame(m); !strings.Contains(f, "›11 etcd-big-11") {
		t.Errorf("the selected member scrolled out of view:\n%s", f)
	}
	for range 11 {
		m = press(t, m, "up")
	}
	if f := frame(m); !regexp.MustCompile(`›0 +etcd-big-0`).MatchString(f) {
		t.Errorf("the first member is not back in view:\n%s", f)
	}
}

// The first screen comes from the direct read while the watches sync: the
// members show before Start returns and the read schedules nothing of its
// own. Once the watches synced, a cache read takes over and the first probe round is a probe interval
// later, not at once; a late direct read changes nothing.
func TestFirstScreenFromTheDirectRead(t *testing.T) {
	direct := evaluate(healthyObs("db", "etcd-a"))
	later := healthyObs("db", "etcd-a")
	later.Members[2].Pod.Ready = false
	b := &tuitest.DirectBackend{
		StubBackend: tuitest.StubBackend{Changed: make(chan struct{}, 1), Errs: make(chan error, 1), Answer: func(bool) []status.Result {
			return []status.Result{status.Evaluate(later, now, cfgVerdict)}
		}},
		Release: make(chan struct{}),
		Direct:  []status.Result{direct},
	}
	m := New(context.Background(), Config{Namespace: "db", Cluster: "etcd-a", Now: clock, Probes: true, Verdict: cfgVerdict, Views: cfgViews}, Deps{Backend: b})
	var cmds []tea.Cmd
	if batch, ok := m.Init()().(tea.BatchMsg); ok {
		cmds = batch
	}
	var directMsg tea.Msg
	for _, c := range cmds {
		if c == nil {
			continue
		}
		done := make(chan tea.Msg, 1)
		go func() { done <- c() }()
		select {
		case msg := <-done:
			if o, ok := msg.(feed.ObservedMsg); ok && o.Direct {
				directMsg = msg
			}
		case <-time.After(2 * time.Second):
			// Start: blocked until release.
		}
	}
	if directMsg == nil {
		t.Fatal("Init issued no direct read")
	}
	nm, cmd := m.Update(directMsg)
	m = nm.(Model)
	if cmd != nil {
		t.Errorf("the direct read scheduled %v (probes are the watches' path)", cmd)
	}
	if f := ansi.Strip(m.Render()); !strings.Contains(f, "etcd-a-2") || !m.feed.Loaded() {
		t.Fatalf("no members on the first screen while the watches sync:\n%s", f)
	}
	close(b.Release)
	nm, cmd = m.Update(feed.SyncedMsg{})
	m = nm.(Model)
	m = settle(t, m, cmd)
	if r, _ := m.focused(); r.Observation.Members[2].Pod.Ready {
		t.Fatal("the watches' cache read did not take over")
	}
	probes, reads := b.Counts()
	if probes != 0 || reads != 1 {
		t.Fatalf("after the sync: %d probe rounds and %d cache reads, want 0 and 1 (the members were just probed)", probes, reads)
	}
	nm, cmd = m.Update(feed.ProbeTickMsg{})
	m = settle(t, nm.(Model), cmd)
	probes, _ = b.Counts()
	if probes != 1 {
		t.Fatalf("the probe tick started %d rounds, want 1", probes)
	}
	nm, _ = m.Update(directMsg)
	m = nm.(Model)
	if r, _ := m.focused(); r.Observation.Members[2].Pod.Ready {
		t.Fatal("a late direct read replaced a newer observation")
	}
}

// When the watches cannot sync, a first screen from the direct read does
// not stay up looking live: the error screen replaces it.
func TestSyncFailureReplacesTheDirectRead(t *testing.T) {
	m := New(context.Background(), Config{Namespace: "db", Now: clock, Probes: true, Verdict: cfgVerdict, Views: cfgViews}, Deps{})
	nm, _ := m.Update(feed.ObservedMsg{Direct: true, Probed: true, Results: []status.Result{evaluate(healthyObs("db", "etcd-a"))}, At: now})
	m = nm.(Model)
	if !m.feed.Loaded() || !strings.Contains(ansi.Strip(m.Render()), "etcd-a") {
		t.Fatalf("the direct read was not shown:\n%s", ansi.Strip(m.Render()))
	}
	nm, _ = m.Update(feed.SyncedMsg{Err: errors.New("watch pods: forbidden")})
	m = nm.(Model)
	if f := ansi.Strip(m.Render()); m.feed.Loaded() || strings.Contains(f, "etcd-a") || !strings.Contains(f, "forbidden") {
		t.Fatalf("after the sync failed the screen still shows the direct read:\n%s", f)
	}
}
