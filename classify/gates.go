package classify

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// common applies the gates every action on every engine shares:
// freshness, lock and ledger.
func (c *classifier) common() {
	c.freshnessGate()
	c.lockGate()
	c.ledgerGate()
}

// managedGate refuses every change to a cluster whose members' pods are
// another's to create and delete (the kubelet's static pods); true when
// it did: no plan is drawn (handOver says what to do instead).
func (c *classifier) managedGate() bool {
	m := c.obs.Cluster.ManagedBy
	if m == nil {
		return false
	}
	c.Block(model.CodeMemberManaged, c.in.Member, "", "the members' pods belong to %s, which creates and deletes them: hactl changes none of them; %s", m.Name, managedAdvice(c.in.Action, m))
	return true
}

// handOver hands a refused replace or reseed of a managed cluster's
// member the manager's own steps, filled in for the member, once the
// facts say they are safe to follow now: the member exists, the members
// answered, they agree on one cluster, no other learner is pending (the
// re-added member may come back as one), and the healthy voters left
// make a quorum however it comes back (as a learner, or as a voter that
// has not caught up). Otherwise the steps are withheld and a blocker
// says why.
func (c *classifier) handOver() {
	m := c.obs.Cluster.ManagedBy
	if (c.in.Action != model.ActionReplace && c.in.Action != model.ActionReseed) || len(m.Runbook) == 0 {
		return
	}
	target := c.Member(c.in.Member)
	a := c.a
	switch {
	case target == nil:
		c.Block(model.CodeMemberNotFound, c.in.Member, "", "no member %s; members: %s", c.in.Member, c.MemberNames())
	case !c.obs.EngineProbed || a.AnsweringVoters == 0:
		c.Block(model.CodeNotProbed, c.in.Member, "", "no member answered: hactl cannot tell whether removing %s keeps a quorum, so %s's steps are withheld; ask the members (status) first", c.in.Member, m.Name)
	case a.ClusterIDs > 1:
		c.Block(model.CodeClusterIDSplit, c.in.Member, "", "the members answer for %d different clusters: rebuilding one member by the book could pick the wrong cluster; see status", a.ClusterIDs)
	default:
		if c.operatorRecordAgrees(target) {
			c.managedQuorum(target)
		}
	}
	if len(c.d.Blockers) > 1 {
		c.Note(model.CodeRunbookWithheld, c.in.Member, "%s's steps are not shown: %s", m.Name, c.d.Blockers[len(c.d.Blockers)-1].Code)
		return
	}
	r := strings.NewReplacer(c.runbookWords()...)
	for _, step := range m.Runbook {
		c.d.Runbook = append(c.d.Runbook, r.Replace(step))
	}
}

