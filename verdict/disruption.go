package verdict

import (
	"fmt"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// The disruption checks every engine whose tolerance is a quorum's shares
// (an engine whose tolerance is otherwise judges them itself:
// model.Judgement.DisruptionJudged).

// pdb: the PodDisruptionBudget must not let more pods go at once than the
// cluster tolerates losing.
func (s *state) pdb(r *reasons) {
	if m := s.obs.Cluster.ManagedBy; m != nil && m.Unevictable {
		return // no eviction reaches them: no budget applies
	}
	p := s.obs.PDB
	if p == nil {
		r.Add(model.ReasonPDBMissing, "", "no PodDisruptionBudget selects the cluster's pods")
		return
	}
	if p.Role != "" {
		r.Add(model.ReasonPDBAllowsQuorumLoss, "", "PodDisruptionBudget %s selects only the pods of role %s: the others may all be evicted at once; %s tolerate losing %d",
			p.Name, p.Role, model.Plural(s.a.Voters, "voter"), s.a.Tolerance)
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
		r.Add(model.ReasonPDBAllowsQuorumLoss, "", "PodDisruptionBudget %s sets neither minAvailable nor maxUnavailable", p.Name)
		return
	}
	if allowed > s.a.Tolerance {
		r.Add(model.ReasonPDBAllowsQuorumLoss, "", "PodDisruptionBudget %s (%s) lets %s go at once; %s tolerate losing %d",
			p.Name, how, model.Plural(allowed, "pod"), model.Plural(s.a.Voters, "voter"), s.a.Tolerance)
	}
}

// colocation: no node may hold more voters than the cluster tolerates
// losing.
func (s *state) colocation(r *reasons) {
	n, q := s.a.Voters, s.a.Quorum
	if n == 0 {
		return
	}
	if s.a.Tolerance == 0 {
		r.Add(model.ReasonMembersColocated, "", "%s: losing any one member or its node loses quorum (%d needed)", model.Plural(n, "voter"), q)
		return
	}
	perNode := map[string][]string{}
	for _, v := range s.views {
		if v.m.Pod == nil || v.m.Pod.Node == "" || v.learner || v.diverged {
			continue
		}
		perNode[v.m.Pod.Node] = append(perNode[v.m.Pod.Node], v.m.Name)
	}
	for node, names := range perNode {
		if len(names) > s.a.Tolerance {
			r.Add(model.ReasonMembersColocated, "", "%d of %d members on node %s (%s); losing it leaves %d, quorum is %d",
				len(names), n, node, strings.Join(names, ", "), n-len(names), q)
		}
	}
}
