package verdict

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// Evaluate derives phases and lag (see Derive) and computes the verdict
// (see Compute) in one pass.
func Evaluate(obs model.Observation, now time.Time, opts Options) (model.Observation, model.Verdict) {
	s := analyze(obs, now, opts)
	return s.obs, s.verdict()
}

// EvaluateAll is Evaluate and Analyze in one pass: the derived
// observation, the verdict, and the cluster-wide facts it was built on
// (what Analyze returns), for callers that show all three.
func EvaluateAll(obs model.Observation, now time.Time, opts Options) (model.Observation, model.Verdict, Analysis) {
	s := analyze(obs, now, opts)
	a := s.a // as Analyze returns it: taken before the verdict reads s
	return s.obs, s.verdict(), a
}

// Compute returns the verdict on obs at now.
//
// ControlReady holds when no reason of ImpactControl was found;
// FailoverReady when, in addition, no reason of ImpactFailover was found.
// The impact of each code is model.ReasonCode.Impact. Reasons are sorted
// by impact (most severe first), then code, then member, then detail.
func Compute(obs model.Observation, now time.Time, opts Options) model.Verdict {
	return analyze(obs, now, opts).verdict()
}

type reasons struct {
	seen map[model.Reason]bool
	list []model.Reason
}

func (r *reasons) add(code model.ReasonCode, member, format string, args ...any) {
	x := model.Reason{Code: code, Member: member, Detail: fmt.Sprintf(format, args...)}
	if r.seen == nil {
		r.seen = map[model.Reason]bool{}
	}
	if r.seen[x] {
		return
	}
	r.seen[x] = true
	r.list = append(r.list, x)
}

func (s *state) verdict() model.Verdict {
	var r reasons
	s.freshness(&r)
	s.pods(&r)
	s.endpoints(&r)
	if s.isPatroni() {
		s.patroniPDB(&r)
		s.patroniColocation(&r)
		if s.a.Probed {
			s.patroniReasons(&r)
		} else {
			s.patroniUnprobed(&r)
		}
		return s.finish(r)
	}
	s.pdb(&r)
	s.colocation(&r)
	s.bootstrapFlag(&r)
	s.quorumReasons(&r)
	if s.a.Probed {
		s.probes(&r)
		s.identity(&r)
		s.duplicates(&r)
		s.memberList(&r)
		s.leaderReasons(&r)
		s.versions(&r)
		s.alarms(&r)
		s.dbSize(&r)
	}
	s.lagReasons(&r)
	return s.finish(r)
}

// finish sorts the reasons and derives the two verdicts from them.
func (s *state) finish(r reasons) model.Verdict {
	v := model.Verdict{ControlReady: true, FailoverReady: true, Reasons: r.list}
	if v.Reasons == nil {
		v.Reasons = []model.Reason{}
	}
	SortReasons(v.Reasons)
	for _, x := range v.Reasons {
		switch x.Code.Impact() {
		case model.ImpactControl:
			v.ControlReady = false
			v.FailoverReady = false
		case model.ImpactFailover:
			v.FailoverReady = false
		}
	}
	return v
}

// SortReasons orders reasons as a Verdict holds them: impact descending,
// then code, member and detail ascending.
func SortReasons(rs []model.Reason) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if ia, ib := a.Code.Impact(), b.Code.Impact(); ia != ib {
			return ia > ib
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		if a.Member != b.Member {
			return a.Member < b.Member
		}
		return a.Detail < b.Detail
	})
}

// --- Kubernetes-level reasons ---

func (s *state) freshness(r *reasons) {
	at := s.obs.At
	switch {
	case at.IsZero():
		r.add(model.ReasonObservationStale, "", "observation carries no time")
	case s.now.Sub(at) > s.opts.StaleAfter:
		r.add(model.ReasonObservationStale, "", "observed %s ago, older than %s", roundAge(s.now.Sub(at)), s.opts.StaleAfter)
	}
}

