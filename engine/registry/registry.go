// Package registry lists the engines hactl speaks to, one line per
// engine, and the seeders of their seed generations. The faces (cli, and
// the live view through it) hand them to the
// observers and executors they build; nothing below them fetches them, so a
// test or another face can observe and act with engines of its own.
package registry

import (
	"github.com/hactl-dev/hactl/artifact/etcdgen"
	"github.com/hactl-dev/hactl/artifact/seeding"
	"github.com/hactl-dev/hactl/engine"
	cnpgengine "github.com/hactl-dev/hactl/engine/cnpg"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	httpengine "github.com/hactl-dev/hactl/engine/http"
	patroniengine "github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/model"
)

// Engines are the engines hactl speaks to, keyed by their own Name: a new
// map on every call, so that a caller may add or remove engines without
// affecting others.
func Engines() map[model.Engine]engine.Engine {
	out := map[model.Engine]engine.Engine{}
	for _, e := range []engine.Engine{
		etcdengine.New(),
		patroniengine.New(),
		httpengine.New(),
		cnpgengine.New(),
	} {
		out[e.Name()] = e
	}
	return out
}

// Seeders capture and publish seed generations, by the engine whose
// clusters they seed: a new map on every call. An engine with none has
// no seed generations (its seeds are refused as unsupported).
func Seeders() map[model.Engine]seeding.Seeder {
	return map[model.Engine]seeding.Seeder{
		etcdengine.Engine{}.Name(): etcdgen.Seeder{},
	}
}
