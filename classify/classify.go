package classify

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/verdict"
)

// Classify decides what to do about intent on the cluster obs describes,
// at now. It is a pure function of its arguments: no client, no clock, no
// logging. The rules, in order:
//
//   - the bootstrap shape picks the flow (static-existing: learner;
//     self-registering: delegate) or refuses (static-new, operator-owned,
//     unknown);
//   - a stale observation, a lock held by someone else, another action in
//     progress, an engine that was not asked, no agreed leader or a split
//     cluster refuse;
//   - removing a voter is refused when the healthy voters without the
//     target are fewer than quorum, and when the target leads (unless
//     --move-leader plans a leadership transfer first);
//   - a deletion-marked pod means await, a never-started pod created from
//     the current template means observe: neither ever deletes;
//   - the plan is derived from what is observed (the member list, the
//     pod's and volume's identity against those the ledger recorded), so
//     a rerun after a crash resumes where the world stands and never
//     deletes the same object twice.
//
// Pod waiting reasons, pull errors and event messages are never read here:
// only verified facts (identities, the member list, phases derived from
// engine answers) can lead to a delete.
func Classify(obs model.Observation, in Intent, now time.Time) Decision {
	o := in.Options.withDefaults()
	derived, v := verdict.Evaluate(obs, now, o.Verdict)
	c := &classifier{
		obs: derived,
		a:   verdict.Analyze(obs, now, o.Verdict),
		in:  in,
		o:   o,
		now: now,
	}
	c.d = Decision{
		Intent: in,
		Cluster: ClusterRef{Namespace: obs.Cluster.Namespace, Name: obs.Cluster.Name,
			UID: obs.Cluster.UID, Engine: obs.Cluster.Engine},
		Shape:      obs.Cluster.Shape,
		Flow:       FlowNone,
		Steps:      []Step{},
		Fences:     []model.Fence{},
		Notes:      []Note{},
		Blockers:   []Blocker{},
		Verdict:    v.Reasons,
		ObservedAt: obs.At,
		DecidedAt:  now,
		Leader:     c.a.LeaderMember,
	}
	c.common()
	switch in.Action {
	case model.ActionReplace, model.ActionReseed:
		c.membership()
	case model.ActionSeed:
		c.seed()
	case model.ActionRestore:
		c.restore()
	default:
		c.block(CodeEngineUnsupported, "", "", "hactl knows no action %q (known: replace, reseed, seed, restore)", in.Action)
	}
	c.finish()
	return c.d
}

type classifier struct {
	obs model.Observation // with derived phases and lag
	a   verdict.Analysis
	in  Intent
	o   Options
	now time.Time
	d   Decision

	resume *model.LedgerEntry
	// superseded are the in-progress entries this decision supersedes.
	superseded []*model.LedgerEntry
	// verb is set by the await and observe rules.
	verb Verb
	done bool
}

func (c *classifier) block(code Code, member, override, format string, args ...any) {
	c.d.Blockers = append(c.d.Blockers, Blocker{Code: code, Member: member, Detail: fmt.Sprintf(format, args...), Override: override})
}

func (c *classifier) note(code Code, member, format string, args ...any) {
	c.d.Notes = append(c.d.Notes, Note{Code: code, Member: member, Detail: fmt.Sprintf(format, args...)})
}

func (c *classifier) step(s Step) {
	s.Phase = s.Kind.PhaseOf()
	c.d.Steps = append(c.d.Steps, s)
}

