package model

import "time"

// Action is a repair an operator asks hactl for.
type Action string

// Actions.
const (
	// ActionReplace gives a member a new, empty volume and joins it again.
	ActionReplace Action = "replace"
	// ActionReseed rebuilds a member's data in place (for etcd, the same
	// flow as replace; from a seed generation where the engine supports
	// it).
	ActionReseed Action = "reseed"
	// ActionSeed captures a seed generation from a healthy member.
	ActionSeed Action = "seed"
	// ActionRestore restores every member from one seed generation: for
	// etcd, the quorum-loss recovery (the restored cluster has a new
	// cluster ID, and every write after the generation is gone).
	ActionRestore Action = "restore"
	// ActionSwitchover hands a Patroni cluster's primary role to a healthy
	// replica (Patroni's own switchover, fenced by the observed primary).
	ActionSwitchover Action = "switchover"
)

func (a Action) String() string { return string(a) }

// AllActions lists every Action.
var AllActions = []Action{ActionReplace, ActionReseed, ActionSeed, ActionRestore, ActionSwitchover}

// ActionPhase is where an action stands. Like member phases it is derived
// from what is observed; the ledger only records which phases were
// passed.
type ActionPhase string

// Action phases. replace and reseed pass requested → fencing → removing →
// restoring → bootstrapping → catching-up → ready; seed passes requested →
// capturing → uploading → published; restore passes requested → fencing →
// removing (scale to zero) → restoring (one restore pod per member) →
// bootstrapping (scale back, the restored cluster forms) → ready. Failed
// and superseded end an action early.
const (
	ActionPhaseRequested     ActionPhase = "requested"
	ActionPhaseFencing       ActionPhase = "fencing"
	ActionPhaseRemoving      ActionPhase = "removing"
	ActionPhaseRestoring     ActionPhase = "restoring"
	ActionPhaseBootstrapping ActionPhase = "bootstrapping"
	ActionPhaseCatchingUp    ActionPhase = "catching-up"
	ActionPhaseReady         ActionPhase = "ready"
	ActionPhaseCapturing     ActionPhase = "capturing"
	ActionPhaseUploading     ActionPhase = "uploading"
	ActionPhasePublished     ActionPhase = "published"
	ActionPhaseFailed        ActionPhase = "failed"
	ActionPhaseSuperseded    ActionPhase = "superseded"
)

func (p ActionPhase) String() string { return string(p) }

// AllActionPhases lists every ActionPhase.
var AllActionPhases = []ActionPhase{
	ActionPhaseRequested, ActionPhaseFencing, ActionPhaseRemoving, ActionPhaseRestoring,
	ActionPhaseBootstrapping, ActionPhaseCatchingUp, ActionPhaseReady,
	ActionPhaseCapturing, ActionPhaseUploading, ActionPhasePublished,
	ActionPhaseFailed, ActionPhaseSuperseded,
}

// StepKind is one kind of step of an action's plan (or of its execution:
// the lock and fence steps are taken by the executor, never planned).
type StepKind string