// operatorRecordAgrees blocks a rebuild through an operator whose record
// of target is not target: it has none (deleting would delete nothing of
// target's), or it records another member ID than the one the cluster
// lists for target (its finalizer would remove that other member); for
// an operator that removes by name (RemovesByName), the cluster lists no
// member under target's name. True when no operator's record was read,
// or it agrees.
func (c *classifier) operatorRecordAgrees(target *model.Member) bool {
	op := c.obs.Cluster.Operator
	if op == nil {
		return true
	}
	if op.RemovesByName {
		// Its way removes whichever member the cluster lists under the
		// member's name (etcd-druid's sidecar finds itself in the member
		// list by name, the first so named), whatever ID it recorded.
		name := op.MemberPrefix + target.Name
		if op.Err != "" {
			c.Block(model.CodeOperatorRecordMismatch, target.Name, "", "%s %s could not be read (%s): its steps act on it, and whether it is being deleted cannot be checked", op.Kind, op.Name, op.Err)
			return false
		}
		if op.Deleting {
			c.Block(model.CodeOperatorRecordMismatch, target.Name, "", "%s %s is being deleted: the operator is removing the cluster, not rebuilding members", op.Kind, op.Name)
			return false
		}
		named := 0
		for _, p := range c.a.MemberList {
			if p.Name == name {
				named++
			}
		}
		p := c.peerOf(target)
		switch {
		case named > 1:
			c.Block(model.CodeOperatorRecordMismatch, target.Name, "", "the members' list has %d members named %s: %s's way removes the first so named, which may be another than %s", named, name, op.Kind, target.Name)
			return false
		case p == nil || p.Name != name:
			c.Block(model.CodeOperatorRecordMismatch, target.Name, "", "the members' list has no member named %s for %s: %s's way would remove no member while its pod and data go, and could not add it back", name, target.Name, op.Kind)
			return false
		}
		return true
	}
	kind := cmp.Or(op.MemberKind, "record")
	if op.Err != "" {
		c.Block(model.CodeOperatorRecordMismatch, target.Name, "", "the operator's record of %s could not be read (%s): whether deleting its %s removes %s cannot be checked", target.Name, op.Err, kind, target.Name)
		return false
	}
	if op.OtherCluster(c.a.ClusterID) {
		c.Block(model.CodeOperatorRecordMismatch, target.Name, "", "the operator records cluster ID %s; the members answer for %s: it acts on another cluster than the one it would change; see status", op.ClusterID, c.a.ClusterID)
		return false
	}
	rec := op.Member(target.Name)
	if rec == nil {
		c.Block(model.CodeOperatorRecordMismatch, target.Name, "", "the operator has no %s %s: deleting one would not rebuild this member; see the operator's resources", kind, target.Name)
		return false
	}
	p := c.peerOf(target)
	if rec.MemberID == "" {
		// The operator then looks the member up by name: it must be
		// listed under the target's own.
		if p == nil || p.Name != target.Name {
			c.Block(model.CodeOperatorRecordMismatch, target.Name, "", "the operator has recorded no member ID for %s, and the members' list has no member named %s: deleting its %s would remove no member while its pod and data go", target.Name, target.Name, kind)
			return false
		}
		return true
	}
	switch {
	case p == nil:
		c.Block(model.CodeOperatorRecordMismatch, target.Name, "", "the operator records member ID %s for %s, and the members' list has no entry for %s to check it against: deleting its %s could remove another member", rec.MemberID, target.Name, target.Name, kind)
		return false
	case p.ID != rec.MemberID:
		what := "would remove " + rec.MemberID + ", another member"
		if !slices.ContainsFunc(c.a.MemberList, func(q model.Peer) bool { return q.ID == rec.MemberID }) {
			what = "would remove no member: the cluster lists no " + rec.MemberID + ", so etcd refuses its removal and the deletion hangs on the operator's finalizer"
		}
		c.Block(model.CodeOperatorRecordMismatch, target.Name, "", "the operator records member ID %s for %s, which the cluster lists as %s: deleting its %s %s; correct the operator's record first", rec.MemberID, target.Name, p.ID, kind, what)
		return false
	}
	return true
}

// managedQuorum blocks a rebuild of target that would leave too few
// healthy voters: removed, it leaves the others; added back as a voter
// that has not caught up, it counts among the voters but not the
// healthy (a learner or an unlisted member then makes one voter more),
// and only one learner may be pending at a time.
func (c *classifier) managedQuorum(target *model.Member) {
	a := c.a
	peer := c.peerOf(target)
	healthy := c.healthyVoters()
	without := len(healthy)
	if slices.Contains(healthy, target.Name) {
		without--
	}
	voters := a.Voters
	if peer == nil || peer.IsLearner {
		voters++ // it comes back as a voter it is not now
	}
	for _, p := range a.MemberList {
		if p.IsLearner && (peer == nil || p.ID != peer.ID) {
			c.Block(model.CodeLearnerPending, target.Name, "", "learner %s is pending: etcd takes one learner at a time, so adding %s back would fail after it was removed; let the learner catch up and be promoted first", cmp.Or(p.Name, p.ID), target.Name)
			return
		}
	}
	if need := voters/2 + 1; without < need {
		c.Block(model.CodeQuorumWouldBreak, target.Name, "", "%d healthy voters without %s (%s); with it added back and not yet caught up there are %d voters, quorum %d: the cluster would stop; bring the other members back first",
			without, target.Name, strings.Join(slices.DeleteFunc(slices.Clone(healthy), func(n string) bool { return n == target.Name }), ", "), voters, need)
	}
}

// healthyVoters are the members that are voters within the lag threshold
// of a real frontier (PhaseMember), listed as voters in the reference
// member list, their pods not being deleted.
func (c *classifier) healthyVoters() []string {
	var out []string
	for i := range c.obs.Members {
		m := &c.obs.Members[i]
		if m.Phase != model.PhaseMember || m.Pod == nil || m.Pod.DeletionMarked {
			continue
		}
		if p := c.peerOf(m); p != nil && !p.IsLearner {
			out = append(out, m.Name)
		}
	}
	return out
}

// peerOf is m's entry in the reference member list: by the ID it
// answered with, else by name (its pod's, or, for static pods, its
// node's: kubeadm names members after their nodes); nil when none.
func (c *classifier) peerOf(m *model.Member) *model.Peer {
	for i := range c.a.MemberList {
		p := &c.a.MemberList[i]
		switch {
		case m.Engine != nil && m.Engine.MemberID != "":
			if p.ID == m.Engine.MemberID {
				return p
			}
		case p.Name != "" && (p.Name == m.Name || (m.Pod != nil && p.Name == m.Pod.Node)):
			return p
		}
	}
	return nil
}

