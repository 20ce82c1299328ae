package tui

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/classify"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/tui/components/dialog"
)

// stubGenerations lists fixed generations (or an error) and counts the
// listings.
type stubGenerations struct {
	mu    sync.Mutex
	gens  []Generation
	err   error
	lists int
}

func (g *stubGenerations) List(context.Context, string, string) ([]Generation, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lists++
	return g.gens, g.err
}

// restoreObs is etcd-a as a restore needs it (parallel pods, the data
// directory inside its volume) with quorum lost: only member 0 answers.
func restoreObs() model.Observation {
	o := healthyObs("db", "etcd-a")
	o.Cluster.PodManagementPolicy = "Parallel"
	o.Cluster.Template.DataDir, o.Cluster.Template.DataVolume, o.Cluster.Template.DataMount = "/var/lib/etcd/data", "data", "/var/lib/etcd"
	for i := 1; i < 3; i++ {
		o.Members[i].Pod.Ready = false
		o.Members[i].Engine = &model.EngineFacts{Err: "dial: connection refused", Failure: model.ProbeFailureConnect, ProbedAt: now}
	}
	o.Members[0].Engine.LeaderID = ""
	return o
}

// pinnedRestore decides like the executor: the generation's facts are
// pinned to the intent (as actions.ReadRestoreSource would read them),
// then the real classifier decides on obs. It records every request.
func pinnedRestore(obs model.Observation, got *[]Request) func(Request) (model.Decision, error) {
	return func(req Request) (model.Decision, error) {
		*got = append(*got, req)
		in := req.Intent
		if in.Action == model.ActionRestore && in.Options.Generation != "" {
			in.Options.Source = &model.GenerationFacts{Generation: in.Options.Generation, Engine: etcdengine.Name, ClusterID: testClusterID, Revision: 4900}
			in.Options.SeedStore, in.Options.AgentImage = "file:///seeds/etcd-a", "hactl:test"
		}
		in.Options.Verdict = judged(in.Options.Verdict)
		return classify.Classify(obs, in, now), nil
	}
}

// openPicker opens etcd-a and presses T, feeding the listing back.
func openPicker(t *testing.T, cfg Config, acts Actions, gens Generations, obs model.Observation) Model {
	t.Helper()
	cfg.Namespace = "db"
	m := newTestModel(t, cfg, Deps{Actions: acts, Generations: gens}, obs)
	m = press(t, m, "enter")
	m, cmd := pressCmd(t, m, "T")
	if m.dialog == nil || m.dialog.State() != dialog.Picking {
		t.Fatalf("T did not open the generation picker (dialog %+v)", m.dialog)
	}
	return settle(t, m, cmd)
}

func TestRestorePickerListsPublishedNewestFirst(t *testing.T) {
	acts := &stubActions{}
	gens := &stubGenerations{gens: restoreGens()}
	m := openPicker(t, Config{}, acts, gens, restoreObs())
	if gens.lists != 1 {
		t.Fatalf("%d listings, want 1", gens.lists)
	}
	var ids []string
	for _, g := range m.dialog.Offered() {
		ids = append(ids, g.ID)
	}
	if want := []string{"etcd-a-new", "etcd-a-old"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("picker offers %v, want %v", ids, want)
	}
	f := frame(m)
	iNew, iOld := strings.Index(f, "etcd-a-new"), strings.Index(f, "etcd-a-old")
	if iNew < 0 || iOld < 0 || iNew > iOld {
		t.Errorf("the frame does not list etcd-a-new above etcd-a-old:\n%s", f)
	}
	if strings.Contains(f, "etcd-a-partial") || !strings.Contains(f, "1 partial generation not offered") {
		t.Errorf("the partial generation is offered or not accounted for:\n%s", f)
	}
	for _, want := range []string{"120m", "2d", "4900", "3000", "3.0MiB", "2.0MiB", "↑/↓ select · enter picks · esc cancels"} {
		if !strings.Contains(f, want) {
			t.Errorf("picker lacks %q:\n%s", want, f)
		}
	}
	if acts.calls() != 0 {
		t.Error("opening the picker asked the classifier")
	}
}

func TestRestorePickerEscCancels(t *testing.T) {
	acts := &stubActions{}
	m := openPicker(t, Config{}, acts, &stubGenerations{gens: restoreGens()}, restoreObs())
	m = press(t, m, "down", "esc")
	if m.dialog != nil || acts.calls() != 0 || !strings.Contains(m.statusText, "nothing was changed") {
		t.Errorf("esc: dialog %v, %d decisions, status %q", m.dialog != nil, acts.calls(), m.statusText)
	}
}

