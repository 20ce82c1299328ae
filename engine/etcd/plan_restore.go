package etcd

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// restore plans restoring every member from one seed generation: the
// quorum-loss recovery. The plan is derived from what is observed, so a
// rerun resumes where the world stands:
//
//   - replicas above zero and no restore pod yet: scale to zero, wait for
//     the members' pods to go, run one restore pod per member, scale back;
//   - every member's restore pod succeeded: scale back (if not yet), wait
//     for the restored cluster to be healthy, delete the restore pods;
//   - a restore pod failed: refuse, naming it and its output (the data
//     directories it did not reach are unchanged; the agent never touches
//     one before verifying the generation).
//
// The cluster's own members are never deleted: the StatefulSet controller
// stops and recreates them, the volumes are kept, and each agent keeps the
// previous data directory beside the restored one.
func (c etcd) restore() {
	c.Decision().Flow = model.FlowRestore
	if c.Intent().Member != "" {
		c.Block(model.CodeRestoreUnsupported, c.Intent().Member, "", "restore acts on every member of the cluster at once; name no member (to rebuild one member, use reseed or replace)")
		return
	}
	c.restoreShapeGates()
	replicas := c.restoreReplicas()
	c.Decision().Replicas = replicas
	if replicas <= 0 {
		c.Block(model.CodeRestoreUnsupported, "", "", "the StatefulSet wants 0 replicas and no restore in progress records how many to restore: scale it to the cluster's size first")
		return
	}
	peers := c.restoreTemplateGates(replicas)
	c.restoreSourceGates()
	// A restore resumed before it changed anything (its holder died
	// between recording the entry and its first change) is decided
	// afresh: the world may have moved on since, the members may have
	// their quorum back.
	changed := c.restoreChanged()
	if src := c.Options().Source; len(changed) == 0 && src != nil {
		c.restoreForeignGate(src)
		c.restoreQuorumGate()
		c.restoreDiscardNotes(src)
	}
	c.restorePlan(replicas, peers, changed)
}

// restoreChanged lists what the resumed restore changed, or may have
// changed: nil when nothing is resumed or it changed nothing. It judges
// conservatively, from the entry's receipts (a changing step done,
// already so, unanswered, or written ahead: its request may have reached
// the API server) and from the world (the StatefulSet wants fewer
// replicas than the entry recorded; a restore pod of the entry, or of
// no action, exists).
func (c etcd) restoreChanged() []string {
	e := c.Resume()
	if e == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, r := range e.Receipts {
		if !r.Step.Mutates() {
			continue
		}
		var what string
		switch r.Outcome {
		case model.OutcomeDone:
			what = fmt.Sprintf("%s done", r.Step)
		case model.OutcomeAlready:
			what = fmt.Sprintf("%s already so", r.Step)
		case model.OutcomeUnknown:
			what = fmt.Sprintf("%s sent without an answer", r.Step)
		case model.OutcomeSending:
			what = fmt.Sprintf("%s written ahead as sending", r.Step)
		default:
			continue
		}
		if r.Member != "" && r.Step == model.StepRunRestore {
			what += " (" + r.Member + ")"
		}
		if !seen[what] {
			seen[what] = true
			out = append(out, what)
		}
	}
	cl := c.Observation().Cluster
	if cl.Replicas < e.Replicas {
		out = append(out, fmt.Sprintf("StatefulSet %s wants %d of the %d replicas recorded", cl.Name, cl.Replicas, e.Replicas))
	}
	for _, p := range cl.RestorePods {
		if p.Action == e.ID || (p.Action == "" && p.Generation == e.Generation) {
			out = append(out, fmt.Sprintf("restore pod %s exists", p.Name))
		}
	}
	return out
}

