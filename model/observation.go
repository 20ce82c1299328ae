package model

import "time"

// Observation is everything hactl read about one cluster at one moment. It
// is built at the edge (package status) and consumed by the pure verdict and
// classifier.
type Observation struct {
	// At is when the observation began (before the API reads and the
	// probes): every fact in it is at least this old. Each part also
	// carries its own time where it was read separately.
	At      time.Time    `json:"observedAt"`
	Cluster ClusterFacts `json:"cluster"`
	// Members holds one entry per ordinal the StatefulSet wants (and any
	// extra pod found beyond that), ordered by ordinal.
	Members []Member `json:"members"`
	// PDB is nil when no PodDisruptionBudget selects the cluster's pods.
	PDB *PDBFacts `json:"pdb,omitempty"`
	// ClientEndpoints is nil when no client Service was found.
	ClientEndpoints *EndpointFacts `json:"clientEndpoints,omitempty"`
	// Events are recent Kubernetes events about the StatefulSet and its
	// pods, newest first.
	Events []EventFacts `json:"events,omitempty"`
	// EngineProbed is true when engine probes ran (false with --no-probe).
	EngineProbed bool `json:"engineProbed"`
	// Lock is the cluster's action lock (Lease hactl-<cluster>); nil when
	// it was not read or does not exist.
	Lock *LockFacts `json:"lock,omitempty"`
	// Ledger holds the actions recorded in the cluster's ledger
	// (ConfigMap hactl-<cluster>), oldest first; nil when not read.
	Ledger []LedgerEntry `json:"ledger,omitempty"`
}

