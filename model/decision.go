package model

import "time"

// Intent is what the operator asked for.
type Intent struct {
	Action Action `json:"action"`
	// Member is the target member (its pod name). For seed it names the
	// source member, or is empty to let the classifier choose one.
	Member  string        `json:"member,omitempty"`
	Options ActionOptions `json:"options"`
}

// ActionOptions refine an intent. The zero value means the defaults.
type ActionOptions struct {
	// MoveLeader allows acting on the leader by moving leadership to a
	// healthy follower first (--move-leader).
	MoveLeader bool `json:"moveLeader,omitempty"`
	// SwitchoverFirst allows reseed and replace of a Patroni cluster's
	// primary by switching over to a healthy replica first
	// (--switchover-first).
	SwitchoverFirst bool `json:"switchoverFirst,omitempty"`
	// Supersede allows starting while another action is recorded in
	// progress; that action is marked superseded (--supersede).
	Supersede bool `json:"supersede,omitempty"`
	// MaxAge is the oldest observation to act on (DefaultMaxAge when
	// zero).
	MaxAge time.Duration `json:"maxAge,omitempty"`
	// StaleEntryAfter is how long an in-progress replace or reseed whose
	// recorded member, pod and volume are all gone may sit untouched
	// before it counts as stale and is superseded
	// (DefaultStaleEntryAfter when zero).
	StaleEntryAfter time.Duration `json:"staleEntryAfter,omitempty"`
	// LockHolder is the caller's own identity on the cluster's lock: a
	// lock it holds itself does not block it.
	LockHolder string `json:"lockHolder,omitempty"`
	// Generation names a seed generation to reseed from.
	Generation string `json:"generation,omitempty"`
	// SeedStore is the artifact store URL a seed is published to (seed)
	// or restored from (restore).
	SeedStore string `json:"seedStore,omitempty"`
	// Source is the generation a restore restores, as its manifest
	// (read and verified from the store by the caller) says; nil when it
	// was not read.
	Source *GenerationFacts `json:"source,omitempty"`
	// AgentImage is the image a restore's pods run (kubectl-hactl on its
	// PATH); StoreSecret names the Secret their store credentials come
	// from (envFrom), "" for none.
	AgentImage  string `json:"agentImage,omitempty"`
	StoreSecret string `json:"storeSecret,omitempty"`
	// Force lifts the blockers that protect a cluster from a restore it
	// does not obviously need (--force): the cluster has quorum, or the
	// generation names another cluster ID.
	Force bool `json:"force,omitempty"`
	// AcceptNoFailover lets reseed and replace of a Patroni cluster take
	// down its last failover-capable replica (--accept-no-failover):
	// while that member rebuilds, losing the primary would leave no
	// member to fail over to.
	AcceptNoFailover bool `json:"acceptNoFailover,omitempty"`
	// AcceptWriteStall lets reseed and replace take down the synchronous
	// standby of a Patroni cluster in synchronous_mode_strict
	// (--accept-write-stall): the primary stops committing writes until a
	// synchronous standby streams again.
	AcceptWriteStall bool `json:"acceptWriteStall,omitempty"`
	// Verdict holds the thresholds phases and lag are derived with. A
	// saved plan shows them, and apply compares them with its own.
	Verdict VerdictOptions `json:"verdict"`
}

// GenerationFacts are what a generation's verified manifest says of it.
type GenerationFacts struct {
	Generation string    `json:"generation"`
	Engine     Engine    `json:"engine"`
	ClusterID  string    `json:"clusterID"`
	Revision   int64     `json:"revision"`
	CapturedAt time.Time `json:"capturedAt,omitempty"`
	Digest     string    `json:"digest,omitempty"`
}

// Verb is what a decision tells the caller to do now.
type Verb string

// Verbs.
const (
	// VerbProceed: carry out Steps, first to last.
	VerbProceed Verb = "proceed"
	// VerbAwait: the target's pod is being deleted by someone else; wait
	// for it to disappear, then decide again.
	VerbAwait Verb = "await"
	// VerbObserve: the target's pod never started and was created from
	// the current template; deleting it would not help. Keep observing;
	// never delete.
	VerbObserve Verb = "observe"
	// VerbDone: the action has nothing left to do.
	VerbDone Verb = "done"
	// VerbRefuse: a blocker stands; nothing may be done.
	VerbRefuse Verb = "refuse"
)

func (v Verb) String() string { return string(v) }

// AllVerbs lists every Verb.
var AllVerbs = []Verb{VerbProceed, VerbAwait, VerbObserve, VerbDone, VerbRefuse}

// Flow is how a replaced member joins again, chosen from the bootstrap
// shape.
type Flow string

