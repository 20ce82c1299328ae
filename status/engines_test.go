package status

import (
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/source"
)

// judged is o with the verdict rules of the engines hactl ships handed in,
// as the faces hand them (engine/registry), beside any o holds already:
// for observers that read the API server alone and hold no engines.
func judged(o model.VerdictOptions) model.VerdictOptions {
	rules := engine.VerdictRules(registry.Engines())
	maps.Copy(rules, o.Rules)
	o.Rules = rules
	return o
}

// evaluated is obs evaluated under the shipped engines' rules and shown
// through its engine's view, as an Observer hands it back.
func evaluated(obs model.Observation, now time.Time) Result {
	r := Evaluate(obs, now, judged(model.VerdictOptions{}))
	r.View = engine.Views(registry.Engines())[obs.Cluster.Engine]
	return r
}

// decodeStatefulSet is sts's observation as the StatefulSet layout finds
// it (a StatefulSet no engine claims is read as the plain engine "").
func decodeStatefulSet(sts *appsv1.StatefulSet, ix *index, at time.Time, p engineParts) model.Observation {
	t := source.PodTemplate(sts)
	eng, _ := detect(sts.Labels, t, p.decoders)
	return decodeCluster(source.StatefulSetWorkload(sts, eng, t), ix, at, p)
}

// parts and decoders are the parts of the engines hactl ships, as the
// faces hand them.
var (
	parts    = partsOf(registry.Engines())
	decoders = parts.decoders
)

// decodeTemplate is sts's template as etcd's decoder reads it.
func decodeTemplate(sts *appsv1.StatefulSet) model.TemplateFacts {
	return templateOf(decoders[etcdengine.Name], source.PodTemplate(sts))
}

// decodeTemplateFlags adds what etcd's decoder reads for actions.
func decodeTemplateFlags(t *model.TemplateFacts, sts *appsv1.StatefulSet) {
	decoders[etcdengine.Name].ActionTemplate(source.PodTemplate(sts), t)
}