// ClusterFacts describes the StatefulSet that is the cluster.
type ClusterFacts struct {
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	Engine          Engine `json:"engine"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
	// OwnerKind and OwnerAPIVersion are the kind of the object the
	// cluster answers to, named Name with UID: its StatefulSet, or an
	// operator's resource (Crunchy PGO's PostgresCluster,
	// CloudNativePG's Cluster); "" when there is none (static pods).
	// hactl's lock and ledger are its dependents, and its Events are
	// about it.
	OwnerKind       string    `json:"ownerKind,omitempty"`
	OwnerAPIVersion string    `json:"ownerAPIVersion,omitempty"`
	Replicas        int       `json:"replicas"`
	ReadyReplicas   int       `json:"readyReplicas"`
	CreatedAt       time.Time `json:"createdAt"`
	// ServiceName is the StatefulSet's governing (headless) Service.
	ServiceName string `json:"serviceName,omitempty"`
	// Template holds the bootstrap-relevant facts of the pod template.
	Template TemplateFacts `json:"template"`
	// Shape is how the pods bootstrap on an empty volume.
	Shape Shape `json:"shape"`
	// TLSSecret names the Secret holding client TLS material
	// (annotation hactl.dev/client-tls-secret); its values are never read
	// into the model.
	TLSSecret string `json:"tlsSecret,omitempty"`
	// RESTAuthSecret names the Secret holding the username and password
	// of the members' REST API (annotation hactl.dev/rest-auth-secret;
	// Patroni's restapi.authentication); its values are never read into
	// the model.
	RESTAuthSecret string `json:"restAuthSecret,omitempty"`
	// KnownClusterID is a cluster ID recorded earlier for this cluster
	// (by hactl on the StatefulSet or in its ledger), "" when none was
	// recorded. It is evidence that the cluster has formed even when no
	// member answers now (seed 000: a formed cluster must never be handed
	// a bootstrap instruction again).
	KnownClusterID string `json:"knownClusterID,omitempty"`
	// UpdateRevision is the StatefulSet's current template revision
	// (status.updateRevision), "" when not read.
	UpdateRevision string `json:"updateRevision,omitempty"`
	// ResourceVersion and Fingerprint above fence the StatefulSet itself
	// (scaling it); Fingerprint digests its metadata and spec.
	Fingerprint string `json:"fingerprint,omitempty"`
	// PodManagementPolicy is the StatefulSet's (OrderedReady or
	// Parallel; "" when not read).
	PodManagementPolicy string `json:"podManagementPolicy,omitempty"`
	// RestorePods are the one-shot pods a restore runs, one per member
	// (label hactl.dev/restore-of=<cluster>).
	RestorePods []RestorePodFacts `json:"restorePods,omitempty"`
	// Patroni is what the API server holds for a Patroni cluster (nil for
	// other engines).
	Patroni *PatroniClusterFacts `json:"patroni,omitempty"`
	// SelfWritten is what the engine's members rewrite on their own pods
	// (Patroni: its role label and its status annotation), filled by the
	// engine's keeper. A pod's fingerprint leaves it out: otherwise every
	// fence on a member's pod would read as changed by someone. Nil when
	// the members write nothing on their pods.
	SelfWritten *SelfWritten `json:"selfWritten,omitempty"`
	// Record is the engine's own record of leadership in the API server
	// (Patroni's timeline history and leader lock), filled by its keeper;
	// nil for an engine that keeps none.
	Record *EngineRecord `json:"record,omitempty"`
	// Notes are what the engine's keeper says of where it read the
	// cluster's state, a line each, for the reader (Patroni: the kind of
	// DCS object and what says so, a leader record of the other kind
	// left behind); nil when it has nothing to say.
	Notes []string `json:"notes,omitempty"`
	// EngineConfig is the engine's own settings for this cluster: the
	// data of the ConfigMap the StatefulSet names with the annotation
	// hactl.dev/engine-config (an http engine's mapping), nil when it
	// names none. EngineConfigErr says why a named ConfigMap could not
	// be read; the engine then has no settings.
	EngineConfig    map[string]string `json:"engineConfig,omitempty"`
	EngineConfigErr string            `json:"engineConfigError,omitempty"`
	// Layout says how the members were found: "StatefulSet", "kubeadm
	// static pods" (package source).
	Layout string `json:"layout,omitempty"`
	// ManagedBy, when set, is who creates and deletes the members' pods
	// in hactl's stead (the kubelet, for static pods): hactl changes
	// none of them and names its way instead.
	ManagedBy *Manager `json:"managedBy,omitempty"`
	// ServerName, when set, is the name every member's serving
	// certificate carries for a client that reaches it through a
	// port-forward (kubeadm's etcd: localhost), in place of the pod's
	// DNS name.
	ServerName string `json:"serverName,omitempty"`
	// TLSCASecret, when set, names the Secret whose ca.crt verifies the
	// members' serving certificates, where it is not TLSSecret's (an
	// operator's server Secret beside its client one); TLSSecretFrom
	// says which field named TLSSecret and TLSCASecret ("" for the
	// annotation hactl.dev/client-tls-secret).
	TLSCASecret string `json:"tlsCASecret,omitempty"`
	// TLSCAKey is the key of TLSCASecret holding the CA ("" for ca.crt);
	// TLSCertKey and TLSKeyKey the keys of TLSSecret holding the client
	// certificate and its key ("" for the usual names: tls.crt, tls.key,
	// cert.pem, key.pem).
	TLSCAKey      string `json:"tlsCAKey,omitempty"`
	TLSCertKey    string `json:"tlsCertKey,omitempty"`
	TLSKeyKey     string `json:"tlsKeyKey,omitempty"`
	TLSSecretFrom string `json:"tlsSecretFrom,omitempty"`
	// Operator is what an operator's own objects say of the cluster,
	// to hold against its members' answers; nil when the layout has no
	// operator.
	Operator   *OperatorFacts `json:"operator,omitempty"`
	ObservedAt time.Time      `json:"-"`
}

// OperatorFacts are what an operator's custom resources say of a cluster
// and its members (cozystack's EtcdCluster and EtcdMembers).
type OperatorFacts struct {
	// Kind and Name name the cluster's resource ("EtcdCluster", "db");
	// MemberKind is the kind of its members' ("EtcdMember").
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	MemberKind string `json:"memberKind,omitempty"`
	// Err says why the resources could not be read (RBAC, no CRD); the
	// fields below are then empty and nothing is held against them.
	Err string `json:"error,omitempty"`
	// ClusterID is the cluster ID the operator recorded (hex), "" when
	// none.
	ClusterID string `json:"clusterID,omitempty"`
	// Available is the resource's condition that says the cluster
	// serves (nil when it has none), with its reason and message;
	// AvailableType is that condition's type ("Available" when empty;
	// etcd-druid's is "Ready").
	Available       *bool  `json:"available,omitempty"`
	AvailableType   string `json:"availableType,omitempty"`
	AvailableReason string `json:"availableReason,omitempty"`
	AvailableDetail string `json:"availableMessage,omitempty"`
	// Status is the resource's one status word where it keeps no
	// conditions (Zalando's PostgresClusterStatus: Running, SyncFailed,
	// …), "" where it keeps conditions; Available is then whether the
	// word means the cluster serves (Running).
	Status string `json:"status,omitempty"`
	// ReadyMembers is how many members the operator counts ready.
	ReadyMembers int `json:"readyMembers"`
	// Primary is the member the operator records as the primary
	// (CloudNativePG's status.currentPrimary) and TargetPrimary the one
	// it is making primary (status.targetPrimary: another while a
	// switchover or failover runs); "" where it records none.
	Primary       string `json:"primary,omitempty"`
	TargetPrimary string `json:"targetPrimary,omitempty"`
	// Members are the operator's records of each member, by name.
	Members []OperatorMember `json:"members,omitempty"`
	// RemovesByName: the operator's way to rebuild a member removes the
	// member the cluster lists under the member's name (etcd-druid's
	// backup-restore sidecar), not an ID it recorded (cozystack's
	// finalizer): the rebuild then needs the member listed under its
	// name, and a stale recorded ID misleads only the reader.
	RemovesByName bool `json:"removesByName,omitempty"`
	// MemberPrefix is what the operator puts before a pod's name to name
	// its etcd member (etcd-druid's spec.memberNamePrefix, with its
	// dash), "" for none.
	MemberPrefix string `json:"memberPrefix,omitempty"`
	// Deleting: the operator's resource is being deleted.
	Deleting bool `json:"deleting,omitempty"`
	// Backup is what the operator's backups say (etcd-druid's snapshot
	// Leases), nil where it keeps none.
	Backup *OperatorBackup `json:"backup,omitempty"`
}

// OperatorBackup is an operator's record of its own backups of the
// cluster (etcd-druid: the backup-restore sidecar's full and delta
// snapshot Leases, and the Etcd's BackupReady condition).
type OperatorBackup struct {
	// FullRevision is the etcd revision the newest full snapshot holds
	// and FullAt when it was taken; 0 and nil when none is recorded.
	FullRevision int64      `json:"fullRevision,omitempty"`
	FullAt       *time.Time `json:"fullAt,omitempty"`
	// DeltaRevision is the newest revision delta snapshots hold and
	// DeltaAt when they were last renewed; 0 and nil when none.
	DeltaRevision int64      `json:"deltaRevision,omitempty"`
	DeltaAt       *time.Time `json:"deltaAt,omitempty"`
	// Ready is the BackupReady condition (nil when absent), with its
	// reason.
	Ready       *bool  `json:"ready,omitempty"`
	ReadyReason string `json:"readyReason,omitempty"`
	// Err says why the snapshot Leases could not be read.
	Err string `json:"error,omitempty"`
}

// Condition is the type of the condition Available holds.
func (o *OperatorFacts) Condition() string {
	if o.AvailableType == "" {
		return "Available"
	}
	return o.AvailableType
}

// OperatorMember is an operator's record of one member.
type OperatorMember struct {
	Name string `json:"name"`
	// MemberID is the member ID it recorded (hex), "" when none yet.
	MemberID string `json:"memberID,omitempty"`
	// Voter: it records the member as a voter (false: a learner).
	Voter bool `json:"voter"`
	// Seed: the member that bootstrapped the cluster.
	Seed bool `json:"seed,omitempty"`
	// PodUID is the pod it recorded for the member.
	PodUID string `json:"podUID,omitempty"`
}

// OtherCluster reports whether the operator recorded a cluster ID and
// the members answer for another (id, "" when none was agreed).
func (o *OperatorFacts) OtherCluster(id string) bool {
	return o != nil && o.ClusterID != "" && id != "" && o.ClusterID != id
}

// Member is the operator's record of member name, nil when it has none.
func (o *OperatorFacts) Member(name string) *OperatorMember {
	if o == nil {
		return nil
	}
	for i := range o.Members {
		if o.Members[i].Name == name {
			return &o.Members[i]
		}
	}
	return nil
}

// Manager is who owns a cluster's members in hactl's stead.
type Manager struct {
	// Name names it in messages ("the kubelet (kubeadm static pods)").
	Name string `json:"name"`
	// Runbook are its own steps to rebuild a member, in its terms. The
	// words {member}, {memberName} (its etcd member's name: the
	// operator's MemberPrefix and {member}), {memberID} ({memberID16}:
	// zero-padded to 16 hex digits), {node}, {dataDir}, {namespace},
	// {cluster} and {healthyNode} stand for the member's and cluster's
	// (filled in by the classifier).
	Runbook []string `json:"runbook,omitempty"`
	// Unevictable: no eviction reaches its pods (a kubelet's mirror
	// pods, which a drain skips), so no disruption budget applies.
	Unevictable bool `json:"unevictable,omitempty"`
	// NoService: its clients are handed the members' addresses (the API
	// server's --etcd-servers), so no client Service is expected; one
	// that exists is still judged.
	NoService bool `json:"noService,omitempty"`
}

// TemplateFacts are the engine-relevant settings of the pod template.
type TemplateFacts struct {
	// InitialClusterState is the value of --initial-cluster-state or
	// ETCD_INITIAL_CLUSTER_STATE ("" when neither is set literally).
	InitialClusterState string `json:"initialClusterState,omitempty"`
	// InitialClusterStateFrom says where it was found ("arg", "env").
	InitialClusterStateFrom string `json:"initialClusterStateFrom,omitempty"`
	// ClientPort is the engine's client port (2379 for etcd).
	ClientPort int `json:"clientPort"`
	// CertPorts are the member's other TLS ports, whose serving
	// certificates the probe reads too: etcd's peer port when its peer
	// URLs are https.
	CertPorts []int `json:"certPorts,omitempty"`
	// MetricsPort is the port of a plaintext metrics listener the
	// members serve beside the client port (etcd's
	// --listen-metrics-urls=http://...; kubeadm's 127.0.0.1:2381), 0
	// when none: read when the client port cannot be (no client
	// certificate).
	MetricsPort int `json:"metricsPort,omitempty"`
	// QuotaBackendBytes is --quota-backend-bytes when set, else 0.
	QuotaBackendBytes int64  `json:"quotaBackendBytes,omitempty"`
	Image             string `json:"image,omitempty"`
	// Container is the name of the engine container.
	Container string `json:"container,omitempty"`
	// SelfRegistering: the entrypoint removes and re-adds its own member
	// (ETCD_ON_K8S=yes, or a script calling `etcdctl member add`).
	SelfRegistering bool `json:"selfRegistering,omitempty"`
	// ClientCertAuth: the members ask every client for a certificate
	// (etcd's --client-cert-auth=true): without client credentials they
	// cannot be asked.
	ClientCertAuth bool `json:"clientCertAuth,omitempty"`
	// ClientTLS: the client port serves TLS of its own, whatever client
	// credentials are named (CloudNativePG's instance manager with
	// --status-port-tls).
	ClientTLS bool `json:"clientTLS,omitempty"`
	// Password is where the members' password for User comes from when
	// they ask every client for one (etcd's auth; Bitnami's chart names
	// the root user's with ETCD_ROOT_PASSWORD), nil when the template
	// names none; PasswordFrom says where the reference was found. The
	// password itself is never read into the model.
	User         string        `json:"user,omitempty"`
	Password     *SecretKeyRef `json:"password,omitempty"`
	PasswordFrom string        `json:"passwordFrom,omitempty"`
	// StartFromSnapshot: ETCD_START_FROM_SNAPSHOT=yes.
	StartFromSnapshot bool `json:"startFromSnapshot,omitempty"`
	// ShellWrapper: the container runs a shell script rather than the
	// engine binary directly.
	ShellWrapper bool `json:"shellWrapper,omitempty"`
	// PreStopCallsEngineCLI: a preStop hook calls etcdctl.
	PreStopCallsEngineCLI bool `json:"preStopCallsEngineCLI,omitempty"`
	// OperatorOwner names the controlling owner ("Kind/name") when the
	// StatefulSet is owned by another controller (an operator's CR).
	OperatorOwner string `json:"operatorOwner,omitempty"`
	// BackupSidecar: a container other than the engine's looks like a
	// backup/restore agent.
	BackupSidecar bool `json:"backupSidecar,omitempty"`
	// InitialCluster is the template's --initial-cluster (or
	// ETCD_INITIAL_CLUSTER) with references to the pod's namespace
	// resolved. InitialClusterDecoded says it was looked for: false means
	// unknown, true with no entries means the template sets none.
	InitialCluster        []InitialClusterEntry `json:"initialCluster,omitempty"`
	InitialClusterDecoded bool                  `json:"initialClusterDecoded,omitempty"`
	// InitialClusterToken is --initial-cluster-token (or
	// ETCD_INITIAL_CLUSTER_TOKEN), "" when not set literally.
	InitialClusterToken string `json:"initialClusterToken,omitempty"`
	// DataDir is the engine's data directory (--data-dir or
	// ETCD_DATA_DIR), "" when not set literally.
	DataDir string `json:"dataDir,omitempty"`
	// DataVolume is the volume claim template mounted at DataMount, the
	// mount that holds DataDir; "" when none does.
	DataVolume string `json:"dataVolume,omitempty"`
	DataMount  string `json:"dataMount,omitempty"`
}

// RestorePodFacts describe one of a restore's one-shot pods.
type RestorePodFacts struct {
	Name            string `json:"name"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
	// Member is the member (StatefulSet pod name) it restores.
	Member string `json:"member"`
	// Generation and Action are its labels hactl.dev/generation and
	// hactl.dev/action-id.
	Generation string `json:"generation"`
	Action     string `json:"action,omitempty"`
	// Phase is the pod's phase (Pending, Running, Succeeded, Failed).
	Phase string `json:"phase"`
	// Message is the container's termination message (the agent's
	// output) when it failed.
	Message        string `json:"message,omitempty"`
	DeletionMarked bool   `json:"deletionMarked,omitempty"`
	Fingerprint    string `json:"fingerprint,omitempty"`
}

