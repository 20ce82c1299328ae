package etcd

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// etcdTarget is what membership knows of the member it replaces.
type etcdTarget struct {
	m *model.Member
	// cur is the member list entry that is the target now (fresh), or
	// the one the ledger recorded as replaced (resume), if still listed.
	cur *model.Peer
	// next is an entry holding the target's peer URL that is not cur
	// (the learner hactl added, or the member the entrypoint
	// re-registered).
	next *model.Peer
	// peerURLs are what the replacement advertises.
	peerURLs []string
	replaced model.Replaced
	// podOrig, pvcOrig: the pod and the volume observed are the ones the
	// action replaces, not ones recreated since.
	podOrig, pvcOrig bool
}

// membership plans replace and reseed.
func (c etcd) membership() {
	name := c.Intent().Member
	m := c.Member(name)
	if m == nil {
		c.Block(model.CodeMemberNotFound, name, "", "%s/%s has no member %q (members: %s)", c.Observation().Cluster.Namespace, c.Observation().Cluster.Name, name, c.MemberNames())
		return
	}
	c.targetGates(m)
	c.Decision().Flow = c.flow()
	if !c.engineGates(name) || c.clonedMemberID(m) {
		return
	}
	if c.Decision().Flow == model.FlowNone {
		c.quorumMath(m, nil)
		return
	}
	t := c.locate(m)
	if t == nil {
		return
	}
	c.quorumMath(m, t.cur)
	if c.podGates(t) {
		return
	}
	if t.cur != nil {
		c.replaceListed(t)
		return
	}
	if c.Resume() == nil {
		c.Note(model.CodeMemberRemoved, name, "%s is not in the member list: it was removed already; its volume and pod are replaced", name)
	}
	if m.Pod == nil || t.podOrig {
		c.replaceUnlisted(t)
		return
	}
	c.rejoin(t)
}

// targetGates refuses a target the StatefulSet would not recreate, and a
// reseed from a generation.
func (c etcd) targetGates(m *model.Member) {
	if m.Ordinal >= c.Observation().Cluster.Replicas {
		c.Block(model.CodeMemberNotWanted, m.Name, "", "%s has ordinal %d but the StatefulSet wants %d replicas: it would not be recreated", m.Name, m.Ordinal, c.Observation().Cluster.Replicas)
	}
	if c.Intent().Action == model.ActionReseed && c.Options().Generation != "" {
		c.Block(model.CodeGenerationUnsupported, m.Name, "", "reseeding etcd from seed generation %q is not supported yet; reseed without a generation rebuilds the member from its peers", c.Options().Generation)
	}
}

// clonedMemberID refuses, and reports so, when another pod answers with
// the target's member ID.
func (c etcd) clonedMemberID(m *model.Member) bool {
	e := m.Engine
	if e == nil || !e.Reachable || e.MemberID == "" {
		return false
	}
	cl := c.claimants(e.MemberID)
	if len(cl) <= 1 {
		return false
	}
	c.Block(model.CodeMemberIDDuplicate, m.Name, "", "%s answer with one member ID %s: one of them runs on a copy of another member's data (a cloned volume), and hactl cannot tell which one the member list means. Stop the copy by hand (delete its pod and volume), then run this again",
		strings.Join(cl, " and "), e.MemberID)
	return true
}

