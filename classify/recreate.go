package classify

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/verdict"
)

// recreateRules are the rules for an engine whose verdict rules live in
// its own package (model.VerdictRules, handed in with the verdict
// options): hactl reads and judges its members but sends them nothing.
// The one action offered is replace, and only where the rules say the
// cluster's members rebuild themselves from their peers on a new volume
// (model.Recreatable, the http engine's "replace: recreate"):
//
//   - the fenced delete of the member's volume and pod; the StatefulSet
//     recreates both and the member copies its data from its peers;
//   - then a wait until it answers, ready, with its lag behind the
//     leader's frontier known and within the threshold.
//
// It is refused when the member leads (hactl cannot hand leadership
// over), when no leader is agreed, when the cluster says it is paused,
// and when the caught-up members left without it are fewer than the
// cluster's quorum. reseed, seed, restore and switchover need the
// engine's own operations and are refused with action_unsupported.
type recreateRules struct{ r model.VerdictRules }

func (x recreateRules) replace(c *classifier) {
	if c.in.Action == model.ActionReseed {
		c.unsupported("a reseed needs the store's own rebuild request; where its members rebuild themselves on a new volume, replace the member instead")
		return
	}
	recreate{c, x.r}.replace()
}

func (recreateRules) seed(c *classifier) {
	c.unsupported("hactl captures seed generations of etcd clusters only")
}

func (recreateRules) restore(c *classifier) {
	c.unsupported("hactl restores etcd clusters only")
}

func (recreateRules) switchover(c *classifier) {
	c.unsupported("hactl cannot ask the store to hand its leadership over; use the store's own tools")
}

// holdsRecorded: the member is its pod; a member that answers under the
// recorded name is the replacement a resume waits for (the recorded pod
// and volume are checked by replaceNotResumable).
func (recreateRules) holdsRecorded(c *classifier, e *model.LedgerEntry) bool {
	m := c.Member(e.Member)
	return m != nil && m.Engine != nil && m.Engine.Reachable
}

// staleWait: the only wait, a member catching up, may always still come
// true.
func (recreateRules) staleWait(*classifier, *model.LedgerEntry, bool) string { return "" }

func (recreateRules) ready(d model.Decision) string {
	if d.Leader == "" {
		return "answering, ready and within the lag threshold of the leader's frontier"
	}
	return "answering, ready and within the lag threshold of the frontier of the leader " + d.Leader
}

// unsupported refuses the action: the engine has no fenced operation for
// it (why says what to do instead).
func (c *classifier) unsupported(why string) {
	cl := c.obs.Cluster
	c.Block(model.CodeActionUnsupported, c.in.Member, "", "hactl has no fenced %s for %s clusters (%s/%s runs %q): %s; status and explain read it as for any engine",
		c.in.Action, cl.Engine, cl.Namespace, cl.Name, cl.Engine, why)
}

// recreate is a replace decision under recreateRules.
type recreate struct {
	*classifier
	r model.VerdictRules
}

