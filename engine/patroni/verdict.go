package patroni

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// This file holds Patroni's verdict rules. A Patroni cluster has no
// consensus of its own: the leader lock in the DCS (a ConfigMap on
// Kubernetes) says who may be primary, and each member's PostgreSQL says
// what it really is. The frontier is the primary's current WAL position,
// probed in the same round; a replica's lag is that minus what it has
// replayed, never Patroni's own lag (blind to stalled replay). A
// disruption must leave a primary and one failover candidate, so these
// rules judge the disruption budget and the spread over nodes themselves.

// DefaultWALLagThreshold is the replay lag in bytes a Patroni replica may
// have and still be a failover candidate when neither --wal-lag-threshold
// nor the cluster's maximum_lag_on_failover says otherwise (Patroni's own
// default, 1 MiB).
const DefaultWALLagThreshold uint64 = 1 << 20

// lockSkew is how far past renewTime+ttl the leader lock must be before it
// is called stale: the lock's times are written by the member's clock,
// compared with this machine's.
const lockSkew = 2 * time.Second

// Rules are Patroni's verdict rules (model.VerdictRules).
type Rules struct{}

var _ model.VerdictRules = Rules{}

// VerdictRules implements engine.Judged.
func (Engine) VerdictRules() model.VerdictRules { return Rules{} }

// LagThreshold implements model.VerdictRules: the replay lag in bytes a
// replica of cluster c may have and still be a failover candidate:
// --wal-lag-threshold, else c's maximum_lag_on_failover, else
// DefaultWALLagThreshold.
func (Rules) LagThreshold(t model.Thresholds, c model.ClusterFacts) uint64 {
	if t.WALLag > 0 {
		return t.WALLag
	}
	if p := c.Patroni; p != nil && p.MaximumLagOnFailover > 0 {
		return uint64(p.MaximumLagOnFailover)
	}
	return DefaultWALLagThreshold
}

// Judge implements model.VerdictRules.
func (Rules) Judge(in model.JudgeInput) model.Judgement {
	s := newState(in)
	s.analyzePatroni()
	var r reasons
	s.patroniPDB(&r)
	s.patroniColocation(&r)
	if s.probed {
		s.patroniReasons(&r)
	} else {
		s.patroniUnprobed(&r)
	}
	j := s.a
	j.Reasons = r.List
	j.DisruptionJudged = true
	j.SetMembers(len(s.views), func(i int) model.MemberJudgement {
		v := s.views[i]
		return model.MemberJudgement{Phase: v.phase, Lag: v.lag, Diverged: v.otherCluster}
	})
	return j
}

// memberView is what the rules know about one member.
type memberView struct {
	m *model.Member
	model.MemberProbe
	// onRef: answered with the reference system identifier (or none);
	// otherCluster: with another.
	onRef, otherCluster bool
	lag                 *int64
	phase               model.Phase
}

// state is one evaluation: the judgement as it is built and the member
// views.
type state struct {
	in     model.JudgeInput
	obs    model.Observation
	now    time.Time
	probed bool
	a      model.Judgement
	views  []*memberView
}

func newState(in model.JudgeInput) *state {
	s := &state{in: in, obs: in.Observation, now: in.Now, probed: in.Observation.EngineProbed}
	for i, p := range in.Probes() {
		v := &memberView{m: &s.obs.Members[i], MemberProbe: p}
		s.views = append(s.views, v)
	}
	return s
}

// podPhase is the phase v's pod alone decides (absent, terminating,
// pending); false when the engine's facts decide it.
func (s *state) podPhase(v *memberView) (model.Phase, bool) {
	return v.PodPhase, v.PodPhase != ""
}

// reasons collects the rules' reasons, each once.
type reasons = model.Reasons

// versions: the members on the reference system identifier run one
// PostgreSQL version.
func (s *state) versions(r *reasons) {
	byVersion := map[string][]string{}
	for _, v := range s.views {
		if v.onRef && v.Engine.Version != "" {
			byVersion[v.Engine.Version] = append(byVersion[v.Engine.Version], v.m.Name)
		}
	}
	if len(byVersion) < 2 {
		return
	}
	r.Add(model.ReasonVersionMismatch, "", "%s", model.OnWhich(byVersion))
}

