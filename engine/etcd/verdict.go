package etcd

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// This file holds etcd's verdict rules: the reference cluster ID and
// member list, whether the cluster formed, quorum, the leader and its
// frontier, each member's raft lag and phase, and the reasons they give
// (identity and member lists, the leader, versions, alarms, database
// size and lag). Package verdict runs the checks every engine shares
// (freshness, pods, client endpoints, certificates, the disruption budget
// and the spread over nodes) around them.

// Defaults of the thresholds etcd's rules read (model.Thresholds).
const (
	// DefaultDBQuotaFraction is the share of the backend quota at which a
	// member's database is reported near quota.
	DefaultDBQuotaFraction = 0.8
	// DefaultQuotaBytes is etcd's backend quota when
	// --quota-backend-bytes is not set (2 GiB).
	DefaultQuotaBytes int64 = 2 << 30
)

// Rules are etcd's verdict rules (model.VerdictRules).
type Rules struct{}

var _ model.VerdictRules = Rules{}

// VerdictRules implements engine.Judged.
func (Engine) VerdictRules() model.VerdictRules { return Rules{} }

// LagThreshold implements model.VerdictRules: --lag-threshold, in raft
// entries.
func (Rules) LagThreshold(t model.Thresholds, _ model.ClusterFacts) uint64 { return t.Lag }

// Judge implements model.VerdictRules.
func (Rules) Judge(in model.JudgeInput) model.Judgement {
	s := newState(in)
	s.referenceClusterID()
	s.referenceMemberList()
	s.formed()
	s.quorum()
	s.leader()
	s.lagAndPhase()

	var r reasons
	s.bootstrapFlag(&r)
	s.quorumReasons(&r)
	if s.probed {
		s.probes(&r)
		s.identity(&r)
		s.operatorWord(&r)
		s.duplicates(&r)
		s.memberList(&r)
		s.leaderReasons(&r)
		s.versions(&r)
		s.alarms(&r)
		s.dbSize(&r)
	}
	s.lagReasons(&r)

	j := s.a
	j.Reasons = r.List
	j.SetMembers(len(s.views), func(i int) model.MemberJudgement {
		v := s.views[i]
		return model.MemberJudgement{Phase: v.phase, Lag: v.lag, Learner: v.learner, Diverged: v.diverged()}
	})
	return j
}

// memberView is what the rules know about one member.
type memberView struct {
	m *model.Member
	model.MemberProbe
	// selfOnly: answered with a member list holding only itself while the
	// StatefulSet wants more replicas (seed 000).
	selfOnly bool
	// onRef: answered with the reference cluster ID.
	onRef bool
	// otherCluster: answered with a cluster ID other than the reference.
	otherCluster bool
	learner      bool
	leader       string
	lag          *int64
	phase        model.Phase
}

func (v *memberView) diverged() bool { return v.otherCluster || (v.onRef && v.selfOnly) }

// state is one evaluation: the judgement as it is built and the member
// views.
type state struct {
	in     model.JudgeInput
	obs    model.Observation
	now    time.Time
	probed bool
	a      model.Judgement
	views  []*memberView
	// refListKey is the key of a.MemberList.
	refListKey string
}

func newState(in model.JudgeInput) *state {
	s := &state{in: in, obs: in.Observation, now: in.Now, probed: in.Observation.EngineProbed}
	for i, p := range in.Probes() {
		v := &memberView{m: &s.obs.Members[i], MemberProbe: p}
		if e := v.Engine; v.Answered {
			v.learner = e.IsLearner
			v.leader = normID(e.LeaderID)
			v.selfOnly = s.obs.Cluster.Replicas > 1 && len(e.Peers) == 1 && e.MemberID != "" && e.Peers[0].ID == e.MemberID
		}
		s.views = append(s.views, v)
	}
	return s
}

// podPhase is the phase v's pod alone decides (absent, terminating,
// pending); false when the engine's facts decide it.
func (s *state) podPhase(v *memberView) (model.Phase, bool) {
	return v.PodPhase, v.PodPhase != ""
}