// locate finds the target in the member list, its peer URLs, its
// replacement's entry and what the action replaces, and records them on
// the decision; nil (with a blocker) when its peer URLs are unknown.
func (c etcd) locate(m *model.Member) *etcdTarget {
	name := m.Name
	tmpl := templateURLs(c.Observation().Cluster.Template.InitialCluster)
	t := &etcdTarget{m: m}
	t.cur, t.replaced = c.current(m, tmpl)
	switch {
	case t.cur != nil:
		t.peerURLs = t.cur.PeerURLs
	case len(t.replaced.PeerURLs) > 0:
		t.peerURLs = t.replaced.PeerURLs
	default:
		t.peerURLs = tmpl[name]
	}
	if len(t.peerURLs) == 0 {
		c.Block(model.CodePeerURLUnknown, name, "", "%s is not in the member list and the template names no peer URL for it: hactl cannot tell what the replacement would advertise", name)
		return nil
	}
	c.Decision().PeerURLs = slices.Clone(t.peerURLs)
	curID := ""
	if t.cur != nil {
		curID = t.cur.ID
	}
	t.next = c.peerByURLs(t.peerURLs, name, curID)
	pod, pvc := m.Pod, m.PVC
	if c.Resume() == nil {
		t.replaced = model.Replaced{PeerURLs: slices.Clone(t.peerURLs)}
		if pod != nil {
			t.replaced.PodUID = pod.UID
		}
		if pvc != nil {
			t.replaced.PVCUID = pvc.UID
		}
		if t.cur != nil {
			t.replaced.MemberID = t.cur.ID
		}
	}
	c.Decision().Replaced = t.replaced
	origPresent := t.cur != nil
	t.podOrig = pod != nil && (origPresent || c.Resume() == nil || pod.UID == t.replaced.PodUID)
	t.pvcOrig = pvc != nil && (origPresent || c.Resume() == nil || pvc.UID == t.replaced.PVCUID)
	return t
}

// current returns the member list entry that is the target: the one the
// resumed entry recorded as replaced, if still listed, or (fresh) the one
// its own probe answered with, the one under its name, or the one holding
// the template's peer URL for it. It also returns what the resumed entry
// recorded as replaced (zero when fresh).
func (c etcd) current(m *model.Member, tmpl map[string][]string) (*model.Peer, model.Replaced) {
	if r := c.Resume(); r != nil {
		if r.Replaced.MemberID != "" {
			return c.peerByID(r.Replaced.MemberID), r.Replaced
		}
		return nil, r.Replaced
	}
	switch {
	case c.onReference(m) && m.Engine.MemberID != "" && c.peerByID(m.Engine.MemberID) != nil:
		return c.peerByID(m.Engine.MemberID), model.Replaced{}
	case c.peerByName(m.Name) != nil:
		return c.peerByName(m.Name), model.Replaced{}
	case len(tmpl[m.Name]) > 0:
		return c.peerByURLs(tmpl[m.Name], m.Name, ""), model.Replaced{}
	}
	return nil, model.Replaced{}
}

// podGates: a pod being deleted means await, unless a resumed action
// deleted it itself (then the plan carries on from "pod going"); a fresh
// target whose pod never started means observe. It reports whether the
// decision is complete.
func (c etcd) podGates(t *etcdTarget) bool {
	m := t.m
	if pod := m.Pod; pod != nil && pod.DeletionMarked {
		if c.Resume() != nil && t.podOrig && t.cur == nil {
			c.afterDelete(m, t.next, t.peerURLs, m.PVC, t.pvcOrig, true)
			return true
		}
		c.AwaitForeignDelete(m.Name, pod)
		return true
	}
	return c.ObserveNeverStarted(m.Name, m.Pod)
}

// replaceListed plans from a target the member list still holds: remove
// it (past the quorum and leader gates), add its learner, delete its
// volume and pod, and bring it back.
func (c etcd) replaceListed(t *etcdTarget) {
	m, cur, name := t.m, t.cur, t.m.Name
	if !cur.IsLearner {
		c.leaderGate(m, cur)
	}
	c.Step(model.Step{Kind: model.StepRemoveMember, Member: name, MemberID: cur.ID, PeerURLs: cur.PeerURLs,
		Detail: fmt.Sprintf("remove member %s (%s, %s) from the cluster", cur.ID, cmp.Or(cur.Name, name), strings.Join(cur.PeerURLs, ","))})
	c.Decision().MemberFence = &model.MemberFence{ID: cur.ID, Name: cur.Name, PeerURLs: slices.Clone(cur.PeerURLs), ClusterID: c.Analysis().ClusterID, IsLearner: cur.IsLearner}
	if c.Decision().Flow == model.FlowLearner {
		if t.next != nil {
			c.Block(model.CodeUnexpectedMember, name, "", "member %s already holds %s's peer URL %s while %s is still listed", t.next.ID, name, strings.Join(t.next.PeerURLs, ","), cur.ID)
			return
		}
		c.addLearner(name, t.peerURLs, cur.ID)
	}
	c.DeleteBoth(m, m.PVC, t.pvcOrig)
	c.recreate(name, t.peerURLs)
	c.templateGate(name, t.peerURLs, cur, t.next)
}

