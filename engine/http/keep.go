package http

import (
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

var _ engine.Keeper = Engine{}

// Keep implements engine.Keeper: it says which of the members' pod labels
// and annotations the members rewrite themselves, as the cluster's
// mapping names them (selfWrittenLabels, selfWrittenAnnotations), but
// never a label the pod template sets. It reads nothing else; a mapping that does not parse is reported where
// it is used (probe, verdict), so it says nothing here.
func (Engine) Keep(t model.PodTemplate, _ model.APIObjects, c *model.ClusterFacts) model.Kept {
	m, err := Parse(c.EngineConfig)
	if err != nil || m.SelfWritten == nil {
		return model.Kept{}
	}
	// A label the pod template sets (the StatefulSet's selector among
	// them) is the template's, whatever the mapping says: its change
	// stays in the fence.
	sw := &model.SelfWritten{Annotations: m.SelfWritten.Annotations}
	for _, l := range m.SelfWritten.Labels {
		if _, templated := t.Labels[l]; !templated {
			sw.Labels = append(sw.Labels, l)
		}
	}
	c.SelfWritten = sw
	return model.Kept{}
}