// Step kinds.
const (
	// Executor steps.
	StepAcquireLock  StepKind = "acquire-lock"
	StepVerifyFences StepKind = "verify-fences"
	StepReleaseLock  StepKind = "release-lock"

	// Planned steps.
	StepMoveLeader         StepKind = "move-leader"
	StepRemoveMember       StepKind = "remove-member"
	StepAddLearner         StepKind = "add-learner"
	StepDeletePVC          StepKind = "delete-pvc"
	StepDeletePod          StepKind = "delete-pod"
	StepAwaitPodGone       StepKind = "await-pod-gone"
	StepAwaitPodRecreated  StepKind = "await-pod-recreated"
	StepAwaitMemberStarted StepKind = "await-member-started"
	StepAwaitCaughtUp      StepKind = "await-caught-up"
	StepPromoteLearner     StepKind = "promote-learner"
	StepAwaitVoterReady    StepKind = "await-voter-ready"
	StepCaptureSnapshot    StepKind = "capture-snapshot"
	StepUpload             StepKind = "upload"
	StepPublish            StepKind = "publish"

	// Restore steps.
	StepScaleDown           StepKind = "scale-down"
	StepAwaitMembersStopped StepKind = "await-members-stopped"
	StepRunRestore          StepKind = "run-restore"
	StepAwaitRestore        StepKind = "await-restore"
	StepDeleteRestorePod    StepKind = "delete-restore-pod"
	StepScaleUp             StepKind = "scale-up"
	StepAwaitRestored       StepKind = "await-restored"

	// Patroni steps.
	//
	// StepSwitchover asks the observed primary to hand the leader lock to
	// a candidate (POST /switchover, which Patroni refuses with 412 when
	// the primary named is no longer the primary); StepAwaitSwitchover
	// waits until the members' own answers show a member other than the
	// old primary as the one writable primary holding the leader lock.
	StepSwitchover      StepKind = "switchover"
	StepAwaitSwitchover StepKind = "await-switchover"
	// StepReinitialize asks a replica to throw its data away and copy it
	// again from the primary (POST /reinitialize); StepAwaitRebuild waits
	// until the member is seen rebuilding (no longer streaming), so that
	// a member that has not even stopped yet is never taken for rebuilt.
	StepReinitialize StepKind = "reinitialize"
	StepAwaitRebuild StepKind = "await-rebuild"
	// StepAwaitSettled waits, before a reinitialize, until the member's
	// PostgreSQL has run a while since it (re)started: Patroni 3.0 takes
	// a reinitialize sent while it is still starting (as right after a
	// switchover demoted it) and then never carries it out.
	StepAwaitSettled StepKind = "await-settled"
	// StepAwaitStreaming waits until the member streams from the primary
	// (in its replication list) with its replay within the WAL lag
	// threshold of the primary's position, and its pod is ready.
	StepAwaitStreaming StepKind = "await-streaming"
)

func (s StepKind) String() string { return string(s) }

// AllStepKinds lists every StepKind.
var AllStepKinds = []StepKind{
	StepAcquireLock, StepVerifyFences, StepReleaseLock,
	StepMoveLeader, StepRemoveMember, StepAddLearner, StepDeletePVC, StepDeletePod,
	StepAwaitPodGone, StepAwaitPodRecreated, StepAwaitMemberStarted, StepAwaitCaughtUp,
	StepPromoteLearner, StepAwaitVoterReady, StepCaptureSnapshot, StepUpload, StepPublish,
	StepScaleDown, StepAwaitMembersStopped, StepRunRestore, StepAwaitRestore, StepDeleteRestorePod,
	StepScaleUp, StepAwaitRestored,
	StepSwitchover, StepAwaitSwitchover, StepAwaitSettled, StepReinitialize, StepAwaitRebuild, StepAwaitStreaming,
}

// PhaseOf is the action phase a step belongs to.
func (s StepKind) PhaseOf() ActionPhase {
	switch s {
	case StepAcquireLock:
		return ActionPhaseRequested
	case StepVerifyFences, StepMoveLeader, StepSwitchover, StepAwaitSwitchover:
		return ActionPhaseFencing
	case StepRemoveMember, StepDeletePVC, StepDeletePod, StepAwaitPodGone, StepScaleDown, StepAwaitMembersStopped, StepAwaitSettled, StepReinitialize:
		return ActionPhaseRemoving
	case StepAddLearner, StepAwaitPodRecreated, StepRunRestore, StepAwaitRestore, StepAwaitRebuild:
		return ActionPhaseRestoring
	case StepAwaitMemberStarted, StepScaleUp, StepAwaitRestored, StepDeleteRestorePod:
		return ActionPhaseBootstrapping
	case StepAwaitCaughtUp, StepPromoteLearner, StepAwaitVoterReady, StepAwaitStreaming:
		return ActionPhaseCatchingUp
	case StepCaptureSnapshot:
		return ActionPhaseCapturing
	case StepUpload:
		return ActionPhaseUploading
	case StepPublish:
		return ActionPhasePublished
	case StepReleaseLock:
		return ActionPhaseReady
	}
	return ActionPhaseRequested
}