// replaceUnlisted plans from a target the member list no longer holds
// whose original pod still runs, or is gone.
func (c etcd) replaceUnlisted(t *etcdTarget) {
	m, next, name := t.m, t.next, t.m.Name
	if c.Decision().Flow == model.FlowLearner {
		switch {
		case next == nil:
			c.addLearner(name, t.peerURLs, "")
		case !next.IsLearner && m.Pod != nil:
			c.Block(model.CodeUnexpectedMember, name, "", "voter %s already holds %s's peer URL while the old pod %s still runs", next.ID, name, m.Pod.Name)
			return
		}
	}
	if m.Pod == nil {
		c.afterDelete(m, next, t.peerURLs, m.PVC, t.pvcOrig, false)
	} else {
		c.DeleteBoth(m, m.PVC, t.pvcOrig)
		c.recreate(name, t.peerURLs)
	}
	c.templateGate(name, t.peerURLs, nil, next)
}

// rejoin plans from a new pod (resume). If it came back on the old
// volume, that volume must still go.
func (c etcd) rejoin(t *etcdTarget) {
	m, pvc, name := t.m, t.m.PVC, t.m.Name
	if pvc != nil && pvc.UID == t.replaced.PVCUID && !pvc.DeletionMarked {
		if c.Decision().Flow == model.FlowLearner && t.next == nil {
			c.addLearner(name, t.peerURLs, "")
		}
		c.DeleteBoth(m, pvc, true)
		c.recreate(name, t.peerURLs)
		c.templateGate(name, t.peerURLs, nil, t.next)
		return
	}
	c.joinSteps(m, t.next, t.peerURLs)
}

// afterDelete plans from a pod that is gone (or going): the old volume is
// deleted if it still stands, then the member comes back.
func (c etcd) afterDelete(m *model.Member, next *model.Peer, peerURLs []string, pvc *model.PVCFacts, pvcOrig, podGoing bool) {
	if c.Decision().Flow == model.FlowLearner && next == nil && !slices.ContainsFunc(c.Decision().Steps, func(s model.Step) bool { return s.Kind == model.StepAddLearner }) {
		c.addLearner(m.Name, peerURLs, "")
	}
	if pvc != nil && pvcOrig && !pvc.DeletionMarked {
		c.DeletePVC(m.Name, pvc)
	}
	if podGoing {
		c.Step(model.Step{Kind: model.StepAwaitPodGone, Member: m.Name, Detail: fmt.Sprintf("wait until pod %s is gone", m.Pod.Name)})
	}
	c.recreate(m.Name, peerURLs)
}

func (c etcd) addLearner(name string, peerURLs []string, removedID string) {
	var others []string
	for _, p := range c.Analysis().MemberList {
		if p.IsLearner && p.ID != removedID && !anyURLMatches(peerURLs, p, c.evidence(name)) {
			others = append(others, fmt.Sprintf("%s (%s)", cmp.Or(p.Name, p.ID), strings.Join(p.PeerURLs, ",")))
		}
	}
	if len(others) > 0 {
		c.Block(model.CodeLearnerPending, name, "", "the cluster already has a learner: %s; etcd takes one learner at a time: let it finish (or remove it) first", strings.Join(others, ", "))
	}
	c.Step(model.Step{Kind: model.StepAddLearner, Member: name, PeerURLs: slices.Clone(peerURLs),
		Detail: fmt.Sprintf("add a learner with peer URL %s (before the pod returns, so it is accepted on its first start)", strings.Join(peerURLs, ","))})
}

// recreate appends the steps from "pod gone" to the end.
func (c etcd) recreate(name string, peerURLs []string) {
	c.Step(model.Step{Kind: model.StepAwaitPodRecreated, Member: name,
		Detail: fmt.Sprintf("wait for the StatefulSet to recreate pod %s with a new volume", name)})
	c.tail(name, peerURLs, false, false)
}

