package cnpg

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// This file holds CloudNativePG's verdict rules. A CloudNativePG cluster
// has no consensus of its own: the operator decides who is primary
// (its Cluster's currentPrimary, and targetPrimary while it changes
// that), and each instance's PostgreSQL says what it really is. The
// frontier is the primary's current WAL position, probed in the same
// round; a replica's lag is that minus what it has replayed. A
// disruption must leave a primary and one failover candidate.

// DefaultWALLagThreshold is the replay lag in bytes a replica may have
// and still count as a failover candidate when --wal-lag-threshold does
// not say otherwise (1 MiB, as hactl's Patroni rules default to).
const DefaultWALLagThreshold uint64 = 1 << 20

// Rules are CloudNativePG's verdict rules (model.VerdictRules).
type Rules struct{}

var _ model.VerdictRules = Rules{}

// VerdictRules implements engine.Judged.
func (Engine) VerdictRules() model.VerdictRules { return Rules{} }

// LagThreshold implements model.VerdictRules: --wal-lag-threshold, else
// DefaultWALLagThreshold.
func (Rules) LagThreshold(t model.Thresholds, _ model.ClusterFacts) uint64 {
	if t.WALLag > 0 {
		return t.WALLag
	}
	return DefaultWALLagThreshold
}

// pendingFailover is what CloudNativePG writes as targetPrimary while it
// waits its failoverDelay before choosing a new primary
// (PendingFailoverMarker).
const pendingFailover = "pending"

// view is what the rules know about one instance.
type view struct {
	m *model.Member
	model.MemberProbe
	f *model.CNPGFacts
	// onRef: answered with the reference system identifier (or none);
	// other: with another.
	onRef, other bool
	lag          *int64
	phase        model.Phase
}

// up reports whether v answered with a status of its PostgreSQL.
func (v *view) up() bool { return v.f != nil && v.f.Down == "" }

type state struct {
	in      model.JudgeInput
	obs     model.Observation
	a       model.Judgement
	views   []*view
	r       model.Reasons
	primary *view
	prims   []*view
}

// Judge implements model.VerdictRules.
func (Rules) Judge(in model.JudgeInput) model.Judgement {
	s := &state{in: in, obs: in.Observation}
	for i, p := range in.Probes() {
		v := &view{m: &s.obs.Members[i], MemberProbe: p}
		if p.Answered {
			v.f = p.Engine.CNPG
		}
		s.views = append(s.views, v)
	}
	s.reference()
	s.frontier()
	for _, v := range s.views {
		v.phase = s.phase(v)
	}
	if s.obs.EngineProbed {
		s.instances()
		s.primaries()
		s.replicas()
	}
	j := s.a
	j.Reasons = s.r.List
	j.SetMembers(len(s.views), func(i int) model.MemberJudgement {
		v := s.views[i]
		return model.MemberJudgement{Phase: v.phase, Lag: v.lag, Diverged: v.other}
	})
	return j
}

// reference picks the system identifier most instances answer with,
// marks the instances on it, says whether the cluster has formed, and
// how many instances a disruption may take (all but a primary and one
// candidate).
func (s *state) reference() {
	ids := map[string]int{}
	for _, v := range s.views {
		if v.up() && v.f.SystemID != "" {
			ids[v.f.SystemID]++
		}
	}
	s.a.ClusterIDs = len(ids)
	best := 0
	for id, n := range ids {
		if n > best || (n == best && id < s.a.ClusterID) {
			s.a.ClusterID, best = id, n
		}
	}
	for _, v := range s.views {
		switch {
		case v.up() && v.f.SystemID != "":
			v.onRef = v.f.SystemID == s.a.ClusterID
			v.other = !v.onRef
		case v.Answered:
			v.onRef = true
		}
	}
	op := s.obs.Cluster.Operator
	switch {
	case s.a.ClusterID != "":
		s.a.Formed, s.a.FormedBecause = true, "system identifier "+s.a.ClusterID
	case op != nil && op.Err == "" && op.Primary != "":
		s.a.Formed, s.a.FormedBecause = true, "the Cluster records "+op.Primary+" as its primary"
	case !s.obs.Cluster.CreatedAt.IsZero() && s.in.Now.Sub(s.obs.Cluster.CreatedAt) > s.in.BootstrapWindow:
		s.a.Formed = true
		s.a.FormedBecause = fmt.Sprintf("the Cluster is %s old, past the %s bootstrap window", model.RoundAge(s.in.Now.Sub(s.obs.Cluster.CreatedAt)), s.in.BootstrapWindow)
	}
	s.a.Voters = s.obs.Cluster.Replicas
	s.a.Quorum = min(2, s.a.Voters)
	s.a.Tolerance = max(s.a.Voters-2, 0)
	for _, v := range s.views {
		if v.up() && v.onRef {
			s.a.AnsweringVoters++
		}
	}
}

