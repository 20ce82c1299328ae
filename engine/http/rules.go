package http

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// Rules are the http engine's verdict rules: seed 002's leader-frontier
// rule over what the members' documents say, read through the mapping.
type Rules struct{}

var (
	_ model.VerdictRules = Rules{}
	_ model.Recreatable  = Rules{}
)

// Recreates implements model.Recreatable: the mapping says replace:
// recreate.
func (Rules) Recreates(c model.ClusterFacts) (bool, string) {
	m, err := Parse(c.EngineConfig)
	switch {
	case c.EngineConfigErr != "":
		return false, "its mapping cannot be read (" + c.EngineConfigErr + ")"
	case err != nil:
		return false, "its mapping cannot be read (" + err.Error() + ")"
	case m.Replace != ReplaceRecreate:
		return false, "its mapping does not say replace: recreate (add it only if a member on a new, empty volume copies its data from its peers)"
	}
	return true, ""
}

// LagThreshold implements model.VerdictRules: the mapping's
// lagThreshold, else the one the user asked for (--lag-threshold, in the
// mapping's positions).
func (Rules) LagThreshold(t model.Thresholds, c model.ClusterFacts) uint64 {
	if m, err := Parse(c.EngineConfig); err == nil && m.LagThreshold > 0 {
		return m.LagThreshold
	}
	return t.Lag
}

// view is what the rules know about one member.
type view struct {
	i    int
	name string
	e    *model.EngineFacts
	// answered, credFail, unreachable: how its probe went.
	answered, credFail, unreachable bool
	running                         bool
	// onRef: answered with the reference cluster ID (or none);
	// other: with another.
	onRef, other bool
	learner      bool
	lag          *int64
}

func (v *view) leads() bool { return v.answered && v.e.LeaderID != "" && v.e.LeaderID == v.e.MemberID }

// judge is one evaluation.
type judge struct {
	in    model.JudgeInput
	obs   model.Observation
	m     *Mapping
	views []*view
	j     model.Judgement
	// leader is the one leader that answered, nil when none did.
	leader *view
	// contested says why a member's claim to lead was not believed;
	// claims counts the members that say they lead.
	contested string
	claims    int
}

func (j *judge) add(code model.ReasonCode, member, format string, args ...any) {
	j.j.Reasons = append(j.j.Reasons, model.Reason{Code: code, Member: member, Detail: fmt.Sprintf(format, args...)})
}

// Judge implements model.VerdictRules.
func (Rules) Judge(in model.JudgeInput) model.Judgement {
	n := len(in.Observation.Members)
	j := &judge{in: in, obs: in.Observation, j: model.Judgement{
		Phases: make([]model.Phase, n), Lags: make([]*int64, n), Learners: make([]bool, n),
	}}
	if !j.mapping() {
		// Without a usable mapping nothing the members said can be read:
		// phases from the pods alone, lags unknown, no guessed reasons.
		for i := range j.j.Phases {
			j.j.Phases[i] = in.PodPhases[i]
			if j.j.Phases[i] == "" {
				j.j.Phases[i] = model.PhaseUnknown
			}
		}
		j.j.NoFrontierBecause = "no usable mapping"
		return j.j
	}
	j.read()
	j.identity()
	j.quorum()
	j.leaderOf()
	j.formed()
	j.frontier()
	for _, v := range j.views {
		j.j.Phases[v.i] = j.phase(v)
		j.j.Lags[v.i] = v.lag
		j.j.Learners[v.i] = v.learner
	}
	if j.obs.EngineProbed {
		j.memberReasons()
		j.clusterReasons()
	}
	return j.j
}

// mapping reads the cluster's mapping, or reports why there is none
// (false).
func (j *judge) mapping() bool {
	c := j.obs.Cluster
	m, err := Parse(c.EngineConfig)
	switch {
	case c.EngineConfigErr != "":
		j.add(model.ReasonEngineConfigInvalid, "", "%s", c.EngineConfigErr)
		return false
	case err != nil:
		j.add(model.ReasonEngineConfigInvalid, "", "%v", err)
		return false
	}
	j.m = m
	return true
}