func (s *state) pods(r *reasons) {
	for _, v := range s.views {
		m := v.m
		if m.PVC != nil && m.PVC.Phase == "Pending" {
			r.add(model.ReasonPVCPending, m.Name, "claim %s is Pending", m.PVC.Name)
		}
		p := m.Pod
		switch {
		case p == nil:
			r.add(model.ReasonPodMissing, m.Name, "StatefulSet wants ordinal %d; no pod exists", m.Ordinal)
		case p.DeletionMarked:
			r.add(model.ReasonPodTerminating, m.Name, "pod %s is marked for deletion", p.Name)
		case p.Waiting == model.WaitingCrashLoop:
			r.add(model.ReasonPodCrashLooping, m.Name, "%s, %d restarts", orDefault(p.WaitingReason, "CrashLoopBackOff"), p.Restarts)
		case !v.started:
			r.add(model.ReasonPodNeverStarted, m.Name, "%s", neverStartedDetail(p))
		case !p.Ready:
			if p.Waiting != model.WaitingNone {
				r.add(model.ReasonPodNotReady, m.Name, "container waiting (%s), %d restarts", orDefault(p.WaitingReason, p.Waiting.String()), p.Restarts)
			} else {
				r.add(model.ReasonPodNotReady, m.Name, "container running, readiness probe failing")
			}
		}
	}
}

