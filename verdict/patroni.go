package verdict

import (
	"fmt"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// This file is the Patroni half of the verdict. A Patroni cluster has no
// consensus of its own: the leader lock in the DCS (a ConfigMap on
// Kubernetes) says who may be primary, and each member's PostgreSQL says
// what it really is. The frontier is the primary's current WAL position,
// probed in the same round; a replica's lag is that minus what it has
// replayed, never Patroni's own lag (blind to stalled replay).

// DefaultWALLagThreshold is the replay lag in bytes a Patroni replica may
// have and still be a failover candidate when neither
// Options.WALLagThreshold nor the cluster's maximum_lag_on_failover says
// otherwise (Patroni's own default, 1 MiB).
const DefaultWALLagThreshold uint64 = 1 << 20

// lockSkew is how far past renewTime+ttl the leader lock must be before it
// is called stale: the lock's times are written by the member's clock,
// compared with this machine's.
const lockSkew = 2 * time.Second

// patroniRules are the verdict rules of Patroni clusters.
type patroniRules struct{}

func (patroniRules) analyze(s *state) { s.analyzePatroni() }

func (patroniRules) threshold(o Options, c model.ClusterFacts) uint64 {
	return WALLagThreshold(o, c.Patroni)
}

func (patroniRules) reasons(s *state, r *reasons) {
	s.patroniPDB(r)
	s.patroniColocation(r)
	if s.a.Probed {
		s.patroniReasons(r)
	} else {
		s.patroniUnprobed(r)
	}
}

// walLagThreshold is the byte threshold for this cluster.
func (s *state) walLagThreshold() uint64 { return WALLagThreshold(s.opts, s.obs.Cluster.Patroni) }

// WALLagThreshold is the replay lag in bytes a replica of the Patroni
// cluster c may have and still be a failover candidate under o:
// o.WALLagThreshold, else c's maximum_lag_on_failover, else
// DefaultWALLagThreshold.
func WALLagThreshold(o Options, c *model.PatroniClusterFacts) uint64 {
	if o.WALLagThreshold > 0 {
		return o.WALLagThreshold
	}
	if c != nil && c.MaximumLagOnFailover > 0 {
		return uint64(c.MaximumLagOnFailover)
	}
	return DefaultWALLagThreshold
}

// pg is a member's Patroni facts when it answered with them.
func (v *memberView) pg() *model.PatroniFacts {
	if !v.answered || v.eng == nil {
		return nil
	}
	return v.eng.Patroni
}

// primaries are the answering members that say they are a writable,
// running primary.
func (s *state) primaries() []*memberView {
	var out []*memberView
	for _, v := range s.views {
		if p := v.pg(); p.Writable() && p.State == "running" {
			out = append(out, v)
		}
	}
	return out
}

// analyzePatroni fills the Analysis and member views of a Patroni
// cluster: identity, the one primary and its frontier, lag and phases.
func (s *state) analyzePatroni() {
	s.patroniReference()
	c := s.obs.Cluster.Patroni
	prim := s.primaries()
	switch {
	case len(prim) == 1:
		s.a.LeaderMember = prim[0].m.Name
		s.a.LeaderID = prim[0].eng.MemberID
		if loc := prim[0].pg().WALLocation; loc != nil && *loc > 0 {
			f := uint64(*loc)
			s.a.Frontier = &f
		} else {
			s.a.NoFrontierBecause = fmt.Sprintf("primary %s reported no WAL position", s.a.LeaderMember)
		}
	case len(prim) > 1:
		s.a.NoFrontierBecause = fmt.Sprintf("%d members say they are the writable primary", len(prim))
	default:
		if c != nil && c.LockHolder != "" {
			s.a.LeaderMember = c.LockHolder
			s.a.NoFrontierBecause = fmt.Sprintf("lock holder %s did not answer as a running primary", c.LockHolder)
		} else {
			s.a.NoFrontierBecause = "no running primary answered"
		}
	}
	var leader *memberView
	if len(prim) == 1 {
		leader = prim[0]
	}
	for _, v := range s.views {
		p := v.pg()
		if p != nil && v.onRef && s.a.Frontier != nil {
			switch {
			case v == leader:
				lag := int64(0)
				v.lag = &lag
			case p.ReplayedLocation != nil:
				lag := int64(*s.a.Frontier) - *p.ReplayedLocation
				v.lag = &lag
			}
		}
		v.phase = s.patroniPhase(v, leader)
		v.m.Phase = v.phase
		v.m.Lag = v.lag
	}
}

// patroniReference picks the reference system identifier (the one
// initialize recorded, else the one most members answer with), marks the
// members on it, and says whether the cluster has formed and how many
// members count.
func (s *state) patroniReference() {
	c := s.obs.Cluster.Patroni
	ids := map[string]int{}
	for _, v := range s.views {
		if p := v.pg(); p != nil && p.SystemID != "" {
			ids[p.SystemID]++
		}
	}
	s.a.ClusterIDs = len(ids)
	switch {
	case c != nil && c.Initialize != "":
		s.a.ClusterID = c.Initialize
	default:
		best := 0
		for id, n := range ids {
			if n > best || (n == best && id < s.a.ClusterID) {
				s.a.ClusterID, best = id, n
			}
		}
	}
	for _, v := range s.views {
		if p := v.pg(); p != nil && p.SystemID != "" {
			v.onRef = p.SystemID == s.a.ClusterID
			v.otherCluster = !v.onRef
		} else if v.answered {
			v.onRef = true
		}
	}
	switch {
	case s.a.ClusterID != "":
		s.a.Formed, s.a.FormedBecause = true, "system identifier "+s.a.ClusterID
	case !s.obs.Cluster.CreatedAt.IsZero() && s.now.Sub(s.obs.Cluster.CreatedAt) > s.opts.BootstrapWindow:
		s.a.Formed = true
		s.a.FormedBecause = fmt.Sprintf("StatefulSet is %s old, past the %s bootstrap window", roundAge(s.now.Sub(s.obs.Cluster.CreatedAt)), s.opts.BootstrapWindow)
	}
	// A primary and one failover candidate must survive a disruption.
	s.a.Voters = s.obs.Cluster.Replicas
	s.a.Quorum = min(2, s.a.Voters)
	s.a.Tolerance = max(s.a.Voters-2, 0)
	for _, v := range s.views {
		if v.answered && v.onRef {
			s.a.AnsweringVoters++
		}
	}
}

// replicaDiverged says why a replica cannot follow the primary, "" when
// nothing shows it: a timeline above the primary's (or below it while not
// streaming: a streaming replica's timeline is a cached value that trails
// a switchover), a replayed position past the primary's beyond what a
// probe race explains (members are read in parallel, so a streaming
// replica under write load may read a little ahead; threshold bytes are
// tolerated while it streams), or less received than replayed while absent
// from the primary's replication (a walreceiver that keeps failing on a
// forked history).
func replicaDiverged(v, leader *memberView, threshold uint64) string {
	p, l := v.pg(), leader.pg()
	if p == nil || l == nil || v == leader {
		return ""
	}
	_, streaming := l.Streaming(v.eng.MemberID)
	switch {
	case p.Timeline != 0 && l.Timeline != 0 && p.Timeline > l.Timeline:
		return fmt.Sprintf("on timeline %d, ahead of the primary %s on %d", p.Timeline, leader.m.Name, l.Timeline)
	case p.Timeline != 0 && l.Timeline != 0 && p.Timeline < l.Timeline && !streaming:
		return fmt.Sprintf("on timeline %d and not streaming, the primary %s on %d", p.Timeline, leader.m.Name, l.Timeline)
	case v.lag != nil && *v.lag < 0 && (!streaming || uint64(-*v.lag) > threshold):
		return fmt.Sprintf("replayed %s past the primary's WAL position", bytesHuman(-*v.lag))
	case !streaming && p.ReceivedLocation != nil && p.ReplayedLocation != nil && *p.ReceivedLocation < *p.ReplayedLocation:
		return fmt.Sprintf("not streaming, and received (%d) is behind replayed (%d): its history forked from the primary's", *p.ReceivedLocation, *p.ReplayedLocation)
	}
	return ""
}

func (s *state) patroniPhase(v *memberView, leader *memberView) model.Phase {
	if ph, ok := podPhase(v); ok {
		return ph
	}
	switch {
	case !v.answered || v.pg() == nil:
		return model.PhaseUnknown
	case v.otherCluster:
		return model.PhaseDiverged
	case !s.a.Formed:
		return model.PhaseBootstrapping
	}
	pg := v.pg()
	switch {
	case v == leader:
		return model.PhaseMember
	case leader != nil && replicaDiverged(v, leader, s.walLagThreshold()) != "":
		return model.PhaseDiverged
	case pg.State != "running":
		// creating replica, starting: joining the cluster.
		return model.PhaseJoining
	case v.lag == nil:
		return model.PhaseUnknown
	case *v.lag > 0 && uint64(*v.lag) > s.walLagThreshold():
		return model.PhaseCatchingUp
	}
	return model.PhaseMember
}

// patroniReasons are the engine-level reasons of a Patroni cluster.
func (s *state) patroniReasons(r *reasons) {
	c := s.obs.Cluster.Patroni
	s.patroniLock(r)
	// Pods labelled primary.
	var labelled []string
	if c != nil {
		for _, v := range s.views {
			if p := v.m.Pod; p != nil && (p.RoleLabel == "master" || p.RoleLabel == "primary") {
				labelled = append(labelled, v.m.Name)
			}
		}
	}
	prim := s.primaries()
	names := func(vs []*memberView) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.m.Name)
		}
		return out
	}
	switch {
	case len(prim) > 1:
		r.add(model.ReasonPrimarySplit, "", "%d members answer as a writable primary: %s", len(prim), strings.Join(names(prim), ", "))
	case len(labelled) > 1:
		r.add(model.ReasonPrimarySplit, "", "%d pods labelled %s=master/primary: %s", len(labelled), c.RoleLabel, strings.Join(labelled, ", "))
	case len(prim) == 0:
		d := "no member answered as a running writable primary"
		if c != nil && c.LockHolder != "" {
			d += "; the leader lock names " + c.LockHolder
		} else if c != nil && c.LockFound {
			d += "; the leader lock is free"
		}
		r.add(model.ReasonPrimaryMissing, "", "%s", d)
	}
	if len(prim) == 1 && c != nil && c.ObjectsErr == "" && c.LockFound {
		pm := prim[0].eng.MemberID
		switch {
		case c.LockHolder == "":
			r.add(model.ReasonLeaderMismatch, prim[0].m.Name, "the leader lock is free but %s answers as the primary", pm)
		case c.LockHolder != pm:
			r.add(model.ReasonLeaderMismatch, prim[0].m.Name, "the leader lock names %q but %s answers as the primary", c.LockHolder, pm)
		case len(labelled) == 1 && labelled[0] != prim[0].m.Name:
			r.add(model.ReasonLeaderMismatch, prim[0].m.Name, "pod %s is labelled primary but %s answers as the primary", labelled[0], pm)
		}
	}
	if len(prim) == 1 {
		if e := s.obs.ClientEndpoints; e != nil && e.Ready > 0 && len(e.Pods) > 0 && !(len(e.Pods) == 1 && e.Pods[0] == prim[0].m.Name) {
			r.add(model.ReasonClientEndpointsMissing, "", "Service %s points at %s, not at the primary %s", e.Service, strings.Join(e.Pods, ", "), prim[0].m.Name)
		}
	}
	s.patroniIdentity(r)
	s.patroniReplicas(r, prim, c)
	s.versions(r)
}