// frontier finds the one running primary and its WAL position, and each
// replica's replay lag behind it.
func (s *state) frontier() {
	for _, v := range s.views {
		if v.Answered && v.f.Writable() {
			s.prims = append(s.prims, v)
		}
	}
	switch op := s.obs.Cluster.Operator; {
	case len(s.prims) == 1:
		s.primary = s.prims[0]
		s.a.LeaderMember, s.a.LeaderID = s.primary.m.Name, s.primary.m.Name
		if l := s.primary.f.CurrentLSN; l != nil && *l > 0 {
			f := uint64(*l)
			s.a.Frontier = &f
		} else {
			s.a.NoFrontierBecause = fmt.Sprintf("primary %s reported no WAL position", s.a.LeaderMember)
		}
	case len(s.prims) > 1:
		s.a.NoFrontierBecause = fmt.Sprintf("%d instances say they are the primary", len(s.prims))
	case op != nil && op.Primary != "":
		s.a.LeaderMember = op.Primary
		s.a.NoFrontierBecause = fmt.Sprintf("%s, the Cluster's currentPrimary, did not answer as a running primary", op.Primary)
	default:
		s.a.NoFrontierBecause = "no running primary answered"
	}
	if s.a.Frontier == nil {
		return
	}
	for _, v := range s.views {
		switch {
		case v == s.primary:
			lag := int64(0)
			v.lag = &lag
		case v.up() && v.onRef && v.f.ReplayLSN != nil:
			lag := int64(*s.a.Frontier) - *v.f.ReplayLSN
			v.lag = &lag
		}
	}
}

func (s *state) phase(v *view) model.Phase {
	if v.PodPhase != "" {
		return v.PodPhase
	}
	switch {
	case !v.up():
		return model.PhaseUnknown
	case v.other:
		return model.PhaseDiverged
	case !s.a.Formed:
		return model.PhaseBootstrapping
	case v == s.primary:
		return model.PhaseMember
	case s.primary != nil && s.diverged(v) != "":
		return model.PhaseDiverged
	case v.lag == nil:
		return model.PhaseUnknown
	case *v.lag > 0 && uint64(*v.lag) > s.in.LagThreshold:
		return model.PhaseCatchingUp
	}
	return model.PhaseMember
}

// diverged says why replica v cannot follow the primary, "" when
// nothing shows it: a timeline above the primary's, or a replayed
// position past the primary's beyond what a probe race explains.
func (s *state) diverged(v *view) string {
	p := s.primary.f
	_, streaming := p.Streaming(v.m.Name)
	switch {
	case v.f.IsPrimary || v == s.primary:
		return ""
	case v.f.TimelineID != 0 && p.TimelineID != 0 && v.f.TimelineID > p.TimelineID:
		return fmt.Sprintf("on timeline %d, ahead of the primary %s on %d", v.f.TimelineID, s.primary.m.Name, p.TimelineID)
	case v.lag != nil && *v.lag < 0 && (!streaming || uint64(-*v.lag) > s.in.LagThreshold):
		return fmt.Sprintf("replayed %s past the primary's WAL position", model.BytesIEC(-*v.lag))
	}
	return ""
}