// restoreResumeGate says what the rest of a restore that already changed
// the cluster discards, and refuses (unless --force) to scale down
// members that hold quorum again.
func (c etcd) restoreResumeGate(changed []string) {
	src := c.Options().Source
	if src == nil {
		return
	}
	c.Note(model.CodeWritesDiscarded, "", "ledger entry %s already changed the cluster (%s): the rest of the restore replaces every member's data with revision %d of generation %s; every write after it is gone",
		c.Resume().ID, strings.Join(changed, "; "), src.Revision, src.Generation)
	if c.Observation().Cluster.Replicas > 0 {
		c.restoreQuorumGate()
	}
}

// restoreShapeGates refuses the shapes and pod management policies a
// restore cannot work with.
func (c etcd) restoreShapeGates() {
	cl := c.Observation().Cluster
	switch cl.Shape {
	case model.ShapeStaticExisting, model.ShapeStaticNew:
	case model.ShapeSelfRegistering:
		c.Block(model.CodeRestoreUnsupported, "", "", "the entrypoint registers its own member with `etcdctl member add` on start: it would add restored members again as new, empty ones; restore such a cluster with its chart's own snapshot procedure")
	case model.ShapeOperatorOwned:
		c.flow()
	default:
		c.Block(model.CodeShapeUnknown, "", "", "hactl does not recognise how this template bootstraps: restoring alongside it is unsafe; hactl only diagnoses it")
	}
	if cl.PodManagementPolicy != "Parallel" {
		c.Block(model.CodeRestoreUnsupported, "", "", "podManagementPolicy is %s: the StatefulSet creates member N+1 only once member N is ready, and a restored member is ready only with a quorum, so the restored members would never all start. "+
			"podManagementPolicy cannot be changed in place: recreate the StatefulSet with podManagementPolicy: Parallel (kubectl delete statefulset --cascade=orphan, then apply it again) and run this again", cmp.Or(cl.PodManagementPolicy, "unset"))
	}
}

// restoreReplicas is the size the restore scales the StatefulSet back
// to: what the resumed restore recorded, the StatefulSet's, or what a
// restore superseded while the StatefulSet stood scaled to zero recorded.
func (c etcd) restoreReplicas() int {
	replicas := c.Observation().Cluster.Replicas
	if c.Resume() != nil && c.Resume().Replicas > 0 {
		replicas = c.Resume().Replicas
	}
	for _, e := range c.Superseded() {
		if replicas <= 0 && e.Action == model.ActionRestore && e.Replicas > 0 {
			replicas = e.Replicas
		}
	}
	return replicas
}

// restoreTemplateGates checks that the template names every restored
// member's peer URL and a data directory a restore can replace, and
// returns the peer URLs by member name.
func (c etcd) restoreTemplateGates(replicas int) map[string]string {
	cl := c.Observation().Cluster
	t := cl.Template
	peers := map[string]string{}
	for _, e := range t.InitialCluster {
		peers[e.Name] = e.PeerURL
	}
	var missing []string
	for i := range replicas {
		if peers[model.OrdinalName(cl.Name, i)] == "" {
			missing = append(missing, model.OrdinalName(cl.Name, i))
		}
	}
	switch {
	case !t.InitialClusterDecoded || len(t.InitialCluster) == 0:
		c.Block(model.CodeTemplateUnverified, "", "", "the template's --initial-cluster (ETCD_INITIAL_CLUSTER) is not a literal list of members: the restored members' peer URLs cannot be known")
	case len(missing) > 0:
		c.Block(model.CodeTemplateUnverified, "", "", "the template's --initial-cluster does not name %s: every one of the %d members needs a peer URL to be restored", strings.Join(missing, ", "), replicas)
	}
	switch {
	case t.DataDir == "":
		c.Block(model.CodeTemplateUnverified, "", "", "the engine container sets no literal --data-dir (ETCD_DATA_DIR): the directory to restore into is unknown")
	case t.DataVolume == "":
		c.Block(model.CodeTemplateUnverified, "", "", "--data-dir %s is not on a volume claim template: a restore would not outlive the restore pod", t.DataDir)
	case t.DataDir == t.DataMount:
		c.Block(model.CodeTemplateUnverified, "", "", "--data-dir %s is the mount point of volume %s: the restore activates the new directory by renaming it, which a mount point cannot be; point --data-dir at a directory inside the volume (e.g. %s/data)", t.DataDir, t.DataVolume, t.DataMount)
	}
	return peers
}