func TestRestorePickerEmptyAndFailedListings(t *testing.T) {
	acts := &stubActions{}
	m := openPicker(t, Config{}, acts, &stubGenerations{gens: restoreGens()[1:2]}, restoreObs())
	f := flat(frame(m))
	if !strings.Contains(f, "No published seed generation of etcd-a") || !strings.Contains(f, "kubectl hactl seed etcd-a --generation G") {
		t.Errorf("an empty picker does not say so and how to create one:\n%s", frame(m))
	}
	m = press(t, m, "enter")
	if m.dialog == nil || m.dialog.State() != dialog.Picking || acts.calls() != 0 || !strings.Contains(m.dialog.Hint(), "no generation") {
		t.Errorf("enter on an empty picker: dialog %+v, %d decisions", m.dialog, acts.calls())
	}
	m = openPicker(t, Config{}, acts, &stubGenerations{err: errors.New("s3: AccessDenied on bucket seeds")}, restoreObs())
	if f := flat(frame(m)); !strings.Contains(f, "Cannot list the seed generations") || !strings.Contains(f, "AccessDenied on bucket seeds") {
		t.Errorf("the listing error is not shown:\n%s", frame(m))
	}
	m = openPicker(t, Config{}, acts, nil, restoreObs())
	if f := flat(frame(m)); !strings.Contains(f, "kubectl hactl restore etcd-a --generation G") {
		t.Errorf("without a lister the picker does not point to the CLI:\n%s", frame(m))
	}
}

func TestRestorePickSendsDecide(t *testing.T) {
	var got []Request
	acts := &stubActions{decide: pinnedRestore(restoreObs(), &got)}
	m := openPicker(t, Config{LockHolder: "me@here"}, acts, &stubGenerations{gens: restoreGens()}, restoreObs())
	m = press(t, m, "down", "up", "down")
	m, cmd := pressCmd(t, m, "enter")
	if m.dialog == nil || m.dialog.State() != dialog.Deciding {
		t.Fatalf("enter did not classify the pick (dialog %+v)", m.dialog)
	}
	m = settle(t, m, cmd)
	if len(got) != 1 {
		t.Fatalf("%d decisions, want 1", len(got))
	}
	r := got[0]
	if r.Namespace != "db" || r.Cluster != "etcd-a" || r.Intent.Action != model.ActionRestore || r.Intent.Member != "" ||
		r.Intent.Options.Generation != "etcd-a-old" || r.Intent.Options.LockHolder != "me@here" {
		t.Errorf("decided %+v", r)
	}
	if r.Intent.Options.Source != nil || r.Intent.Options.Force {
		t.Errorf("the TUI pinned a source or forced: %+v", r.Intent.Options)
	}
	if m.dialog.State() != dialog.Decided || !strings.Contains(frame(m), "restore from etcd-a-old") {
		t.Errorf("the dialog does not show the decision on etcd-a-old:\n%s", frame(m))
	}
}