// instances are the reasons of each instance that cannot be read.
func (s *state) instances() {
	for _, v := range s.views {
		switch {
		case v.m.Pod == nil:
		case v.CredFail:
			s.r.Add(model.ReasonCredentialsUnavailable, v.m.Name, "%s", model.ProbeDetail("not allowed to ask", v.Engine))
		case v.Unreachable:
			s.r.Add(model.ReasonMemberUnreachable, v.m.Name, "%s", model.ProbeDetail("no answer from its instance manager", v.Engine))
		case v.f != nil && v.f.Down != "":
			s.r.Add(model.ReasonMemberNotReady, v.m.Name, "its instance manager answers but its PostgreSQL does not: %s", v.f.Down)
		case v.f != nil && v.f.PendingRestart:
			s.r.Add(model.ReasonPendingRestart, v.m.Name, "a changed parameter needs a restart of PostgreSQL")
		}
	}
}

// everyRunningAsked: every instance whose pod runs answered its probe
// (with a status, or saying its PostgreSQL is down): none could be a
// primary hactl did not hear from.
func (s *state) everyRunningAsked() bool {
	for _, v := range s.views {
		if v.Running && !v.Answered {
			return false
		}
	}
	return true
}

// primaries judges the one primary against the Cluster's word and the
// primary's Service.
func (s *state) primaries() {
	op := s.obs.Cluster.Operator
	read := op != nil && op.Err == ""
	switch {
	case read && op.TargetPrimary == pendingFailover:
		s.r.Add(model.ReasonSwitchoverInProgress, "", "Cluster %s is failing over from %s: its targetPrimary is %q until the operator picks the new primary (phase %q)", op.Name, op.Primary, pendingFailover, op.Status)
	case read && op.TargetPrimary != "" && op.Primary != "" && op.TargetPrimary != op.Primary:
		s.r.Add(model.ReasonSwitchoverInProgress, op.TargetPrimary, "Cluster %s is making %s primary in place of %s (targetPrimary; phase %q)", op.Name, op.TargetPrimary, op.Primary, op.Status)
	}
	if read && op.Primary != "" && len(s.views) < s.obs.Cluster.Replicas {
		s.r.Add(model.ReasonPodMissing, "", "Cluster %s wants %d instances; %d exist", op.Name, s.obs.Cluster.Replicas, len(s.views))
	}
	var labelled []string
	for _, v := range s.views {
		if p := v.m.Pod; p != nil && p.RoleLabel == "primary" {
			labelled = append(labelled, v.m.Name)
		}
	}
	names := func(vs []*view) string {
		var out []string
		for _, v := range vs {
			out = append(out, v.m.Name)
		}
		return strings.Join(out, ", ")
	}
	switch {
	case len(s.prims) > 1:
		s.r.Add(model.ReasonPrimarySplit, "", "%d instances answer as a running primary: %s", len(s.prims), names(s.prims))
		return
	case len(labelled) > 1:
		s.r.Add(model.ReasonPrimarySplit, "", "%d pods labelled %s=primary: %s", len(labelled), RoleLabel, strings.Join(labelled, ", "))
	case len(s.prims) == 0:
		d := "no instance answered as a running primary"
		if read && op.Primary != "" {
			d += "; the Cluster records " + op.Primary
		}
		s.r.Add(model.ReasonPrimaryMissing, "", "%s", d)
		if read && op.Available != nil && *op.Available && s.everyRunningAsked() {
			// cloudnative-pg#5150: the Cluster says it is healthy after its
			// last reconcile, not now.
			s.r.Add(model.ReasonCRStatusStale, "", "Cluster %s says %q and %s=True, but no instance answers as a running primary", op.Name, op.Status, op.Condition())
		}
		return
	}
	if s.primary == nil {
		return
	}
	name := s.primary.m.Name
	switch {
	case read && op.Primary != "" && op.Primary != name && op.TargetPrimary == op.Primary:
		s.r.Add(model.ReasonLeaderMismatch, name, "Cluster %s records %s as its primary but %s answers as the primary", op.Name, op.Primary, name)
	case len(labelled) == 1 && labelled[0] != name:
		s.r.Add(model.ReasonLeaderMismatch, name, "pod %s is labelled %s=primary but %s answers as the primary", labelled[0], RoleLabel, name)
	}
	if e := s.obs.ClientEndpoints; e != nil && e.Ready > 0 && len(e.Pods) > 0 && !(len(e.Pods) == 1 && e.Pods[0] == name) {
		s.r.Add(model.ReasonClientEndpointsMissing, "", "Service %s points at %s, not at the primary %s", e.Service, strings.Join(e.Pods, ", "), name)
	}
	if s.a.ClusterIDs > 1 {
		byID := map[string][]string{}
		for _, v := range s.views {
			if v.up() && v.f.SystemID != "" {
				byID[v.f.SystemID] = append(byID[v.f.SystemID], v.m.Name)
			}
		}
		s.r.Add(model.ReasonSystemIDSplit, "", "%s", model.OnWhich(byID))
	}
}

