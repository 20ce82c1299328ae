package source

import (
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/model"
)

// DecodePod turns a pod into PodFacts, observed at at.
func DecodePod(p *corev1.Pod, at time.Time) *model.PodFacts {
	f := &model.PodFacts{
		Name:            p.Name,
		UID:             string(p.UID),
		ResourceVersion: p.ResourceVersion,
		Node:            p.Spec.NodeName,
		Phase:           string(p.Status.Phase),
		DeletionMarked:  p.DeletionTimestamp != nil,
		CreatedAt:       p.CreationTimestamp.Time,
		ObservedAt:      at,
	}
	for _, ip := range p.Status.PodIPs {
		if ip.IP != "" {
			f.IPs = append(f.IPs, ip.IP)
		}
	}
	if len(f.IPs) == 0 && p.Status.PodIP != "" {
		f.IPs = []string{p.Status.PodIP}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			f.Ready = true
		}
	}
	if p.Spec.NodeName == "" {
		f.Waiting = model.WaitingUnscheduled
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				f.WaitingReason = c.Reason
			}
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		f.Restarts += int(cs.RestartCount)
		if cs.Started != nil && *cs.Started {
			f.Started = true
		}
		if cs.State.Running != nil {
			f.Running = true
			f.EverStarted = true
		}
		if cs.LastTerminationState.Terminated != nil || cs.State.Terminated != nil || cs.RestartCount > 0 {
			f.EverStarted = true
		}
		if w := cs.State.Waiting; w != nil {
			f.WaitingReason = w.Reason
			f.Waiting, f.PullFailure = classifyWaiting(w.Reason, w.Message)
		}
	}
	return f
}

// classifyWaiting decodes a kubelet waiting reason. The result is only
// ever reported: reason strings are never authority to delete.
func classifyWaiting(reason, message string) (model.WaitingKind, model.PullFailure) {
	switch reason {
	case "CrashLoopBackOff", "RunContainerError":
		return model.WaitingCrashLoop, model.PullFailureNone
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
		m := strings.ToLower(message)
		switch {
		case strings.Contains(m, "unauthorized") || strings.Contains(m, "403") || strings.Contains(m, "401") || strings.Contains(m, "denied"):
			return model.WaitingPullFailure, model.PullFailureUnauthorized
		case strings.Contains(m, "manifest unknown") || strings.Contains(m, "not found"):
			return model.WaitingPullFailure, model.PullFailureNotFound
		case strings.Contains(m, "no matching manifest") || strings.Contains(m, "platform"):
			return model.WaitingPullFailure, model.PullFailureArch
		}
		return model.WaitingPullFailure, model.PullFailureBackoff
	case "CreateContainerConfigError", "CreateContainerError":
		return model.WaitingConfigError, model.PullFailureNone
	case "ContainerCreating", "PodInitializing":
		return model.WaitingCreating, model.PullFailureNone
	case "":
		return model.WaitingNone, model.PullFailureNone
	}
	return model.WaitingOther, model.PullFailureNone
}

// MaxOrdinal bounds the ordinals read from pod names: no StatefulSet
// has more pods than this, and a larger number is no ordinal of it.
const MaxOrdinal = 1 << 20

// MemberOrdinal parses "<sts>-<n>" where n is written as the StatefulSet
// controller writes it (decimal, no sign, no leading zero): "etcd-01" or
// "etcd-+1" is not a member of etcd, however its labels read.
func MemberOrdinal(stsName, podName string) (int, bool) {
	rest, ok := strings.CutPrefix(podName, stsName+"-")
	if !ok || rest == "" || len(rest) > 7 {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || n > MaxOrdinal || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

// OwnedBy reports whether meta is controlled by the object with UID uid,
// or by nothing (then a cluster takes it by its name and labels).
func OwnedBy(meta metav1.Object, uid string) bool {
	for _, o := range meta.GetOwnerReferences() {
		if o.Controller != nil && *o.Controller {
			return string(o.UID) == uid
		}
	}
	return true // no controller: accept if name and labels match
}

// PodTemplate is sts's pod template as the engines' decoders read it
// (engine.Decoder).
func PodTemplate(sts *appsv1.StatefulSet) model.PodTemplate {
	spec := &sts.Spec.Template.Spec
	t := model.PodTemplate{Namespace: sts.Namespace, Owner: OperatorOwner(sts), Labels: sts.Spec.Template.Labels,
		Containers: make([]model.Container, len(spec.Containers))}
	for i := range spec.Containers {
		t.Containers[i] = Container(&spec.Containers[i])
	}
	for _, c := range sts.Spec.VolumeClaimTemplates {
		t.Claims = append(t.Claims, c.Name)
	}
	return t
}

// Container is c as a model.Container.
func Container(c *corev1.Container) model.Container {
	out := model.Container{Name: c.Name, Image: c.Image, Command: c.Command, Args: c.Args}
	for _, e := range c.Env {
		v := model.EnvVar{Name: e.Name, Value: e.Value}
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == model.EnvRefNamespace:
			v.Ref = model.EnvRefNamespace
		case e.ValueFrom != nil:
			v.Ref = model.EnvRefOther
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				v.Secret = &model.SecretKeyRef{Secret: r.Name, Key: r.Key}
			}
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

// OperatorOwner is sts's controlling owner ("Kind/name"), "" when none.
func OperatorOwner(sts *appsv1.StatefulSet) string {
	for _, o := range sts.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.Kind + "/" + o.Name
		}
	}
	return ""
}