// Flows.
const (
	// FlowNone: no flow applies (refused, or not a membership action).
	FlowNone Flow = "none"
	// FlowLearner: hactl removes the member, adds a learner with its peer
	// URL, deletes the volume and pod, waits for catch-up and promotes
	// (static-existing).
	FlowLearner Flow = "learner"
	// FlowDelegate: hactl removes the member and deletes the volume and
	// pod; the entrypoint re-registers itself and hactl waits for a voting
	// member with that peer URL (self-registering).
	FlowDelegate Flow = "delegate"
	// FlowSeed: capture, upload, publish (seed).
	FlowSeed Flow = "seed"
	// FlowRestore: scale to zero, restore every member's data directory
	// from one generation with a one-shot pod each, scale back (restore).
	FlowRestore Flow = "restore"
)

func (f Flow) String() string { return string(f) }

// AllFlows lists every Flow.
var AllFlows = []Flow{FlowNone, FlowLearner, FlowDelegate, FlowSeed, FlowRestore}

// Code names a blocker or a note of a decision. Codes are stable and
// documented in docs/actions.md.
type Code string

func (c Code) String() string { return string(c) }

// Blocker codes: each one refuses the action (or, for pod_terminating and
// pod_never_started, turns it into await and observe).
const (
	CodeMemberNotFound        Code = "member_not_found"
	CodeMemberNotWanted       Code = "member_not_wanted"
	CodeEngineUnsupported     Code = "engine_unsupported"
	CodeShapeStaticNew        Code = "shape_static_new"
	CodeShapeOperatorOwned    Code = "shape_operator_owned"
	CodeShapeUnknown          Code = "shape_unknown"
	CodeStartFromSnapshot     Code = "start_from_snapshot"
	CodeTemplateUnverified    Code = "template_unverified"
	CodeTemplateMismatch      Code = "template_mismatch"
	CodeObservationStale      Code = "observation_stale"
	CodeLockHeld              Code = "lock_held"
	CodeActionInProgress      Code = "action_in_progress"
	CodeNotProbed             Code = "not_probed"
	CodeClusterUnreachable    Code = "cluster_unreachable"
	CodeLeaderUnknown         Code = "leader_unknown"
	CodeMemberListUnknown     Code = "member_list_unknown"
	CodeClusterIDSplit        Code = "cluster_id_split"
	CodeQuorumWouldBreak      Code = "quorum_would_break"
	CodeTargetIsLeader        Code = "target_is_leader"
	CodeNoLeaderCandidate     Code = "no_leader_candidate"
	CodeLearnerPending        Code = "learner_pending"
	CodePeerURLUnknown        Code = "peer_url_unknown"
	CodeUnexpectedMember      Code = "unexpected_member"
	CodeGenerationUnsupported Code = "generation_unsupported"
	CodeSeedStoreMissing      Code = "seed_store_missing"
	CodeNoSeedSource          Code = "no_seed_source"
	CodePodTerminating        Code = "pod_terminating"
	CodePodNeverStarted       Code = "pod_never_started"
	CodeRestoreUnsupported    Code = "restore_unsupported"
	CodeGenerationUnverified  Code = "generation_unverified"
	CodeGenerationForeign     Code = "generation_foreign"
	CodeMemberIDDuplicate     Code = "member_id_duplicate"
	CodeClusterHasQuorum      Code = "cluster_has_quorum"
	CodeRestoreFailed         Code = "restore_failed"
	// Patroni.
	CodePrimaryUnknown        Code = "primary_unknown"
	CodeTargetIsPrimary       Code = "target_is_primary"
	CodeNoSwitchoverCandidate Code = "no_switchover_candidate"
	CodeMemberUnreachable     Code = "member_unreachable"
	CodeActionUnsupported     Code = "action_unsupported"
	CodeTargetPromoted        Code = "target_promoted"
	CodeLastFailoverReplica   Code = "last_failover_replica"
	CodeSyncStandbyStrict     Code = "sync_standby_strict"
	CodeMaintenancePaused     Code = "maintenance_paused"
	// CodeMemberManaged: the members' pods are another's to create and
	// delete (the kubelet's static pods); the decision's Runbook says
	// how that one does it.
	CodeMemberManaged Code = "member_managed"
	// CodeOperatorRecordMismatch: the operator's record of the member
	// (the ID its finalizer removes) is not the member the cluster
	// lists: following its steps would remove another member.
	CodeOperatorRecordMismatch Code = "operator_record_mismatch"
)