// replicas judges each replica against the one primary (streaming,
// diverged, lagging), the cluster's failover candidates, and the
// replica CloudNativePG would promote.
func (s *state) replicas() {
	if s.primary == nil {
		return
	}
	thr := s.in.LagThreshold
	candidates := 0
	var reps []*view
	for _, v := range s.views {
		if v == s.primary || !v.up() || v.other {
			continue
		}
		reps = append(reps, v)
		name := v.m.Name
		if why := s.diverged(v); why != "" {
			s.r.Add(model.ReasonReplicaDiverged, name, "%s", why)
			continue
		}
		rep, streaming := s.primary.f.Streaming(name)
		if !streaming {
			d := "the primary " + s.primary.m.Name + " does not list it as streaming"
			if rep.State != "" {
				d += " (state " + rep.State + ")"
			}
			if !v.f.WALReceiverActive {
				d += "; its WAL receiver is not active"
			}
			s.r.Add(model.ReasonReplicaNotStreaming, name, "%s", d)
		}
		if v.lag != nil && *v.lag > 0 && uint64(*v.lag) > thr {
			d := fmt.Sprintf("replay is %s behind the primary's WAL position (threshold %s)", model.BytesIEC(*v.lag), model.BytesIEC(int64(thr)))
			if v.f.ReplayPaused {
				d += "; its replay is paused"
			}
			s.r.Add(model.ReasonReplicaLagging, name, "%s", d)
		}
		if streaming && v.lag != nil && uint64(max(*v.lag, 0)) <= thr {
			candidates++
		}
	}
	if s.a.Voters > 1 && candidates == 0 {
		s.r.Add(model.ReasonFailoverCandidatesNone, "", "no replica streams from the primary %s within %s of its WAL position: a failover would lose data or wait", s.primary.m.Name, model.BytesIEC(int64(thr)))
	}
	s.target(reps, thr)
}

// target: the replica CloudNativePG would promote is the one that
// received the most WAL (then replayed the most, then by name:
// PostgresqlStatusList's order in pkg/postgres/status.go), whatever it
// has replayed; its promotion waits until it has replayed all it
// received (cloudnative-pg#11110).
func (s *state) target(reps []*view, thr uint64) {
	var best *view
	val := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	for _, v := range reps {
		if best == nil || cmp.Or(cmp.Compare(val(best.f.ReceivedLSN), val(v.f.ReceivedLSN)), cmp.Compare(val(best.f.ReplayLSN), val(v.f.ReplayLSN)),
			cmp.Compare(v.m.Name, best.m.Name)) < 0 {
			best = v
		}
	}
	if best == nil || best.f.ReceivedLSN == nil || best.f.ReplayLSN == nil {
		return
	}
	pending := *best.f.ReceivedLSN - *best.f.ReplayLSN
	if pending <= 0 || uint64(pending) <= thr {
		return
	}
	others := slices.DeleteFunc(slices.Clone(reps), func(v *view) bool { return v == best })
	d := fmt.Sprintf("CloudNativePG would promote %s (it received the most WAL) but it has replayed %s less than it received: its promotion waits for that replay (cloudnative-pg#11110)",
		best.m.Name, model.BytesIEC(pending))
	if best.f.ReplayPaused {
		d += "; its replay is paused, so it would not end"
	}
	var alt *view
	for _, v := range others {
		if v.lag != nil && uint64(max(*v.lag, 0)) <= thr && (alt == nil || *v.lag < *alt.lag) {
			alt = v
		}
	}
	if alt != nil {
		d += fmt.Sprintf("; %s has replayed its WAL: promote it instead (`kubectl cnpg promote %s %s -n %s`)", alt.m.Name, s.obs.Cluster.Name, alt.m.Name, s.obs.Cluster.Namespace)
	}
	s.r.Add(model.ReasonSwitchoverTargetLagging, best.m.Name, "%s", d)
}
