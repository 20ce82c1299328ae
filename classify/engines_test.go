package classify

import (
	"maps"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/model"
)

// judgedClassify is Classify with the verdict rules of the engines hactl
// ships handed in, as the faces hand them (engine/registry), beside any
// the intent holds already.
func judgedClassify(obs model.Observation, in model.Intent, now time.Time) model.Decision {
	return Classify(obs, judgedIntent(in), now)
}

func judgedIntent(in model.Intent) model.Intent {
	rules := engine.VerdictRules(registry.Engines())
	maps.Copy(rules, in.Options.Verdict.Rules)
	in.Options.Verdict.Rules = rules
	return in
}