func (s *state) patroniIdentity(r *reasons) {
	if s.a.ClusterIDs == 0 {
		return
	}
	byID := map[string][]string{}
	for _, v := range s.views {
		if p := v.pg(); p != nil && p.SystemID != "" {
			byID[p.SystemID] = append(byID[p.SystemID], v.m.Name)
		}
	}
	c := s.obs.Cluster.Patroni
	if len(byID) < 2 && (c == nil || c.Initialize == "" || len(byID[c.Initialize]) > 0) {
		return
	}
	d := onWhich(byID)
	if c != nil && c.Initialize != "" {
		d += fmt.Sprintf("; the cluster was initialised as %s", c.Initialize)
	}
	r.add(model.ReasonSystemIDSplit, "", "%s", d)
}

// patroniReplicas judges each replica against the one primary: streaming,
// diverged, lagging; then the cluster's failover candidates and sync
// standby.
func (s *state) patroniReplicas(r *reasons, prim []*memberView, c *model.PatroniClusterFacts) {
	var leader *memberView
	if len(prim) == 1 {
		leader = prim[0]
	}
	thr := s.walLagThreshold()
	candidates, syncOK := 0, false
	for _, v := range s.views {
		if v.m.Pod == nil {
			continue
		}
		switch {
		case v.credFail:
			r.add(model.ReasonCredentialsUnavailable, v.m.Name, "%s", probeDetail("credentials missing or rejected", v.eng))
			continue
		case v.unreachable:
			r.add(model.ReasonMemberUnreachable, v.m.Name, "%s", probeDetail("no answer", v.eng))
			continue
		}
		p := v.pg()
		if p == nil || v == leader {
			if p != nil && p.PendingRestart {
				r.add(model.ReasonPendingRestart, v.m.Name, "a changed parameter needs a restart of PostgreSQL")
			}
			continue
		}
		if p.PendingRestart {
			r.add(model.ReasonPendingRestart, v.m.Name, "a changed parameter needs a restart of PostgreSQL")
		}
		if v.otherCluster || p.Writable() {
			continue // system_id_split or primary_split says it
		}
		if leader == nil {
			continue
		}
		rep, streaming := leader.pg().Streaming(v.eng.MemberID)
		healthy := true
		if d := replicaDiverged(v, leader, thr); d != "" {
			r.add(model.ReasonReplicaDiverged, v.m.Name, "%s", d)
			healthy = false
		}
		switch {
		case !streaming:
			r.add(model.ReasonReplicaNotStreaming, v.m.Name, "%s (state %s) is not streaming from the primary %s", v.m.Name, orDefault(p.State, "unknown"), leader.m.Name)
			healthy = false
		case v.lag == nil:
			r.add(model.ReasonLagUnknown, v.m.Name, "replica reported no replayed WAL position (state %s)", orDefault(p.State, "unknown"))
			healthy = false
		case *v.lag > 0 && uint64(*v.lag) > thr:
			r.add(model.ReasonReplicaLagging, v.m.Name, "replay is %s behind the primary's WAL position (threshold %s)", bytesHuman(*v.lag), bytesHuman(int64(thr)))
			healthy = false
		}
		if p.State != "running" {
			healthy = false
		}
		if healthy && !p.NoFailover {
			candidates++
		}
		if healthy && streaming && (rep.SyncState == "sync" || rep.SyncState == "quorum" || p.SyncStandby) {
			syncOK = true
		}
	}
	if leader == nil {
		return
	}
	if c != nil && c.SynchronousMode && !syncOK {
		d := "synchronous_mode is on and no healthy replica streams synchronously"
		if c.SyncStandby != "" {
			d += "; the sync object names " + c.SyncStandby
		}
		r.add(model.ReasonSyncStandbyMissing, "", "%s", d)
	}
	if candidates == 0 {
		r.add(model.ReasonFailoverCandidatesNone, "", "no replica is running, streaming and within %s of the primary (without nofailover)", bytesHuman(int64(thr)))
	}
}