// Note codes: information about the decision that blocks nothing.
const (
	CodeResuming        Code = "resuming"
	CodeLockStale       Code = "lock_stale"
	CodeLeaderMove      Code = "leader_move"
	CodeMemberRemoved   Code = "member_already_removed"
	CodeDelegated       Code = "delegated"
	CodeSuperseding     Code = "superseding"
	CodeWritesDiscarded Code = "writes_discarded"
	CodeSwitchoverFirst Code = "switchover_first"
	// Patroni switchovers.
	CodeSwitchoverOther Code = "switchover_other_member"
	CodeRejoinPending   Code = "rejoin_pending"
	// CodeRunbookWithheld: a member_managed refusal withholds the
	// manager's steps because another blocker says the action is not
	// safe now.
	CodeRunbookWithheld Code = "runbook_withheld"
)

// AllBlockerCodes lists every blocker code.
var AllBlockerCodes = []Code{
	CodeMemberNotFound, CodeMemberNotWanted, CodeEngineUnsupported, CodeShapeStaticNew,
	CodeShapeOperatorOwned, CodeShapeUnknown, CodeStartFromSnapshot, CodeTemplateUnverified,
	CodeTemplateMismatch, CodeObservationStale, CodeLockHeld, CodeActionInProgress,
	CodeNotProbed, CodeClusterUnreachable, CodeLeaderUnknown, CodeMemberListUnknown,
	CodeClusterIDSplit, CodeQuorumWouldBreak, CodeTargetIsLeader, CodeNoLeaderCandidate,
	CodeLearnerPending, CodePeerURLUnknown, CodeUnexpectedMember, CodeGenerationUnsupported,
	CodeSeedStoreMissing, CodeNoSeedSource, CodePodTerminating, CodePodNeverStarted,
	CodeRestoreUnsupported, CodeGenerationUnverified, CodeGenerationForeign, CodeClusterHasQuorum,
	CodeRestoreFailed, CodeMemberIDDuplicate,
	CodePrimaryUnknown, CodeTargetIsPrimary, CodeNoSwitchoverCandidate, CodeMemberUnreachable, CodeActionUnsupported,
	CodeTargetPromoted, CodeLastFailoverReplica, CodeSyncStandbyStrict, CodeMaintenancePaused,
	CodeMemberManaged, CodeOperatorRecordMismatch,
}

// AllNoteCodes lists every note code.
var AllNoteCodes = []Code{
	CodeResuming, CodeLockStale, CodeLeaderMove, CodeMemberRemoved, CodeDelegated,
	CodeSuperseding, CodeWritesDiscarded, CodeSwitchoverFirst, CodeSwitchoverOther, CodeRejoinPending,
	CodeRunbookWithheld,
}

// Override flags, named as the CLI spells them.
const (
	FlagMoveLeader = "--move-leader"
	FlagSupersede  = "--supersede"
	FlagForce      = "--force"
	// FlagSwitchoverFirst lets reseed and replace act on a Patroni
	// cluster's primary by switching over to a healthy replica first.
	FlagSwitchoverFirst = "--switchover-first"
	// FlagAcceptNoFailover lets reseed and replace take down a Patroni
	// cluster's last failover-capable replica.
	FlagAcceptNoFailover = "--accept-no-failover"
	// FlagAcceptWriteStall lets reseed and replace take down the
	// synchronous standby under synchronous_mode_strict.
	FlagAcceptWriteStall = "--accept-write-stall"
)

// Blocker is one reason the action may not go ahead. Override names the
// flag that lifts it, "" when none may.
type Blocker struct {
	Code     Code   `json:"code"`
	Member   string `json:"member,omitempty"`
	Detail   string `json:"detail"`
	Override string `json:"override,omitempty"`
}

// Note is one fact about the decision worth showing.
type Note struct {
	Code   Code   `json:"code"`
	Member string `json:"member,omitempty"`
	Detail string `json:"detail"`
}

// Step is one step of a plan.
type Step struct {
	Kind  StepKind    `json:"kind"`
	Phase ActionPhase `json:"phase"`
	// Member is the member the step concerns.
	Member string `json:"member,omitempty"`
	// MemberID is the engine member removed, promoted, or (for
	// move-leader) handed leadership.
	MemberID string `json:"memberID,omitempty"`
	// From is the member a switchover hands over from: the primary as
	// observed, which Patroni checks (its compare-and-swap).
	From string `json:"from,omitempty"`
	// Since is, for a reinitialize, the member's PostgreSQL start time as
	// observed when it was decided: a different start time later shows
	// the rebuild happened.
	Since string `json:"since,omitempty"`
	// PeerURLs are the learner's peer URLs (add-learner) or the peer URLs
	// awaited.
	PeerURLs []string `json:"peerURLs,omitempty"`
	// Fence is the precondition of a delete (or, for a restore's scale
	// steps, of the StatefulSet's update).
	Fence *Fence `json:"fence,omitempty"`
	// Replicas is what a scale step sets.
	Replicas int `json:"replicas,omitempty"`
	// Detail says in words what the step does.
	Detail string `json:"detail"`
}