// tail appends the steps from "pod recreated" to "ready".
func (c etcd) tail(name string, peerURLs []string, started, caughtUp bool) {
	urls := strings.Join(peerURLs, ",")
	if !started {
		what := "as a learner"
		if c.Decision().Flow == model.FlowDelegate {
			what = "and register itself"
		}
		c.Step(model.Step{Kind: model.StepAwaitMemberStarted, Member: name, PeerURLs: slices.Clone(peerURLs),
			Detail: fmt.Sprintf("wait until %s starts %s (peer URL %s)", name, what, urls)})
	}
	if c.Decision().Flow == model.FlowLearner {
		if !caughtUp {
			c.Step(model.Step{Kind: model.StepAwaitCaughtUp, Member: name,
				Detail: fmt.Sprintf("wait until %s's lag against the leader's frontier is at most %d entries", name, c.Options().Verdict.LagThreshold)})
		}
		c.Step(model.Step{Kind: model.StepPromoteLearner, Member: name, PeerURLs: slices.Clone(peerURLs),
			Detail: fmt.Sprintf("promote the learner %s to a voting member", name)})
	}
	c.Step(model.Step{Kind: model.StepAwaitVoterReady, Member: name, PeerURLs: slices.Clone(peerURLs),
		Detail: fmt.Sprintf("wait until %s votes, is within the lag threshold and its pod is ready", name)})
}

// joinSteps plans from a new pod on a new volume.
func (c etcd) joinSteps(m *model.Member, next *model.Peer, peerURLs []string) {
	name := m.Name
	answered := next != nil && c.onReference(m) && m.Engine.MemberID == next.ID
	healthy := answered && !next.IsLearner && m.Phase == model.PhaseMember && m.Pod.Ready
	switch {
	case healthy:
		c.Done()
		return
	case c.Decision().Flow == model.FlowLearner && next == nil:
		c.addLearner(name, peerURLs, "")
		c.tail(name, peerURLs, false, false)
	case c.Decision().Flow == model.FlowLearner && next.IsLearner:
		if answered {
			lagOK := m.Lag != nil && uint64(*m.Lag) <= c.Options().Verdict.LagThreshold
			c.tail(name, peerURLs, true, lagOK)
			for i := range c.Decision().Steps {
				if c.Decision().Steps[i].Kind == model.StepPromoteLearner {
					c.Decision().Steps[i].MemberID = next.ID
				}
			}
		} else {
			c.tail(name, peerURLs, false, false)
		}
	case answered:
		// A voter with the peer URL answers but is not healthy yet.
		c.Step(model.Step{Kind: model.StepAwaitVoterReady, Member: name, PeerURLs: slices.Clone(peerURLs),
			Detail: fmt.Sprintf("wait until %s votes, is within the lag threshold and its pod is ready", name)})
	default:
		c.Step(model.Step{Kind: model.StepAwaitMemberStarted, Member: name, PeerURLs: slices.Clone(peerURLs),
			Detail: fmt.Sprintf("wait until %s starts and joins (peer URL %s)", name, strings.Join(peerURLs, ","))})
		c.Step(model.Step{Kind: model.StepAwaitVoterReady, Member: name, PeerURLs: slices.Clone(peerURLs),
			Detail: fmt.Sprintf("wait until %s votes, is within the lag threshold and its pod is ready", name)})
	}
}

// templateGate verifies that the template would bring the replacement
// back into the cluster (learner flow only: the delegate flow's
// entrypoint rewrites its own --initial-cluster).
func (c etcd) templateGate(name string, peerURLs []string, cur, next *model.Peer) {
	if c.Decision().Flow != model.FlowLearner {
		return
	}
	var after []model.Peer
	for _, p := range c.Analysis().MemberList {
		if (cur != nil && p.ID == cur.ID) || (next != nil && p.ID == next.ID) {
			continue
		}
		after = append(after, p)
	}
	t := model.Peer{Name: name, PeerURLs: peerURLs}
	if next != nil {
		t.ID = next.ID
	}
	after = append(after, t)
	if ok, detail := checkTemplate(c.Observation().Cluster.Template, after, c.evidence); !ok {
		code := model.CodeTemplateMismatch
		if !c.Observation().Cluster.Template.InitialClusterDecoded {
			code = model.CodeTemplateUnverified
		}
		c.Block(code, name, "", "%s", detail)
	}
}
