package verdict

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// This file is the etcd half of the verdict's picture: the reference
// cluster ID and member list, whether the cluster formed, quorum, the
// leader, and each member's raft lag and phase.

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
		if !v.answered || v.eng.ClusterID == "" {
			continue
		}
		g := groups[v.eng.ClusterID]
		if g == nil {
			g = &group{id: v.eng.ClusterID}
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
		if v.answered && v.eng.ClusterID != "" {
			v.onRef = v.eng.ClusterID == best.id
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
		if !v.onRef || v.selfOnly || len(v.eng.Peers) == 0 {
			continue
		}
		k := listKey(v.eng.Peers)
		count[k]++
		lists[k] = v.eng.Peers
		if v.eng.Role() == model.RoleLeader {
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
		if v.answered && v.eng.MemberID != "" {
			if p.ID == v.eng.MemberID {
				return p, true
			}
			continue
		}
		if p.Name != "" && p.Name == v.m.Name {
			return p, true
		}
	}
	return model.Peer{}, false
}

// nameOf returns the member name for a member ID, or the ID itself.
func (s *state) nameOf(id string) string {
	for _, v := range s.views {
		if v.answered && v.eng.MemberID == id {
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
			if v.answered && v.leader != "" {
				s.a.Formed, s.a.FormedBecause = true, "leader "+v.leader
				break
			}
		}
	}
	if !s.a.Formed && !c.CreatedAt.IsZero() && s.now.Sub(c.CreatedAt) > s.opts.BootstrapWindow {
		s.a.Formed = true
		s.a.FormedBecause = fmt.Sprintf("StatefulSet is %s old, past the %s bootstrap window", roundAge(s.now.Sub(c.CreatedAt)), s.opts.BootstrapWindow)
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
	s.a.Quorum = Quorum(s.a.Voters)
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
		if v.onRef && v.eng.MemberID == s.a.LeaderID && v.leader == s.a.LeaderID {
			if v.eng.RaftIndex == 0 {
				s.a.NoFrontierBecause = fmt.Sprintf("leader %s reported raft index 0", s.a.LeaderMember)
				return
			}
			f := v.eng.RaftIndex
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
			if f, ap := *s.a.Frontier, v.eng.RaftApplied; f > ap {
				lag = int64(f - ap)
			}
			v.lag = &lag
		}
		v.phase = s.phaseOf(v)
		v.m.Phase = v.phase
		v.m.Lag = v.lag
	}
}

func (s *state) phaseOf(v *memberView) model.Phase {
	if ph, ok := podPhase(v); ok {
		return ph
	}
	switch {
	case s.a.Probed && !s.a.Formed && v.eng != nil && !v.credFail:
		// Asked, and nothing anywhere shows a formed cluster. A member
		// that could not be asked (no probe, no credentials) stays unknown.
		return model.PhaseBootstrapping
	case !v.answered:
		return model.PhaseUnknown
	case v.diverged():
		return model.PhaseDiverged
	case v.learner:
		return model.PhaseJoining
	case v.lag == nil:
		return model.PhaseUnknown
	case uint64(*v.lag) > s.opts.LagThreshold:
		return model.PhaseCatchingUp
	}
	return model.PhaseMember
}
