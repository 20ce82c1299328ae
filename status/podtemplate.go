package status

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// podTemplate is sts's pod template as the engines' decoders read it
// (engine.Decoder).
func podTemplate(sts *appsv1.StatefulSet) model.PodTemplate {
	spec := &sts.Spec.Template.Spec
	t := model.PodTemplate{Namespace: sts.Namespace, Owner: operatorOwner(sts), Labels: sts.Spec.Template.Labels,
		Containers: make([]model.Container, len(spec.Containers))}
	for i := range spec.Containers {
		t.Containers[i] = container(&spec.Containers[i])
	}
	for _, c := range sts.Spec.VolumeClaimTemplates {
		t.Claims = append(t.Claims, c.Name)
	}
	return t
}

// container is c as a model.Container.
func container(c *corev1.Container) model.Container {
	out := model.Container{Name: c.Name, Image: c.Image, Command: c.Command, Args: c.Args}
	for _, e := range c.Env {
		v := model.EnvVar{Name: e.Name, Value: e.Value}
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == model.EnvRefNamespace:
			v.Ref = model.EnvRefNamespace
		case e.ValueFrom != nil:
			v.Ref = model.EnvRefOther
		}
		out.Env = append(out.Env, v)
	}
	for _, p := range c.Ports {
		out.Ports = append(out.Ports, model.ContainerPort{Name: p.Name, Port: int(p.ContainerPort)})
	}
	for _, m := range c.VolumeMounts {
		out.Mounts = append(out.Mounts, model.VolumeMount{Name: m.Name, Path: m.MountPath, SubPath: m.SubPath})
	}
	if l := c.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Exec != nil {
		out.PreStop = l.PreStop.Exec.Command
	}
	return out
}

// operatorOwner is sts's controlling owner ("Kind/name"), "" when none.
func operatorOwner(sts *appsv1.StatefulSet) string {
	for _, o := range sts.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.Kind + "/" + o.Name
		}
	}
	return ""
}

// DetectEngine says which engine a StatefulSet runs: the hactl.dev/engine
// label when present, otherwise the engine whose decoder (of dec, those
// status was handed) recognises its pod template, the first by name when
// several do. ok is false for StatefulSets that are not HA clusters.
func DetectEngine(sts *appsv1.StatefulSet, dec map[model.Engine]engine.Decoder) (model.Engine, bool) {
	if v := sts.Labels[LabelEngine]; v != "" {
		return model.Engine(v), true
	}
	return detect(nil, podTemplate(sts), dec)
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
