package model

// Engine names the database engine that runs a cluster. It is the value of
// the StatefulSet label hactl.dev/engine.
type Engine string

// Engines hactl knows.
const ()

func (e Engine) String() string { return string(e) }

// Role is a member's role in the engine's consensus.
type Role string

// Member roles. RoleUnknown is used whenever the member could not be asked.
const (
	RoleUnknown  Role = "unknown"
	RoleLeader   Role = "leader"
	RoleFollower Role = "follower"
	RoleLearner  Role = "learner"
)

func (r Role) String() string { return string(r) }

// AllRoles lists every Role, for exhaustive tests and docs.
var AllRoles = []Role{RoleUnknown, RoleLeader, RoleFollower, RoleLearner}

// Phase is a member's bootstrap/seed phase. It is always derived from what
// was observed (pod, PVC, engine replies), never remembered from a flag set
// at creation.
type Phase string

// Member phases, in the order a healthy member passes through them.
const (
	// PhaseAbsent: the StatefulSet wants this ordinal but no pod exists.
	PhaseAbsent Phase = "absent"
	// PhasePending: the pod exists but its container never started.
	PhasePending Phase = "pending"
	// PhaseTerminating: the pod is marked for deletion.
	PhaseTerminating Phase = "terminating"
	// PhaseBootstrapping: the cluster has not formed yet (no cluster ID is
	// known anywhere) and this member is starting as part of it.
	PhaseBootstrapping Phase = "bootstrapping"
	// PhaseJoining: the member is a learner, not yet voting.
	PhaseJoining Phase = "joining"
	// PhaseCatchingUp: a voter whose lag is above the threshold.
	PhaseCatchingUp Phase = "catching-up"
	// PhaseMember: a voter within the lag threshold of a real leader
	// frontier.
	PhaseMember Phase = "member"
	// PhaseDiverged: the member answers for a different cluster (for
	// example a seed that re-bootstrapped on an empty data dir).
	PhaseDiverged Phase = "diverged"
	// PhaseUnknown: the container runs but the engine could not be asked,
	// or no real leader frontier was available to judge it.
	PhaseUnknown Phase = "unknown"
)

func (p Phase) String() string { return string(p) }

// AllPhases lists every Phase.
var AllPhases = []Phase{
	PhaseAbsent, PhasePending, PhaseTerminating, PhaseBootstrapping,
	PhaseJoining, PhaseCatchingUp, PhaseMember, PhaseDiverged, PhaseUnknown,
}

// WaitingKind classifies why a container is not running. It is decoded from
// reason strings and is therefore only ever reported, never acted on.
type WaitingKind string

// Waiting kinds.
const (
	WaitingNone        WaitingKind = ""
	WaitingCrashLoop   WaitingKind = "crash-loop"
	WaitingPullFailure WaitingKind = "pull-failure"
	WaitingConfigError WaitingKind = "config-error"
	WaitingCreating    WaitingKind = "creating"
	WaitingUnscheduled WaitingKind = "unscheduled"
	WaitingOther       WaitingKind = "other"
)

func (w WaitingKind) String() string { return string(w) }

// PullFailure is the sub-kind of an image pull that is failing.
type PullFailure string

// Pull failure sub-kinds.
const (
	PullFailureNone         PullFailure = ""
	PullFailureUnauthorized PullFailure = "unauthorized"
	PullFailureNotFound     PullFailure = "not-found"
	PullFailureArch         PullFailure = "arch-mismatch"
	PullFailureBackoff      PullFailure = "backoff"
)

func (p PullFailure) String() string { return string(p) }

// Shape is how a StatefulSet's pods bootstrap on an empty volume.
type Shape string

// Bootstrap shapes (see docs/concepts.md).
const (
	ShapeUnknown         Shape = "unknown"
	ShapeStaticExisting  Shape = "static-existing"
	ShapeSelfRegistering Shape = "self-registering"
	ShapeStaticNew       Shape = "static-new"
	ShapeOperatorOwned   Shape = "operator-owned"
	// ShapeStaticPods: the kubelet runs each member from a manifest on
	// its node (kubeadm's etcd); hactl only diagnoses.
	ShapeStaticPods Shape = "static-pods"
)

func (s Shape) String() string { return string(s) }

// AllShapes lists every Shape.
var AllShapes = []Shape{ShapeUnknown, ShapeStaticExisting, ShapeSelfRegistering, ShapeStaticNew, ShapeOperatorOwned, ShapeStaticPods}

// ProbeFailure classifies why an engine probe got no answer. The edge
// (package status) decides it from typed errors (a context deadline, a
// refused dial, a TLS or authentication failure, a Secret it could not
// read), never from message text. It is only ever reported.
type ProbeFailure string

// Probe failure kinds.
const (
	// ProbeFailureNone: the probe got an answer, or failed for a reason
	// not classified below.
	ProbeFailureNone ProbeFailure = ""
	// ProbeFailureTimeout: no answer within the probe deadline.
	ProbeFailureTimeout ProbeFailure = "timeout"
	// ProbeFailureConnect: the port-forward or dial failed.
	ProbeFailureConnect ProbeFailure = "connect"
	// ProbeFailureCredentials: the credentials the probe needs could not
	// be read (Secret missing or forbidden) or were rejected by the member
	// (TLS handshake, authentication, permission denied).
	ProbeFailureCredentials ProbeFailure = "credentials"
	// ProbeFailureOther: any other error.
	ProbeFailureOther ProbeFailure = "other"
)

func (p ProbeFailure) String() string { return string(p) }

// AllProbeFailures lists every ProbeFailure.
var AllProbeFailures = []ProbeFailure{
	ProbeFailureNone, ProbeFailureTimeout, ProbeFailureConnect,
	ProbeFailureCredentials, ProbeFailureOther,
}
