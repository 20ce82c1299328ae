package etcd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// Rules plan actions on etcd clusters (model.ClassifyRules): membership
// changes through the member list (learners, quorum of raft voters, the
// leader), the bootstrap shape of the pod template, seed sources and
// restores of the whole cluster. They live in the plan*.go files.
var _ model.ClassifyRules = Rules{}

func (Rules) PlanReplace(c model.Plan) { planning(c).membership() }
func (Rules) PlanSeed(c model.Plan)    { planning(c).seed() }
func (Rules) PlanRestore(c model.Plan) { planning(c).restore() }

// switchover is Patroni's: etcd moves leadership as part of replace and
// reseed (--move-leader).
func (Rules) PlanSwitchover(c model.Plan) {
	c.Block(model.CodeActionUnsupported, c.Intent().Member, "", "switchover applies to Patroni clusters; an etcd cluster's leadership moves with --move-leader as part of replace and reseed")
}

// staleWait: etcd's waits (a learner catching up, a pod recreated) are
// bounded by the executor's timeouts and judged stale by
// replaceNotResumable.
func (Rules) StaleWait(model.Plan, *model.LedgerEntry, bool) string { return "" }

func (Rules) ReadyMeaning(model.Decision) string { return "a healthy voter again" }

// holdsRecorded: an answering member still lists the member ID the entry
// recorded, or what the action itself brings back (a learner or voter
// with the recorded peer URL or the member's name), which is where a
// normal resume stands.
func (Rules) HoldsRecorded(c model.Plan, e *model.LedgerEntry) bool {
	x, r := planning(c), e.Replaced
	return (r.MemberID != "" && x.peerByIDIn(r.MemberID)) || x.peerHolding(e.Member, r.PeerURLs)
}

// etcd is a decision being planned on an etcd cluster: the classifier's
// plan, with etcd's helpers.
type etcd struct{ model.Plan }

func planning(p model.Plan) etcd { return etcd{p} }

// flow picks the flow from the shape, or blocks.
func (c etcd) flow() model.Flow {
	t := c.Observation().Cluster.Template
	switch c.Observation().Cluster.Shape {
	case model.ShapeStaticExisting:
		if t.Password != nil {
			// Not yet run end to end with auth on: a learner issues no
			// token, and is watched with one a voter issued.
			c.Block(model.CodeActionUnsupported, "", "", "auth is enabled (%s names the password): hactl's learner flow is not offered with etcd's auth yet (a learner issues no token of its own); rebuild the member by hand (etcdctl --user root member remove, then add it as a learner and promote it once caught up)", t.PasswordFrom)
			return model.FlowNone
		}
		return model.FlowLearner
	case model.ShapeSelfRegistering:
		if t.StartFromSnapshot {
			c.Block(model.CodeStartFromSnapshot, "", "", "the template sets ETCD_START_FROM_SNAPSHOT=yes: a recreated member would restore a snapshot of its own choosing instead of joining; hactl only diagnoses such clusters")
			return model.FlowNone
		}
		c.Note(model.CodeDelegated, "", "self-registering entrypoint: hactl removes the member and deletes its volume and pod; the entrypoint re-adds itself and hactl waits for a voting member with its peer URL (no learner is added or promoted)")
		return model.FlowDelegate
	case model.ShapeStaticNew:
		c.Block(model.CodeShapeStaticNew, "", "", "the template hard-codes --initial-cluster-state=new: a member recreated on an empty volume would either form a new one-member cluster or take back its removed ID and crash-loop with \"permanently removed from the cluster\". "+
			"Switch the template to --initial-cluster-state=existing (ETCD_INITIAL_CLUSTER_STATE=existing) with updateStrategy: OnDelete, so running pods keep their arguments, then run this again")
	case model.ShapeOperatorOwned:
		owner := t.OperatorOwner
		if owner == "" {
			owner = "a backup/restore sidecar"
		}
		c.Block(model.CodeShapeOperatorOwned, "", "", "the cluster is managed by %s, which owns its membership; hactl only diagnoses it: repair it through the operator", owner)
	default:
		c.Block(model.CodeShapeUnknown, "", "", "hactl does not recognise how this template bootstraps (a shell wrapper, a preStop calling etcdctl, or no --initial-cluster-state): acting alongside it is unsafe; hactl only diagnoses it")
	}
	return model.FlowNone
}