// Member is one ordinal of the cluster: its pod, its volume and what the
// engine said about it.
type Member struct {
	Name    string       `json:"name"`
	Ordinal int          `json:"ordinal"`
	Pod     *PodFacts    `json:"pod,omitempty"`
	PVC     *PVCFacts    `json:"pvc,omitempty"`
	Engine  *EngineFacts `json:"engine,omitempty"`
	// Template is this member's own pod's settings where each member's
	// pod is templated on its own (an operator's EtcdMember pods), nil
	// where the cluster's Template holds for every member.
	Template *TemplateFacts `json:"template,omitempty"`
	// Phase is derived (see package verdict); it is filled by Derive.
	Phase Phase `json:"phase"`
	// Lag is leader frontier minus this member's applied index; nil when
	// no real leader frontier was read ("unknown", never "caught up").
	Lag *int64 `json:"lag,omitempty"`
}

// PodFacts is what the API server says about a member's pod.
type PodFacts struct {
	Name            string `json:"name"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
	Node            string `json:"node,omitempty"`
	// IPs are the pod's IPs as its status reports them (none before it
	// runs). They identify the member a peer URL holding an IP belongs
	// to.
	IPs            []string  `json:"ips,omitempty"`
	Phase          string    `json:"phase"`
	Started        bool      `json:"started"`
	Running        bool      `json:"running"`
	Ready          bool      `json:"ready"`
	Restarts       int       `json:"restarts"`
	DeletionMarked bool      `json:"deletionMarked,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	// EverStarted is true if the container has run at least once
	// (running now, or a terminated last state).
	EverStarted bool        `json:"everStarted"`
	Waiting     WaitingKind `json:"waiting,omitempty"`
	// WaitingReason is the kubelet's reason string (CrashLoopBackOff, …).
	WaitingReason string      `json:"waitingReason,omitempty"`
	PullFailure   PullFailure `json:"pullFailure,omitempty"`
	// Revision is the template revision the pod was created from (label
	// controller-revision-hash), "" when not read.
	Revision string `json:"revision,omitempty"`
	// RoleLabel is the role a Patroni member's pod is labelled with
	// (master, primary, replica; "" when none or another engine).
	RoleLabel string `json:"roleLabel,omitempty"`
	// Fingerprint digests the pod's metadata (labels, annotations, owners,
	// finalizers) and spec, not its status; "" when not computed.
	Fingerprint string    `json:"fingerprint,omitempty"`
	ObservedAt  time.Time `json:"-"`
}

