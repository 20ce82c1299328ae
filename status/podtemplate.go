package status

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/source"
)

// DetectEngine says which engine a StatefulSet runs: the hactl.dev/engine
// label when present, otherwise the engine whose decoder (of dec, those
// status was handed) recognises its pod template, the first by name when
// several do. ok is false for StatefulSets that are not HA clusters.
func DetectEngine(sts *appsv1.StatefulSet, dec map[model.Engine]engine.Decoder) (model.Engine, bool) {
	if v := sts.Labels[LabelEngine]; v != "" {
		return model.Engine(v), true
	}
	return detect(nil, source.PodTemplate(sts), dec)
}

// detect is the engine of a workload labelled l with pod template t: the
// hactl.dev/engine label when present, otherwise the engine whose decoder
// (of dec) recognises t, the first by name when several do.
func detect(l map[string]string, t model.PodTemplate, dec map[model.Engine]engine.Decoder) (model.Engine, bool) {
	if v := l[LabelEngine]; v != "" {
		return model.Engine(v), true
	}
	var found model.Engine
	for e, d := range dec {
		if (found == "" || e < found) && d.Recognises(t) {
			found = e
		}
	}
	return found, found != ""
}

// templateOf decodes sts's template facts with d, the decoder of its
// engine (nil: its first container, plainly), and fills what status owns:
// the operator that owns it.
func templateOf(d engine.Decoder, t model.PodTemplate) model.TemplateFacts {
	var tf model.TemplateFacts
	switch {
	case d != nil:
		tf = d.Template(t)
	case len(t.Containers) > 0:
		tf.Container, tf.Image = t.Containers[0].Name, t.Containers[0].Image
	}
	tf.OperatorOwner = t.Owner
	return tf
}

// engineParts are what status asks of the engines it was handed: their
// decoders and keepers, by engine.
type engineParts struct {
	decoders map[model.Engine]engine.Decoder
	keepers  map[model.Engine]engine.Keeper
}

// partsOf are the parts of engines.
func partsOf(engines map[model.Engine]engine.Engine) engineParts {
	return engineParts{decoders: engine.Decoders(engines), keepers: engine.Keepers(engines)}
}