// Quorum is the arithmetic behind the quorum check.
type Quorum struct {
	Voters int `json:"voters"`
	Quorum int `json:"quorum"`
	// HealthyVoters are the voters within the lag threshold of a real
	// leader frontier, by member name; HealthyWithout leaves the target
	// out.
	HealthyVoters  []string `json:"healthyVoters"`
	HealthyWithout int      `json:"healthyWithoutTarget"`
	// Lags are how many raft entries each voter whose lag is known
	// trails the leader frontier, by member name: what HealthyVoters
	// was derived from, and what a saved plan's quorum is compared by.
	Lags map[string]int64 `json:"lags,omitempty"`
	// TargetVotes: the target is a voter now.
	TargetVotes bool `json:"targetVotes"`
	// Checked: the check applies to this decision (it removes a voter).
	Checked bool `json:"checked"`
	// OK: HealthyWithout >= Quorum (always true when not Checked).
	OK bool `json:"ok"`
}

// ClusterRef names the cluster a decision is about.
type ClusterRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
	Engine    Engine `json:"engine"`
	// OwnerKind and OwnerAPIVersion are the kind of the object named
	// Name with UID that the cluster answers to
	// (ClusterFacts.OwnerKind).
	OwnerKind       string `json:"ownerKind,omitempty"`
	OwnerAPIVersion string `json:"ownerAPIVersion,omitempty"`
}

// Decision is what Classify decided: what to do now (Verb), the plan from
// the observed state to the end (Steps), the fences every delete and
// removal carries, the quorum arithmetic, notes and blockers. What a
// confirm dialog shows is exactly what actions executes.
type Decision struct {
	Intent  Intent     `json:"intent"`
	Cluster ClusterRef `json:"cluster"`
	Shape   Shape      `json:"shape"`
	Flow    Flow       `json:"flow"`
	Verb    Verb       `json:"verb"`
	// Phase is the action phase the observed state is in.
	Phase ActionPhase `json:"phase"`
	Steps []Step      `json:"steps"`
	// Fences are the objects the plan deletes, as observed.
	Fences []Fence `json:"fences"`
	// MemberFence is the engine member the plan removes, nil when none.
	MemberFence *MemberFence `json:"memberFence,omitempty"`
	// PeerURLs are the target's peer URLs (what the replacement will
	// advertise).
	PeerURLs []string `json:"peerURLs,omitempty"`
	// Replaced is what the action replaces: recorded by the ledger entry
	// being resumed, or the current pod, volume and member.
	Replaced Replaced `json:"replaced"`
	// Resume is the ID of the ledger entry this decision continues.
	Resume string `json:"resume,omitempty"`
	// Replicas is the size a restore scales the StatefulSet back to (0
	// for other actions).
	Replicas int `json:"replicas,omitempty"`
	// Supersedes lists in-progress ledger entries --supersede ends.
	Supersedes []string `json:"supersedes,omitempty"`
	Quorum     Quorum   `json:"quorum"`
	Leader     string   `json:"leader,omitempty"`
	// ClusterID is the engine cluster the observation agreed on (the
	// reference cluster ID), "" when none was established: an action that
	// re-decides under the lock holds it against the confirmed one.
	ClusterID string    `json:"clusterID,omitempty"`
	Notes     []Note    `json:"notes"`
	Blockers  []Blocker `json:"blockers"`
	// Runbook, with a member_managed blocker, are the steps of the
	// members' manager to do what was asked its own way, filled in for
	// this member.
	Runbook    []string  `json:"runbook,omitempty"`
	Verdict    []Reason  `json:"verdictReasons,omitempty"`
	ObservedAt time.Time `json:"observedAt"`
	DecidedAt  time.Time `json:"decidedAt"`
}

// Next returns the first step, if any.
func (d Decision) Next() (Step, bool) {
	if len(d.Steps) == 0 {
		return Step{}, false
	}
	return d.Steps[0], true
}

// Deletes reports whether the plan deletes anything or removes a member.
func (d Decision) Deletes() bool {
	return len(d.Fences) > 0 || d.MemberFence != nil
}

// Blocked reports whether a blocker with code c stands.
func (d Decision) Blocked(c Code) bool {
	for _, b := range d.Blockers {
		if b.Code == c {
			return true
		}
	}
	return false
}

// OnlyLockHeld reports whether the only blocker is the lock (CLI exit 7).
func (d Decision) OnlyLockHeld() bool {
	return len(d.Blockers) > 0 && func() bool {
		for _, b := range d.Blockers {
			if b.Code != CodeLockHeld {
				return false
			}
		}
		return true
	}()
}

// Mutates reports whether any step of the plan changes something.
func (d Decision) Mutates() bool {
	for _, s := range d.Steps {
		if s.Kind.Mutates() {
			return true
		}
	}
	return false
}