// managedAdvice says what to do instead of action.
func managedAdvice(action model.Action, m *model.Manager) string {
	if (action == model.ActionReplace || action == model.ActionReseed) && len(m.Runbook) > 0 {
		return "rebuild the member its way (its steps follow, when following them now keeps a quorum)"
	}
	return "do it its way, on the nodes"
}

// runbookWords pair each word of a Manager's runbook with its value for
// the decision's member and cluster (model.Manager.Runbook): the
// member's ID from its answer or the others' member list, and as the
// healthy node the leader's, else a healthy voter's.
func (c *classifier) runbookWords() []string {
	ob := c.obs
	member, node, id := c.in.Member, "<the member's node>", "<its member ID: etcdctl member list>"
	if m := c.Member(member); m != nil {
		if m.Pod != nil && m.Pod.Node != "" {
			node = m.Pod.Node
		}
		if p := c.peerOf(m); p != nil && p.ID != "" {
			id = p.ID
		} else if m.Engine != nil && m.Engine.MemberID != "" {
			id = m.Engine.MemberID
		}
	}
	healthy := "<another control-plane node>"
	for _, name := range c.healthyVoters() {
		m := c.Member(name)
		if name == member || m.Pod.Node == "" {
			continue
		}
		if name == c.a.LeaderMember || healthy == "<another control-plane node>" {
			healthy = m.Pod.Node
		}
	}
	padded := id
	if n, err := strconv.ParseUint(id, 16, 64); err == nil {
		padded = fmt.Sprintf("%016x", n)
	}
	prefix := ""
	if op := ob.Cluster.Operator; op != nil {
		prefix = op.MemberPrefix
	}
	return []string{
		"{member}", member, "{memberName}", prefix + member, "{memberID}", id, "{memberID16}", padded, "{node}", node, "{healthyNode}", healthy,
		"{dataDir}", cmp.Or(ob.Cluster.Template.DataDir, "/var/lib/etcd"),
		"{namespace}", ob.Cluster.Namespace, "{cluster}", ob.Cluster.Name,
	}
}

// freshnessGate refuses an observation without a time or older than
// MaxAge.
func (c *classifier) freshnessGate() {
	switch age := c.now.Sub(c.obs.At); {
	case c.obs.At.IsZero():
		c.Block(model.CodeObservationStale, "", "", "the observation carries no time; observe again")
	case age > c.o.MaxAge:
		c.Block(model.CodeObservationStale, "", "", "the observation is %s old, older than %s; observe again", age.Round(time.Second), c.o.MaxAge)
	}
}

// lockGate refuses while another holder holds the cluster's lock, and
// notes a stale lock that will be taken over.
func (c *classifier) lockGate() {
	l := c.obs.Lock
	if l == nil || l.Holder == "" || l.Holder == c.o.LockHolder {
		return
	}
	if l.Held(c.now) {
		c.Block(model.CodeLockHeld, "", "", "another hactl action holds lease %s: holder %s, acquired %s, renewed %s ago, lease %s; wait for it to finish",
			l.Name, l.Holder, l.AcquiredAt.UTC().Format(time.RFC3339), c.now.Sub(l.RenewedAt).Round(time.Second), l.Duration)
		return
	}
	why := fmt.Sprintf("not renewed for %s (lease %s)", c.now.Sub(l.RenewedAt).Round(time.Second), l.Duration)
	if l.HolderGone {
		why = "its process no longer runs"
	}
	c.Note(model.CodeLockStale, "", "lease %s names holder %s, which is stale: %s; it will be taken over and the takeover recorded", l.Name, l.Holder, why)
}

// ledgerGate walks the in-progress ledger entries: the newest resumable
// entry of the same action and member is continued, entries that may not
// be continued and (with --supersede) every other one are superseded, and
// any other action in progress refuses.
func (c *classifier) ledgerGate() {
	for i := range c.obs.Ledger {
		e := &c.obs.Ledger[i]
		if e.State != model.EntryInProgress {
			continue
		}
		if e.Action == c.in.Action && e.Member == c.in.Member {
			if why := c.notResumable(e); why != "" {
				c.supersede(e)
				c.Note(model.CodeSuperseding, e.Member, "%s ledger entry %s (phase %s) will be marked superseded: %s", e.Action, e.ID, e.Phase, why)
				continue
			}
			if c.resume == nil || e.StartedAt.After(c.resume.StartedAt) {
				c.resume = e
			}
			continue
		}
		if c.o.Supersede {
			c.supersede(e)
			c.Note(model.CodeSuperseding, e.Member, "%s of %s (ledger entry %s, phase %s) will be marked superseded", e.Action, e.Member, e.ID, e.Phase)
			continue
		}
		if why := c.rules.staleWait(c, e, true); why != "" && !c.lockedByOther() {
			c.supersede(e)
			c.Note(model.CodeSuperseding, e.Member, "%s of %s (ledger entry %s, phase %s) will be marked superseded: %s", e.Action, cmp.Or(e.Member, "the cluster"), e.ID, e.Phase, why)
			continue
		}
		c.Block(model.CodeActionInProgress, e.Member, model.FlagSupersede, "%s of %s is recorded in progress (ledger entry %s, phase %s, by %s); finish it by running the same command again",
			e.Action, e.Member, e.ID, e.Phase, e.Holder)
	}
	if c.resume != nil {
		c.d.Resume = c.resume.ID
		c.Note(model.CodeResuming, c.resume.Member, "continuing ledger entry %s (phase %s), started %s by %s", c.resume.ID, c.resume.Phase,
			c.resume.StartedAt.UTC().Format(time.RFC3339), c.resume.Holder)
	}
}