// engineGates checks that the engine can take membership changes.
func (c etcd) engineGates(target string) bool {
	if !c.Observation().EngineProbed {
		c.Block(model.CodeNotProbed, "", "", "the members were not probed (--no-probe?): hactl acts only on what the members themselves say")
		return false
	}
	if c.Analysis().ClusterID == "" {
		c.Block(model.CodeClusterUnreachable, "", "", "no member answered for the cluster: membership cannot be changed%s", c.ProbeFailures())
		return false
	}
	if c.Analysis().MemberList == nil {
		c.Block(model.CodeMemberListUnknown, "", "", "no answering member reported the member list%s", c.peerFailures())
		return false
	}
	if c.Analysis().ClusterIDs > 1 {
		c.splitGate(target)
	}
	if c.Analysis().LeaderID == "" {
		c.Block(model.CodeLeaderUnknown, "", "", "no leader is agreed by a majority of the answering members (%s): membership changes need a leader", c.Analysis().NoFrontierBecause)
	}
	return true
}

// splitGate refuses when members other than target answer for another
// cluster than the reference.
func (c etcd) splitGate(target string) {
	var others []string
	for i := range c.Observation().Members {
		m := &c.Observation().Members[i]
		if m.Engine != nil && m.Engine.Reachable && m.Engine.ClusterID != "" && m.Engine.ClusterID != c.Analysis().ClusterID && m.Name != target {
			others = append(others, fmt.Sprintf("%s answers for %s", m.Name, m.Engine.ClusterID))
		}
	}
	if len(others) > 0 {
		c.Block(model.CodeClusterIDSplit, "", "", "members answer for more than one cluster (reference %s; %s): resolve that first", c.Analysis().ClusterID, strings.Join(others, "; "))
	}
}

// peerFailures says why each answering member gave no member list, with a
// hint when deadlines ran out (a slow API server: every probe goes
// through a port-forward).
func (c etcd) peerFailures() string {
	var parts []string
	deadline := false
	for _, m := range c.Observation().Members {
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

// onReference reports whether m answered for the reference cluster.
func (c etcd) onReference(m *model.Member) bool {
	return m.Engine != nil && m.Engine.Reachable && m.Engine.ClusterID != "" && m.Engine.ClusterID == c.Analysis().ClusterID
}

// peerHolding reports whether any answering member lists a member named
// name or holding one of urls.
func (c etcd) peerHolding(name string, urls []string) bool {
	for _, m := range c.Observation().Members {
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
func (c etcd) peerByIDIn(id string) bool {
	for _, m := range c.Observation().Members {
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

// peerByID finds a member list entry.
func (c etcd) peerByID(id string) *model.Peer {
	for i := range c.Analysis().MemberList {
		if c.Analysis().MemberList[i].ID == id {
			return &c.Analysis().MemberList[i]
		}
	}
	return nil
}

func (c etcd) peerByName(name string) *model.Peer {
	for i := range c.Analysis().MemberList {
		if c.Analysis().MemberList[i].Name == name {
			return &c.Analysis().MemberList[i]
		}
	}
	return nil
}

// peerByURLs finds the entry holding one of urls, member name's peer
// URLs, other than skipID.
func (c etcd) peerByURLs(urls []string, name, skipID string) *model.Peer {
	ev := c.evidence(name)
	for i := range c.Analysis().MemberList {
		p := &c.Analysis().MemberList[i]
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
// ID the resumed action recorded for it. Like claimants it reads etcd's
// member IDs; both are methods of the classifier itself so that they
// need no etcd value around it.
func (c etcd) evidence(name string) Evidence {
	ev := Evidence{Name: name}
	if m := c.Member(name); m != nil {
		if m.Pod != nil {
			ev.PodIPs = m.Pod.IPs
		}
		if e := m.Engine; e != nil && e.Reachable && e.MemberID != "" && len(c.claimants(e.MemberID)) == 1 {
			ev.MemberIDs = append(ev.MemberIDs, e.MemberID)
		}
	}
	if r := c.Resume(); r != nil && r.Member == name && r.Replaced.MemberID != "" {
		ev.MemberIDs = append(ev.MemberIDs, r.Replaced.MemberID)
	}
	return ev
}

// claimants lists the members whose own probe answered with member ID id.
func (c etcd) claimants(id string) []string {
	var out []string
	for _, m := range c.Observation().Members {
		if e := m.Engine; e != nil && e.Reachable && e.MemberID == id {
			out = append(out, m.Name)
		}
	}
	return out
}
