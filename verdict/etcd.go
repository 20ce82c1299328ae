package verdict

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// This file holds the reasons of the etcd half of the verdict (its
// picture is etcd_analyze.go's): quorum, the leader, identity and member
// lists, versions, alarms, database size and raft lag.

// etcdRules are the verdict rules of etcd clusters.
type etcdRules struct{}

func (etcdRules) analyze(s *state) {
	s.referenceClusterID()
	s.referenceMemberList()
	s.formed()
	s.quorum()
	s.leader()
	s.lagAndPhase()
}

func (etcdRules) threshold(o Options, _ model.ClusterFacts) uint64 { return o.LagThreshold }

func (etcdRules) reasons(s *state, r *reasons) {
	s.pdb(r)
	s.colocation(r)
	s.bootstrapFlag(r)
	s.quorumReasons(r)
	if s.a.Probed {
		s.probes(r)
		s.identity(r)
		s.duplicates(r)
		s.memberList(r)
		s.leaderReasons(r)
		s.versions(r)
		s.alarms(r)
		s.dbSize(r)
	}
	s.lagReasons(r)
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