// common applies the rules every action shares: engine, freshness, lock
// and ledger.
func (c *classifier) common() {
	cl := c.obs.Cluster
	if cl.Engine != model.EngineEtcd {
		c.block(CodeEngineUnsupported, "", "", "hactl acts on etcd clusters only; %s/%s runs %q (diagnose with status)", cl.Namespace, cl.Name, cl.Engine)
	}
	switch age := c.now.Sub(c.obs.At); {
	case c.obs.At.IsZero():
		c.block(CodeObservationStale, "", "", "the observation carries no time; observe again")
	case age > c.o.MaxAge:
		c.block(CodeObservationStale, "", "", "the observation is %s old, older than %s; observe again", age.Round(time.Second), c.o.MaxAge)
	}
	if l := c.obs.Lock; l != nil && l.Holder != "" && l.Holder != c.o.LockHolder {
		if l.Held(c.now) {
			c.block(CodeLockHeld, "", "", "another hactl action holds lease %s: holder %s, acquired %s, renewed %s ago, lease %s; wait for it to finish",
				l.Name, l.Holder, l.AcquiredAt.UTC().Format(time.RFC3339), c.now.Sub(l.RenewedAt).Round(time.Second), l.Duration)
		} else {
			why := fmt.Sprintf("not renewed for %s (lease %s)", c.now.Sub(l.RenewedAt).Round(time.Second), l.Duration)
			if l.HolderGone {
				why = "its process no longer runs"
			}
			c.note(CodeLockStale, "", "lease %s names holder %s, which is stale: %s; it will be taken over and the takeover recorded", l.Name, l.Holder, why)
		}
	}
	for i := range c.obs.Ledger {
		e := &c.obs.Ledger[i]
		if e.State != model.EntryInProgress {
			continue
		}
		if e.Action == c.in.Action && e.Member == c.in.Member {
			if why := c.notResumable(e); why != "" {
				c.d.Supersedes = append(c.d.Supersedes, e.ID)
				c.superseded = append(c.superseded, e)
				c.note(CodeSuperseding, e.Member, "%s ledger entry %s (phase %s) will be marked superseded: %s", e.Action, e.ID, e.Phase, why)
				continue
			}
			if c.resume == nil || e.StartedAt.After(c.resume.StartedAt) {
				c.resume = e
			}
			continue
		}
		if c.o.Supersede {
			c.d.Supersedes = append(c.d.Supersedes, e.ID)
			c.superseded = append(c.superseded, e)
			c.note(CodeSuperseding, e.Member, "%s of %s (ledger entry %s, phase %s) will be marked superseded", e.Action, e.Member, e.ID, e.Phase)
			continue
		}
		c.block(CodeActionInProgress, e.Member, FlagSupersede, "%s of %s is recorded in progress (ledger entry %s, phase %s, by %s); finish it by running the same command again",
			e.Action, e.Member, e.ID, e.Phase, e.Holder)
	}
	if c.resume != nil {
		c.d.Resume = c.resume.ID
		c.note(CodeResuming, c.resume.Member, "continuing ledger entry %s (phase %s), started %s by %s", c.resume.ID, c.resume.Phase,
			c.resume.StartedAt.UTC().Format(time.RFC3339), c.resume.Holder)
	}
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
	if e.Action == model.ActionRestore {
		src := c.o.Source
		switch {
		case e.Generation != c.o.Generation:
			return fmt.Sprintf("it restores generation %s, this restore generation %s: a new restore that passes every gate", orName(e.Generation, "(none)"), orName(c.o.Generation, "(none)"))
		case src == nil:
			return ""
		case e.Digest != "" && e.Digest != src.Digest:
			return fmt.Sprintf("it restores generation %s with digest %s, the store now holds digest %s: a new restore that passes every gate", e.Generation, orName(e.Digest, "(not recorded)"), orName(src.Digest, "(none)"))
		case e.FromClusterID != "" && e.FromClusterID != src.ClusterID:
			return fmt.Sprintf("it restores generation %s of cluster %s, the store's is of cluster %s: a new restore that passes every gate", e.Generation, e.FromClusterID, src.ClusterID)
		}
		return ""
	}
	if e.Action != model.ActionReplace && e.Action != model.ActionReseed {
		return ""
	}
	if age := c.now.Sub(e.UpdatedAt); e.UpdatedAt.IsZero() || age < c.o.StaleEntryAfter {
		return ""
	}
	r := e.Replaced
	if r.MemberID != "" && c.peerByIDIn(r.MemberID) {
		return ""
	}
	// What the action itself brings back (a learner or voter with the
	// recorded peer URL or the member's name) is where a normal resume
	// stands: not stale.
	if c.peerHolding(e.Member, r.PeerURLs) {
		return ""
	}
	if m := c.member(e.Member); m != nil {
		if r.PodUID != "" && m.Pod != nil && m.Pod.UID == r.PodUID {
			return ""
		}
		if r.PVCUID != "" && m.PVC != nil && m.PVC.UID == r.PVCUID {
			return ""
		}
	}
	return fmt.Sprintf("it was last updated %s ago and the member, pod and volume it recorded (member %s, pod uid %s, volume uid %s) are all gone: it is stale",
		c.now.Sub(e.UpdatedAt).Round(time.Second), orName(r.MemberID, "-"), orName(r.PodUID, "-"), orName(r.PVCUID, "-"))
}

// peerHolding reports whether any answering member lists a member named
// name or holding one of urls.
func (c *classifier) peerHolding(name string, urls []string) bool {
	for _, m := range c.obs.Members {
		if e := m.Engine; e != nil && e.Reachable {
			for _, p := range e.Peers {
				if (name != "" && p.Name == name) || slices.ContainsFunc(p.PeerURLs, func(u string) bool { return slices.Contains(urls, u) }) {
					return true
				}
			}
		}
	}
	return false
}

// peerByIDIn reports whether any answering member lists member id.
func (c *classifier) peerByIDIn(id string) bool {
	for _, m := range c.obs.Members {
		if e := m.Engine; e != nil && e.Reachable {
			for _, p := range e.Peers {
				if p.ID == id {
					return true
				}
			}
		}
	}
	return false
}