func TestRestoreTypesClusterNameAndExecutesTheDecision(t *testing.T) {
	var got []Request
	obs := restoreObs()
	acts := &stubActions{decide: pinnedRestore(obs, &got), receipts: []model.Receipt{
		{Phase: model.ActionPhaseFencing, Step: model.StepScaleDown, Outcome: model.OutcomeDone, At: now, Detail: "scaled to 0"},
	}}
	m := openPicker(t, Config{}, acts, &stubGenerations{gens: restoreGens()}, obs)
	m, cmd := pressCmd(t, m, "enter")
	m = settle(t, m, cmd)
	d := m.dialog
	if d == nil || !dialog.Runnable(d.Decision()) || d.Decision().Flow != model.FlowRestore {
		t.Fatalf("no runnable restore decision: %+v\n%s", d, frame(m))
	}
	want := d.Decision()
	if f := flat(frame(m)); !strings.Contains(f, "Type etcd-a to confirm") || !strings.Contains(f, classify.Describe(want)[0]) {
		t.Errorf("the dialog does not show the decision and ask for the cluster name:\n%s", frame(m))
	}
	m = press(t, m, "enter")
	if m.dialog == nil || !strings.Contains(m.dialog.Hint(), "type etcd-a exactly") {
		t.Fatal("enter without the cluster name did not ask for it")
	}
	for _, wrong := range []string{"etcd-a-0", "etcd-"} {
		m = typeText(t, m, wrong)
		m = press(t, m, "enter")
		if m.dialog == nil || len(acts.executed) != 0 {
			t.Fatalf("typing %q started the restore", wrong)
		}
		for range len(wrong) {
			m = send(t, m, tea.KeyPressMsg{Code: tea.KeyBackspace})
		}
	}
	m = typeText(t, m, "etcd-a")
	m, cmd = pressCmd(t, m, "enter")
	if m.dialog != nil || m.action == nil || m.tab != tabSeed {
		t.Fatalf("the cluster name did not start the restore (dialog %v, action %v, tab %v)", m.dialog != nil, m.action != nil, m.tab)
	}
	m = settle(t, m, cmd)
	if len(acts.confirmed) != 1 || !reflect.DeepEqual(acts.confirmed[0], want) {
		t.Fatalf("executed %d decisions, not exactly the confirmed one", len(acts.confirmed))
	}
	if in := acts.executed[0].Intent; in.Action != model.ActionRestore || in.Options.Generation != "etcd-a-new" || in.Member != "" {
		t.Errorf("executed request %+v", in)
	}
	if f := frame(m); !strings.Contains(f, "restore from etcd-a-new") || !strings.Contains(f, "scale-down done: scaled to 0") {
		t.Errorf("the seed-phase view does not show the restore's receipts:\n%s", f)
	}
}

func TestRestoreForceOverride(t *testing.T) {
	var got []Request
	obs := restoreObs()
	obs.Members[1] = healthyObs("db", "etcd-a").Members[1]
	obs.Members[0].Engine.LeaderID = memberID(0)
	obs.Members[1].Engine.LeaderID = memberID(0)
	acts := &stubActions{decide: pinnedRestore(obs, &got)}
	m := openPicker(t, Config{}, acts, &stubGenerations{gens: restoreGens()}, obs)
	m, cmd := pressCmd(t, m, "enter")
	m = settle(t, m, cmd)
	f := flat(frame(m))
	if dialog.Runnable(m.dialog.Decision()) || !strings.Contains(f, "key 1 switches --force (off)") {
		t.Fatalf("a restore of a cluster with quorum is not refused with --force offered:\n%s", frame(m))
	}
	m, cmd = pressCmd(t, m, "1")
	m = settle(t, m, cmd)
	if len(got) != 2 || !got[1].Intent.Options.Force || got[1].Intent.Options.Generation != "etcd-a-new" {
		t.Fatalf("1 did not redecide with --force on the same generation: %+v", got)
	}
	if !dialog.Runnable(m.dialog.Decision()) || !strings.Contains(frame(m), "overrides on: --force") || !m.dialog.NeedsName() {
		t.Errorf("--force did not lead to a runnable restore asking for the name:\n%s", frame(m))
	}
}

func TestReadOnlyBlocksRestore(t *testing.T) {
	acts := &stubActions{}
	gens := &stubGenerations{gens: restoreGens()}
	m := newTestModel(t, Config{Namespace: "db", ReadOnly: true, ReadOnlyReason: "context prod is read-only"}, Deps{Actions: acts, Generations: gens}, restoreObs())
	m = press(t, m, "enter", "T")
	if m.dialog != nil {
		t.Fatal("T opened a dialog in read-only mode")
	}
	if !m.statusError || !strings.Contains(m.statusText, "context prod is read-only") {
		t.Errorf("status %q, want the read-only reason", m.statusText)
	}
	if strings.Contains(frame(m), "T restore") {
		t.Error("the help line offers restore in read-only mode")
	}
	if acts.calls() != 0 || gens.lists != 0 {
		t.Errorf("read-only T decided %d times, listed %d times", acts.calls(), gens.lists)
	}
}

func TestRestoreKeyOffered(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db"}, Deps{Actions: &stubActions{}}, restoreObs())
	m = send(t, m, tea.WindowSizeMsg{Width: 160, Height: 30})
	m = press(t, m, "enter")
	if !strings.Contains(frame(m), "T restore") {
		t.Errorf("the help line does not offer restore:\n%s", frame(m))
	}
	m = press(t, m, "?")
	if !strings.Contains(frame(m), "T restore") {
		t.Errorf("the help screen does not list restore:\n%s", frame(m))
	}
}
