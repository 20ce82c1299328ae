package cnpgstandin

// The document CloudNativePG's instance manager serves at GET /pg/status
// (pkg/management/postgres/webserver/remote.go pgStatus: the JSON of
// postgres.PostgresqlStatus, pkg/postgres/status.go, as filled by
// Instance.GetStatus in pkg/management/postgres/probes.go). The field
// names and omitempty marks are cnpg's (cloudnative-pg @a95a534, v1.30.0);
// the types are this stand-in's own. LSNs are strings as types.LSN
// marshals them ("0/3000060").

// PostgresqlStatus is cnpg's postgres.PostgresqlStatus.
type PostgresqlStatus struct {
	CurrentLsn                string `json:"currentLsn,omitempty"`
	ReceivedLsn               string `json:"receivedLsn,omitempty"`
	ReplayLsn                 string `json:"replayLsn,omitempty"`
	SystemID                  string `json:"systemID"`
	IsPrimary                 bool   `json:"isPrimary"`
	ReplayPaused              bool   `json:"replayPaused"`
	PendingRestart            bool   `json:"pendingRestart"`
	PendingRestartForDecrease bool   `json:"pendingRestartForDecrease"`
	IsWalReceiverActive       bool   `json:"isWalReceiverActive"`
	IsPgRewindRunning         bool   `json:"isPgRewindRunning"`
	MightBeUnavailable        bool   `json:"mightBeUnavailable"`
	IsArchivingWAL            bool   `json:"isArchivingWAL,omitempty"`
	Node                      string `json:"node"`
	// Pod is the instance manager's pod stub: GetStatus sets only its
	// name ({"metadata":{"name":…}} plus the empty spec and status a
	// corev1.Pod marshals).
	Pod *statusPod `json:"pod"`

	MightBeUnavailableMaskedError string `json:"mightBeUnavailableMaskedError,omitempty"`
	LoadedConfigurationHash       string `json:"loadedConfigurationHash,omitempty"`

	LastArchivedWAL     string `json:"lastArchivedWAL,omitempty"`
	LastArchivedWALTime string `json:"lastArchivedWALTime,omitempty"`
	LastFailedWAL       string `json:"lastFailedWAL,omitempty"`
	LastFailedWALTime   string `json:"lastFailedWALTime,omitempty"`
	CurrentWAL          string `json:"currentWAL,omitempty"`
	ReadyWALFiles       int    `json:"readyWalFiles,omitempty"`
	TimeLineID          int    `json:"timeLineID,omitempty"`

	ReplicationInfo       []PgStatReplication `json:"replicationInfo,omitempty"`
	ReplicationSlotsInfo  []PgReplicationSlot `json:"replicationSlotsInfo,omitempty"`
	PgStatBasebackupsInfo []PgStatBasebackup  `json:"pgStatBasebackupsInfo,omitempty"`

	ExecutableHash             string `json:"executableHash"`
	InstanceManagerVersion     string `json:"instanceManagerVersion"`
	InstanceArch               string `json:"instanceArch"`
	IsInstanceManagerUpgrading bool   `json:"isInstanceManagerUpgrading"`
	SessionID                  string `json:"sessionID"`
	IsPodReady                 bool   `json:"isPodReady"`
}

// statusPod marshals as a corev1.Pod holding only a name does.
type statusPod struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec   struct{} `json:"spec"`
	Status struct{} `json:"status"`
}

// PgStatReplication is cnpg's postgres.PgStatReplication: one row of the
// primary's pg_stat_replication (receivedLsn is sent_lsn).
type PgStatReplication struct {
	ApplicationName string `json:"applicationName,omitempty"`
	State           string `json:"state,omitempty"`
	SentLsn         string `json:"receivedLsn,omitempty"`
	WriteLsn        string `json:"writeLsn,omitempty"`
	FlushLsn        string `json:"flushLsn,omitempty"`
	ReplayLsn       string `json:"replayLsn,omitempty"`
	WriteLag        string `json:"writeLag,omitempty"`
	FlushLag        string `json:"flushLag,omitempty"`
	ReplayLag       string `json:"replayLag,omitempty"`
	SyncState       string `json:"syncState,omitempty"`
	SyncPriority    string `json:"syncPriority,omitempty"`
}

// PgReplicationSlot is cnpg's postgres.PgReplicationSlot.
type PgReplicationSlot struct {
	SlotName    string `json:"slotName,omitempty"`
	Plugin      string `json:"plugin,omitempty"`
	SlotType    string `json:"slotType,omitempty"`
	Datoid      string `json:"datoid,omitempty"`
	Database    string `json:"database,omitempty"`
	Xmin        string `json:"xmin,omitempty"`
	CatalogXmin string `json:"catalogXmin,omitempty"`
	RestartLsn  string `json:"restartLsn,omitempty"`
	WalStatus   string `json:"walStatus,omitempty"`
	SafeWalSize *int   `json:"safeWalSize,omitempty"`
	Active      bool   `json:"active,omitempty"`
}

// PgStatBasebackup is cnpg's postgres.PgStatBasebackup.
type PgStatBasebackup struct {
	Usename              string `json:"usename"`
	ApplicationName      string `json:"application_name"`
	BackendStart         string `json:"backend_start"`
	Phase                string `json:"phase"`
	BackupTotal          int64  `json:"backup_total"`
	BackupStreamed       int64  `json:"backup_streamed"`
	BackupTotalPretty    string `json:"backup_total_pretty"`
	BackupStreamedPretty string `json:"backup_streamed_pretty"`
	TablespacesTotal     int64  `json:"tablespaces_total"`
	TablespacesStreamed  int64  `json:"tablespaces_streamed"`
}
