package registry

import (
	"testing"

	"github.com/hactl-dev/hactl/engine"
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
