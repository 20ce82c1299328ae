package registry

import (
	"testing"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	patroniengine "github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/model"
)

// Every engine hactl ships judges its own clusters: without its verdict
// rules handed in, its clusters would be engine_unsupported and every
// action on them refused.
func TestEveryEngineHandsItsVerdictRules(t *testing.T) {
	engines := Engines()
	if len(engines) == 0 {
		t.Fatal("no engines")
	}
	rules := engine.VerdictRules(engines)
	for name, e := range engines {
		if e.Name() != name {
			t.Errorf("engine %q is listed as %q", e.Name(), name)
		}
		if rules[name] == nil {
			t.Errorf("engine %q hands no verdict rules (engine.Judged)", name)
		}
	}
}

// etcd and Patroni hand their views: without one their clusters would
// read plainly in the live view (generic roles, lag in "positions", no
// Patroni columns or replication section), and status's table would
// print them in generic positions, and nothing would say so.
func TestEtcdAndPatroniHandTheirViews(t *testing.T) {
	views := engine.Views(Engines())
	for _, name := range []model.Engine{etcdengine.Name, patroniengine.Name} {
		if views[name] == nil {
			t.Errorf("engine %q hands no view (engine.Viewed)", name)
		}
		if _, ok := views[name].(model.TableView); !ok {
			t.Errorf("engine %q's view offers status no table (model.TableView)", name)
		}
	}
}
