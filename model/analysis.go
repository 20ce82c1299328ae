package model

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
	MemberList []Peer `json:"memberList,omitempty"`
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