// Mutates reports whether the step changes the cluster (as opposed to
// waiting for it).
func (s StepKind) Mutates() bool {
	switch s {
	case StepMoveLeader, StepRemoveMember, StepAddLearner, StepDeletePVC, StepDeletePod,
		StepPromoteLearner, StepCaptureSnapshot, StepUpload, StepPublish,
		StepScaleDown, StepRunRestore, StepDeleteRestorePod, StepScaleUp,
		StepSwitchover, StepReinitialize:
		return true
	}
	return false
}

// Outcome is how one executed step ended.
type Outcome string

// Outcomes.
const (
	// OutcomeDone: the step did what it says.
	OutcomeDone Outcome = "done"
	// OutcomeAlready: the world already was as the step would make it.
	OutcomeAlready Outcome = "already"
	// OutcomeDryRun: the step was only checked (--dry-run).
	OutcomeDryRun Outcome = "dry-run"
	// OutcomeConflict: a precondition failed; the world changed and the
	// step was not taken.
	OutcomeConflict Outcome = "conflict"
	// OutcomeRefused: the classifier refused to go on.
	OutcomeRefused Outcome = "refused"
	// OutcomeFailed: the step failed.
	OutcomeFailed Outcome = "failed"
	// OutcomeUnknown: the request was sent but no answer came back (a
	// timeout, a broken connection): the world may have changed. The
	// next observation tells; it is never read as "nothing changed".
	OutcomeUnknown Outcome = "unknown"
	// OutcomeSending: written to the ledger right before a changing
	// request is sent (write-ahead). Until a later receipt of the same
	// step says how it ended, it reads as unknown: a holder killed
	// between the request and its answer leaves the ledger saying "may
	// have changed", never nothing.
	OutcomeSending Outcome = "sending"
	// OutcomeSuperseded: the entry was ended by another action
	// (--supersede, a stale entry, a restore of another generation).
	OutcomeSuperseded Outcome = "superseded"
)

func (o Outcome) String() string { return string(o) }

// AllOutcomes lists every Outcome.
var AllOutcomes = []Outcome{OutcomeDone, OutcomeAlready, OutcomeDryRun, OutcomeConflict, OutcomeRefused, OutcomeFailed, OutcomeUnknown, OutcomeSending, OutcomeSuperseded}

// EntryState is the state of one action in the ledger.
type EntryState string

// Ledger entry states.
const (
	EntryInProgress EntryState = "in-progress"
	EntryDone       EntryState = "done"
	EntryFailed     EntryState = "failed"
	EntrySuperseded EntryState = "superseded"
)

func (s EntryState) String() string { return string(s) }

// AllEntryStates lists every EntryState.
var AllEntryStates = []EntryState{EntryInProgress, EntryDone, EntryFailed, EntrySuperseded}

// MemberFence identifies the engine member an action removes: its ID, the
// name and peer URLs the member list gave it and the cluster it belongs
// to, as observed by the decision that authorised the removal.
type MemberFence struct {
	ID        string   `json:"id"`
	Name      string   `json:"name,omitempty"`
	PeerURLs  []string `json:"peerURLs,omitempty"`
	ClusterID string   `json:"clusterID,omitempty"`
	IsLearner bool     `json:"isLearner,omitempty"`
}

// Replaced records what an action replaces, so that a rerun after a crash
// can tell the old pod, volume and member from their replacements.
type Replaced struct {
	PodUID   string   `json:"podUID,omitempty"`
	PVCUID   string   `json:"pvcUID,omitempty"`
	MemberID string   `json:"memberID,omitempty"`
	PeerURLs []string `json:"peerURLs,omitempty"`
}