func (c recreate) replace() {
	name, cl := c.in.Member, c.obs.Cluster
	ok, why := false, "its engine does not say that a member on a new, empty volume copies its data from its peers"
	if rr, is := c.r.(model.Recreatable); is {
		ok, why = rr.Recreates(cl)
	}
	if !ok {
		c.unsupported(why)
		return
	}
	m := c.Member(name)
	if m == nil {
		c.Block(model.CodeMemberNotFound, name, "", "%s/%s has no member %q (members: %s)", cl.Namespace, cl.Name, name, c.MemberNames())
		return
	}
	if m.Ordinal >= cl.Replicas {
		c.Block(model.CodeMemberNotWanted, name, "", "%s has ordinal %d but the StatefulSet wants %d replicas: it would not be recreated", name, m.Ordinal, cl.Replicas)
	}
	if cl.Shape == model.ShapeOperatorOwned {
		c.Block(model.CodeShapeOperatorOwned, name, "", "the cluster is managed by %s, which owns its pods and volumes; replace the member through the operator", cmp.Or(cl.Template.OperatorOwner, "an operator"))
	}
	c.d.Replaced = c.ReplacedOf(m)
	w := model.Rebuilt{Leader: func() string { return c.a.LeaderMember }, CaughtUp: c.caughtUp, Await: c.awaitCaughtUp, Recreated: c.recreated}
	if c.RecreateResume(m, w) {
		// A resume is measured against one agreed leader of the same
		// cluster, other than the member (never "done" on a rebuilt
		// member that leads, or answers for a cluster of its own); the
		// take-down gates hold while the resumed plan still takes the
		// member down.
		ok := c.agreed() && c.notLeader(m, true)
		if ok && c.d.Mutates() {
			ok = c.takeDown(m)
		}
		if !ok {
			c.d.Steps, c.done = c.d.Steps[:0], false
		}
		return
	}
	if pod := m.Pod; pod != nil && pod.DeletionMarked {
		c.AwaitForeignDelete(name, pod)
		return
	}
	if c.ObserveNeverStarted(name, m.Pod) || !c.gates(m) {
		return
	}
	c.DeleteBoth(m, m.PVC, m.PVC != nil)
	c.recreated(name)
}

// gates refuse taking m down unless its cluster answers as one cluster
// with one agreed leader other than m, is not paused, and keeps its
// quorum of caught-up members without m. They report whether the
// decision goes on.
func (c recreate) gates(m *model.Member) bool {
	return c.agreed() && c.notLeader(m, false) && c.takeDown(m)
}

// agreed refuses a cluster whose members were not asked or did not
// answer, answer for more than one cluster (or for another than the one
// recorded), lack a quorum, or agree on no leader.
func (c recreate) agreed() bool {
	if !c.obs.EngineProbed {
		c.Block(model.CodeNotProbed, "", "", "the members were not probed (--no-probe?): hactl acts only on what the members themselves say")
		return false
	}
	answered := false
	for _, x := range c.obs.Members {
		answered = answered || (x.Engine != nil && x.Engine.Reachable)
	}
	if !answered {
		c.Block(model.CodeClusterUnreachable, "", "", "no member answered%s", c.ProbeFailures())
		return false
	}
	ok := true
	known := c.obs.Cluster.KnownClusterID
	switch {
	case c.a.ClusterIDs > 1:
		c.Block(model.CodeClusterIDSplit, "", "", "the members answer with %d different cluster IDs: repair the split first", c.a.ClusterIDs)
		ok = false
	case known != "" && c.a.ClusterID != "" && c.a.ClusterID != known:
		c.Block(model.CodeClusterIDSplit, "", "", "the members answer for cluster %s, but %s was recorded for this cluster: a member that formed a cluster of its own is no rebuilt member", c.a.ClusterID, known)
		ok = false
	}
	if r := c.reason(model.ReasonQuorumUnavailable); r != nil {
		c.Block(model.CodeLeaderUnknown, "", "", "the cluster has no quorum (%s): hactl acts only on a cluster whose leader it can measure against", r.Detail)
		return false
	}
	if c.a.LeaderMember == "" {
		c.Block(model.CodeLeaderUnknown, "", "", "the members agree on no leader (%s): hactl replaces a member only while a leader it can measure the rebuilt member against is known", c.leaderReasons())
		return false
	}
	c.d.Leader = c.a.LeaderMember
	return ok
}

// notLeader refuses m when it is the agreed leader: before, hactl cannot
// hand leadership over; after the deletes (rebuilt), a member that leads
// is not one measured against a leader's frontier.
func (c recreate) notLeader(m *model.Member, rebuilt bool) bool {
	switch {
	case c.a.LeaderMember != m.Name:
		return true
	case rebuilt:
		c.Block(model.CodeTargetIsLeader, m.Name, "", "%s leads now: its replace began (ledger entry %s) but a rebuilt member that leads cannot be measured against a leader's frontier; check that it holds the cluster's data, or run with --supersede to drop the entry", m.Name, c.resume.ID)
	default:
		c.Block(model.CodeTargetIsLeader, m.Name, "", "%s is the leader: hactl cannot hand leadership over in a cluster of engine %s; move it with the store's own tools, then replace %s", m.Name, c.obs.Cluster.Engine, m.Name)
	}
	return false
}

