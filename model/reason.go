package model

import "sort"

// ReasonCode is a stable, documented identifier for one way a cluster falls
// short of control or failover readiness. Scripts match on these strings:
// never rename one; add a new one instead. Every code is documented in
// docs/reason-codes.md (a test enforces it).
type ReasonCode string

func (c ReasonCode) String() string { return string(c) }

// Impact says which verdict a reason code defeats.
type Impact int

// Impacts, from least to most severe.
const (
	// ImpactInfo is reported but defeats nothing.
	ImpactInfo Impact = iota
	// ImpactFailover defeats failover_ready only.
	ImpactFailover
	// ImpactControl defeats control_ready (and so failover_ready).
	ImpactControl
)

func (i Impact) String() string {
	switch i {
	case ImpactInfo:
		return "info"
	case ImpactFailover:
		return "failover"
	case ImpactControl:
		return "control"
	}
	return "unknown"
}

// Kubernetes-level reason codes: read from the API server alone.
const (
	ReasonPodMissing             ReasonCode = "pod_missing"
	ReasonPodNotReady            ReasonCode = "pod_not_ready"
	ReasonPodCrashLooping        ReasonCode = "pod_crashlooping"
	ReasonPodNeverStarted        ReasonCode = "pod_never_started"
	ReasonPodTerminating         ReasonCode = "pod_terminating"
	ReasonPVCPending             ReasonCode = "pvc_pending"
	ReasonMembersColocated       ReasonCode = "members_colocated"
	ReasonPDBMissing             ReasonCode = "pdb_missing"
	ReasonPDBAllowsQuorumLoss    ReasonCode = "pdb_allows_quorum_loss"
	ReasonClientEndpointsMissing ReasonCode = "client_endpoints_missing"
	ReasonBootstrapFlagStale     ReasonCode = "bootstrap_flag_stale"
	ReasonObservationStale       ReasonCode = "observation_stale"
	// ReasonCRStatusStale: the operator's custom resource says the
	// cluster is available while its members' answers show no quorum
	// (the operator is not reconciling, or judges by pod readiness).
	ReasonCRStatusStale ReasonCode = "cr_status_stale"
	// ReasonCRMemberMismatch: the operator's record of a member's ID
	// disagrees with the ID the member answers with; the operator acts
	// on its record (its finalizer removes the ID it holds).
	ReasonCRMemberMismatch ReasonCode = "cr_member_mismatch"
	// ReasonEngineUnsupported: the cluster runs an engine hactl has no
	// rules for; no other engine's rules judge it.
	ReasonEngineUnsupported ReasonCode = "engine_unsupported"
)

// Engine-level reason codes: read from the members themselves.
const (
	ReasonQuorumUnavailable      ReasonCode = "quorum_unavailable"
	ReasonLeaderMissing          ReasonCode = "leader_missing"
	ReasonLeaderDisagreement     ReasonCode = "leader_disagreement"
	ReasonClusterIDSplit         ReasonCode = "cluster_id_split"
	ReasonMemberIDDuplicate      ReasonCode = "member_id_duplicate"
	ReasonMemberListDisagreement ReasonCode = "member_list_disagreement"
	ReasonMemberUnreachable      ReasonCode = "member_unreachable"
	ReasonMemberLagging          ReasonCode = "member_lagging"
	ReasonLagUnknown             ReasonCode = "lag_unknown"
	ReasonLearnerPending         ReasonCode = "learner_pending"
	ReasonVersionMismatch        ReasonCode = "version_mismatch"
	ReasonAlarmNoSpace           ReasonCode = "alarm_nospace"
	ReasonAlarmCorrupt           ReasonCode = "alarm_corrupt"
	ReasonDBNearQuota            ReasonCode = "db_near_quota"
	ReasonCredentialsUnavailable ReasonCode = "credentials_unavailable"
	// ReasonMemberNotReady: a member's own status document says it is
	// not ready (the http engine's mapped readiness).
	ReasonMemberNotReady ReasonCode = "member_not_ready"
	// ReasonEngineConfigInvalid: the engine's settings for the cluster
	// (the http engine's mapping) are missing or not valid, so its
	// members cannot be read.
	ReasonEngineConfigInvalid ReasonCode = "engine_config_invalid"
)