// pg is a member's Patroni facts when it answered with them.
func (v *memberView) pg() *model.PatroniFacts {
	if !v.Answered || v.Engine == nil {
		return nil
	}
	return v.Engine.Patroni
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
		s.a.LeaderID = prim[0].Engine.MemberID
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
		} else if v.Answered {
			v.onRef = true
		}
	}
	switch {
	case s.a.ClusterID != "":
		s.a.Formed, s.a.FormedBecause = true, "system identifier "+s.a.ClusterID
	case !s.obs.Cluster.CreatedAt.IsZero() && s.now.Sub(s.obs.Cluster.CreatedAt) > s.in.BootstrapWindow:
		s.a.Formed = true
		s.a.FormedBecause = fmt.Sprintf("StatefulSet is %s old, past the %s bootstrap window", model.RoundAge(s.now.Sub(s.obs.Cluster.CreatedAt)), s.in.BootstrapWindow)
	}
	// A primary and one failover candidate must survive a disruption.
	s.a.Voters = s.obs.Cluster.Replicas
	s.a.Quorum = min(2, s.a.Voters)
	s.a.Tolerance = max(s.a.Voters-2, 0)
	for _, v := range s.views {
		if v.Answered && v.onRef {
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
	_, streaming := l.Streaming(v.Engine.MemberID)
	switch {
	case p.Timeline != 0 && l.Timeline != 0 && p.Timeline > l.Timeline:
		return fmt.Sprintf("on timeline %d, ahead of the primary %s on %d", p.Timeline, leader.m.Name, l.Timeline)
	case p.Timeline != 0 && l.Timeline != 0 && p.Timeline < l.Timeline && !streaming:
		return fmt.Sprintf("on timeline %d and not streaming, the primary %s on %d", p.Timeline, leader.m.Name, l.Timeline)
	case v.lag != nil && *v.lag < 0 && (!streaming || uint64(-*v.lag) > threshold):
		return fmt.Sprintf("replayed %s past the primary's WAL position", model.BytesIEC(-*v.lag))
	case !streaming && p.ReceivedLocation != nil && p.ReplayedLocation != nil && *p.ReceivedLocation < *p.ReplayedLocation:
		return fmt.Sprintf("not streaming, and received (%d) is behind replayed (%d): its history forked from the primary's", *p.ReceivedLocation, *p.ReplayedLocation)
	}
	return ""
}

func (s *state) patroniPhase(v *memberView, leader *memberView) model.Phase {
	if ph, ok := s.podPhase(v); ok {
		return ph
	}
	switch {
	case !v.Answered || v.pg() == nil:
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
	case leader != nil && replicaDiverged(v, leader, s.in.LagThreshold) != "":
		return model.PhaseDiverged
	case pg.State != "running":
		// creating replica, starting: joining the cluster.
		return model.PhaseJoining
	case v.lag == nil:
		return model.PhaseUnknown
	case *v.lag > 0 && uint64(*v.lag) > s.in.LagThreshold:
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
		r.Add(model.ReasonPrimarySplit, "", "%d members answer as a writable primary: %s", len(prim), strings.Join(names(prim), ", "))
	case len(labelled) > 1:
		r.Add(model.ReasonPrimarySplit, "", "%d pods labelled %s=master/primary: %s", len(labelled), c.RoleLabel, strings.Join(labelled, ", "))
	case len(prim) == 0:
		d := "no member answered as a running writable primary"
		if c != nil && c.LockHolder != "" {
			d += "; the leader lock names " + c.LockHolder
		} else if c != nil && c.LockFound {
			d += "; the leader lock is free"
		}
		r.Add(model.ReasonPrimaryMissing, "", "%s", d)
		if op := s.obs.Cluster.Operator; op != nil && op.Err == "" && op.Available != nil && *op.Available && s.everyRunningAsked() &&
			c != nil && c.ObjectsErr == "" && (!c.LockFound || c.LockHolder == "" || c.LockStale(s.now.Add(-lockSkew))) {
			// The operator's word is not the truth (cozystack's #367 in
			// Zalando's shape): it says Running after its last sync, not
			// now. Only where every running member was asked and the lock
			// names no live primary: a member hactl could not ask may be
			// the primary, and a fresh lock's holder may answer next.
			word := op.Status
			if word == "" {
				word = op.Condition()
			}
			r.Add(model.ReasonCRStatusStale, "", "%s %s says %s but no member answers as a running writable primary", op.Kind, op.Name, word)
		}
	}
	if len(prim) == 1 && c != nil && c.ObjectsErr == "" && c.LockFound {
		pm := prim[0].Engine.MemberID
		switch {
		case c.LockHolder == "":
			r.Add(model.ReasonLeaderMismatch, prim[0].m.Name, "the leader lock is free but %s answers as the primary", pm)
		case c.LockHolder != pm:
			r.Add(model.ReasonLeaderMismatch, prim[0].m.Name, "the leader lock names %q but %s answers as the primary", c.LockHolder, pm)
		case len(labelled) == 1 && labelled[0] != prim[0].m.Name:
			r.Add(model.ReasonLeaderMismatch, prim[0].m.Name, "pod %s is labelled primary but %s answers as the primary", labelled[0], pm)
		}
	}
	if len(prim) == 1 {
		if e := s.obs.ClientEndpoints; e != nil && e.Ready > 0 && len(e.Pods) > 0 && !(len(e.Pods) == 1 && e.Pods[0] == prim[0].m.Name) {
			r.Add(model.ReasonClientEndpointsMissing, "", "Service %s points at %s, not at the primary %s", e.Service, strings.Join(e.Pods, ", "), prim[0].m.Name)
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
	d := model.OnWhich(byID)
	if c != nil && c.Initialize != "" {
		d += fmt.Sprintf("; the cluster was initialised as %s", c.Initialize)
	}
	r.Add(model.ReasonSystemIDSplit, "", "%s", d)
}

// patroniReplicas judges each replica against the one primary: streaming,
// diverged, lagging; then the cluster's failover candidates and sync
// standby.
func (s *state) patroniReplicas(r *reasons, prim []*memberView, c *model.PatroniClusterFacts) {
	var leader *memberView
	if len(prim) == 1 {
		leader = prim[0]
	}
	thr := s.in.LagThreshold
	candidates, syncOK := 0, false
	for _, v := range s.views {
		if v.m.Pod == nil {
			continue
		}
		switch {
		case v.CredFail:
			r.Add(model.ReasonCredentialsUnavailable, v.m.Name, "%s", model.ProbeDetail("credentials missing or rejected", v.Engine))
			continue
		case v.Unreachable:
			r.Add(model.ReasonMemberUnreachable, v.m.Name, "%s", model.ProbeDetail("no answer", v.Engine))
			continue
		}
		p := v.pg()
		if p == nil || v == leader {
			if p != nil && p.PendingRestart {
				r.Add(model.ReasonPendingRestart, v.m.Name, "a changed parameter needs a restart of PostgreSQL")
			}
			continue
		}
		if p.PendingRestart {
			r.Add(model.ReasonPendingRestart, v.m.Name, "a changed parameter needs a restart of PostgreSQL")
		}
		if v.otherCluster || p.Writable() {
			continue // system_id_split or primary_split says it
		}
		if leader == nil {
			continue
		}
		rep, streaming := leader.pg().Streaming(v.Engine.MemberID)
		healthy := true
		if d := replicaDiverged(v, leader, thr); d != "" {
			r.Add(model.ReasonReplicaDiverged, v.m.Name, "%s", d)
			healthy = false
		}
		switch {
		case !streaming:
			r.Add(model.ReasonReplicaNotStreaming, v.m.Name, "%s (state %s) is not streaming from the primary %s", v.m.Name, cmp.Or(p.State, "unknown"), leader.m.Name)
			healthy = false
		case v.lag == nil:
			r.Add(model.ReasonLagUnknown, v.m.Name, "replica reported no replayed WAL position (state %s)", cmp.Or(p.State, "unknown"))
			healthy = false
		case *v.lag > 0 && uint64(*v.lag) > thr:
			r.Add(model.ReasonReplicaLagging, v.m.Name, "replay is %s behind the primary's WAL position (threshold %s)", model.BytesIEC(*v.lag), model.BytesIEC(int64(thr)))
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
		r.Add(model.ReasonSyncStandbyMissing, "", "%s", d)
	}
	if candidates == 0 {
		r.Add(model.ReasonFailoverCandidatesNone, "", "no replica is running, streaming and within %s of the primary (without nofailover)", model.BytesIEC(int64(thr)))
	}
}

// patroniPDB: a voluntary disruption must leave the primary and one
// failover candidate.
func (s *state) patroniPDB(r *reasons) {
	p := s.obs.PDB
	if p == nil {
		r.Add(model.ReasonPDBMissing, "", "no PodDisruptionBudget selects the cluster's pods")
		return
	}
	n := s.obs.Cluster.Replicas
	if p.Role != "" {
		// Zalando's operator's budget: the primary cannot be evicted,
		// every replica can, all at once.
		r.Add(model.ReasonPDBAllowsQuorumLoss, "", "PodDisruptionBudget %s selects only the pod labelled %s=%s (the primary): a drain may evict every replica at once, leaving no failover candidate",
			p.Name, roleLabel(s.obs.Cluster.Patroni), p.Role)
		return
	}
	allowed := -1
	switch {
	case p.MaxUnavailable >= 0:
		allowed = p.MaxUnavailable
	case p.MinAvailable >= 0:
		allowed = max(n-p.MinAvailable, 0)
	}
	if allowed < 0 || (n >= 2 && allowed > n-2) {
		if allowed < 0 {
			allowed = n // a budget that bounds nothing
		}
		r.Add(model.ReasonPDBAllowsQuorumLoss, "", "PodDisruptionBudget %s lets %s of %d go at once: a primary and a failover candidate need 2 to stay", p.Name, model.Plural(allowed, "pod"), n)
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
			r.Add(model.ReasonMembersColocated, "", "%d of %d members on node %s (%s); losing it leaves %d, a primary and a failover candidate need 2",
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
			r.Add(model.ReasonPrimaryMissing, "", "the leader lock %s is free", c.LeaderObject())
		}
	}
	for _, v := range s.views {
		if v.Running {
			r.Add(model.ReasonLagUnknown, v.m.Name, "members not probed: replay lag unknown")
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
		r.Add(model.ReasonLeaderLockUnknown, "", "the leader lock %s could not be read (%s): who may be primary is unknown", c.LeaderObject(), c.ObjectsErr)
		return
	case !c.LockFound:
		r.Add(model.ReasonLeaderLockUnknown, "", "no %s: hactl reads the Kubernetes DCS's leader lock there (DCS on %s: %s; or the scope is not %q)", c.LeaderObject(), c.DCS, c.DCSFrom, c.Scope)
	}
	if c.LockStale(s.now.Add(-lockSkew)) {
		r.Add(model.ReasonLeaderLockStale, c.LockHolder, "leader lock %s held by %s was last renewed %s ago; ttl %s",
			c.LeaderObject(), c.LockHolder, model.RoundAge(s.now.Sub(c.LockRenew)), c.LockTTL)
	}
	if c.Paused {
		r.Add(model.ReasonMaintenancePaused, "", "maintenance mode (pause) is on in %s %s-config: Patroni will not fail over", dcsKind(c), c.Scope)
	}
}

// dcsKind is the kind of object c's DCS keeps its configuration in,
// singular ("ConfigMap", "Endpoints").
func dcsKind(c *model.PatroniClusterFacts) string {
	if c.DCS == model.DCSEndpoints {
		return "Endpoints"
	}
	return "ConfigMap"
}

// roleLabel is the pod label c's members write their role into.
func roleLabel(c *model.PatroniClusterFacts) string {
	if c == nil {
		return "role"
	}
	return c.RoleLabel
}

// everyRunningAsked reports whether every member whose container runs
// was asked (an answer, or no answer in time): none went unasked for
// want of credentials or a probe.
func (s *state) everyRunningAsked() bool {
	for _, v := range s.views {
		if v.Running && (v.Engine == nil || v.CredFail) {
			return false
		}
	}
	return true
}
