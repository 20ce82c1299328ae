package verdict

import (
	"slices"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// Analysis is the cluster-wide picture that phases, lag and the verdict
// are derived from. Classifiers may use it for quorum arithmetic.
type Analysis struct {
	// Probed is Observation.EngineProbed: engine facts were used.
	Probed bool `json:"probed"`
	// Formed: the cluster has formed. True when a member answered with a
	// cluster ID or a leader, when a cluster ID was recorded earlier
	// (ClusterFacts.KnownClusterID), or when the StatefulSet is older than
	// Options.BootstrapWindow. FormedBecause says which.
	Formed        bool   `json:"formed"`
	FormedBecause string `json:"formedBecause,omitempty"`
	// ClusterID is the reference cluster ID: the one most answering
	// members report (ties go to KnownClusterID, then to the group with
	// more members that list more than themselves, then to the smallest
	// ID). "" when no member answered with one.
	ClusterID string `json:"clusterID,omitempty"`
	// ClusterIDs counts the distinct cluster IDs members answered with.
	ClusterIDs int `json:"clusterIDs"`
	// MemberList is the reference member list: the list most answering
	// members of the reference cluster report, leaving out members whose
	// list holds only themselves. Nil when none is known.
	MemberList []model.Peer `json:"memberList,omitempty"`
	// Voters counts the non-learner entries of MemberList, or is the
	// StatefulSet's replicas when no member list is known
	// (VotersFromMemberList false).
	Voters               int  `json:"voters"`
	VotersFromMemberList bool `json:"votersFromMemberList"`
	// Quorum is Voters/2+1; Tolerance is Voters-Quorum, the number of
	// voters the cluster can lose and keep quorum.
	Quorum    int `json:"quorum"`
	Tolerance int `json:"tolerance"`
	// AnsweringVoters counts the voters of the reference cluster that
	// answered and did not diverge.
	AnsweringVoters int `json:"answeringVoters"`
	// LeaderID is the leader a strict majority of the answering members of
	// the reference cluster follow, "" when there is none. LeaderMember is
	// its member name when known.
	LeaderID     string `json:"leaderID,omitempty"`
	LeaderMember string `json:"leaderMember,omitempty"`
	// Frontier is the leader's own raft index, read from the leader
	// itself; nil when the leader did not answer or reported index 0.
	Frontier *uint64 `json:"frontier,omitempty"`
	// NoFrontierBecause says why Frontier is nil.
	NoFrontierBecause string `json:"noFrontierBecause,omitempty"`
}

// memberView is what the shared checks know about one member.
type memberView struct {
	m *model.Member
	// running: the container runs now. started: it has ever run.
	running, started bool
	// learner: the engine's rules do not count it as a voter; diverged:
	// it answered for another cluster or diverged from it.
	learner, diverged bool
	lag               *int64
	phase             model.Phase
}

// state is one evaluation: the analysis and the member views.
type state struct {
	obs   model.Observation
	now   time.Time
	opts  Options
	a     Analysis
	views []*memberView
	// judged are the reasons handed rules found (handed.go);
	// disruptionJudged says they judged the disruption budget and the
	// spread over nodes too.
	judged           []model.Reason
	disruptionJudged bool
}

// Analyze returns the cluster-wide picture of obs at now.
func Analyze(obs model.Observation, now time.Time, opts Options) Analysis {
	return analyze(obs, now, opts).a
}

// Derive returns a copy of obs whose Members carry their derived Phase and
// Lag. Only the Members slice is copied; everything else is shared with
// obs. Phases and lag already present in obs are ignored and recomputed.
func Derive(obs model.Observation, now time.Time, opts Options) model.Observation {
	return analyze(obs, now, opts).obs
}

func analyze(obs model.Observation, now time.Time, opts Options) *state {
	s := &state{now: now, opts: opts.withDefaults()}
	obs.Members = slices.Clone(obs.Members)
	s.obs = obs
	s.a.Probed = obs.EngineProbed

	for i := range s.obs.Members {
		m := &s.obs.Members[i]
		v := &memberView{m: m}
		if p := m.Pod; p != nil {
			v.running = p.Running
			v.started = p.Running || p.Started || p.EverStarted
		}
		s.views = append(s.views, v)
	}

	s.rules().analyze(s)
	return s
}