// PVCFacts is what the API server says about a member's data volume claim.
type PVCFacts struct {
	Name            string `json:"name"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
	Phase           string `json:"phase"`
	// DeletionMarked: the claim is being deleted (it stays until no pod
	// uses it).
	DeletionMarked bool `json:"deletionMarked,omitempty"`
	// Fingerprint digests the claim's metadata and spec, not its status;
	// "" when not computed.
	Fingerprint string    `json:"fingerprint,omitempty"`
	ObservedAt  time.Time `json:"-"`
}

// PDBFacts summarises the PodDisruptionBudget covering the cluster.
type PDBFacts struct {
	Name string `json:"name"`
	// MinAvailable / MaxUnavailable as resolved integers against the
	// StatefulSet's replicas; -1 when unset.
	MinAvailable   int `json:"minAvailable"`
	MaxUnavailable int `json:"maxUnavailable"`
	// Role, when set, is the role label value the budget's selector
	// adds to the cluster's pod labels: it covers only the pods of that
	// role (Zalando's operator's budget selects spilo-role=master), not
	// every member.
	Role string `json:"role,omitempty"`
}

// EndpointFacts summarises the client Service's EndpointSlices.
type EndpointFacts struct {
	Service string `json:"service"`
	Ready   int    `json:"ready"`
	Total   int    `json:"total"`
	// Pods names the pods behind the ready endpoints, when read (for a
	// Patroni cluster: the primary's Service must point at the primary).
	Pods []string `json:"pods,omitempty"`
}

// EventFacts is one Kubernetes event about the cluster.
type EventFacts struct {
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Object  string    `json:"object"`
	Message string    `json:"message"`
	Count   int       `json:"count"`
	Last    time.Time `json:"last"`
	// Controller is the reportingController that wrote it, when given.
	Controller string `json:"controller,omitempty"`
}

// EngineFacts is what one member said about itself when dialled on its own.
type EngineFacts struct {
	// Reachable is false when the member did not answer within the probe
	// timeout; Err then says why (never containing a credential).
	Reachable bool   `json:"reachable"`
	Err       string `json:"error,omitempty"`
	// Failure classifies an unanswered probe (set only when Reachable is
	// false). ProbeFailureCredentials makes the verdict report
	// credentials_unavailable instead of member_unreachable.
	Failure ProbeFailure `json:"failure,omitempty"`
	// MemberID and ClusterID come from the response header, as hex.
	MemberID  string `json:"memberID,omitempty"`
	ClusterID string `json:"clusterID,omitempty"`
	// LeaderID is the member ID this member believes leads ("" or "0"
	// when it knows no leader).
	LeaderID    string `json:"leaderID,omitempty"`
	RaftTerm    uint64 `json:"raftTerm,omitempty"`
	RaftIndex   uint64 `json:"raftIndex,omitempty"`
	RaftApplied uint64 `json:"raftAppliedIndex,omitempty"`
	IsLearner   bool   `json:"isLearner,omitempty"`
	DBSize      int64  `json:"dbSize,omitempty"`
	DBSizeInUse int64  `json:"dbSizeInUse,omitempty"`
	// DBSizeQuota is the backend quota the member enforces (its
	// --quota-backend-bytes, or the engine default when unset).
	DBSizeQuota    int64    `json:"dbSizeQuota,omitempty"`
	Version        string   `json:"version,omitempty"`
	StorageVersion string   `json:"storageVersion,omitempty"`
	Errors         []string `json:"errors,omitempty"`
	// Alarms are the cluster alarms this member reported ("NOSPACE",
	// "CORRUPT") with the member they concern.
	Alarms []Alarm `json:"alarms,omitempty"`
	// Metrics is what the member's plaintext metrics listener says,
	// read when its client port refused hactl for want of credentials
	// (nil otherwise): a few of its facts, the rest unknown.
	Metrics *MetricsFacts `json:"metrics,omitempty"`
	// Peers is the member list as this member sees it.
	Peers []Peer `json:"peers,omitempty"`
	// PeersErr says why Peers is empty although the member was reachable
	// (a learner does not serve the member list; the call may time out).
	// Peers is then unknown, not empty.
	PeersErr string `json:"peersError,omitempty"`
	// Patroni holds what a Patroni member reported (nil for other
	// engines). MemberID is then its name, ClusterID its system
	// identifier and LeaderID the leader its own view names.
	Patroni *PatroniFacts `json:"patroni,omitempty"`
	// CNPG holds what a CloudNativePG instance's manager reported (nil
	// for other engines). MemberID is then its instance name, ClusterID
	// its system identifier.
	CNPG *CNPGFacts `json:"cnpg,omitempty"`
	// Document holds what a member's status document said through its
	// mapping (the http engine; nil for other engines). MemberID,
	// ClusterID, LeaderID, RaftTerm, RaftIndex (its frontier) and
	// RaftApplied then carry the mapped values.
	Document *DocumentFacts `json:"document,omitempty"`
	// ServingCerts are the certificates the member served in the TLS
	// handshakes of its probe (none without TLS), the probed port's
	// first, then those of the template's other TLS ports (etcd's peer
	// port): also when a handshake failed on one, as on an expired one.
	ServingCerts []CertFacts   `json:"servingCerts,omitempty"`
	ProbedAt     time.Time     `json:"probedAt"`
	Took         time.Duration `json:"took"`
}

// CertFacts are what a member's serving certificate says of itself. No
// key material: the names, the issuer and the validity window.
type CertFacts struct {
	Subject   string    `json:"subject"`
	Issuer    string    `json:"issuer"`
	DNSNames  []string  `json:"dnsNames,omitempty"`
	NotBefore time.Time `json:"notBefore"`
	NotAfter  time.Time `json:"notAfter"`
	// Verified: the chain was verified against the CA hactl was given
	// (false: the handshake failed on this certificate, or the member's
	// certificate was not checked).
	Verified bool `json:"verified"`
	// Port is the member's port that served it.
	Port int `json:"port"`
}

// DocumentFacts are what one member's status document said, read through
// the cluster's mapping. A nil position was not in the document.
type DocumentFacts struct {
	// Role is the role as the document names it ("" when not mapped).
	Role string `json:"role,omitempty"`
	// Ready is the document's own readiness; nil when not mapped.
	Ready *bool `json:"ready,omitempty"`
	// Paused: the document says automatic failover is paused.
	Paused bool `json:"paused,omitempty"`
	// Applied is the member's applied position; Frontier the position it
	// reports as the frontier (read from the leader).
	Applied  *uint64 `json:"applied,omitempty"`
	Frontier *uint64 `json:"frontier,omitempty"`
	// Identified: the document yielded the mapped role, leader or
	// member ID (a document with none of them is no answer).
	Identified bool `json:"-"`
	// Problem says why the mapping could not read the document (an
	// expression that yields an object, a position that is not a
	// number); the member answered, but its facts are incomplete.
	Problem string `json:"problem,omitempty"`
}

// Role derives the member's role from what it reported.
func (e *EngineFacts) Role() Role {
	switch {
	case e == nil || !e.Reachable:
		return RoleUnknown
	case e.IsLearner:
		return RoleLearner
	case e.MemberID != "" && e.MemberID == e.LeaderID:
		return RoleLeader
	default:
		return RoleFollower
	}
}

// Alarm is one engine alarm.
type Alarm struct {
	Type     string `json:"type"`
	MemberID string `json:"memberID"`
}

// Peer is one entry of a member list.
type Peer struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs,omitempty"`
	IsLearner  bool     `json:"isLearner,omitempty"`
}

