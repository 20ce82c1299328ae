package http

import (
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

var _ engine.Keeper = Engine{}

// Keep implements engine.Keeper: it says which of the members' pod labels
// and annotations the members rewrite themselves, as the cluster's
// mapping names them (selfWrittenLabels, selfWrittenAnnotations). It
// reads nothing else; a mapping that does not parse is reported where
// it is used (probe, verdict), so it says nothing here.
func (Engine) Keep(_ model.PodTemplate, _ model.APIObjects, c *model.ClusterFacts) model.Kept {
	if m, err := Parse(c.EngineConfig); err == nil {
		c.SelfWritten = m.SelfWritten
	}
	return model.Kept{}
}