// patroniPDB: a voluntary disruption must leave the primary and one
// failover candidate.
func (s *state) patroniPDB(r *reasons) {
	p := s.obs.PDB
	if p == nil {
		r.add(model.ReasonPDBMissing, "", "no PodDisruptionBudget selects the cluster's pods")
		return
	}
	n := s.obs.Cluster.Replicas
	allowed := -1
	switch {
	case p.MaxUnavailable >= 0:
		allowed = p.MaxUnavailable
	case p.MinAvailable >= 0:
		allowed = max(n-p.MinAvailable, 0)
	}
	if allowed < 0 || (n >= 2 && allowed > n-2) {
		r.add(model.ReasonPDBAllowsQuorumLoss, "", "PodDisruptionBudget %s lets %s of %d go at once: a primary and a failover candidate need 2 to stay", p.Name, plural(max(allowed, n), "pod"), n)
	}
}

// patroniColocation: losing one node must leave a primary and a
// candidate.
func (s *state) patroniColocation(r *reasons) {
	n := s.obs.Cluster.Replicas
	if n < 2 {
		return
	}
	perNode := map[string][]string{}
	for _, v := range s.views {
		if v.m.Pod == nil || v.m.Pod.Node == "" {
			continue
		}
		perNode[v.m.Pod.Node] = append(perNode[v.m.Pod.Node], v.m.Name)
	}
	for node, names := range perNode {
		if len(names) > max(n-2, 0) && len(names) > 1 {
			r.add(model.ReasonMembersColocated, "", "%d of %d members on node %s (%s); losing it leaves %d, a primary and a failover candidate need 2",
				len(names), n, node, strings.Join(names, ", "), n-len(names))
		}
	}
}