func neverStartedDetail(p *model.PodFacts) string {
	switch p.Waiting {
	case model.WaitingPullFailure:
		d := "image pull failing"
		if p.PullFailure != model.PullFailureNone {
			d += " (" + p.PullFailure.String() + ")"
		}
		if p.WaitingReason != "" {
			d += ": " + p.WaitingReason
		}
		return d
	case model.WaitingUnscheduled:
		return "not scheduled to a node"
	case model.WaitingNone:
		if p.Phase != "" {
			return "container never started (pod " + p.Phase + ")"
		}
		return "container never started"
	}
	return "container never started: " + orDefault(p.WaitingReason, p.Waiting.String())
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (s *state) endpoints(r *reasons) {
	e := s.obs.ClientEndpoints
	switch {
	case e == nil:
		r.add(model.ReasonClientEndpointsMissing, "", "no client Service found")
	case e.Ready == 0:
		r.add(model.ReasonClientEndpointsMissing, "", "Service %s has no ready endpoints (0 of %d)", e.Service, e.Total)
	}
}

func (s *state) pdb(r *reasons) {
	p := s.obs.PDB
	if p == nil {
		r.add(model.ReasonPDBMissing, "", "no PodDisruptionBudget selects the cluster's pods")
		return
	}
	var allowed int
	var how string
	switch {
	case p.MaxUnavailable >= 0:
		allowed, how = p.MaxUnavailable, fmt.Sprintf("maxUnavailable %d", p.MaxUnavailable)
	case p.MinAvailable >= 0:
		allowed = max(s.obs.Cluster.Replicas-p.MinAvailable, 0)
		how = fmt.Sprintf("minAvailable %d of %d replicas", p.MinAvailable, s.obs.Cluster.Replicas)
	default:
		r.add(model.ReasonPDBAllowsQuorumLoss, "", "PodDisruptionBudget %s sets neither minAvailable nor maxUnavailable", p.Name)
		return
	}
	if allowed > s.a.Tolerance {
		r.add(model.ReasonPDBAllowsQuorumLoss, "", "PodDisruptionBudget %s (%s) lets %s go at once; %s tolerate losing %d",
			p.Name, how, plural(allowed, "pod"), plural(s.a.Voters, "voter"), s.a.Tolerance)
	}
}

func (s *state) colocation(r *reasons) {
	n, q := s.a.Voters, s.a.Quorum
	if n == 0 {
		return
	}
	if s.a.Tolerance == 0 {
		r.add(model.ReasonMembersColocated, "", "%s: losing any one member or its node loses quorum (%d needed)", plural(n, "voter"), q)
		return
	}
	perNode := map[string][]string{}
	for _, v := range s.views {
		if v.m.Pod == nil || v.m.Pod.Node == "" || v.learner || v.diverged() {
			continue
		}
		perNode[v.m.Pod.Node] = append(perNode[v.m.Pod.Node], v.m.Name)
	}
	for node, names := range perNode {
		if len(names) > s.a.Tolerance {
			r.add(model.ReasonMembersColocated, "", "%d of %d members on node %s (%s); losing it leaves %d, quorum is %d",
				len(names), n, node, strings.Join(names, ", "), n-len(names), q)
		}
	}
}

func (s *state) bootstrapFlag(r *reasons) {
	c := s.obs.Cluster
	if !s.a.Formed {
		return
	}
	t := c.Template
	switch {
	case c.Shape == model.ShapeStaticNew:
		r.add(model.ReasonBootstrapFlagStale, "", "template hard-codes initial-cluster-state=new (shape %s) but the cluster has formed (%s)", c.Shape, s.a.FormedBecause)
	case strings.EqualFold(t.InitialClusterState, "new") && c.Shape != model.ShapeSelfRegistering && c.Shape != model.ShapeOperatorOwned:
		from := ""
		if t.InitialClusterStateFrom != "" {
			from = " (" + t.InitialClusterStateFrom + ")"
		}
		r.add(model.ReasonBootstrapFlagStale, "", "template sets initial-cluster-state=new%s but the cluster has formed (%s)", from, s.a.FormedBecause)
	}
}

// --- engine-level reasons ---

func (s *state) quorumReasons(r *reasons) {
	// Voters that did not answer for want of credentials, or were not
	// asked, may still vote: count every such running container.
	unasked := 0
	for _, v := range s.views {
		if v.running && (v.eng == nil || v.credFail) && !v.learner {
			unasked++
		}
	}
	if s.a.AnsweringVoters+unasked >= s.a.Quorum {
		return
	}
	if !s.a.Probed {
		r.add(model.ReasonQuorumUnavailable, "", "%d of %d voters have a running container; quorum needs %d", unasked, s.a.Voters, s.a.Quorum)
		return
	}
	d := fmt.Sprintf("%d of %d voters answered", s.a.AnsweringVoters, s.a.Voters)
	if unasked > 0 {
		d += fmt.Sprintf(" (%d more could not be asked)", unasked)
	}
	r.add(model.ReasonQuorumUnavailable, "", "%s; quorum needs %d", d, s.a.Quorum)
}

func (s *state) probes(r *reasons) {
	for _, v := range s.views {
		if v.m.Pod == nil {
			continue
		}
		switch {
		case v.credFail:
			r.add(model.ReasonCredentialsUnavailable, v.m.Name, "%s", probeDetail("credentials missing or rejected", v.eng))
		case v.unreachable:
			r.add(model.ReasonMemberUnreachable, v.m.Name, "%s", probeDetail("no answer", v.eng))
		}
	}
	// Voters and learners in the member list that no pod answers for.
	for _, p := range s.a.MemberList {
		if s.peerMatched(p) {
			continue
		}
		who := orDefault(p.Name, p.ID)
		switch {
		case p.IsLearner:
			r.add(model.ReasonLearnerPending, who, "learner %s is in the member list but no pod answers for it", p.ID)
		case p.Name == "":
			r.add(model.ReasonMemberUnreachable, who, "voter %s was added to the member list but has never started", p.ID)
		default:
			r.add(model.ReasonMemberUnreachable, who, "voter %s is in the member list but no pod of the StatefulSet answers for it", p.ID)
		}
	}
}

func (s *state) peerMatched(p model.Peer) bool {
	for _, v := range s.views {
		if v.answered && v.eng.MemberID != "" {
			if v.eng.MemberID == p.ID {
				return true
			}
			continue
		}
		if p.Name != "" && p.Name == v.m.Name {
			return true
		}
	}
	return false
}

func probeDetail(prefix string, e *model.EngineFacts) string {
	d := prefix
	if e.Failure != model.ProbeFailureNone && e.Failure != model.ProbeFailureCredentials {
		d += " (" + e.Failure.String() + ")"
	}
	if e.Err != "" {
		d += ": " + e.Err
	}
	return d
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
			d := fmt.Sprintf("answers for cluster %s; %s answer for %s", v.eng.ClusterID, plural(n, "member"), s.a.ClusterID)
			if v.selfOnly {
				d += "; its member list holds only itself"
			}
			r.add(model.ReasonClusterIDSplit, v.m.Name, "%s", d)
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
		if v.answered && v.eng != nil && v.eng.MemberID != "" {
			byID[v.eng.MemberID] = append(byID[v.eng.MemberID], v.m.Name)
		}
	}
	for _, v := range s.views {
		if !v.answered || v.eng == nil || len(byID[v.eng.MemberID]) < 2 {
			continue
		}
		var others []string
		for _, n := range byID[v.eng.MemberID] {
			if n != v.m.Name {
				others = append(others, n)
			}
		}
		r.add(model.ReasonMemberIDDuplicate, v.m.Name, "answers with member ID %s, as %s does: one of them runs on a copy of another member's data (a cloned volume); it may vote twice", v.eng.MemberID, strings.Join(others, ", "))
	}
}