// Receipt is the typed record of one executed step. Receipts are written
// to the ledger and streamed to callers; Detail never carries a
// credential.
type Receipt struct {
	ActionID string      `json:"actionID"`
	Seq      int         `json:"seq"`
	Action   Action      `json:"action"`
	Cluster  string      `json:"cluster"`
	Member   string      `json:"member"`
	Phase    ActionPhase `json:"phase"`
	Step     StepKind    `json:"step"`
	Outcome  Outcome     `json:"outcome"`
	At       time.Time   `json:"at"`
	Holder   string      `json:"holder"`
	Detail   string      `json:"detail,omitempty"`
	Fences   []Fence     `json:"fences,omitempty"`
	MemberID string      `json:"memberID,omitempty"`
	PeerURLs []string    `json:"peerURLs,omitempty"`
	// From is the member a switchover was sent to as the primary (the
	// leader Patroni was asked to hand over from); "" for other steps.
	From string `json:"from,omitempty"`
	// Since is, for a reinitialize, the member's PostgreSQL start time
	// (its postmaster_start_time) observed before it was sent.
	Since string `json:"since,omitempty"`
	// DryRun is "client" or "server" for a dry run.
	DryRun string `json:"dryRun,omitempty"`
	// Leader is the leader the action's latest observation agreed on
	// when it wrote this receipt ("" when none): the ledger's record of
	// the leader changes hactl saw while it acted.
	Leader string `json:"leader,omitempty"`
}

// LedgerEntry is one action as the ledger records it.
type LedgerEntry struct {
	ID        string      `json:"id"`
	Action    Action      `json:"action"`
	Member    string      `json:"member"`
	Holder    string      `json:"holder"`
	State     EntryState  `json:"state"`
	Phase     ActionPhase `json:"phase"`
	StartedAt time.Time   `json:"startedAt"`
	UpdatedAt time.Time   `json:"updatedAt"`
	Replaced  Replaced    `json:"replaced"`
	Receipts  []Receipt   `json:"receipts,omitempty"`
	// Generation is the seed generation the action writes (seed) or
	// restores from (restore); "" when none. Generation GC never deletes
	// a generation an in-progress entry names.
	Generation string `json:"generation,omitempty"`
	// Digest is the digest of the generation's manifest a restore
	// restores: a rerun continues the entry only for the same digest.
	Digest string `json:"digest,omitempty"`
	// Replicas is the StatefulSet's replica count a restore scales back
	// to (recorded before it scales to zero); 0 for other actions.
	Replicas int `json:"replicas,omitempty"`
	// FromClusterID is the cluster ID a restore started from (the
	// generation's); the restored cluster's differs.
	FromClusterID string `json:"fromClusterID,omitempty"`
}

// LockFacts describe the cluster's action lock (a Lease) as observed.
type LockFacts struct {
	Name            string        `json:"name"`
	Holder          string        `json:"holder,omitempty"`
	AcquiredAt      time.Time     `json:"acquiredAt,omitempty"`
	RenewedAt       time.Time     `json:"renewedAt,omitempty"`
	Duration        time.Duration `json:"duration,omitempty"`
	ResourceVersion string        `json:"resourceVersion,omitempty"`
	// HolderGone is set at the edge when the holder is known to have
	// ended (a process on this host that no longer runs).
	HolderGone bool `json:"holderGone,omitempty"`
}

// Held reports whether someone holds the lock at now: a holder is named,
// the lease has not expired and the holder is not known to be gone.
func (l *LockFacts) Held(now time.Time) bool {
	if l == nil || l.Holder == "" {
		return false
	}
	return !l.Stale(now)
}

// Stale reports whether a named holder's lease ran out or its process is
// known to be gone. A stale lock may be taken over; hactl reports it when
// it does.
func (l *LockFacts) Stale(now time.Time) bool {
	if l == nil || l.Holder == "" {
		return false
	}
	if l.HolderGone {
		return true
	}
	if l.Duration <= 0 || l.RenewedAt.IsZero() {
		return false
	}
	return now.After(l.RenewedAt.Add(l.Duration))
}

// InitialClusterEntry is one name=peerURL pair of etcd's --initial-cluster.
type InitialClusterEntry struct {
	Name    string `json:"name"`
	PeerURL string `json:"peerURL"`
}