// quorumOf is the number of voters a raft cluster of n voters needs to
// make progress.
func quorumOf(voters int) int { return voters/2 + 1 }

func (s *state) quotaFraction() float64 {
	if f := s.in.Thresholds.DBQuotaFraction; f > 0 && f <= 1 {
		return f
	}
	return DefaultDBQuotaFraction
}

func (s *state) defaultQuota() int64 {
	return cmp.Or(max(s.in.Thresholds.DefaultQuotaBytes, 0), DefaultQuotaBytes)
}

// reasons collects the rules' reasons, each once.
type reasons = model.Reasons

// normID maps etcd's "no leader" (0) to "".
func normID(id string) string {
	if id == "0" {
		return ""
	}
	return id
}

func (s *state) referenceClusterID() {
	type group struct {
		id            string
		n, notSelfOnl int
	}
	groups := map[string]*group{}
	for _, v := range s.views {
		if !v.Answered || v.Engine.ClusterID == "" {
			continue
		}
		g := groups[v.Engine.ClusterID]
		if g == nil {
			g = &group{id: v.Engine.ClusterID}
			groups[g.id] = g
		}
		g.n++
		if !v.selfOnly {
			g.notSelfOnl++
		}
	}
	s.a.ClusterIDs = len(groups)
	known := s.obs.Cluster.KnownClusterID
	var best *group
	for _, g := range groups {
		switch {
		case best == nil:
			best = g
		case g.n != best.n:
			if g.n > best.n {
				best = g
			}
		case (g.id == known) != (best.id == known):
			if g.id == known {
				best = g
			}
		case g.notSelfOnl != best.notSelfOnl:
			if g.notSelfOnl > best.notSelfOnl {
				best = g
			}
		case g.id < best.id:
			best = g
		}
	}
	if best == nil {
		return
	}
	s.a.ClusterID = best.id
	for _, v := range s.views {
		if v.Answered && v.Engine.ClusterID != "" {
			v.onRef = v.Engine.ClusterID == best.id
			v.otherCluster = !v.onRef
		}
	}
}