// takeDown refuses taking m down when the cluster says it is paused, or
// when fewer caught-up members than its quorum would remain.
func (c recreate) takeDown(m *model.Member) bool {
	ok := true
	if r := c.reason(model.ReasonMaintenancePaused); r != nil {
		c.Block(model.CodeMaintenancePaused, "", "", "the cluster says it is paused (%s): a paused store may not rebuild a member on an empty volume; resume it first", r.Detail)
		ok = false
	}
	var healthy, not []string
	for _, x := range c.obs.Members {
		switch {
		case x.Name == m.Name:
		case x.Phase == model.PhaseMember && x.Engine != nil && x.Engine.Reachable:
			healthy = append(healthy, x.Name)
		default:
			not = append(not, fmt.Sprintf("%s: %s", x.Name, x.Phase))
		}
	}
	if len(healthy) < c.a.Quorum {
		c.Block(model.CodeQuorumWouldBreak, m.Name, "", "while %s rebuilds, %d caught-up member(s) would remain (%s) and the cluster needs %d; repair the others first (%s)",
			m.Name, len(healthy), cmp.Or(strings.Join(healthy, ", "), "none"), c.a.Quorum, cmp.Or(strings.Join(not, "; "), "no other member"))
		ok = false
	}
	return ok
}

// reason is the verdict's reason of code k, nil when it has none.
func (c recreate) reason(k model.ReasonCode) *model.Reason {
	for i := range c.d.Verdict {
		if c.d.Verdict[i].Code == k {
			return &c.d.Verdict[i]
		}
	}
	return nil
}

// leaderReasons are the verdict's reasons about the leader, in words.
func (c recreate) leaderReasons() string {
	var why []string
	for _, r := range c.d.Verdict {
		switch r.Code {
		case model.ReasonLeaderMissing, model.ReasonLeaderDisagreement, model.ReasonQuorumUnavailable:
			why = append(why, fmt.Sprintf("%s: %s", r.Code, r.Detail))
		}
	}
	return cmp.Or(strings.Join(why, "; "), "no member answers as the leader")
}

func (c recreate) threshold() uint64 {
	return verdict.LagThreshold(c.o.Verdict, c.obs.Cluster)
}

// caughtUp reports whether m answers as a follower in good standing: a
// ready pod, the member phase, following the agreed leader (when its
// answer names one), and a known lag behind that leader's frontier
// within the threshold. A member that leads is never caught up.
func (c recreate) caughtUp(m *model.Member) bool {
	e := m.Engine
	switch {
	case m.Pod == nil || !m.Pod.Ready || e == nil || !e.Reachable || m.Phase != model.PhaseMember:
		return false
	case c.a.LeaderMember == "" || m.Name == c.a.LeaderMember:
		return false
	case e.LeaderID != "" && c.a.LeaderID != "" && e.LeaderID != c.a.LeaderID:
		return false
	}
	return m.Lag != nil && *m.Lag >= 0 && uint64(*m.Lag) <= c.threshold()
}

func (c recreate) awaitCaughtUp(name string) {
	c.Step(model.Step{Kind: model.StepAwaitCaughtUp, Member: name, MemberID: name,
		Detail: fmt.Sprintf("wait until %s answers, its pod ready, with its lag behind the leader's frontier known and within %d", name, c.threshold())})
}

// recreated appends the steps after the pod was deleted.
func (c recreate) recreated(name string) {
	c.RecreatedThen(name, "the member copies its data from its peers", c.awaitCaughtUp)
}
