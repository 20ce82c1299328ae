package verdict

import (
	"maps"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/registry"
)

// judged is o with the verdict rules of the engines hactl ships handed in,
// as the faces hand them (engine/registry), beside any o holds already.
func judged(o Options) Options {
	rules := engine.VerdictRules(registry.Engines())
	maps.Copy(rules, o.Rules)
	o.Rules = rules
	return o
}