func (c *classifier) member(name string) *model.Member {
	for i := range c.obs.Members {
		if c.obs.Members[i].Name == name {
			return &c.obs.Members[i]
		}
	}
	return nil
}

func (c *classifier) memberNames() string {
	var n []string
	for _, m := range c.obs.Members {
		n = append(n, m.Name)
	}
	return strings.Join(n, ", ")
}

// onReference reports whether m answered for the reference cluster.
func (c *classifier) onReference(m *model.Member) bool {
	return m.Engine != nil && m.Engine.Reachable && m.Engine.ClusterID != "" && m.Engine.ClusterID == c.a.ClusterID
}

// flow picks the flow from the shape, or blocks.
func (c *classifier) flow() Flow {
	t := c.obs.Cluster.Template
	switch c.obs.Cluster.Shape {
	case model.ShapeStaticExisting:
		return FlowLearner
	case model.ShapeSelfRegistering:
		if t.StartFromSnapshot {
			c.block(CodeStartFromSnapshot, "", "", "the template sets ETCD_START_FROM_SNAPSHOT=yes: a recreated member would restore a snapshot of its own choosing instead of joining; hactl only diagnoses such clusters")
			return FlowNone
		}
		c.note(CodeDelegated, "", "self-registering entrypoint: hactl removes the member and deletes its volume and pod; the entrypoint re-adds itself and hactl waits for a voting member with its peer URL (no learner is added or promoted)")
		return FlowDelegate
	case model.ShapeStaticNew:
		c.block(CodeShapeStaticNew, "", "", "the template hard-codes --initial-cluster-state=new: a member recreated on an empty volume would either form a new one-member cluster or take back its removed ID and crash-loop with \"permanently removed from the cluster\". "+
			"Switch the template to --initial-cluster-state=existing (ETCD_INITIAL_CLUSTER_STATE=existing) with updateStrategy: OnDelete, so running pods keep their arguments, then run this again")
	case model.ShapeOperatorOwned:
		owner := t.OperatorOwner
		if owner == "" {
			owner = "a backup/restore sidecar"
		}
		c.block(CodeShapeOperatorOwned, "", "", "the cluster is managed by %s, which owns its membership; hactl only diagnoses it: repair it through the operator", owner)
	default:
		c.block(CodeShapeUnknown, "", "", "hactl does not recognise how this template bootstraps (a shell wrapper, a preStop calling etcdctl, or no --initial-cluster-state): acting alongside it is unsafe; hactl only diagnoses it")
	}
	return FlowNone
}

// engineGates checks that the engine can take membership changes.
func (c *classifier) engineGates(target string) bool {
	if !c.obs.EngineProbed {
		c.block(CodeNotProbed, "", "", "the members were not probed (--no-probe?): hactl acts only on what the members themselves say")
		return false
	}
	if c.a.ClusterID == "" {
		c.block(CodeClusterUnreachable, "", "", "no member answered for the cluster: membership cannot be changed%s", c.probeFailures())
		return false
	}
	if c.a.MemberList == nil {
		c.block(CodeMemberListUnknown, "", "", "no answering member reported the member list%s", c.peerFailures())
		return false
	}
	if c.a.ClusterIDs > 1 {
		var others []string
		for i := range c.obs.Members {
			m := &c.obs.Members[i]
			if m.Engine != nil && m.Engine.Reachable && m.Engine.ClusterID != "" && m.Engine.ClusterID != c.a.ClusterID && m.Name != target {
				others = append(others, fmt.Sprintf("%s answers for %s", m.Name, m.Engine.ClusterID))
			}
		}
		if len(others) > 0 {
			c.block(CodeClusterIDSplit, "", "", "members answer for more than one cluster (reference %s; %s): resolve that first", c.a.ClusterID, strings.Join(others, "; "))
		}
	}
	if c.a.LeaderID == "" {
		c.block(CodeLeaderUnknown, "", "", "no leader is agreed by a majority of the answering members (%s): membership changes need a leader", c.a.NoFrontierBecause)
	}
	return true
}