// restoreSourceGates checks that the generation was named, read and
// verified, and holds this engine's data.
func (c etcd) restoreSourceGates() {
	cl, src := c.Observation().Cluster, c.Options().Source
	switch {
	case c.Options().Generation == "":
		c.Block(model.CodeGenerationUnverified, "", "", "no generation named: restore needs --generation")
	case c.Options().SeedStore == "":
		c.Block(model.CodeSeedStoreMissing, "", "", "no seed store is configured: the generation cannot be read")
	case src == nil || src.Generation != c.Options().Generation:
		c.Block(model.CodeGenerationUnverified, "", "", "generation %s was not read and verified from the store", c.Options().Generation)
	case src.Engine != cl.Engine:
		c.Block(model.CodeGenerationForeign, "", "", "generation %s holds %s data; %s/%s runs %s", src.Generation, src.Engine, cl.Namespace, cl.Name, cl.Engine)
	}
}

// restoreForeignGate refuses (unless --force) a generation taken from
// another cluster than the one its members answer for, or hactl recorded.
func (c etcd) restoreForeignGate(src *model.GenerationFacts) {
	cl := c.Observation().Cluster
	ref, how := c.Analysis().ClusterID, "its members answer for"
	if ref == "" {
		ref, how = cl.KnownClusterID, "hactl recorded"
	}
	switch {
	case ref != "" && src.ClusterID != ref && c.Options().Force:
		c.Note(model.CodeWritesDiscarded, "", "generation %s was taken from cluster %s, not %s (which %s): restoring it anyway (--force)", src.Generation, src.ClusterID, ref, how)
	case ref != "" && src.ClusterID != ref:
		c.Block(model.CodeGenerationForeign, "", model.FlagForce, "generation %s was taken from cluster %s, but %s/%s is cluster %s (%s): restoring it would replace this cluster's data with another's. "+
			"Override only if %s is an earlier incarnation of this cluster (restored since)", src.Generation, src.ClusterID, cl.Namespace, cl.Name, ref, how, src.ClusterID)
	}
}

// restoreQuorumGate fills Decision.Quorum and refuses (unless --force) to
// restore a cluster that has quorum.
func (c etcd) restoreQuorumGate() {
	healthy := c.healthyVoters()
	voters := c.Analysis().Voters
	quorum := voters/2 + 1
	c.Decision().Quorum = model.Quorum{Voters: voters, Quorum: quorum, HealthyWithout: len(healthy)}
	for _, h := range healthy {
		c.Decision().Quorum.HealthyVoters = append(c.Decision().Quorum.HealthyVoters, h.Name)
	}
	if c.Analysis().LeaderID == "" || voters <= 0 || len(healthy) < quorum {
		return
	}
	if c.Options().Force {
		c.Note(model.CodeWritesDiscarded, "", "the cluster has quorum (%d of %d voters healthy) and is restored anyway (--force)", len(healthy), voters)
		return
	}
	c.Block(model.CodeClusterHasQuorum, "", model.FlagForce, "the cluster has quorum (%d of %d voters healthy, leader %s): a restore stops every member and discards every write after the generation. "+
		"Repair single members with replace or reseed", len(healthy), voters, c.Analysis().LeaderMember)
}

// restoreDiscardNotes says which writes the restore discards.
func (c etcd) restoreDiscardNotes(src *model.GenerationFacts) {
	if f := c.Analysis().Frontier; f != nil && src.Revision > 0 {
		c.Note(model.CodeWritesDiscarded, "", "the cluster is restored to revision %d of generation %s: every write after it is gone (members last reported applied index %d)", src.Revision, src.Generation, *f)
	} else if src.Revision > 0 {
		c.Note(model.CodeWritesDiscarded, "", "the cluster is restored to revision %d of generation %s: every write after it is gone", src.Revision, src.Generation)
	}
}