// read sorts each member's probe into answered, refused and unreachable.
func (j *judge) read() {
	for i := range j.obs.Members {
		mem := &j.obs.Members[i]
		v := &view{i: i, name: mem.Name}
		if p := mem.Pod; p != nil {
			v.running = p.Running
		}
		if e := mem.Engine; j.obs.EngineProbed && e != nil {
			v.e = e
			switch {
			case e.Reachable:
				v.answered, v.learner = true, e.IsLearner
			case e.Failure == model.ProbeFailureCredentials:
				v.credFail = true
			default:
				v.unreachable = true
			}
		}
		j.views = append(j.views, v)
	}
}

// identity picks the reference cluster ID: the one most answering
// members report (ties to the one recorded earlier, then the smallest).
func (j *judge) identity() {
	count := map[string]int{}
	for _, v := range j.views {
		if v.answered && v.e.ClusterID != "" {
			count[v.e.ClusterID]++
		}
	}
	ids := make([]string, 0, len(count))
	for id := range count {
		ids = append(ids, id)
	}
	known := j.obs.Cluster.KnownClusterID
	sort.Slice(ids, func(a, b int) bool {
		x, y := ids[a], ids[b]
		if count[x] != count[y] {
			return count[x] > count[y]
		}
		if (x == known) != (y == known) {
			return x == known
		}
		return x < y
	})
	j.j.ClusterIDs = len(ids)
	if len(ids) > 0 {
		j.j.ClusterID = ids[0]
	}
	for _, v := range j.views {
		if v.answered {
			v.other = v.e.ClusterID != "" && v.e.ClusterID != j.j.ClusterID
			v.onRef = !v.other
		}
	}
}

// quorum is the arithmetic of the mapping's quorum mode.
func (j *judge) quorum() {
	voters := j.obs.Cluster.Replicas
	for _, v := range j.views {
		if v.learner {
			voters--
		}
	}
	voters = max(voters, 0)
	j.j.Voters = voters
	if j.m.Quorum == QuorumLeader {
		j.j.Quorum, j.j.Tolerance = min(2, voters), max(voters-2, 0)
	} else {
		j.j.Quorum = voters/2 + 1
		j.j.Tolerance = voters - j.j.Quorum
	}
	for _, v := range j.views {
		if v.onRef && !v.learner {
			j.j.AnsweringVoters++
		}
	}
}

// leaderOf finds the one leader: the member of the reference cluster that
// says it leads, or, when none that answered does, the leader a strict
// majority of the answering members name.
func (j *judge) leaderOf() {
	var leaders []*view
	for _, v := range j.views {
		if v.onRef && v.leads() {
			leaders = append(leaders, v)
		}
	}
	j.claims = len(leaders)
	if len(leaders) == 1 && j.deposed(leaders[0]) {
		// Another answering member follows someone else, or is in a
		// later term: this one's claim is stale, and its frontier is
		// no frontier.
		leaders = nil
	}
	switch len(leaders) {
	case 1:
		j.leader = leaders[0]
		j.j.LeaderID, j.j.LeaderMember = j.leader.e.MemberID, j.leader.name
	case 0:
		named := map[string]int{}
		answering := 0
		for _, v := range j.views {
			if v.onRef {
				answering++
				if id := v.e.LeaderID; id != "" {
					named[id]++
				}
			}
		}
		for id, k := range named {
			if 2*k > answering {
				j.j.LeaderID = id
			}
		}
		for _, v := range j.views {
			if j.j.LeaderID != "" && v.name == j.j.LeaderID {
				j.j.LeaderMember = v.name
			}
		}
	default:
		if j.obs.EngineProbed {
			j.add(model.ReasonLeaderDisagreement, "", "%d members say they lead: %s", len(leaders), names(leaders))
		}
	}
}

