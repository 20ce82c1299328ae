package etcd

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// healthyVoters returns the members that are voters within the lag
// threshold of a real frontier, with ready, undeleted pods... as derived.
func (c etcd) healthyVoters() []*model.Member {
	var out []*model.Member
	for i := range c.Observation().Members {
		m := &c.Observation().Members[i]
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
func (c etcd) quorumMath(m *model.Member, cur *model.Peer) {
	q := model.Quorum{Voters: c.Analysis().Voters, Quorum: c.Analysis().Quorum, HealthyVoters: []string{}, OK: true}
	for _, h := range c.healthyVoters() {
		q.HealthyVoters = append(q.HealthyVoters, h.Name)
		if h.Name != m.Name {
			q.HealthyWithout++
		}
	}
	q.TargetVotes = cur != nil && !cur.IsLearner
	for i := range c.Observation().Members {
		v := &c.Observation().Members[i]
		if v.Lag == nil || v.Engine == nil {
			continue
		}
		if p := c.peerByID(v.Engine.MemberID); p == nil || p.IsLearner {
			continue
		}
		if q.Lags == nil {
			q.Lags = map[string]int64{}
		}
		q.Lags[v.Name] = *v.Lag
	}
	c.Decision().Quorum = q
}

// leaderGate checks quorum and leadership before a voter is removed.
func (c etcd) leaderGate(m *model.Member, cur *model.Peer) {
	q := &c.Decision().Quorum
	q.Checked = true
	q.OK = q.HealthyWithout >= q.Quorum
	if !q.OK {
		c.quorumBlock(m)
	}
	if cur.ID != c.Analysis().LeaderID || c.Analysis().LeaderID == "" {
		return
	}
	if !c.Options().MoveLeader {
		c.Block(model.CodeTargetIsLeader, m.Name, model.FlagMoveLeader, "%s (member %s) leads the cluster; removing the leader forces an election", m.Name, cur.ID)
		return
	}
	c.moveLeader(m)
}

// quorumBlock refuses removing m, naming the voters that are not healthy.
func (c etcd) quorumBlock(m *model.Member) {
	q := c.Decision().Quorum
	var not []string
	healthy := map[string]bool{}
	for _, n := range q.HealthyVoters {
		healthy[n] = true
	}
	for _, x := range c.Observation().Members {
		if x.Name != m.Name && !healthy[x.Name] {
			not = append(not, fmt.Sprintf("%s (%s)", x.Name, x.Phase))
		}
	}
	sort.Strings(not)
	detail := fmt.Sprintf("removing %s would leave %d healthy voter(s) of %d; quorum needs %d", m.Name, q.HealthyWithout, q.Voters, q.Quorum)
	if len(not) > 0 {
		detail += "; not healthy: " + strings.Join(not, ", ")
	}
	c.Block(model.CodeQuorumWouldBreak, m.Name, "", "%s; repair the unhealthy members first", detail)
}

// moveLeader plans moving leadership from m, which leads, to the least
// lagging other healthy voter (lowest ordinal on a tie).
func (c etcd) moveLeader(m *model.Member) {
	var best *model.Member
	for _, h := range c.healthyVoters() {
		if h.Name == m.Name {
			continue
		}
		if best == nil || h.SortLag() < best.SortLag() || (h.SortLag() == best.SortLag() && h.Ordinal < best.Ordinal) {
			best = h
		}
	}
	if best == nil {
		c.Block(model.CodeNoLeaderCandidate, m.Name, "", "%s leads and no other healthy voter can take over leadership", m.Name)
		return
	}
	c.Note(model.CodeLeaderMove, m.Name, "%s leads: leadership moves to %s (member %s) first", m.Name, best.Name, best.Engine.MemberID)
	c.Step(model.Step{Kind: model.StepMoveLeader, Member: best.Name, MemberID: best.Engine.MemberID,
		Detail: fmt.Sprintf("move leadership from %s to %s (member %s)", m.Name, best.Name, best.Engine.MemberID)})
}
