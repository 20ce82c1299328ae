package seed

import (
	"context"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/tui/internal/tuitest"
)

// genSource lists fixed generations.
type genSource []common.Generation

func (g genSource) List(context.Context, string, string) ([]common.Generation, error) { return g, nil }

func TestSeedViewListsGenerations(t *testing.T) {
	r := tuitest.Evaluate(tuitest.HealthyObs("db", "etcd-a"))
	v := New(common.NewTheme(true), common.DefaultKeyMap(), tuitest.Clock, genSource{{ID: "etcd-a-nightly", Created: tuitest.Now, Complete: true}}, tuitest.Views)
	v.SetSize(80, 6)
	v.SetData("db/etcd-a", r, nil)
	cmd := v.Load(context.Background(), "db/etcd-a", r.Observation.Cluster)
	if cmd == nil {
		t.Fatal("load issued no listing")
	}
	if again := v.Load(context.Background(), "db/etcd-a", r.Observation.Cluster); again != nil {
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
		v, _ = v.Update(tuitest.KeyMsg("pgdown"))
	}
	if got, want := len(v.View()), v.height; got != want {
		t.Errorf("scrolled to the end, the view shows %d lines, want a full %d", got, want)
	}
}

// The seed tab's member phases read in the cluster's engine's roles and
// unit of lag: a Patroni replica behind the primary is a replica some
// bytes of WAL behind, never a raft learner or voter.
func TestSeedViewPhaseNotesInTheEnginesWords(t *testing.T) {
	r := tuitest.Evaluate(tuitest.PatroniObs("db", "pg"))
	v := New(common.NewTheme(true), common.DefaultKeyMap(), tuitest.Clock, nil, tuitest.Views)
	v.SetSize(100, 40)
	v.SetData("db/pg", r, nil)
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

func TestEveryActionHasPhases(t *testing.T) {
	for _, a := range model.AllActions {
		if len(actionPhases[a]) == 0 {
			t.Errorf("action %s has no phase sequence", a)
		}
	}
}