// Patroni reason codes: read from the leader lock and configuration the
// API server holds (Kubernetes DCS) and from each member's own REST API.
const (
	ReasonPrimaryMissing         ReasonCode = "primary_missing"
	ReasonPrimarySplit           ReasonCode = "primary_split"
	ReasonLeaderLockStale        ReasonCode = "leader_lock_stale"
	ReasonLeaderLockUnknown      ReasonCode = "leader_lock_unknown"
	ReasonLeaderMismatch         ReasonCode = "leader_mismatch"
	ReasonReplicaNotStreaming    ReasonCode = "replica_not_streaming"
	ReasonReplicaLagging         ReasonCode = "replica_lagging"
	ReasonReplicaDiverged        ReasonCode = "replica_diverged"
	ReasonSystemIDSplit          ReasonCode = "system_id_split"
	ReasonMaintenancePaused      ReasonCode = "maintenance_paused"
	ReasonSyncStandbyMissing     ReasonCode = "sync_standby_missing"
	ReasonFailoverCandidatesNone ReasonCode = "failover_candidates_none"
	ReasonPendingRestart         ReasonCode = "pending_restart"
	// ReasonSwitchoverInProgress: the operator is making another member
	// primary (CloudNativePG's targetPrimary differs from its
	// currentPrimary).
	ReasonSwitchoverInProgress ReasonCode = "switchover_in_progress"
	// ReasonSwitchoverTargetLagging: the replica the operator would
	// promote in a switchover or failover (CloudNativePG's: the one that
	// received the most WAL) has not replayed what it received, so its
	// promotion waits for that replay (cloudnative-pg#11110).
	ReasonSwitchoverTargetLagging ReasonCode = "switchover_target_lagging"
	// ReasonCertExpiring: a member's serving certificate, seen in its
	// probe's TLS handshake, expires within the warning window
	// (--cert-warn); ReasonCertExpired: it has expired.
	ReasonCertExpiring ReasonCode = "cert_expiring"
	ReasonCertExpired  ReasonCode = "cert_expired"
	// ReasonCertNotYetValid: its validity starts in the future (a clock
	// that disagrees, or a certificate issued ahead).
	ReasonCertNotYetValid ReasonCode = "cert_not_yet_valid"
)

var reasonImpact = map[ReasonCode]Impact{
	ReasonPodMissing:             ImpactFailover,
	ReasonPodNotReady:            ImpactFailover,
	ReasonPodCrashLooping:        ImpactFailover,
	ReasonPodNeverStarted:        ImpactFailover,
	ReasonPodTerminating:         ImpactFailover,
	ReasonPVCPending:             ImpactFailover,
	ReasonMembersColocated:       ImpactFailover,
	ReasonPDBMissing:             ImpactFailover,
	ReasonPDBAllowsQuorumLoss:    ImpactFailover,
	ReasonClientEndpointsMissing: ImpactControl,
	ReasonBootstrapFlagStale:     ImpactFailover,
	ReasonObservationStale:       ImpactControl,
	ReasonCRStatusStale:          ImpactFailover,
	ReasonCRMemberMismatch:       ImpactFailover,
	ReasonEngineUnsupported:      ImpactControl,

	ReasonQuorumUnavailable:      ImpactControl,
	ReasonLeaderMissing:          ImpactControl,
	ReasonLeaderDisagreement:     ImpactControl,
	ReasonClusterIDSplit:         ImpactControl,
	ReasonMemberIDDuplicate:      ImpactControl,
	ReasonMemberListDisagreement: ImpactFailover,
	ReasonMemberUnreachable:      ImpactFailover,
	ReasonMemberLagging:          ImpactFailover,
	ReasonLagUnknown:             ImpactFailover,
	ReasonLearnerPending:         ImpactFailover,
	ReasonVersionMismatch:        ImpactFailover,
	ReasonAlarmNoSpace:           ImpactControl,
	ReasonAlarmCorrupt:           ImpactControl,
	ReasonDBNearQuota:            ImpactFailover,
	ReasonCredentialsUnavailable: ImpactControl,
	ReasonMemberNotReady:         ImpactFailover,
	ReasonEngineConfigInvalid:    ImpactControl,

	ReasonPrimaryMissing:          ImpactControl,
	ReasonPrimarySplit:            ImpactControl,
	ReasonLeaderLockStale:         ImpactControl,
	ReasonLeaderLockUnknown:       ImpactControl,
	ReasonLeaderMismatch:          ImpactControl,
	ReasonReplicaNotStreaming:     ImpactFailover,
	ReasonReplicaLagging:          ImpactFailover,
	ReasonReplicaDiverged:         ImpactFailover,
	ReasonSystemIDSplit:           ImpactControl,
	ReasonMaintenancePaused:       ImpactFailover,
	ReasonSyncStandbyMissing:      ImpactFailover,
	ReasonFailoverCandidatesNone:  ImpactFailover,
	ReasonPendingRestart:          ImpactInfo,
	ReasonSwitchoverInProgress:    ImpactFailover,
	ReasonSwitchoverTargetLagging: ImpactFailover,
	ReasonCertExpiring:            ImpactInfo,
	ReasonCertExpired:             ImpactFailover,
	ReasonCertNotYetValid:         ImpactFailover,
}

// Impact reports which verdict the code defeats. Unknown codes defeat
// control readiness: a code nobody classified must not read as harmless.
func (c ReasonCode) Impact() Impact {
	if i, ok := reasonImpact[c]; ok {
		return i
	}
	return ImpactControl
}

// AllReasonCodes returns every reason code hactl can emit, sorted.
func AllReasonCodes() []ReasonCode {
	out := make([]ReasonCode, 0, len(reasonImpact))
	for c := range reasonImpact {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Reason is one explained shortfall. Member is empty for cluster-wide
// reasons. Detail is human text built from observed facts; it never carries
// a credential.
type Reason struct {
	Code   ReasonCode `json:"code"`
	Member string     `json:"member,omitempty"`
	Detail string     `json:"detail,omitempty"`
}

// Verdict answers the two questions hactl exists for.
type Verdict struct {
	// ControlReady: the cluster works now.
	ControlReady bool `json:"controlReady"`
	// FailoverReady: losing any one member would be survivable.
	FailoverReady bool `json:"failoverReady"`
	// Reasons explains every shortfall, ordered by impact then member.
	Reasons []Reason `json:"reasons"`
}
