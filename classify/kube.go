package classify

import (
	"fmt"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// The helpers below concern the Kubernetes objects every engine's
// clusters are made of (a StatefulSet, its pods and volume claims): the
// pod gates and the fenced deletes.

// awaitForeignDelete turns the decision into await: the target's pod is
// being deleted, not by this action.
func (c *classifier) AwaitForeignDelete(member string, pod *model.PodFacts) {
	c.verb = model.VerbAwait
	c.Block(model.CodePodTerminating, member, "", "pod %s is being deleted (not by this action): hactl waits for it to disappear, then decides again", pod.Name)
}

// observeNeverStarted turns a fresh decision into observe, and reports
// so, when the target's pod never started and was created from the
// StatefulSet's current template: a recreated pod would wait the same way.
func (c *classifier) ObserveNeverStarted(member string, pod *model.PodFacts) bool {
	if c.resume != nil || pod == nil || !neverStarted(pod) || !revisionMatches(pod, c.obs.Cluster) {
		return false
	}
	c.verb = model.VerbObserve
	c.Block(model.CodePodNeverStarted, member, "", "pod %s has never started and was created from the StatefulSet's current template: deleting it would not help (a recreated pod would wait the same way); hactl only observes it", pod.Name)
	return true
}

func neverStarted(p *model.PodFacts) bool {
	return !p.EverStarted && !p.Started && !p.Running
}

// revisionMatches reports whether the pod was created from the
// StatefulSet's current template. An unknown revision counts as a match:
// only positive evidence of a changed template allows replacing a pod
// that never started.
func revisionMatches(p *model.PodFacts, cl model.ClusterFacts) bool {
	return p.Revision == "" || cl.UpdateRevision == "" || p.Revision == cl.UpdateRevision
}

func (c *classifier) DeletePVC(member string, pvc *model.PVCFacts) {
	f := model.Fence{Kind: "PersistentVolumeClaim", Namespace: c.obs.Cluster.Namespace, Name: pvc.Name, UID: pvc.UID,
		ResourceVersion: pvc.ResourceVersion, Fingerprint: pvc.Fingerprint}
	c.Step(model.Step{Kind: model.StepDeletePVC, Member: member, Fence: &f,
		Detail: fmt.Sprintf("delete PersistentVolumeClaim %s (uid %s, resourceVersion %s); it goes once its pod is gone", pvc.Name, pvc.UID, pvc.ResourceVersion)})
}

// deleteBoth deletes the volume (first, so the StatefulSet cannot bring
// the pod back on it) and the pod, then waits for the pod to go.
func (c *classifier) DeleteBoth(m *model.Member, pvc *model.PVCFacts, pvcOrig bool) {
	if pvc != nil && pvcOrig && !pvc.DeletionMarked {
		c.DeletePVC(m.Name, pvc)
	}
	if p := m.Pod; p != nil {
		f := model.Fence{Kind: "Pod", Namespace: c.obs.Cluster.Namespace, Name: p.Name, UID: p.UID,
			ResourceVersion: p.ResourceVersion, Fingerprint: p.Fingerprint, Role: p.RoleLabel}
		c.Step(model.Step{Kind: model.StepDeletePod, Member: m.Name, Fence: &f,
			Detail: fmt.Sprintf("delete pod %s (uid %s, resourceVersion %s)", p.Name, p.UID, p.ResourceVersion)})
		c.Step(model.Step{Kind: model.StepAwaitPodGone, Member: m.Name, Detail: fmt.Sprintf("wait until pod %s is gone", p.Name)})
	}
}

// replacedOf is what a replace of m replaces: recorded by the resumed
// entry, or m's pod and volume now.
func (c *classifier) ReplacedOf(m *model.Member) model.Replaced {
	if c.resume != nil {
		return c.resume.Replaced
	}
	r := model.Replaced{MemberID: m.Name}
	if m.Pod != nil {
		r.PodUID = m.Pod.UID
	}
	if m.PVC != nil {
		r.PVCUID = m.PVC.UID
	}
	return r
}

// recreatedThen appends the wait for the StatefulSet to recreate pod name
// with a new volume (how says what fills it), then await's.
func (c *classifier) RecreatedThen(name, how string, await func(string)) {
	c.Step(model.Step{Kind: model.StepAwaitPodRecreated, Member: name,
		Detail: fmt.Sprintf("wait for the StatefulSet to recreate pod %s with a new volume (%s)", name, how)})
	await(name)
}

// recreateResume plans a resumed replace by delete-and-recreate once its
// first delete was recorded or m's pod or volume is no longer the
// original: it never names an object already deleted, and deletes a
// volume the recreated pod came back on. It reports whether it planned
// (false: nothing was deleted yet, plan afresh).
func (c *classifier) RecreateResume(m *model.Member, w model.Rebuilt) bool {
	e := c.resume
	if e == nil {
		return false
	}
	r := e.Replaced
	podOrig := m.Pod != nil && m.Pod.UID == r.PodUID
	pvcOrig := m.PVC != nil && r.PVCUID != "" && m.PVC.UID == r.PVCUID
	deleted := e.HasReceipt(model.StepDeletePVC) || e.HasReceipt(model.StepDeletePod)
	if !deleted && podOrig && (pvcOrig || m.PVC == nil) {
		return false
	}
	c.d.Leader = w.Leader()
	switch {
	case podOrig:
		// The original pod is still there (maybe going).
		if pvcOrig && !m.PVC.DeletionMarked {
			c.DeletePVC(m.Name, m.PVC)
		}
		if m.Pod.DeletionMarked {
			c.Step(model.Step{Kind: model.StepAwaitPodGone, Member: m.Name, Detail: fmt.Sprintf("wait until pod %s is gone", m.Name)})
		} else {
			c.DeleteBoth(m, nil, false)
		}
		w.Recreated(m.Name)
	case m.Pod == nil:
		if pvcOrig && !m.PVC.DeletionMarked {
			c.DeletePVC(m.Name, m.PVC)
		}
		w.Recreated(m.Name)
	case pvcOrig && !m.PVC.DeletionMarked:
		// A new pod came back on the old volume: that volume must go.
		c.DeleteBoth(m, m.PVC, true)
		w.Recreated(m.Name)
	case pvcOrig:
		// The old volume is still going: the member on it is not the
		// rebuilt one yet, whatever it answers.
		w.Recreated(m.Name)
	case w.CaughtUp(m):
		c.done = true
	default:
		w.Await(m.Name)
	}
	return true
}

// probeFailures summarises why members did not answer (the engine's
// errors name hosts and steps, never credentials).
func (c *classifier) ProbeFailures() string {
	var parts []string
	for _, m := range c.obs.Members {
		e := m.Engine
		switch {
		case m.Pod == nil:
			parts = append(parts, m.Name+": no pod")
		case e == nil:
			parts = append(parts, m.Name+": not probed (pod not running)")
		case !e.Reachable:
			kind := e.Failure.String()
			if kind == "" {
				kind = "no answer"
			}
			msg := e.Err
			if len(msg) > 160 {
				msg = msg[:160] + "…"
			}
			parts = append(parts, fmt.Sprintf("%s: %s (%s)", m.Name, kind, msg))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}