// Fence is a compare-and-delete precondition: the identity and version of
// the object as observed by the decision that authorised the delete.
type Fence struct {
	Kind            string `json:"kind"`
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
	// Fingerprint digests the object's metadata and spec as observed
	// ("" when unknown). It tells a change someone made (a label, the
	// spec) from the kubelet reporting status, which also moves the
	// resourceVersion.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Role is a Patroni member pod's role label as observed ("" for
	// other objects): the fingerprint leaves it out (Patroni rewrites
	// it), so a promotion since the plan was confirmed is told by it.
	Role string `json:"role,omitempty"`
}

// MetricsFacts are the facts an etcd member's metrics listener serves
// (etcd_server_id, etcd_server_is_leader, etcd_server_has_leader,
// etcd_server_is_learner, etcd_server_proposals_applied_total,
// etcd_server_proposals_committed_total, etcd_server_version): no cluster
// ID, member list, term or alarms, which only the client port answers.
type MetricsFacts struct {
	MemberID  string `json:"memberID,omitempty"`
	IsLeader  bool   `json:"isLeader"`
	HasLeader bool   `json:"hasLeader"`
	IsLearner bool   `json:"isLearner"`
	Applied   uint64 `json:"applied"`
	Committed uint64 `json:"committed"`
	Version   string `json:"version,omitempty"`
	// Port is the listener's port.
	Port int `json:"port"`
}

