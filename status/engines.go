package status

import (
	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	patroniengine "github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/model"
)

// DefaultEngines is the engine registry every verb and view observes
// with: each engine hactl speaks to, keyed by its own Name. It returns a
// new map on every call, so a caller may add or remove engines without
// affecting others.
func DefaultEngines() map[model.Engine]engine.Engine {
	out := map[model.Engine]engine.Engine{}
	for _, e := range []engine.Engine{etcdengine.New(), patroniengine.New()} {
		out[e.Name()] = e
	}
	return out
}