// restorePlan derives the restore's steps from the observed world;
// changed is what the resumed restore changed (restoreChanged).
func (c etcd) restorePlan(replicas int, peers map[string]string, changed []string) {
	cl := c.Observation().Cluster
	stsFence := &model.Fence{Kind: "StatefulSet", Namespace: cl.Namespace, Name: cl.Name, UID: cl.UID,
		ResourceVersion: cl.ResourceVersion, Fingerprint: cl.Fingerprint}
	ours := c.restorePods()
	succeeded, failed := c.restoreOutcomes(replicas, ours)
	if len(failed) > 0 {
		c.Block(model.CodeRestoreFailed, "", "", "restore pods failed (the data directories they did not reach are unchanged): %s. Fix the cause, delete the failed pods (kubectl delete pod -l %s=%s), then run this again to resume",
			strings.Join(failed, "; "), "hactl.dev/restore-of", cl.Name)
		return
	}
	// Once every restore pod succeeded, or the ledger shows a step after
	// them, the restore is past the point of no return: never scale down
	// again (the restore pods are deleted one by one at the end).
	restored := c.Resume() != nil && (succeeded == replicas || c.Resume().HasReceipt(model.StepScaleUp) ||
		c.Resume().HasReceipt(model.StepAwaitRestored) || c.Resume().HasReceipt(model.StepDeleteRestorePod))
	// The restore pods are deleted only after the restored cluster was
	// seen healthy: with none left, a receipt of either says it is over.
	cleanedUp := c.Resume() != nil && len(ours) == 0 &&
		(c.Resume().HasReceipt(model.StepAwaitRestored) || c.Resume().HasReceipt(model.StepDeleteRestorePod))
	switch {
	case cleanedUp:
		c.Done()
	case restored:
		c.afterRestore(replicas, ours, stsFence)
	default:
		if len(changed) > 0 {
			c.restoreResumeGate(changed)
		}
		c.restoreSteps(replicas, peers, ours, stsFence)
	}
}

// restorePods returns the restore pods of this action (any, before the
// action is recorded) and of this generation, by member; others are
// leftovers, planned for deletion.
func (c etcd) restorePods() map[string]model.RestorePodFacts {
	cl := c.Observation().Cluster
	action := ""
	if c.Resume() != nil {
		action = c.Resume().ID
	}
	ours := map[string]model.RestorePodFacts{}
	for _, p := range cl.RestorePods {
		if p.Generation == c.Options().Generation && (action == "" || p.Action == action) && !p.DeletionMarked {
			ours[p.Member] = p
			continue
		}
		if !p.DeletionMarked {
			c.Step(model.Step{Kind: model.StepDeleteRestorePod, Member: p.Member, Fence: p.Fence(cl),
				Detail: fmt.Sprintf("delete leftover restore pod %s (generation %s, %s)", p.Name, cmp.Or(p.Generation, "unknown"), cmp.Or(p.Phase, "no phase"))})
		}
	}
	return ours
}

// restoreOutcomes counts the restore pods that succeeded and describes
// those that failed.
func (c etcd) restoreOutcomes(replicas int, ours map[string]model.RestorePodFacts) (succeeded int, failed []string) {
	for i := range replicas {
		p, ok := ours[model.OrdinalName(c.Observation().Cluster.Name, i)]
		switch {
		case !ok:
		case p.Phase == "Succeeded":
			succeeded++
		case p.Phase == "Failed":
			failed = append(failed, fmt.Sprintf("%s: %s", p.Name, cmp.Or(p.Message, "failed")))
		}
	}
	return succeeded, failed
}

