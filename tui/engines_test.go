package tui

import (
	"maps"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/tui/internal/tuitest"
)

// cfgViews are the views of the engines hactl ships, as the faces hand
// them (engine/registry).
var cfgViews = tuitest.Views

// withViews is cfgViews and extra.
func withViews(extra map[model.Engine]model.EngineView) map[model.Engine]model.EngineView {
	out := maps.Clone(cfgViews)
	maps.Copy(out, extra)
	return out
}

// judged is o with the verdict rules of the engines hactl ships handed in,
// as the faces hand them (engine/registry), beside any o holds already.
var judged = tuitest.Judged
