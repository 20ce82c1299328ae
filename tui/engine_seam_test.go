package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/model"
)

// toyView is an engine's view in a test: the seam is all the views need.
type toyView struct{}

func (toyView) Role(m model.Member) string              { return "toy-" + m.Name[len(m.Name)-1:] }
func (toyView) Leads(m model.Member) bool               { return strings.HasSuffix(m.Name, "-1") }
func (toyView) LagText(l *int64) string                 { return "toylag" }
func (toyView) LagUnit() string                         { return "toy units" }
func (toyView) Candidate(model.Member) bool             { return false }
func (toyView) Position(p uint64) string                { return fmt.Sprintf("toy@%d", p) }
func (toyView) Columns() []model.ViewColumn             { return []model.ViewColumn{{Title: "TOYCOL", Max: 8}} }
func (toyView) Cells(model.Member) []string             { return []string{"toycell"} }
func (toyView) Frontier(f uint64, leader string) string { return fmt.Sprintf("toy frontier %d", f) }
func (toyView) Summary(model.Observation, model.Votes) []string {
	return []string{"toy summary"}
}
func (toyView) Section(obs model.Observation, thr uint64, _ func(string) string) (string, []string, string) {
	return "Toy section", nil, fmt.Sprintf("nothing toy-like among %d members", len(obs.Members))
}

// The member and readiness views show an engine through its view alone:
// a toy engine's roles, lag, summary and section, and no other engine's.
func TestToyEngineThroughTheViewSeam(t *testing.T) {
	obs := patroniObs("db", "toy")
	obs.Cluster.Engine = "toy"
	m := newTestModel(t, Config{Namespace: "db", Views: withViews(map[model.Engine]model.EngineView{"toy": toyView{}})}, Deps{}, obs)
	m = press(t, m, "enter")
	members := frame(m)
	for _, want := range []string{"toy-0", "toy-2", "toylag", "toy summary", "TOYCOL", "toycell"} {
		if !strings.Contains(members, want) {
			t.Errorf("members view lacks %q:\n%s", want, members)
		}
	}
	for _, not := range []string{"lock toy-0", "primary"} {
		if strings.Contains(members, not) {
			t.Errorf("members view shows Patroni's %q for a toy cluster:\n%s", not, members)
		}
	}
	m = press(t, m, "3")
	readiness := frame(m)
	for _, want := range []string{"toy units", "Toy section", "nothing toy-like among 3 members"} {
		if !strings.Contains(readiness, want) {
			t.Errorf("readiness view lacks %q:\n%s", want, readiness)
		}
	}
	if strings.Contains(readiness, "Replication") || strings.Contains(readiness, "Learners") {
		t.Errorf("readiness view shows another engine's section:\n%s", readiness)
	}
}

// A cluster of an engine with no view is shown plainly, its verdict
// engine_unsupported, with no other engine's words.
func TestUnknownEngineViewIsPlain(t *testing.T) {
	obs := patroniObs("db", "kv")
	obs.Cluster.Engine = "redis"
	m := newTestModel(t, Config{Namespace: "db"}, Deps{}, obs)
	m = press(t, m, "enter")
	members := frame(m)
	for _, want := range []string{"engine redis: no rules", "engine_unsupported"} {
		if !strings.Contains(members, want) {
			t.Errorf("members view lacks %q:\n%s", want, members)
		}
	}
	for _, not := range []string{"lock kv-0", "quorum", "primary"} {
		if strings.Contains(members, not) {
			t.Errorf("members view shows another engine's %q:\n%s", not, members)
		}
	}
}

// Every action key is in the member screens' footer, and help names
// every action's CLI verb, switchover included.
func TestFooterAndHelpListEveryAction(t *testing.T) {
	o := patroniObs("db", "pg")
	m := newTestModel(t, Config{Namespace: "db"}, Deps{Actions: &stubActions{decide: classifyOn(o)}}, o)
	m = press(t, m, "enter")
	footer := frame(m)
	for _, want := range []string{"r replace", "R reseed", "s seed", "S switchover", "x explain"} {
		if !strings.Contains(footer, want) {
			t.Errorf("member screen's footer lacks %q:\n%s", want, footer)
		}
	}
	m = press(t, m, "?")
	if help := frame(m); !strings.Contains(help, "replace|reseed|seed|restore|switchover|explain") {
		t.Errorf("help does not name every verb:\n%s", help)
	}
}