// lockedByOther reports whether another holder holds the cluster's lock
// now (lockGate refuses then): its entries are its own to finish.
func (c *classifier) lockedByOther() bool {
	l := c.obs.Lock
	return l != nil && l.Holder != "" && l.Holder != c.o.LockHolder && l.Held(c.now)
}

func (c *classifier) supersede(e *model.LedgerEntry) {
	c.d.Supersedes = append(c.d.Supersedes, e.ID)
	c.superseded = append(c.superseded, e)
}

// notResumable says why an in-progress entry of the same action and
// member must not be continued ("" when it may be): a restore continues
// only the same generation with the same digest, taken from the same
// cluster (a different one is a new action that passes every gate); an
// entry is cleared by --supersede; a replace or reseed whose recorded
// member, pod and volume are all gone and that nobody has touched for
// StaleEntryAfter is stale.
func (c *classifier) notResumable(e *model.LedgerEntry) string {
	if c.o.Supersede {
		return "--supersede starts the action anew"
	}
	switch e.Action {
	case model.ActionRestore:
		return c.restoreNotResumable(e)
	case model.ActionReplace, model.ActionReseed:
		return c.replaceNotResumable(e)
	case model.ActionSwitchover:
		return c.rules.staleWait(c, e, false)
	case model.ActionSeed:
		if e.Generation != c.o.Generation {
			return fmt.Sprintf("it seeds generation %s, this seed generation %s: a new seed that passes every gate", cmp.Or(e.Generation, "(none)"), cmp.Or(c.o.Generation, "(none)"))
		}
	}
	return ""
}

// restoreNotResumable: a restore continues only the same generation with
// the same digest, taken from the same cluster.
func (c *classifier) restoreNotResumable(e *model.LedgerEntry) string {
	src := c.o.Source
	switch {
	case e.Generation != c.o.Generation:
		return fmt.Sprintf("it restores generation %s, this restore generation %s: a new restore that passes every gate", cmp.Or(e.Generation, "(none)"), cmp.Or(c.o.Generation, "(none)"))
	case src == nil:
		return ""
	case e.Digest != "" && e.Digest != src.Digest:
		return fmt.Sprintf("it restores generation %s with digest %s, the store now holds digest %s: a new restore that passes every gate", e.Generation, cmp.Or(e.Digest, "(not recorded)"), cmp.Or(src.Digest, "(none)"))
	case e.FromClusterID != "" && e.FromClusterID != src.ClusterID:
		return fmt.Sprintf("it restores generation %s of cluster %s, the store's is of cluster %s: a new restore that passes every gate", e.Generation, e.FromClusterID, src.ClusterID)
	}
	return ""
}

// replaceNotResumable: a replace or reseed is stale once nobody touched it
// for StaleEntryAfter and the member it recorded (as the engine lists it),
// its pod and its volume are all gone.
func (c *classifier) replaceNotResumable(e *model.LedgerEntry) string {
	if age := c.now.Sub(e.UpdatedAt); e.UpdatedAt.IsZero() || age < c.o.StaleEntryAfter {
		return ""
	}
	if c.rules.holdsRecorded(c, e) {
		return ""
	}
	r := e.Replaced
	if m := c.Member(e.Member); m != nil {
		if r.PodUID != "" && m.Pod != nil && m.Pod.UID == r.PodUID {
			return ""
		}
		if r.PVCUID != "" && m.PVC != nil && m.PVC.UID == r.PVCUID {
			return ""
		}
	}
	return fmt.Sprintf("it was last updated %s ago and the member, pod and volume it recorded (member %s, pod uid %s, volume uid %s) are all gone: it is stale",
		c.now.Sub(e.UpdatedAt).Round(time.Second), cmp.Or(r.MemberID, "-"), cmp.Or(r.PodUID, "-"), cmp.Or(r.PVCUID, "-"))
}