// peerFailures says why each answering member gave no member list, with a
// hint when deadlines ran out (a slow API server: every probe goes
// through a port-forward).
func (c *classifier) peerFailures() string {
	var parts []string
	deadline := false
	for _, m := range c.obs.Members {
		if e := m.Engine; e != nil && e.Reachable && e.PeersErr != "" {
			parts = append(parts, m.Name+": "+e.PeersErr)
			deadline = deadline || strings.Contains(e.PeersErr, "deadline") || strings.Contains(e.PeersErr, "timeout")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	out := " (" + strings.Join(parts, "; ") + ")"
	if deadline {
		out += "; the probes ran out of time: through a slow API server, raise --probe-timeout"
	}
	return out
}

// probeFailures summarises why members did not answer (the engine's
// errors name hosts and steps, never credentials).
func (c *classifier) probeFailures() string {
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

// peerByID finds a member list entry.
func (c *classifier) peerByID(id string) *model.Peer {
	for i := range c.a.MemberList {
		if c.a.MemberList[i].ID == id {
			return &c.a.MemberList[i]
		}
	}
	return nil
}

func (c *classifier) peerByName(name string) *model.Peer {
	for i := range c.a.MemberList {
		if c.a.MemberList[i].Name == name {
			return &c.a.MemberList[i]
		}
	}
	return nil
}

// peerByURLs finds the entry holding one of urls, member name's peer
// URLs, other than skipID.
func (c *classifier) peerByURLs(urls []string, name, skipID string) *model.Peer {
	ev := c.evidence(name)
	for i := range c.a.MemberList {
		p := &c.a.MemberList[i]
		if p.ID == skipID {
			continue
		}
		if anyURLMatches(urls, *p, ev) || anyURLMatches(p.PeerURLs, model.Peer{ID: p.ID, Name: p.Name, PeerURLs: urls}, ev) {
			return p
		}
	}
	return nil
}

// evidence is what was observed of member name's own pod: its IPs, the
// member ID its probe answered with (only while that ID is not claimed
// by another pod too: a cloned volume identifies no one), and the member
// ID the resumed action recorded for it.
func (c *classifier) evidence(name string) Evidence {
	ev := Evidence{Name: name}
	if m := c.member(name); m != nil {
		if m.Pod != nil {
			ev.PodIPs = m.Pod.IPs
		}
		if e := m.Engine; e != nil && e.Reachable && e.MemberID != "" && len(c.claimants(e.MemberID)) == 1 {
			ev.MemberIDs = append(ev.MemberIDs, e.MemberID)
		}
	}
	if r := c.resume; r != nil && r.Member == name && r.Replaced.MemberID != "" {
		ev.MemberIDs = append(ev.MemberIDs, r.Replaced.MemberID)
	}
	return ev
}

// claimants lists the members whose own probe answered with member ID id.
func (c *classifier) claimants(id string) []string {
	var out []string
	for _, m := range c.obs.Members {
		if e := m.Engine; e != nil && e.Reachable && e.MemberID == id {
			out = append(out, m.Name)
		}
	}
	return out
}

// membership plans replace and reseed.
func (c *classifier) membership() {
	name := c.in.Member
	m := c.member(name)
	if m == nil {
		c.block(CodeMemberNotFound, name, "", "%s/%s has no member %q (members: %s)", c.obs.Cluster.Namespace, c.obs.Cluster.Name, name, c.memberNames())
		return
	}
	if m.Ordinal >= c.obs.Cluster.Replicas {
		c.block(CodeMemberNotWanted, name, "", "%s has ordinal %d but the StatefulSet wants %d replicas: it would not be recreated", name, m.Ordinal, c.obs.Cluster.Replicas)
	}
	if c.in.Action == model.ActionReseed && c.o.Generation != "" {
		c.block(CodeGenerationUnsupported, name, "", "reseeding etcd from seed generation %q is not supported yet; reseed without a generation rebuilds the member from its peers", c.o.Generation)
	}
	c.d.Flow = c.flow()
	if !c.engineGates(name) {
		return
	}
	if e := m.Engine; e != nil && e.Reachable && e.MemberID != "" {
		if cl := c.claimants(e.MemberID); len(cl) > 1 {
			c.block(CodeMemberIDDuplicate, name, "", "%s answer with one member ID %s: one of them runs on a copy of another member's data (a cloned volume), and hactl cannot tell which one the member list means. Stop the copy by hand (delete its pod and volume), then run this again",
				strings.Join(cl, " and "), e.MemberID)
			return
		}
	}
	if c.d.Flow == FlowNone {
		c.quorumMath(m, nil)
		return
	}

	tmpl := templateURLs(c.obs.Cluster.Template.InitialCluster)
	// cur: the member list entry that is the target now (fresh), or the
	// one the ledger recorded as replaced (resume), if still listed.
	var cur *model.Peer
	var replaced model.Replaced
	if r := c.resume; r != nil {
		replaced = r.Replaced
		if replaced.MemberID != "" {
			cur = c.peerByID(replaced.MemberID)
		}
	} else {
		switch {
		case c.onReference(m) && m.Engine.MemberID != "" && c.peerByID(m.Engine.MemberID) != nil:
			cur = c.peerByID(m.Engine.MemberID)
		case c.peerByName(name) != nil:
			cur = c.peerByName(name)
		case len(tmpl[name]) > 0:
			cur = c.peerByURLs(tmpl[name], name, "")
		}
	}
	var peerURLs []string
	switch {
	case cur != nil:
		peerURLs = cur.PeerURLs
	case len(replaced.PeerURLs) > 0:
		peerURLs = replaced.PeerURLs
	default:
		peerURLs = tmpl[name]
	}
	if len(peerURLs) == 0 {
		c.block(CodePeerURLUnknown, name, "", "%s is not in the member list and the template names no peer URL for it: hactl cannot tell what the replacement would advertise", name)
		return
	}
	c.d.PeerURLs = slices.Clone(peerURLs)
	curID := ""
	if cur != nil {
		curID = cur.ID
	}
	// next: an entry holding the target's peer URL that is not cur (the
	// learner hactl added, or the member the entrypoint re-registered).
	next := c.peerByURLs(peerURLs, name, curID)

	pod, pvc := m.Pod, m.PVC
	if c.resume == nil {
		replaced = model.Replaced{PeerURLs: slices.Clone(peerURLs)}
		if pod != nil {
			replaced.PodUID = pod.UID
		}
		if pvc != nil {
			replaced.PVCUID = pvc.UID
		}
		if cur != nil {
			replaced.MemberID = cur.ID
		}
	}
	c.d.Replaced = replaced
	origPresent := cur != nil
	podOrig := pod != nil && (origPresent || c.resume == nil || pod.UID == replaced.PodUID)
	pvcOrig := pvc != nil && (origPresent || c.resume == nil || pvc.UID == replaced.PVCUID)

	c.quorumMath(m, cur)

	if pod != nil && pod.DeletionMarked {
		if c.resume != nil && podOrig && !origPresent {
			c.afterDelete(m, next, peerURLs, pvc, pvcOrig, true)
			return
		}
		c.verb = VerbAwait
		c.block(CodePodTerminating, name, "", "pod %s is being deleted (not by this action): hactl waits for it to disappear, then decides again", pod.Name)
		return
	}
	if c.resume == nil && pod != nil && neverStarted(pod) && revisionMatches(pod, c.obs.Cluster) {
		c.verb = VerbObserve
		c.block(CodePodNeverStarted, name, "", "pod %s has never started and was created from the StatefulSet's current template: deleting it would not help (a recreated pod would wait the same way); hactl only observes it", pod.Name)
		return
	}

	if origPresent {
		if !cur.IsLearner {
			c.leaderGate(m, cur)
		}
		c.step(Step{Kind: model.StepRemoveMember, Member: name, MemberID: cur.ID, PeerURLs: cur.PeerURLs,
			Detail: fmt.Sprintf("remove member %s (%s, %s) from the cluster", cur.ID, orName(cur.Name, name), strings.Join(cur.PeerURLs, ","))})
		c.d.MemberFence = &model.MemberFence{ID: cur.ID, Name: cur.Name, PeerURLs: slices.Clone(cur.PeerURLs), ClusterID: c.a.ClusterID, IsLearner: cur.IsLearner}
		if c.d.Flow == FlowLearner {
			if next != nil {
				c.block(CodeUnexpectedMember, name, "", "member %s already holds %s's peer URL %s while %s is still listed", next.ID, name, strings.Join(next.PeerURLs, ","), cur.ID)
				return
			}
			c.addLearner(name, peerURLs, cur.ID)
		}
		c.deleteBoth(m, pvc, pvcOrig)
		c.recreate(name, peerURLs)
		c.templateGate(name, peerURLs, cur, next)
		return
	}

	if c.resume == nil {
		c.note(CodeMemberRemoved, name, "%s is not in the member list: it was removed already; its volume and pod are replaced", name)
	}
	if pod == nil || podOrig {
		if c.d.Flow == FlowLearner {
			switch {
			case next == nil:
				c.addLearner(name, peerURLs, "")
			case !next.IsLearner && pod != nil:
				c.block(CodeUnexpectedMember, name, "", "voter %s already holds %s's peer URL while the old pod %s still runs", next.ID, name, pod.Name)
				return
			}
		}
		if pod == nil {
			c.afterDelete(m, next, peerURLs, pvc, pvcOrig, false)
		} else {
			c.deleteBoth(m, pvc, pvcOrig)
			c.recreate(name, peerURLs)
		}
		c.templateGate(name, peerURLs, nil, next)
		return
	}

	// A new pod runs (resume). If it came back on the old volume, that
	// volume must still go.
	if pvc != nil && pvc.UID == replaced.PVCUID && !pvc.DeletionMarked {
		if c.d.Flow == FlowLearner && next == nil {
			c.addLearner(name, peerURLs, "")
		}
		c.deleteBoth(m, pvc, true)
		c.recreate(name, peerURLs)
		c.templateGate(name, peerURLs, nil, next)
		return
	}
	c.joinSteps(m, next, peerURLs)
}

// afterDelete plans from a pod that is gone (or going): the old volume is
// deleted if it still stands, then the member comes back.
func (c *classifier) afterDelete(m *model.Member, next *model.Peer, peerURLs []string, pvc *model.PVCFacts, pvcOrig, podGoing bool) {
	if c.d.Flow == FlowLearner && next == nil && !slices.ContainsFunc(c.d.Steps, func(s Step) bool { return s.Kind == model.StepAddLearner }) {
		c.addLearner(m.Name, peerURLs, "")
	}
	if pvc != nil && pvcOrig && !pvc.DeletionMarked {
		c.deletePVC(m.Name, pvc)
	}
	if podGoing {
		c.step(Step{Kind: model.StepAwaitPodGone, Member: m.Name, Detail: fmt.Sprintf("wait until pod %s is gone", m.Pod.Name)})
	}
	c.recreate(m.Name, peerURLs)
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

func orName(n, def string) string {
	if n == "" {
		return def
	}
	return n
}

func (c *classifier) addLearner(name string, peerURLs []string, removedID string) {
	var others []string
	for _, p := range c.a.MemberList {
		if p.IsLearner && p.ID != removedID && !anyURLMatches(peerURLs, p, c.evidence(name)) {
			others = append(others, fmt.Sprintf("%s (%s)", orName(p.Name, p.ID), strings.Join(p.PeerURLs, ",")))
		}
	}
	if len(others) > 0 {
		c.block(CodeLearnerPending, name, "", "the cluster already has a learner: %s; etcd takes one learner at a time: let it finish (or remove it) first", strings.Join(others, ", "))
	}
	c.step(Step{Kind: model.StepAddLearner, Member: name, PeerURLs: slices.Clone(peerURLs),
		Detail: fmt.Sprintf("add a learner with peer URL %s (before the pod returns, so it is accepted on its first start)", strings.Join(peerURLs, ","))})
}

func (c *classifier) deletePVC(member string, pvc *model.PVCFacts) {
	f := model.Fence{Kind: "PersistentVolumeClaim", Namespace: c.obs.Cluster.Namespace, Name: pvc.Name, UID: pvc.UID,
		ResourceVersion: pvc.ResourceVersion, Fingerprint: pvc.Fingerprint}
	c.step(Step{Kind: model.StepDeletePVC, Member: member, Fence: &f,
		Detail: fmt.Sprintf("delete PersistentVolumeClaim %s (uid %s, resourceVersion %s); it goes once its pod is gone", pvc.Name, pvc.UID, pvc.ResourceVersion)})
}

// deleteBoth deletes the volume (first, so the StatefulSet cannot bring
// the pod back on it) and the pod, then waits for the pod to go.
func (c *classifier) deleteBoth(m *model.Member, pvc *model.PVCFacts, pvcOrig bool) {
	if pvc != nil && pvcOrig && !pvc.DeletionMarked {
		c.deletePVC(m.Name, pvc)
	}
	if p := m.Pod; p != nil {
		f := model.Fence{Kind: "Pod", Namespace: c.obs.Cluster.Namespace, Name: p.Name, UID: p.UID,
			ResourceVersion: p.ResourceVersion, Fingerprint: p.Fingerprint}
		c.step(Step{Kind: model.StepDeletePod, Member: m.Name, Fence: &f,
			Detail: fmt.Sprintf("delete pod %s (uid %s, resourceVersion %s)", p.Name, p.UID, p.ResourceVersion)})
		c.step(Step{Kind: model.StepAwaitPodGone, Member: m.Name, Detail: fmt.Sprintf("wait until pod %s is gone", p.Name)})
	}
}

// recreate appends the steps from "pod gone" to the end.
func (c *classifier) recreate(name string, peerURLs []string) {
	c.step(Step{Kind: model.StepAwaitPodRecreated, Member: name,
		Detail: fmt.Sprintf("wait for the StatefulSet to recreate pod %s with a new volume", name)})
	c.tail(name, peerURLs, false, false)
}

// tail appends the steps from "pod recreated" to "ready".
func (c *classifier) tail(name string, peerURLs []string, started, caughtUp bool) {
	urls := strings.Join(peerURLs, ",")
	if !started {
		what := "as a learner"
		if c.d.Flow == FlowDelegate {
			what = "and register itself"
		}
		c.step(Step{Kind: model.StepAwaitMemberStarted, Member: name, PeerURLs: slices.Clone(peerURLs),
			Detail: fmt.Sprintf("wait until %s starts %s (peer URL %s)", name, what, urls)})
	}
	if c.d.Flow == FlowLearner {
		if !caughtUp {
			c.step(Step{Kind: model.StepAwaitCaughtUp, Member: name,
				Detail: fmt.Sprintf("wait until %s's lag against the leader's frontier is at most %d entries", name, c.o.Verdict.LagThreshold)})
		}
		c.step(Step{Kind: model.StepPromoteLearner, Member: name, PeerURLs: slices.Clone(peerURLs),
			Detail: fmt.Sprintf("promote the learner %s to a voting member", name)})
	}
	c.step(Step{Kind: model.StepAwaitVoterReady, Member: name, PeerURLs: slices.Clone(peerURLs),
		Detail: fmt.Sprintf("wait until %s votes, is within the lag threshold and its pod is ready", name)})
}

// joinSteps plans from a new pod on a new volume.
func (c *classifier) joinSteps(m *model.Member, next *model.Peer, peerURLs []string) {
	name := m.Name
	answered := next != nil && c.onReference(m) && m.Engine.MemberID == next.ID
	healthy := answered && !next.IsLearner && m.Phase == model.PhaseMember && m.Pod.Ready
	switch {
	case healthy:
		c.done = true
		return
	case c.d.Flow == FlowLearner && next == nil:
		c.addLearner(name, peerURLs, "")
		c.tail(name, peerURLs, false, false)
	case c.d.Flow == FlowLearner && next.IsLearner:
		if answered {
			lagOK := m.Lag != nil && uint64(*m.Lag) <= c.o.Verdict.LagThreshold
			c.tail(name, peerURLs, true, lagOK)
			for i := range c.d.Steps {
				if c.d.Steps[i].Kind == model.StepPromoteLearner {
					c.d.Steps[i].MemberID = next.ID
				}
			}
		} else {
			c.tail(name, peerURLs, false, false)
		}
	case answered:
		// A voter with the peer URL answers but is not healthy yet.
		c.step(Step{Kind: model.StepAwaitVoterReady, Member: name, PeerURLs: slices.Clone(peerURLs),
			Detail: fmt.Sprintf("wait until %s votes, is within the lag threshold and its pod is ready", name)})
	default:
		c.step(Step{Kind: model.StepAwaitMemberStarted, Member: name, PeerURLs: slices.Clone(peerURLs),
			Detail: fmt.Sprintf("wait until %s starts and joins (peer URL %s)", name, strings.Join(peerURLs, ","))})
		c.step(Step{Kind: model.StepAwaitVoterReady, Member: name, PeerURLs: slices.Clone(peerURLs),
			Detail: fmt.Sprintf("wait until %s votes, is within the lag threshold and its pod is ready", name)})
	}
}

// healthyVoters returns the members that are voters within the lag
// threshold of a real frontier, with ready, undeleted pods... as derived.
func (c *classifier) healthyVoters() []*model.Member {
	var out []*model.Member
	for i := range c.obs.Members {
		m := &c.obs.Members[i]
		if m.Phase != model.PhaseMember || m.Pod == nil || m.Pod.DeletionMarked || m.Engine == nil {
			continue
		}
		if p := c.peerByID(m.Engine.MemberID); p == nil || p.IsLearner {
			continue
		}
		out = append(out, m)
	}
	return out
}

// quorumMath fills Decision.Quorum; cur is the target's member entry.
func (c *classifier) quorumMath(m *model.Member, cur *model.Peer) {
	q := Quorum{Voters: c.a.Voters, Quorum: c.a.Quorum, HealthyVoters: []string{}, OK: true}
	for _, h := range c.healthyVoters() {
		q.HealthyVoters = append(q.HealthyVoters, h.Name)
		if h.Name != m.Name {
			q.HealthyWithout++
		}
	}
	q.TargetVotes = cur != nil && !cur.IsLearner
	c.d.Quorum = q
}

// leaderGate checks quorum and leadership before a voter is removed.
func (c *classifier) leaderGate(m *model.Member, cur *model.Peer) {
	q := &c.d.Quorum
	q.Checked = true
	q.OK = q.HealthyWithout >= q.Quorum
	if !q.OK {
		var not []string
		healthy := map[string]bool{}
		for _, n := range q.HealthyVoters {
			healthy[n] = true
		}
		for _, x := range c.obs.Members {
			if x.Name != m.Name && !healthy[x.Name] {
				not = append(not, fmt.Sprintf("%s (%s)", x.Name, x.Phase))
			}
		}
		sort.Strings(not)
		detail := fmt.Sprintf("removing %s would leave %d healthy voter(s) of %d; quorum needs %d", m.Name, q.HealthyWithout, q.Voters, q.Quorum)
		if len(not) > 0 {
			detail += "; not healthy: " + strings.Join(not, ", ")
		}
		c.block(CodeQuorumWouldBreak, m.Name, "", "%s; repair the unhealthy members first", detail)
	}
	if cur.ID != c.a.LeaderID || c.a.LeaderID == "" {
		return
	}
	if !c.o.MoveLeader {
		c.block(CodeTargetIsLeader, m.Name, FlagMoveLeader, "%s (member %s) leads the cluster; removing the leader forces an election", m.Name, cur.ID)
		return
	}
	var best *model.Member
	for _, h := range c.healthyVoters() {
		if h.Name == m.Name {
			continue
		}
		if best == nil || lagOf(h) < lagOf(best) || (lagOf(h) == lagOf(best) && h.Ordinal < best.Ordinal) {
			best = h
		}
	}
	if best == nil {
		c.block(CodeNoLeaderCandidate, m.Name, "", "%s leads and no other healthy voter can take over leadership", m.Name)
		return
	}
	c.note(CodeLeaderMove, m.Name, "%s leads: leadership moves to %s (member %s) first", m.Name, best.Name, best.Engine.MemberID)
	c.step(Step{Kind: model.StepMoveLeader, Member: best.Name, MemberID: best.Engine.MemberID,
		Detail: fmt.Sprintf("move leadership from %s to %s (member %s)", m.Name, best.Name, best.Engine.MemberID)})
}

func lagOf(m *model.Member) int64 {
	if m.Lag == nil {
		return 1 << 62
	}
	return *m.Lag
}

// templateGate verifies that the template would bring the replacement
// back into the cluster (learner flow only: the delegate flow's
// entrypoint rewrites its own --initial-cluster).
func (c *classifier) templateGate(name string, peerURLs []string, cur, next *model.Peer) {
	if c.d.Flow != FlowLearner {
		return
	}
	var after []model.Peer
	for _, p := range c.a.MemberList {
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
	if ok, detail := checkTemplate(c.obs.Cluster.Template, after, c.evidence); !ok {
		code := CodeTemplateMismatch
		if !c.obs.Cluster.Template.InitialClusterDecoded {
			code = CodeTemplateUnverified
		}
		c.block(code, name, "", "%s", detail)
	}
}

// seed plans capturing a seed generation.
func (c *classifier) seed() {
	c.d.Flow = FlowSeed
	if !c.engineGates("") {
		return
	}
	if c.a.Frontier == nil {
		c.block(CodeNoSeedSource, "", "", "no real leader frontier (%s): a source's freshness cannot be judged", c.a.NoFrontierBecause)
		return
	}
	var src *model.Member
	if c.in.Member != "" {
		src = c.member(c.in.Member)
		switch {
		case src == nil:
			c.block(CodeMemberNotFound, c.in.Member, "", "%s/%s has no member %q (members: %s)", c.obs.Cluster.Namespace, c.obs.Cluster.Name, c.in.Member, c.memberNames())
			return
		case src.Phase != model.PhaseMember:
			c.block(CodeNoSeedSource, src.Name, "", "%s is %s, not a voter within the lag threshold: it cannot be a seed source", src.Name, src.Phase)
			return
		}
	} else {
		for _, h := range c.healthyVoters() {
			isLeader := h.Engine.MemberID == c.a.LeaderID
			if src == nil {
				src = h
				continue
			}
			srcLeader := src.Engine.MemberID == c.a.LeaderID
			// Followers first, then the lowest ordinal. Lag within the
			// threshold is not a preference: it moves between two
			// observations, and the source is fenced under the lock.
			if (srcLeader && !isLeader) || (srcLeader == isLeader && h.Ordinal < src.Ordinal) {
				src = h
			}
		}
		if src == nil {
			c.block(CodeNoSeedSource, "", "", "no voter is within the lag threshold of the leader's frontier")
			return
		}
	}
	if c.o.SeedStore == "" {
		c.block(CodeSeedStoreMissing, src.Name, "", "no seed store is configured: seed generations need an artifact store")
	}
	c.step(Step{Kind: model.StepCaptureSnapshot, Member: src.Name, MemberID: src.Engine.MemberID,
		Detail: fmt.Sprintf("capture a snapshot of %s (member %s, applied index %d)", src.Name, src.Engine.MemberID, src.Engine.RaftApplied)})
	c.step(Step{Kind: model.StepUpload, Member: src.Name, Detail: "upload the files, then the manifest last"})
	c.step(Step{Kind: model.StepPublish, Member: src.Name, Detail: "publish the generation once the manifest verifies"})
}

// finish sets the verb, the phase and the fences.
func (c *classifier) finish() {
	d := &c.d
	for _, s := range d.Steps {
		// Fences lists what the plan deletes; a restore's scale steps
		// carry the StatefulSet's own fence, which the executor checks
		// when it scales.
		if s.Fence != nil && s.Fence.Kind != "StatefulSet" {
			d.Fences = append(d.Fences, *s.Fence)
		}
	}
	hard := false
	for _, b := range d.Blockers {
		if b.Code != CodePodTerminating && b.Code != CodePodNeverStarted {
			hard = true
		}
	}
	switch {
	case hard:
		d.Verb = VerbRefuse
	case c.verb != "":
		d.Verb = c.verb
	case c.done || len(d.Steps) == 0:
		d.Verb = VerbDone
	default:
		d.Verb = VerbProceed
	}
	switch {
	case d.Verb == VerbDone:
		d.Phase = model.ActionPhaseReady
		if d.Intent.Action == model.ActionSeed {
			d.Phase = model.ActionPhasePublished
		}
	case len(d.Steps) > 0:
		d.Phase = d.Steps[0].Phase
	default:
		d.Phase = model.ActionPhaseRequested
	}
}