// patroniUnprobed: without probes only the API server speaks: the lock
// and the maintenance flag, and the members' replay cannot be judged.
func (s *state) patroniUnprobed(r *reasons) {
	s.patroniLock(r)
	if c := s.obs.Cluster.Patroni; c != nil && c.ObjectsErr == "" {
		if c.LockFound && c.LockHolder == "" {
			r.add(model.ReasonPrimaryMissing, "", "the leader lock %s-leader is free", c.Scope)
		}
	}
	for _, v := range s.views {
		if v.running {
			r.add(model.ReasonLagUnknown, v.m.Name, "members not probed: replay lag unknown")
		}
	}
}

// patroniLock: the leader lock's freshness and the maintenance flag, from
// the API server alone.
func (s *state) patroniLock(r *reasons) {
	c := s.obs.Cluster.Patroni
	switch {
	case c == nil:
		return
	case c.ObjectsErr != "":
		r.add(model.ReasonLeaderLockUnknown, "", "the leader lock %s-leader could not be read (%s): who may be primary is unknown", c.Scope, c.ObjectsErr)
		return
	case !c.LockFound:
		r.add(model.ReasonLeaderLockUnknown, "", "no ConfigMap %s-leader: hactl reads the Kubernetes DCS's leader lock there (with use_endpoints: true it is the Endpoints %s, which hactl does not read; or the scope is not %q)", c.Scope, c.Scope, c.Scope)
	}
	if c.LockStale(s.now.Add(-lockSkew)) {
		r.add(model.ReasonLeaderLockStale, c.LockHolder, "leader lock %s-leader held by %s was last renewed %s ago; ttl %s",
			c.Scope, c.LockHolder, roundAge(s.now.Sub(c.LockRenew)), c.LockTTL)
	}
	if c.Paused {
		r.add(model.ReasonMaintenancePaused, "", "maintenance mode (pause) is on in %s-config: Patroni will not fail over", c.Scope)
	}
}