// listKey identifies a member list regardless of order.
func listKey(peers []model.Peer) string {
	keys := make([]string, 0, len(peers))
	for _, p := range peers {
		k := p.ID
		if p.IsLearner {
			k += "(learner)"
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

func (s *state) referenceMemberList() {
	count := map[string]int{}
	byLeader := map[string]bool{}
	lists := map[string][]model.Peer{}
	for _, v := range s.views {
		if !v.onRef || v.selfOnly || len(v.Engine.Peers) == 0 {
			continue
		}
		k := listKey(v.Engine.Peers)
		count[k]++
		lists[k] = v.Engine.Peers
		if v.Engine.Role() == model.RoleLeader {
			byLeader[k] = true
		}
	}
	best := ""
	for k, n := range count {
		switch {
		case best == "":
			best = k
		case n != count[best]:
			if n > count[best] {
				best = k
			}
		case byLeader[k] != byLeader[best]:
			if byLeader[k] {
				best = k
			}
		case k < best:
			best = k
		}
	}
	if best == "" {
		s.a.Voters = max(s.obs.Cluster.Replicas, 0)
	} else {
		s.refListKey = best
		s.a.MemberList = slices.Clone(lists[best])
		sort.Slice(s.a.MemberList, func(i, j int) bool { return s.a.MemberList[i].ID < s.a.MemberList[j].ID })
		s.a.VotersFromMemberList = true
		for _, p := range s.a.MemberList {
			if !p.IsLearner {
				s.a.Voters++
			}
		}
	}
	// A member the reference list names a learner is a learner, even when
	// it did not answer itself.
	for _, v := range s.views {
		if p, ok := s.peerFor(v); ok && p.IsLearner {
			v.learner = true
		}
	}
}

// peerFor finds the reference-list entry of a member: by member ID when it
// answered, else by name (etcd members are conventionally named after
// their pods).
func (s *state) peerFor(v *memberView) (model.Peer, bool) {
	for _, p := range s.a.MemberList {
		if v.Answered && v.Engine.MemberID != "" {
			if p.ID == v.Engine.MemberID {
				return p, true
			}
			continue
		}
		if s.namedAs(p, v) {
			return p, true
		}
	}
	return model.Peer{}, false
}

// nameOf returns the member name for a member ID, or the ID itself.
func (s *state) nameOf(id string) string {
	for _, v := range s.views {
		if v.Answered && v.Engine.MemberID == id {
			return v.m.Name
		}
	}
	for _, p := range s.a.MemberList {
		if p.ID == id && p.Name != "" {
			return p.Name
		}
	}
	return id
}

func (s *state) formed() {
	c := s.obs.Cluster
	switch {
	case s.a.ClusterID != "":
		s.a.Formed, s.a.FormedBecause = true, "cluster ID "+s.a.ClusterID
	case c.KnownClusterID != "":
		s.a.Formed, s.a.FormedBecause = true, "recorded cluster ID "+c.KnownClusterID
	}
	if !s.a.Formed {
		for _, v := range s.views {
			if v.Answered && v.leader != "" {
				s.a.Formed, s.a.FormedBecause = true, "leader "+v.leader
				break
			}
		}
	}
	if !s.a.Formed && !c.CreatedAt.IsZero() && s.now.Sub(c.CreatedAt) > s.in.BootstrapWindow {
		s.a.Formed = true
		s.a.FormedBecause = fmt.Sprintf("StatefulSet is %s old, past the %s bootstrap window", model.RoundAge(s.now.Sub(c.CreatedAt)), s.in.BootstrapWindow)
	}
}

// isAnsweringVoter reports whether a member counts as a voter of the reference
// cluster: answered, on the reference cluster ID, not diverged, not a
// learner and, when a member list is known, listed in it.
func (s *state) isAnsweringVoter(v *memberView) bool {
	if !v.onRef || v.selfOnly || v.learner {
		return false
	}
	if s.a.VotersFromMemberList {
		_, ok := s.peerFor(v)
		return ok
	}
	return true
}

func (s *state) quorum() {
	s.a.Quorum = quorumOf(s.a.Voters)
	s.a.Tolerance = s.a.Voters - s.a.Quorum
	for _, v := range s.views {
		if s.isAnsweringVoter(v) {
			s.a.AnsweringVoters++
		}
	}
}

func (s *state) leader() {
	follow := map[string]int{}
	answering := 0
	for _, v := range s.views {
		if !v.onRef {
			continue
		}
		answering++
		if v.leader != "" {
			follow[v.leader]++
		}
	}
	for id, n := range follow {
		if 2*n > answering {
			s.a.LeaderID = id
		}
	}
	if s.a.LeaderID == "" {
		if answering == 0 {
			s.a.NoFrontierBecause = "no member of the cluster answered"
		} else {
			s.a.NoFrontierBecause = "no agreed leader"
		}
		return
	}
	s.a.LeaderMember = s.nameOf(s.a.LeaderID)
	for _, v := range s.views {
		if v.onRef && v.Engine.MemberID == s.a.LeaderID && v.leader == s.a.LeaderID {
			if v.Engine.RaftIndex == 0 {
				s.a.NoFrontierBecause = fmt.Sprintf("leader %s reported raft index 0", s.a.LeaderMember)
				return
			}
			f := v.Engine.RaftIndex
			s.a.Frontier = &f
			return
		}
	}
	s.a.NoFrontierBecause = fmt.Sprintf("leader %s did not answer", s.a.LeaderMember)
}

func (s *state) lagAndPhase() {
	for _, v := range s.views {
		if s.a.Frontier != nil && v.onRef && !v.diverged() {
			lag := int64(0)
			if f, ap := *s.a.Frontier, v.Engine.RaftApplied; f > ap {
				lag = int64(f - ap)
			}
			v.lag = &lag
		}
		v.phase = s.phaseOf(v)
	}
}

func (s *state) phaseOf(v *memberView) model.Phase {
	if ph, ok := s.podPhase(v); ok {
		return ph
	}
	switch {
	case s.probed && !s.a.Formed && v.Engine != nil && !v.CredFail:
		// Asked, and nothing anywhere shows a formed cluster. A member
		// that could not be asked (no probe, no credentials) stays unknown.
		return model.PhaseBootstrapping
	case !v.Answered:
		return model.PhaseUnknown
	case v.diverged():
		return model.PhaseDiverged
	case v.learner:
		return model.PhaseJoining
	case v.lag == nil:
		return model.PhaseUnknown
	case uint64(*v.lag) > s.in.LagThreshold:
		return model.PhaseCatchingUp
	}
	return model.PhaseMember
}

func (s *state) bootstrapFlag(r *reasons) {
	c := s.obs.Cluster
	if !s.a.Formed {
		return
	}
	if s.memberTemplates(r) {
		return
	}
	t := c.Template
	switch {
	case c.Shape == model.ShapeStaticNew:
		r.Add(model.ReasonBootstrapFlagStale, "", "template hard-codes initial-cluster-state=new (shape %s) but the cluster has formed (%s)", c.Shape, s.a.FormedBecause)
	case strings.EqualFold(t.InitialClusterState, "new") && c.Shape != model.ShapeSelfRegistering && c.Shape != model.ShapeOperatorOwned && c.Shape != model.ShapeStaticPods:
		from := ""
		if t.InitialClusterStateFrom != "" {
			from = " (" + t.InitialClusterStateFrom + ")"
		}
		r.Add(model.ReasonBootstrapFlagStale, "", "template sets initial-cluster-state=new%s but the cluster has formed (%s)", from, s.a.FormedBecause)
	}
}

// memberTemplates judges each member's own pod where each is templated
// on its own (an operator's, which never re-templates a running pod:
// seed 000): a pod still told to bootstrap a new cluster after it formed
// would, recreated on an empty volume, bootstrap one of its own. False
// when the members share the cluster's template.
func (s *state) memberTemplates(r *reasons) bool {
	own := false
	for _, m := range s.obs.Members {
		t := m.Template
		if t == nil {
			continue
		}
		own = true
		if strings.EqualFold(t.InitialClusterState, "new") {
			r.Add(model.ReasonBootstrapFlagStale, m.Name, "its pod sets initial-cluster-state=new%s but the cluster has formed (%s): on an empty volume it would bootstrap a cluster of its own (or, with its old identity, crash-loop); recreating the pod lets an operator that renders existing for a formed cluster render it again (one that still renders new must be upgraded first; where the member's storage is memory, recreating it replaces the member)", from(t.InitialClusterStateFrom), s.a.FormedBecause)
		}
	}
	return own
}

// from is " (where)" for a setting found in where, "" when unknown.
func from(where string) string {
	if where == "" {
		return ""
	}
	return " (" + where + ")"
}

// operatorWord holds an operator's own word on the cluster (its custom
// resources) against the members' answers: a cluster it calls available
// while no quorum answers (cozystack/etcd-operator#367) or whose ID is
// not the one the members answer for, and member IDs it recorded that
// the members do not answer with (its finalizer removes the recorded
// ID).
func (s *state) operatorWord(r *reasons) {
	op := s.obs.Cluster.Operator
	if op == nil || op.Err != "" {
		return
	}
	// Only a quorum the probes show lost contradicts the operator: a
	// voter hactl could not ask may still vote.
	if op.Available != nil && *op.Available && s.probed && s.a.Voters > 0 && s.a.AnsweringVoters+s.unaskedVoters() < s.a.Quorum {
		r.Add(model.ReasonCRStatusStale, "", "%s %s says %s (%s, %d members ready) but %d of %d voters answered; quorum needs %d",
			op.Kind, op.Name, op.Condition(), cmp.Or(op.AvailableReason, "no reason"), op.ReadyMembers, s.a.AnsweringVoters, s.a.Voters, s.a.Quorum)
	}
	if op.OtherCluster(s.a.ClusterID) {
		r.Add(model.ReasonCRStatusStale, "", "%s %s records cluster ID %s; the members answer for %s", op.Kind, op.Name, op.ClusterID, s.a.ClusterID)
	}
	for _, v := range s.views {
		rec := op.Member(v.m.Name)
		if rec == nil || rec.MemberID == "" || !v.Answered || v.Engine.MemberID == "" || rec.MemberID == v.Engine.MemberID {
			continue
		}
		other := s.nameOf(rec.MemberID)
		if other == rec.MemberID {
			other = "no member the others list"
		}
		if op.RemovesByName {
			// Its way removes the member by name: the stale record
			// misleads whoever reads it, not the rebuild.
			r.Add(model.ReasonCRMemberMismatch, v.m.Name, "%s %s records member ID %s (%s) for it, which answers as %s: the operator's word on it is stale",
				op.Kind, op.Name, rec.MemberID, other, v.Engine.MemberID)
			continue
		}
		r.Add(model.ReasonCRMemberMismatch, v.m.Name, "the operator records member ID %s for it, which answers as %s: deleting its %s would remove %s (%s), not it",
			rec.MemberID, v.Engine.MemberID, cmp.Or(op.MemberKind, "record"), rec.MemberID, other)
	}
}

// unaskedVoters counts the running containers of voters that did not
// answer for want of credentials, or were not asked: they may still vote.
func (s *state) unaskedVoters() int {
	n := 0
	for _, v := range s.views {
		if v.Running && (v.Engine == nil || v.CredFail) && !v.learner {
			n++
		}
	}
	return n
}

func (s *state) quorumReasons(r *reasons) {
	unasked := s.unaskedVoters()
	if s.a.AnsweringVoters+unasked >= s.a.Quorum {
		return
	}
	if !s.probed {
		r.Add(model.ReasonQuorumUnavailable, "", "%d of %d voters have a running container; quorum needs %d", unasked, s.a.Voters, s.a.Quorum)
		return
	}
	d := fmt.Sprintf("%d of %d voters answered", s.a.AnsweringVoters, s.a.Voters)
	if unasked > 0 {
		d += fmt.Sprintf(" (%d more could not be asked)", unasked)
	}
	r.Add(model.ReasonQuorumUnavailable, "", "%s; quorum needs %d", d, s.a.Quorum)
}

func (s *state) probes(r *reasons) {
	for _, v := range s.views {
		if v.m.Pod == nil {
			continue
		}
		switch {
		case v.CredFail:
			d := model.ProbeDetail("credentials missing or rejected", v.Engine)
			if m := v.Engine.Metrics; m != nil {
				d += "; " + MetricsSummary(m)
			}
			r.Add(model.ReasonCredentialsUnavailable, v.m.Name, "%s", d)
		case v.Unreachable:
			r.Add(model.ReasonMemberUnreachable, v.m.Name, "%s", model.ProbeDetail("no answer", v.Engine))
		}
	}
	// Voters and learners in the member list that no pod answers for.
	for _, p := range s.a.MemberList {
		if s.peerMatched(p) {
			continue
		}
		who := cmp.Or(p.Name, p.ID)
		switch {
		case p.IsLearner:
			r.Add(model.ReasonLearnerPending, who, "learner %s is in the member list but no pod answers for it", p.ID)
		case p.Name == "":
			r.Add(model.ReasonMemberUnreachable, who, "voter %s was added to the member list but has never started", p.ID)
		default:
			r.Add(model.ReasonMemberUnreachable, who, "voter %s is in the member list but no member's pod answers for it", p.ID)
		}
	}
}

// namedAs: member list entry p names v's member, by its pod's name or,
// for static pods, its node's (kubeadm names each member after its node).
func (s *state) namedAs(p model.Peer, v *memberView) bool {
	if p.Name == "" {
		return false
	}
	return p.Name == v.m.Name || (s.obs.Cluster.Shape == model.ShapeStaticPods && v.m.Pod != nil && p.Name == v.m.Pod.Node)
}

func (s *state) peerMatched(p model.Peer) bool {
	for _, v := range s.views {
		if v.Answered && v.Engine.MemberID != "" {
			if v.Engine.MemberID == p.ID {
				return true
			}
			continue
		}
		if s.namedAs(p, v) {
			return true
		}
	}
	return false
}

func (s *state) identity(r *reasons) {
	if s.a.ClusterIDs < 2 {
		return
	}
	n := 0
	for _, v := range s.views {
		if v.onRef {
			n++
		}
	}
	for _, v := range s.views {
		if v.otherCluster {
			d := fmt.Sprintf("answers for cluster %s; %s answer for %s", v.Engine.ClusterID, model.Plural(n, "member"), s.a.ClusterID)
			if v.selfOnly {
				d += "; its member list holds only itself"
			}
			r.Add(model.ReasonClusterIDSplit, v.m.Name, "%s", d)
		}
	}
}

// duplicates names every pod that answers with a member ID another pod
// answers with too: one runs on a copy of the other's data (a volume
// cloned from another member). Each is named, so neither hides behind the
// other as a mere leader disagreement or an unreachable member.
func (s *state) duplicates(r *reasons) {
	byID := map[string][]string{}
	for _, v := range s.views {
		if v.Answered && v.Engine != nil && v.Engine.MemberID != "" {
			byID[v.Engine.MemberID] = append(byID[v.Engine.MemberID], v.m.Name)
		}
	}
	for _, v := range s.views {
		if !v.Answered || v.Engine == nil || len(byID[v.Engine.MemberID]) < 2 {
			continue
		}
		var others []string
		for _, n := range byID[v.Engine.MemberID] {
			if n != v.m.Name {
				others = append(others, n)
			}
		}
		r.Add(model.ReasonMemberIDDuplicate, v.m.Name, "answers with member ID %s, as %s does: one of them runs on a copy of another member's data (a cloned volume); it may vote twice", v.Engine.MemberID, strings.Join(others, ", "))
	}
}

func (s *state) memberList(r *reasons) {
	for _, v := range s.views {
		if !v.onRef || len(v.Engine.Peers) == 0 {
			continue
		}
		switch {
		case v.selfOnly:
			r.Add(model.ReasonMemberListDisagreement, v.m.Name, "its member list holds only itself while the StatefulSet has %d replicas", s.obs.Cluster.Replicas)
		case s.refListKey != "" && listKey(v.Engine.Peers) != s.refListKey:
			r.Add(model.ReasonMemberListDisagreement, v.m.Name, "lists %s, the majority %d%s",
				model.Plural(len(v.Engine.Peers), "member"), len(s.a.MemberList), listDiff(v.Engine.Peers, s.a.MemberList))
		}
	}
}

func (s *state) leaderReasons(r *reasons) {
	byLeader := map[string][]string{}
	answering := 0
	for _, v := range s.views {
		if !v.onRef {
			continue
		}
		answering++
		byLeader[v.leader] = append(byLeader[v.leader], v.m.Name)
	}
	if answering == 0 {
		return
	}
	if len(byLeader) == 1 {
		if _, none := byLeader[""]; none {
			r.Add(model.ReasonLeaderMissing, "", "none of the %d answering members knows a leader", answering)
		}
		return
	}
	leaders := make([]string, 0, len(byLeader))
	for l := range byLeader {
		leaders = append(leaders, l)
	}
	sort.Strings(leaders)
	parts := make([]string, 0, len(leaders))
	for _, l := range leaders {
		who := "no leader"
		if l != "" {
			who = "leader " + s.nameOf(l)
		}
		parts = append(parts, fmt.Sprintf("%s for %s", who, strings.Join(byLeader[l], ", ")))
	}
	r.Add(model.ReasonLeaderDisagreement, "", "%s", strings.Join(parts, "; "))
}

func (s *state) versions(r *reasons) {
	byVersion := map[string][]string{}
	for _, v := range s.views {
		if v.onRef && !v.selfOnly && v.Engine.Version != "" {
			byVersion[v.Engine.Version] = append(byVersion[v.Engine.Version], v.m.Name)
		}
	}
	if len(byVersion) < 2 {
		return
	}
	r.Add(model.ReasonVersionMismatch, "", "%s", model.OnWhich(byVersion))
}

func (s *state) alarms(r *reasons) {
	for _, v := range s.views {
		if !v.onRef {
			continue
		}
		for _, a := range v.Engine.Alarms {
			var code model.ReasonCode
			switch strings.ToUpper(a.Type) {
			case "NOSPACE":
				code = model.ReasonAlarmNoSpace
			case "CORRUPT":
				code = model.ReasonAlarmCorrupt
			default:
				continue
			}
			who := ""
			if a.MemberID != "" && a.MemberID != "0" {
				who = s.nameOf(a.MemberID)
			}
			r.Add(code, who, "%s alarm raised", strings.ToUpper(a.Type))
		}
	}
}

// dbSize compares each member's database with its backend quota: the quota
// the member reports, else the template's --quota-backend-bytes, else
// Options.DefaultQuotaBytes.
func (s *state) dbSize(r *reasons) {
	for _, v := range s.views {
		if !v.Answered || v.diverged() {
			continue
		}
		quota, src := v.Engine.DBSizeQuota, "quota"
		if quota <= 0 {
			quota, src = s.obs.Cluster.Template.QuotaBackendBytes, "--quota-backend-bytes"
		}
		if quota <= 0 {
			quota, src = s.defaultQuota(), "default quota"
		}
		limit := s.quotaFraction() * float64(quota)
		if size := v.Engine.DBSize; float64(size) >= limit {
			r.Add(model.ReasonDBNearQuota, v.m.Name, "db %s of %s %s (%.0f%%, threshold %.0f%%)",
				model.BytesIEC(size), model.BytesIEC(quota), src, 100*float64(size)/float64(quota), 100*s.quotaFraction())
		}
	}
}

// lagReasons reports, per member, lag above the threshold, lag that cannot
// be known, and pending learners.
func (s *state) lagReasons(r *reasons) {
	for _, v := range s.views {
		name := v.m.Name
		switch {
		case v.diverged():
			// Reported as cluster_id_split or member_list_disagreement.
		case v.learner && v.lag != nil:
			r.Add(model.ReasonLearnerPending, name, "learner, %d entries behind the leader", *v.lag)
		case v.learner && v.Answered:
			r.Add(model.ReasonLearnerPending, name, "learner, lag unknown (%s)", s.a.NoFrontierBecause)
		case v.learner:
			r.Add(model.ReasonLearnerPending, name, "learner in the member list, not answering")
		case v.CredFail || v.Unreachable:
			// Reported as credentials_unavailable or member_unreachable.
		case v.lag != nil:
			if uint64(*v.lag) > s.in.LagThreshold {
				r.Add(model.ReasonMemberLagging, name, "lag %d entries > threshold %d", *v.lag, s.in.LagThreshold)
			}
		case v.Answered:
			r.Add(model.ReasonLagUnknown, name, "no leader frontier: %s", s.a.NoFrontierBecause)
		case v.Running && !s.probed:
			r.Add(model.ReasonLagUnknown, name, "engine not probed")
		case v.Running:
			r.Add(model.ReasonLagUnknown, name, "engine not asked")
		}
	}
}

// listDiff names the entries of got that ref lacks and those it misses.
func listDiff(got, ref []model.Peer) string {
	key := func(p model.Peer) string {
		k := cmp.Or(p.Name, p.ID)
		if p.IsLearner {
			k += " (learner)"
		}
		return k
	}
	in := func(ps []model.Peer, x model.Peer) bool {
		return slices.ContainsFunc(ps, func(p model.Peer) bool { return p.ID == x.ID && p.IsLearner == x.IsLearner })
	}
	var extra, missing []string
	for _, p := range got {
		if !in(ref, p) {
			extra = append(extra, key(p))
		}
	}
	for _, p := range ref {
		if !in(got, p) {
			missing = append(missing, key(p))
		}
	}
	d := ""
	if len(extra) > 0 {
		d += "; extra " + strings.Join(extra, ", ")
	}
	if len(missing) > 0 {
		d += "; missing " + strings.Join(missing, ", ")
	}
	return d
}