// deposed reports whether leader's claim to lead is contradicted by
// another answering member of the reference cluster that names another
// leader (a leader deposed while a follower of the new one answers and
// the new one does not).
func (j *judge) deposed(leader *view) bool {
	for _, v := range j.views {
		if !v.onRef || v == leader {
			continue
		}
		if id := v.e.LeaderID; id != "" && id != leader.e.MemberID {
			j.contested = fmt.Sprintf("%s says it leads, %s follows %s", leader.name, v.name, id)
			return true
		}
	}
	return false
}

// formed: the cluster has formed when a member answered with a cluster ID
// or a leader, when a cluster ID was recorded earlier, or when it is older
// than the bootstrap window.
func (j *judge) formed() {
	c := j.obs.Cluster
	switch {
	case j.j.ClusterID != "":
		j.j.Formed, j.j.FormedBecause = true, "cluster ID "+j.j.ClusterID
	case j.j.LeaderID != "":
		j.j.Formed, j.j.FormedBecause = true, "leader "+j.j.LeaderID+" named"
	case c.KnownClusterID != "":
		j.j.Formed, j.j.FormedBecause = true, "cluster ID "+c.KnownClusterID+" recorded"
	case !c.CreatedAt.IsZero() && j.in.Now.Sub(c.CreatedAt) > j.in.BootstrapWindow:
		j.j.Formed, j.j.FormedBecause = true, fmt.Sprintf("StatefulSet older than the %s bootstrap window", j.in.BootstrapWindow)
	}
}

// frontier reads the leader's frontier from the leader itself, in this
// round, and derives each member's lag from it: the frontier minus the
// member's applied position. Without a frontier, or without an applied
// position, a lag is unknown, never 0.
func (j *judge) frontier() {
	switch {
	case !j.obs.EngineProbed:
		j.j.NoFrontierBecause = "members not probed"
	case j.leader == nil && j.j.LeaderID != "":
		j.j.NoFrontierBecause = fmt.Sprintf("leader %s did not answer", j.j.LeaderID)
	case j.leader == nil:
		j.j.NoFrontierBecause = "no agreed leader"
	case j.leader.e.Document == nil || j.leader.e.Document.Frontier == nil:
		j.j.NoFrontierBecause = fmt.Sprintf("leader %s reported no frontier", j.leader.name)
	case *j.leader.e.Document.Frontier == 0:
		j.j.NoFrontierBecause = fmt.Sprintf("leader %s reported frontier 0", j.leader.name)
	default:
		f := *j.leader.e.Document.Frontier
		j.j.Frontier = &f
	}
	if j.j.Frontier == nil {
		return
	}
	f := *j.j.Frontier
	for _, v := range j.views {
		if !v.onRef || v.e.Document == nil || v.e.Document.Applied == nil {
			continue
		}
		lag := int64(0)
		if a := *v.e.Document.Applied; f > a {
			lag = int64(f - a)
		}
		v.lag = &lag
	}
}

func (j *judge) phase(v *view) model.Phase {
	if ph := j.in.PodPhases[v.i]; ph != "" {
		return ph
	}
	switch {
	case !v.answered:
		return model.PhaseUnknown
	case v.other:
		return model.PhaseDiverged
	case !j.j.Formed:
		return model.PhaseBootstrapping
	case v == j.leader:
		return model.PhaseMember
	case v.learner:
		return model.PhaseJoining
	case v.e.Document != nil && v.e.Document.Ready != nil && !*v.e.Document.Ready:
		return model.PhaseJoining
	case v.lag == nil:
		return model.PhaseUnknown
	case uint64(*v.lag) > j.in.LagThreshold:
		return model.PhaseCatchingUp
	}
	return model.PhaseMember
}

