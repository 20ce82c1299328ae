package tui

import (
	"maps"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/model"
)

// cfgViews are the views of the engines hactl ships, as the faces hand
// them (engine/registry).
var cfgViews = engine.Views(registry.Engines())

// withViews is cfgViews and extra.
func withViews(extra map[model.Engine]model.EngineView) map[model.Engine]model.EngineView {
	out := maps.Clone(cfgViews)
	maps.Copy(out, extra)
	return out
}

// judged is o with the verdict rules of the engines hactl ships handed in,
// as the faces hand them (engine/registry), beside any o holds already.
func judged(o model.VerdictOptions) model.VerdictOptions {
	rules := engine.VerdictRules(registry.Engines())
	maps.Copy(rules, o.Rules)
	o.Rules = rules
	return o
}
