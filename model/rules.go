package model

import "time"

// VerdictRules are the verdict rules of an engine that keeps them in its
// own package (engine/http): package verdict runs the checks every engine
// shares (freshness, pods, client endpoints, disruption budget, node
// spread) and asks the cluster's rules for the rest. They are handed to
// the verdict, never fetched by it (VerdictOptions.Rules).
type VerdictRules interface {
	// Judge derives each member's phase and lag, the cluster-wide picture
	// and the engine's own reasons from in. It is pure: it reads in and
	// nothing else.
	Judge(in JudgeInput) Judgement
	// LagThreshold is the lag a member of cluster c may have and still
	// count as caught up, in the engine's unit of lag, under the
	// thresholds the user asked for.
	LagThreshold(t Thresholds, c ClusterFacts) uint64
}

// Thresholds are the thresholds the user set for the verdict, as the
// engines' rules read them: each in its own unit, a zero field meaning
// the rules' own default.
type Thresholds struct {
	// Lag is --lag-threshold, in the unit of lag of an engine whose
	// members count positions (raft entries, a mapping's positions). The
	// verdict fills in its default, so it is never 0.
	Lag uint64
	// WALLag is --wal-lag-threshold, in bytes of WAL.
	WALLag uint64
	// DBQuotaFraction: a database at or above this share of its size
	// quota is near it. DefaultQuotaBytes is the quota assumed when
	// neither the member nor the cluster's template names one.
	DBQuotaFraction   float64
	DefaultQuotaBytes int64
}

// JudgeInput is what VerdictRules.Judge reads.
type JudgeInput struct {
	// Observation is the cluster as observed; its Members are read only.
	Observation Observation
	Now         time.Time
	// PodPhases holds, per member, the phase its pod alone decides
	// (absent, terminating, pending), "" when its engine facts decide.
	PodPhases []Phase
	// LagThreshold is what the rules' LagThreshold answered for this
	// evaluation.
	LagThreshold uint64
	// BootstrapWindow: a cluster younger than this that shows no sign of
	// having formed is still bootstrapping.
	BootstrapWindow time.Duration
	// Thresholds are the user's thresholds.
	Thresholds Thresholds
}

// MemberProbe is what rules start from for one member: how its pod and
// its probe went.
type MemberProbe struct {
	// PodPhase is the phase its pod alone decides (absent, terminating,
	// pending), "" when its engine facts decide.
	PodPhase Phase
	// Engine is its engine facts, nil when probes did not run or it was
	// not probed.
	Engine *EngineFacts
	// Running: its container runs now.
	Running bool
	// Answered: the engine answered the probe. CredFail: the probe
	// failed for credentials. Unreachable: it failed otherwise.
	Answered, CredFail, Unreachable bool
}

// Probes are in's members as rules start from them, in the
// observation's order.
func (in JudgeInput) Probes() []MemberProbe {
	out := make([]MemberProbe, len(in.Observation.Members))
	for i, m := range in.Observation.Members {
		p := &out[i]
		if i < len(in.PodPhases) {
			p.PodPhase = in.PodPhases[i]
		}
		if m.Pod != nil {
			p.Running = m.Pod.Running
		}
		if !in.Observation.EngineProbed || m.Engine == nil {
			continue
		}
		p.Engine = m.Engine
		switch {
		case m.Engine.Reachable:
			p.Answered = true
		case m.Engine.Failure == ProbeFailureCredentials:
			p.CredFail = true
		default:
			p.Unreachable = true
		}
	}
	return out
}

// Judgement is what VerdictRules.Judge derived.
type Judgement struct {
	// Phases and Lags hold one entry per member, in the observation's
	// order; a nil lag is unknown, never 0.
	Phases []Phase
	Lags   []*int64
	// Formed: the cluster has formed; FormedBecause says how that shows.
	Formed        bool
	FormedBecause string
	// ClusterID is the reference cluster identity; ClusterIDs counts the
	// distinct ones the members answered with.
	ClusterID  string
	ClusterIDs int
	// MemberList is the reference member list, when the engine keeps
	// one (sorted by ID); VotersFromMemberList says Voters counts it
	// rather than the replicas the cluster wants.
	MemberList           []Peer
	VotersFromMemberList bool
	// Voters, Quorum and Tolerance: how many members count, how many
	// must remain, and how many the cluster can lose (the shared
	// disruption-budget and node-spread checks read them).
	Voters, Quorum, Tolerance int
	// AnsweringVoters counts the members that answered and agree on the
	// reference identity.
	AnsweringVoters int
	// LeaderID and LeaderMember name the one leader ("" when none).
	LeaderID, LeaderMember string
	// Frontier is the leader's frontier read in this round, nil when it
	// could not be read (NoFrontierBecause says why).
	Frontier          *uint64
	NoFrontierBecause string
	// Learners are the members that do not count as voters (by index).
	Learners []bool
	// Diverged are the members that answered for another cluster or
	// diverged from it (by index); the shared node-spread check leaves
	// them out. Nil: those whose phase is diverged.
	Diverged []bool
	// DisruptionJudged: the rules judged the disruption budget and the
	// spread over nodes themselves (pdb_missing,
	// pdb_allows_quorum_loss, members_colocated), for an engine whose
	// tolerance is not a quorum's; the shared checks are then skipped.
	DisruptionJudged bool
	// Reasons are the engine's own reasons.
	Reasons []Reason
}

// MemberJudgement is what rules decided of one member.
type MemberJudgement struct {
	Phase    Phase
	Lag      *int64
	Learner  bool
	Diverged bool
}

// SetMembers fills Phases, Lags, Learners and Diverged for n members,
// each as of returns it.
func (j *Judgement) SetMembers(n int, of func(i int) MemberJudgement) {
	j.Phases, j.Lags = make([]Phase, n), make([]*int64, n)
	j.Learners, j.Diverged = make([]bool, n), make([]bool, n)
	for i := range n {
		m := of(i)
		j.Phases[i], j.Lags[i], j.Learners[i], j.Diverged[i] = m.Phase, m.Lag, m.Learner, m.Diverged
	}
}

// Recreatable is offered by the VerdictRules of an engine whose members,
// as the cluster's settings for it say, rebuild themselves from their
// peers on a new, empty volume. The classifier then plans replace as the
// fenced delete of the member's volume and pod (the StatefulSet recreates
// both) and a wait until the member answers, ready and within the lag
// threshold of the leader's frontier.
type Recreatable interface {
	// Recreates reports whether cluster c's members rebuild themselves
	// that way; when they do not, why says so in the user's words.
	Recreates(c ClusterFacts) (ok bool, why string)
}