// afterRestore plans from restored data directories: scale back (if not
// yet), wait for the restored cluster, delete the restore pods.
func (c etcd) afterRestore(replicas int, ours map[string]model.RestorePodFacts, stsFence *model.Fence) {
	cl := c.Observation().Cluster
	if cl.Replicas == 0 {
		c.Step(model.Step{Kind: model.StepScaleUp, Fence: stsFence, Replicas: replicas, Detail: fmt.Sprintf("scale StatefulSet %s back to %d replicas: the members start on their restored data", cl.Name, replicas)})
	}
	if cl.Replicas != 0 && c.restoredHealthy(replicas) {
		c.deleteRestorePods(replicas, ours)
		if len(c.Decision().Steps) == 0 {
			c.Done()
		}
		return
	}
	c.awaitRestored(replicas)
	c.deleteRestorePods(replicas, ours)
}

// restoreSteps plans the restore from before its point of no return:
// scale to zero, run the restore pods not running yet, scale back, wait
// for the restored cluster, delete the restore pods.
func (c etcd) restoreSteps(replicas int, peers map[string]string, ours map[string]model.RestorePodFacts, stsFence *model.Fence) {
	cl := c.Observation().Cluster
	podsLeft := 0
	for _, m := range c.Observation().Members {
		if m.Pod != nil {
			podsLeft++
		}
	}
	if cl.Replicas > 0 {
		c.Step(model.Step{Kind: model.StepScaleDown, Fence: stsFence, Detail: fmt.Sprintf("scale StatefulSet %s from %d to 0 replicas: every member stops; volumes are kept", cl.Name, cl.Replicas)})
	}
	if cl.Replicas > 0 || podsLeft > 0 {
		c.Step(model.Step{Kind: model.StepAwaitMembersStopped, Detail: fmt.Sprintf("wait until none of the %d members' pods is left", replicas)})
	}
	gen := c.Options().Generation
	for i := range replicas {
		name := model.OrdinalName(cl.Name, i)
		if _, ok := ours[name]; ok {
			continue
		}
		c.Step(model.Step{Kind: model.StepRunRestore, Member: name, PeerURLs: []string{peers[name]},
			Detail: fmt.Sprintf("run restore pod hactl-restore-%s: verify generation %s and restore it into %s on %s's volume", name, gen, cl.Template.DataDir, name)})
	}
	c.Step(model.Step{Kind: model.StepAwaitRestore, Detail: fmt.Sprintf("wait until all %d restore pods succeeded", replicas)})
	c.Step(model.Step{Kind: model.StepScaleUp, Fence: stsFence, Replicas: replicas, Detail: fmt.Sprintf("scale StatefulSet %s back to %d replicas: the members start on their restored data", cl.Name, replicas)})
	c.awaitRestored(replicas)
	for i := range replicas {
		name := model.OrdinalName(cl.Name, i)
		c.Step(model.Step{Kind: model.StepDeleteRestorePod, Member: name, Detail: fmt.Sprintf("delete restore pod hactl-restore-%s", name)})
	}
}

func (c etcd) awaitRestored(replicas int) {
	c.Step(model.Step{Kind: model.StepAwaitRestored, Detail: fmt.Sprintf("wait until all %d members answer as one cluster with a leader, every one a healthy voter", replicas)})
}

// restoredHealthy: every wanted member is a healthy voter of one cluster
// with a leader.
func (c etcd) restoredHealthy(replicas int) bool {
	return c.Analysis().LeaderID != "" && c.Analysis().ClusterIDs == 1 && len(c.healthyVoters()) == replicas
}

func (c etcd) deleteRestorePods(replicas int, ours map[string]model.RestorePodFacts) {
	cl := c.Observation().Cluster
	for i := range replicas {
		p, ok := ours[model.OrdinalName(cl.Name, i)]
		if !ok {
			continue
		}
		c.Step(model.Step{Kind: model.StepDeleteRestorePod, Member: p.Member, Fence: p.Fence(cl), Detail: fmt.Sprintf("delete restore pod %s (succeeded)", p.Name)})
	}
}