func (s *state) memberList(r *reasons) {
	for _, v := range s.views {
		if !v.onRef || len(v.eng.Peers) == 0 {
			continue
		}
		switch {
		case v.selfOnly:
			r.add(model.ReasonMemberListDisagreement, v.m.Name, "its member list holds only itself while the StatefulSet has %d replicas", s.obs.Cluster.Replicas)
		case s.refListKey != "" && listKey(v.eng.Peers) != s.refListKey:
			r.add(model.ReasonMemberListDisagreement, v.m.Name, "lists %s, the majority %d%s",
				plural(len(v.eng.Peers), "member"), len(s.a.MemberList), listDiff(v.eng.Peers, s.a.MemberList))
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
			r.add(model.ReasonLeaderMissing, "", "none of the %d answering members knows a leader", answering)
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
	r.add(model.ReasonLeaderDisagreement, "", "%s", strings.Join(parts, "; "))
}

func (s *state) versions(r *reasons) {
	byVersion := map[string][]string{}
	for _, v := range s.views {
		if v.onRef && !v.selfOnly && v.eng.Version != "" {
			byVersion[v.eng.Version] = append(byVersion[v.eng.Version], v.m.Name)
		}
	}
	if len(byVersion) < 2 {
		return
	}
	r.add(model.ReasonVersionMismatch, "", "%s", onWhich(byVersion))
}

// onWhich renders members grouped by a value, "v1 on a, b; v2 on c",
// sorted by value.
func onWhich(by map[string][]string) string {
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s on %s", k, strings.Join(by[k], ", ")))
	}
	return strings.Join(parts, "; ")
}

func (s *state) alarms(r *reasons) {
	for _, v := range s.views {
		if !v.onRef {
			continue
		}
		for _, a := range v.eng.Alarms {
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
			r.add(code, who, "%s alarm raised", strings.ToUpper(a.Type))
		}
	}
}

// dbSize compares each member's database with its backend quota: the quota
// the member reports, else the template's --quota-backend-bytes, else
// Options.DefaultQuotaBytes.
func (s *state) dbSize(r *reasons) {
	for _, v := range s.views {
		if !v.answered || v.diverged() {
			continue
		}
		quota, src := v.eng.DBSizeQuota, "quota"
		if quota <= 0 {
			quota, src = s.obs.Cluster.Template.QuotaBackendBytes, "--quota-backend-bytes"
		}
		if quota <= 0 {
			quota, src = s.opts.DefaultQuotaBytes, "default quota"
		}
		limit := s.opts.DBQuotaFraction * float64(quota)
		if size := v.eng.DBSize; float64(size) >= limit {
			r.add(model.ReasonDBNearQuota, v.m.Name, "db %s of %s %s (%.0f%%, threshold %.0f%%)",
				bytesHuman(size), bytesHuman(quota), src, 100*float64(size)/float64(quota), 100*s.opts.DBQuotaFraction)
		}
	}
}

// lagReasons reports, per member, lag above the threshold, lag that cannot
// be known, and pending learners.
func (s *state) lagReasons(r *reasons) {
	anyDefeat := false
	for _, v := range s.views {
		name := v.m.Name
		switch {
		case v.diverged():
			// Reported as cluster_id_split or member_list_disagreement.
		case v.learner && v.lag != nil:
			r.add(model.ReasonLearnerPending, name, "learner, %d entries behind the leader", *v.lag)
		case v.learner && v.answered:
			r.add(model.ReasonLearnerPending, name, "learner, lag unknown (%s)", s.a.NoFrontierBecause)
		case v.learner:
			r.add(model.ReasonLearnerPending, name, "learner in the member list, not answering")
		case v.credFail || v.unreachable:
			// Reported as credentials_unavailable or member_unreachable.
		case v.lag != nil:
			if uint64(*v.lag) > s.opts.LagThreshold {
				r.add(model.ReasonMemberLagging, name, "lag %d entries > threshold %d", *v.lag, s.opts.LagThreshold)
			}
		case v.answered:
			r.add(model.ReasonLagUnknown, name, "no leader frontier: %s", s.a.NoFrontierBecause)
		case v.running && !s.a.Probed:
			r.add(model.ReasonLagUnknown, name, "engine not probed")
		case v.running:
			r.add(model.ReasonLagUnknown, name, "engine not asked")
		}
	}
	if s.a.Probed {
		return
	}
	// Without probes nothing measured lag: make sure no verdict claims
	// failover readiness.
	for _, x := range r.list {
		if x.Code.Impact() >= model.ImpactFailover {
			anyDefeat = true
			break
		}
	}
	if !anyDefeat {
		r.add(model.ReasonLagUnknown, "", "engine not probed")
	}
}

func bytesHuman(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// listDiff names the entries of got that ref lacks and those it misses.
func listDiff(got, ref []model.Peer) string {
	key := func(p model.Peer) string {
		k := orDefault(p.Name, p.ID)
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

// plural renders "1 voter", "3 voters".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