// SelfWritten are the pod labels and annotations an engine's members
// rewrite on their own pods.
type SelfWritten struct {
	Labels      []string `json:"labels,omitempty"`
	Annotations []string `json:"annotations,omitempty"`
}

// EngineRecord is an engine's own record of leadership in the API server.
type EngineRecord struct {
	// Events are its entries, oldest first (a timeline switch, the last
	// acquisition of the leader lock).
	Events []RecordEvent `json:"events,omitempty"`
	// Holder is the member the record names as holding the leader lock
	// ("" when none or the lock is free); HolderExpires is when that
	// hold runs out unless renewed (zero: not known).
	Holder        string    `json:"holder,omitempty"`
	HolderExpires time.Time `json:"holderExpires,omitempty"`
}

// HolderStale reports whether the lock's hold has run out at now without
// renewal.
func (r *EngineRecord) HolderStale(now time.Time) bool {
	return r != nil && r.Holder != "" && !r.HolderExpires.IsZero() && now.After(r.HolderExpires)
}

// RecordEvent is one entry of an engine's record: when, the member it
// names, what happened (a short word: "timeline-switch", "leader-lock")
// and its detail in the engine's words.
type RecordEvent struct {
	At     time.Time `json:"at"`
	Member string    `json:"member,omitempty"`
	Event  string    `json:"event"`
	Detail string    `json:"detail,omitempty"`
}