// memberReasons are each member's reasons.
func (j *judge) memberReasons() {
	for _, v := range j.views {
		switch {
		case v.credFail:
			j.add(model.ReasonCredentialsUnavailable, v.name, "%s", v.e.Err)
		case v.unreachable:
			j.add(model.ReasonMemberUnreachable, v.name, "%s", v.e.Err)
		}
		if !v.answered {
			continue
		}
		if v.other {
			j.add(model.ReasonClusterIDSplit, v.name, "answers with cluster ID %s, the others with %s", v.e.ClusterID, j.j.ClusterID)
			continue
		}
		if d := v.e.Document; d != nil && d.Problem != "" {
			j.add(model.ReasonEngineConfigInvalid, v.name, "the mapping cannot read its document: %s", d.Problem)
		}
		if v.learner {
			role := ""
			if d := v.e.Document; d != nil {
				role = d.Role
			}
			j.add(model.ReasonLearnerPending, v.name, "its document says it does not vote (role %q)", role)
		}
		if d := v.e.Document; d != nil && d.Ready != nil && !*d.Ready {
			j.add(model.ReasonMemberNotReady, v.name, "its document says it is not ready (%s)", j.m.notReady(d))
		}
		if j.j.LeaderID != "" && v.e.LeaderID != "" && v.e.LeaderID != j.j.LeaderID {
			j.add(model.ReasonLeaderDisagreement, v.name, "follows %s, the others %s", v.e.LeaderID, j.j.LeaderID)
		}
		switch {
		case v.lag != nil && uint64(*v.lag) > j.in.LagThreshold:
			j.add(model.ReasonMemberLagging, v.name, "%d behind the leader's frontier %d (threshold %d)", *v.lag, *j.j.Frontier, j.in.LagThreshold)
		case v.lag == nil && j.j.Formed && !v.learner && v != j.leader:
			why := j.j.NoFrontierBecause
			if why == "" {
				why = "its document has no applied position"
			}
			j.add(model.ReasonLagUnknown, v.name, "lag unknown: %s", why)
		}
	}
}

// clusterReasons are the cluster-wide reasons.
func (j *judge) clusterReasons() {
	if j.j.ClusterIDs > 1 {
		j.add(model.ReasonClusterIDSplit, "", "members answer with %d cluster IDs", j.j.ClusterIDs)
	}
	if j.m.Quorum != QuorumLeader {
		unasked := 0
		for _, v := range j.views {
			if v.running && (v.e == nil || v.credFail) && !v.learner {
				unasked++
			}
		}
		if j.j.AnsweringVoters+unasked < j.j.Quorum {
			j.add(model.ReasonQuorumUnavailable, "", "%d of %d voters answered; quorum needs %d", j.j.AnsweringVoters, j.j.Voters, j.j.Quorum)
		}
	}
	switch {
	case j.contested != "" && j.leader == nil:
		j.add(model.ReasonLeaderDisagreement, "", "%s", j.contested)
	case j.j.Formed && j.leader == nil && j.j.LeaderID == "" && j.claims < 2:
		j.add(model.ReasonLeaderMissing, "", "no answering member says it leads or names a leader a majority agrees on")
	}
	versions := map[string][]string{}
	for _, v := range j.views {
		if v.answered && v.e.Version != "" {
			versions[v.e.Version] = append(versions[v.e.Version], v.name)
		}
	}
	if len(versions) > 1 {
		var parts []string
		for ver, ns := range versions {
			parts = append(parts, ver+" ("+strings.Join(ns, ", ")+")")
		}
		slices.Sort(parts)
		j.add(model.ReasonVersionMismatch, "", "members run %s", strings.Join(parts, ", "))
	}
	var paused []string
	for _, v := range j.views {
		if v.answered && v.e.Document != nil && v.e.Document.Paused {
			paused = append(paused, v.name)
		}
	}
	if len(paused) > 0 {
		j.add(model.ReasonMaintenancePaused, "", "automatic failover is paused (say %s)", strings.Join(paused, ", "))
	}
}

// notReady says why a document reads as not ready, for messages.
func (m *Mapping) notReady(d *model.DocumentFacts) string {
	why := "ready expression not in " + strings.Join(m.ReadyValues, ", ")
	if d.Role != "" {
		why += "; role " + d.Role
	}
	return why
}

func names(vs []*view) string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.name)
	}
	return strings.Join(out, ", ")
}
