package dialog

import (
	"context"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/tui/internal/tuitest"
)

// These tests drive the dialog on its own, without the root model.

// decidedDialog is a replace dialog for member of obs, sized w×h, that
// received the real classifier's decision.
func decidedDialog(t *testing.T, obs model.Observation, member string, w, h int) Model {
	t.Helper()
	req := common.Request{Namespace: obs.Cluster.Namespace, Cluster: obs.Cluster.Name,
		Intent: model.Intent{Action: model.ActionReplace, Member: member}}
	d := New(7, req, false, common.NewTheme(true))
	d.SetSize(w, h)
	dec, err := tuitest.ClassifyOn(obs)(req)
	if err != nil {
		t.Fatal(err)
	}
	d, out, _ := d.Update(DecidedMsg{ID: 7, Decision: dec})
	if out != Keep || d.state != Decided {
		t.Fatalf("decision: outcome %v state %v", out, d.state)
	}
	return d
}

// dialogKeys sends keys to a dialog and returns the last outcome.
func dialogKeys(d Model, keys ...string) (Model, Outcome) {
	out := Keep
	for _, k := range keys {
		d, out, _ = d.Update(tuitest.KeyMsg(k))
	}
	return d, out
}

func typeInDialog(d Model, s string) Model {
	for _, r := range s {
		d, _, _ = d.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return d
}

func TestDialogTypedNameGatesEnter(t *testing.T) {
	d := decidedDialog(t, tuitest.DegradedObs("db", "etcd-b"), "etcd-b-2", 80, 40)
	if !d.needsName() || !d.typing() {
		t.Fatal("a replace that deletes the member's data does not ask for its name")
	}
	d, out := dialogKeys(d, "enter")
	if out != Keep || !strings.Contains(d.hint, "type etcd-b-2 exactly") {
		t.Fatalf("enter without the name: outcome %v hint %q", out, d.hint)
	}
	d = typeInDialog(d, "etcd-b-1")
	if d.hint != "" {
		t.Errorf("typing kept the hint %q", d.hint)
	}
	if d, out = dialogKeys(d, "enter"); out != Keep {
		t.Fatalf("a wrong name: outcome %v", out)
	}
	for range len("etcd-b-1") {
		d, _, _ = d.Update(tea.KeyPressMsg{Code: tea.KeyBackspace})
	}
	d = typeInDialog(d, "etcd-b-2")
	d, out = dialogKeys(d, "enter")
	if out != Confirm {
		t.Fatalf("the typed name: outcome %v, want confirm (hint %q)", out, d.hint)
	}
	if d.req.Intent.Member != "etcd-b-2" || !Runnable(d.decision) {
		t.Errorf("confirmed %+v (runnable %v)", d.req.Intent, Runnable(d.decision))
	}
}

func TestDialogTakesOnlyItsDecision(t *testing.T) {
	req := common.Request{Namespace: "db", Cluster: "etcd-b", Intent: model.Intent{Action: model.ActionReplace, Member: "etcd-b-2"}}
	d := New(3, req, false, common.NewTheme(true))
	d, _, _ = d.Update(DecidedMsg{ID: 2, Decision: model.Decision{Verb: model.VerbProceed}})
	if d.state != Deciding {
		t.Fatalf("a decision for another dialog was taken: state %v", d.state)
	}
	d, _, _ = d.Update(DecidedMsg{ID: 3, Err: context.DeadlineExceeded})
	if d.state != Failed {
		t.Fatalf("state %v after a failed decision, want failed", d.state)
	}
	if _, out := dialogKeys(d, "enter"); out != Close {
		t.Errorf("enter on a failure: outcome %v, want close", out)
	}
}

func TestDialogEscapeCancels(t *testing.T) {
	th := common.NewTheme(true)
	seed := common.Request{Namespace: "db", Cluster: "etcd-a", Intent: model.Intent{Action: model.ActionSeed}}
	replace := common.Request{Namespace: "db", Cluster: "etcd-b", Intent: model.Intent{Action: model.ActionReplace, Member: "etcd-b-2"}}
	for name, d := range map[string]Model{
		"asking":   New(1, seed, false, th),
		"deciding": New(1, replace, false, th),
		"decided":  decidedDialog(t, tuitest.DegradedObs("db", "etcd-b"), "etcd-b-2", 80, 24),
		"typing":   typeInDialog(decidedDialog(t, tuitest.DegradedObs("db", "etcd-b"), "etcd-b-2", 80, 24), "etcd"),
	} {
		for _, k := range []string{"esc", "ctrl+c"} {
			if _, out := dialogKeys(d, k); out != Cancel {
				t.Errorf("%s: %s gave %v, want cancel", name, k, out)
			}
		}
	}
}

func TestDialogAsksForGeneration(t *testing.T) {
	req := common.Request{Namespace: "db", Cluster: "etcd-a", Intent: model.Intent{Action: model.ActionSeed}}
	d := New(1, req, false, common.NewTheme(true))
	if d.state != Asking {
		t.Fatalf("a seed without a generation: state %v, want asking", d.state)
	}
	if cmd := d.Ask(""); cmd == nil {
		t.Error("asking did not focus the input")
	}
	d, out := dialogKeys(d, "enter")
	if out != Keep || !strings.Contains(d.hint, "required") {
		t.Fatalf("enter on an empty ID: outcome %v hint %q", out, d.hint)
	}
	d = typeInDialog(d, "nightly")
	d, out = dialogKeys(d, "enter")
	if out != Decide || d.state != Deciding || d.req.Intent.Options.Generation != "nightly" {
		t.Errorf("outcome %v state %v generation %q", out, d.state, d.req.Intent.Options.Generation)
	}
}

func TestDialogOverrideAsksForANewDecision(t *testing.T) {
	d := decidedDialog(t, tuitest.HealthyObs("db", "etcd-b"), "etcd-b-0", 80, 40)
	if Runnable(d.decision) {
		t.Fatal("replacing the leader is runnable: the test needs a refusal")
	}
	d, out := dialogKeys(d, "enter")
	if out != Keep || !strings.Contains(d.hint, "cannot run") {
		t.Fatalf("enter on a refusal: outcome %v hint %q", out, d.hint)
	}
	d, out = dialogKeys(d, "1")
	if out != Redecide || d.state != Deciding || !d.req.Intent.Options.MoveLeader {
		t.Fatalf("1: outcome %v state %v move-leader %v", out, d.state, d.req.Intent.Options.MoveLeader)
	}
	if d.width != 80 || d.height != 40 {
		t.Errorf("the new decision's dialog lost its size: %dx%d", d.width, d.height)
	}
}

func TestDialogSetSizeWraps(t *testing.T) {
	const sentence = "This removes the member and deletes its data. Type etcd-b-2 to confirm:"
	d := decidedDialog(t, tuitest.DegradedObs("db", "etcd-b"), "etcd-b-2", 110, 60)
	whole := func(d Model) bool {
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

func TestDialogOutcomesHaveNames(t *testing.T) {
	for o := Keep; o <= Confirm; o++ {
		if o.String() == "unknown" {
			t.Errorf("dialog outcome %d has no name", o)
		}
	}
}

func TestDialogRestoreNeedsClusterName(t *testing.T) {
	req := common.Request{Namespace: "db", Cluster: "etcd-a", Intent: model.Intent{Action: model.ActionRestore}}
	d := New(4, req, false, common.NewTheme(true))
	if d.state != Picking {
		t.Fatalf("a restore without a generation starts %v, want picking", d.state)
	}
	d.Pick(tuitest.Clock, false)
	d.SetSize(80, 30)
	d, _, _ = d.Update(common.GenerationsMsg{Key: "db/other", Gens: tuitest.RestoreGens()})
	if d.picker.Listed() {
		t.Fatal("the picker took another cluster's generations")
	}
	d, _, _ = d.Update(common.GenerationsMsg{Key: "db/etcd-a", Gens: tuitest.RestoreGens()})
	d, out := dialogKeys(d, "j", "enter")
	if out != Decide || d.req.Intent.Options.Generation != "etcd-a-old" || d.state != Deciding {
		t.Fatalf("picking: outcome %v intent %+v state %v", out, d.req.Intent, d.state)
	}
	// A decision that deletes nothing still needs the cluster's name.
	dec := model.Decision{Intent: d.req.Intent, Verb: model.VerbProceed, Flow: model.FlowRestore,
		Steps: []model.Step{{Kind: model.StepScaleDown}}}
	d, _, _ = d.Update(DecidedMsg{ID: 4, Decision: dec})
	if dec.Deletes() || !d.needsName() || d.confirmName() != "etcd-a" {
		t.Fatalf("restore: needsName %v confirmName %q", d.needsName(), d.confirmName())
	}
	if d, out = dialogKeys(d, "enter"); out != Keep || !strings.Contains(d.hint, "type etcd-a exactly") {
		t.Fatalf("enter without the name: %v %q", out, d.hint)
	}
	if d, out = dialogKeys(typeInDialog(d, "etcd-a"), "enter"); out != Confirm {
		t.Errorf("the cluster name: outcome %v (hint %q)", out, d.hint)
	}
}

func TestStatesHaveNames(t *testing.T) {
	for s := Asking; s <= Failed; s++ {
		if s.String() == "unknown" {
			t.Errorf("dialog state %d has no name", s)
		}
	}
}
