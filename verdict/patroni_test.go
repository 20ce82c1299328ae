package verdict

import (
	"fmt"
	"time"

	patroniengine "github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/model"
)

const (
	pgSystemID    = "7714413371406231513"
	pgOtherSystem = "7714416297967644394"
	pgFrontier    = int64(67108864)
)

func i64(n int64) *int64 { return &n }

// pgMember returns pg-<i> of a healthy three-member Patroni cluster led by
// pg-0: the primary at pgFrontier, replicas caught up and streaming.
func pgMember(i int) model.Member {
	name := fmt.Sprintf("pg-%d", i)
	p := &model.PatroniFacts{
		Scope: "pg", Role: "replica", State: "running", Timeline: 1,
		ReceivedLocation: i64(pgFrontier), ReplayedLocation: i64(pgFrontier - 100),
		SystemID: pgSystemID, ServerVersion: 150018, PatroniVersion: "3.0.2", ViewLeader: "pg-0",
	}
	if i == 0 {
		p.Role, p.ReceivedLocation, p.ReplayedLocation = "master", nil, nil
		p.WALLocation = i64(pgFrontier)
		p.Replication = []model.PatroniReplication{
			{Name: "pg-1", State: "streaming", SyncState: "async"},
			{Name: "pg-2", State: "streaming", SyncState: "async"},
		}
	}
	role := "replica"
	if i == 0 {
		role = "master"
	}
	return model.Member{
		Name: name, Ordinal: i,
		Pod: &model.PodFacts{
			Name: name, UID: "pod-uid-" + name, ResourceVersion: "100",
			Node: fmt.Sprintf("kwok-node-%d", i), Phase: "Running",
			Started: true, Running: true, Ready: true, EverStarted: true,
			CreatedAt: now.Add(-24 * time.Hour), RoleLabel: role,
		},
		PVC: &model.PVCFacts{Name: "pgdata-" + name, Phase: "Bound"},
		Engine: &model.EngineFacts{
			Reachable: true, MemberID: name, ClusterID: pgSystemID, LeaderID: "pg-0",
			Version: "15.18", Patroni: p, ProbedAt: now.Add(-2 * time.Second),
		},
	}
}

// pgHealthy is a failover-ready Patroni cluster.
func pgHealthy() model.Observation {
	obs := model.Observation{
		At: now.Add(-2 * time.Second),
		Cluster: model.ClusterFacts{
			Namespace: "db", Name: "pg", Engine: patroniengine.Name, UID: "sts-uid",
			Replicas: 3, ReadyReplicas: 3, CreatedAt: now.Add(-24 * time.Hour),
			Template: model.TemplateFacts{ClientPort: 8008}, Shape: model.ShapeSelfRegistering,
			Patroni: &model.PatroniClusterFacts{
				Scope: "pg", RoleLabel: "role", RESTPort: 8008,
				LockFound: true, LockHolder: "pg-0", LockRenew: now.Add(-3 * time.Second), LockTTL: 30 * time.Second,
				ConfigFound: true, MaximumLagOnFailover: 1 << 20, Initialize: pgSystemID,
			},
		},
		PDB:             &model.PDBFacts{Name: "pg", MinAvailable: -1, MaxUnavailable: 1},
		ClientEndpoints: &model.EndpointFacts{Service: "pg", Ready: 1, Total: 1, Pods: []string{"pg-0"}},
		EngineProbed:    true,
	}
	for i := range 3 {
		obs.Members = append(obs.Members, pgMember(i))
	}
	return obs
}

func pg(o *model.Observation, i int) *model.PatroniFacts { return o.Members[i].Engine.Patroni }

// pgRows are TestEvaluate's rows for Patroni clusters; each starts from
// pgHealthy.
var pgRows = []row{
	{
		name: "patroni healthy", control: true, fail: true,
		mutate: func(o *model.Observation) {},
		phases: map[string]model.Phase{"pg-0": model.PhaseMember, "pg-1": model.PhaseMember, "pg-2": model.PhaseMember},
		lags:   map[string]int64{"pg-0": 0, "pg-1": 100, "pg-2": 100},
	},
	{
		name: "patroni primary role spelled primary", control: true, fail: true,
		mutate: func(o *model.Observation) { pg(o, 0).Role = "primary"; o.Members[0].Pod.RoleLabel = "primary" },
	},
	{
		name: "patroni replay stalled while received moves", control: true, fail: false,
		mutate: func(o *model.Observation) { pg(o, 1).ReplayedLocation = i64(pgFrontier - 6_700_000) },
		codes:  []string{"replica_lagging pg-1"},
		phases: map[string]model.Phase{"pg-1": model.PhaseCatchingUp},
		lags:   map[string]int64{"pg-1": 6_700_000},
		detail: "6.4 MiB behind",
	},
	{
		name: "patroni --wal-lag-threshold overrides maximum_lag_on_failover", control: true, fail: true,
		mutate: func(o *model.Observation) { pg(o, 1).ReplayedLocation = i64(pgFrontier - 6_700_000) },
		opts:   model.VerdictOptions{WALLagThreshold: 64 << 20},
	},
	{
		name: "patroni both replicas lagging: no candidate", control: true, fail: false,
		mutate: func(o *model.Observation) {
			pg(o, 1).ReplayedLocation = i64(pgFrontier - 5<<20)
			pg(o, 2).ReplayedLocation = i64(pgFrontier - 5<<20)
		},
		codes: []string{"replica_lagging pg-1", "replica_lagging pg-2", "failover_candidates_none"},
	},
	{
		name: "patroni replicas tagged nofailover", control: true, fail: false,
		mutate: func(o *model.Observation) { pg(o, 1).NoFailover = true; pg(o, 2).NoFailover = true },
		codes:  []string{"failover_candidates_none"},
	},
	{
		name: "patroni primary unreachable, lock names it", control: false, fail: false,
		mutate: func(o *model.Observation) { unreachable(o, 0, model.ProbeFailureTimeout) },
		codes:  []string{"member_unreachable pg-0", "primary_missing"},
		lags:   map[string]int64{"pg-1": -1, "pg-2": -1},
		detail: "the leader lock names pg-0",
	},
	{
		name: "patroni two writable primaries", control: false, fail: false,
		mutate: func(o *model.Observation) {
			p := pg(o, 2)
			p.Role, p.Timeline, p.WALLocation = "master", 2, i64(pgFrontier+4096)
			p.ReceivedLocation, p.ReplayedLocation = nil, nil
			pg(o, 0).Replication = pg(o, 0).Replication[:1]
		},
		codes: []string{"primary_split"},
	},
	{
		name: "patroni two pods labelled master", control: false, fail: false,
		mutate: func(o *model.Observation) { o.Members[1].Pod.RoleLabel = "master" },
		codes:  []string{"primary_split"},
	},
	{
		name: "patroni lock stale", control: false, fail: false,
		mutate: func(o *model.Observation) { o.Cluster.Patroni.LockRenew = now.Add(-45 * time.Second) },
		codes:  []string{"leader_lock_stale pg-0"},
	},
	{
		name: "patroni lock just past ttl is within the clock allowance", control: true, fail: true,
		mutate: func(o *model.Observation) { o.Cluster.Patroni.LockRenew = now.Add(-31 * time.Second) },
	},
	{
		name: "patroni ConfigMaps unreadable: the lock is unknown, not free", control: false, fail: false,
		mutate: func(o *model.Observation) {
			o.Cluster.Patroni = &model.PatroniClusterFacts{Scope: "pg", RoleLabel: "role", RESTPort: 8008, ObjectsErr: "forbidden"}
		},
		codes: []string{"leader_lock_unknown"},
	},
	{
		name: "patroni no leader ConfigMap (use_endpoints, another scope)", control: false, fail: false,
		mutate: func(o *model.Observation) {
			o.Cluster.Patroni.LockFound, o.Cluster.Patroni.LockHolder = false, ""
		},
		codes: []string{"leader_lock_unknown"},
	},
	{
		name: "patroni lock free while a primary runs", control: false, fail: false,
		mutate: func(o *model.Observation) { o.Cluster.Patroni.LockHolder = "" },
		codes:  []string{"leader_mismatch pg-0"},
	},
	{
		name: "patroni lock names another member", control: false, fail: false,
		mutate: func(o *model.Observation) { o.Cluster.Patroni.LockHolder = "pg-1" },
		codes:  []string{"leader_mismatch pg-0"},
	},
	{
		name: "patroni primary's Service points elsewhere", control: false, fail: false,
		mutate: func(o *model.Observation) { o.ClientEndpoints.Pods = []string{"pg-1"} },
		codes:  []string{"client_endpoints_missing"},
	},
	{
		name: "patroni replica absent from replication", control: true, fail: false,
		mutate: func(o *model.Observation) { pg(o, 0).Replication = pg(o, 0).Replication[:1] },
		codes:  []string{"replica_not_streaming pg-2"},
	},
	{
		name: "patroni replica on a forked timeline (section 6.8)", control: true, fail: false,
		mutate: func(o *model.Observation) {
			pg(o, 0).Replication = pg(o, 0).Replication[:1]
			pg(o, 2).ReceivedLocation, pg(o, 2).ReplayedLocation = i64(pgFrontier-88848), i64(pgFrontier-10)
		},
		codes:  []string{"replica_not_streaming pg-2", "replica_diverged pg-2"},
		phases: map[string]model.Phase{"pg-2": model.PhaseDiverged},
	},
	{
		name: "patroni streaming replica read a little ahead (members are probed in parallel)", control: true, fail: true,
		mutate: func(o *model.Observation) { pg(o, 1).ReplayedLocation = i64(pgFrontier + 2048) },
		phases: map[string]model.Phase{"pg-1": model.PhaseMember},
	},
	{
		name: "patroni streaming replica far ahead of the primary", control: true, fail: false,
		mutate: func(o *model.Observation) { pg(o, 1).ReplayedLocation = i64(pgFrontier + 5<<20) },
		codes:  []string{"replica_diverged pg-1"},
		phases: map[string]model.Phase{"pg-1": model.PhaseDiverged},
	},
	{
		name: "patroni replica ahead and not streaming", control: true, fail: false,
		mutate: func(o *model.Observation) {
			pg(o, 1).ReplayedLocation = i64(pgFrontier + 2048)
			pg(o, 0).Replication = pg(o, 0).Replication[1:]
		},
		codes:  []string{"replica_diverged pg-1", "replica_not_streaming pg-1"},
		phases: map[string]model.Phase{"pg-1": model.PhaseDiverged},
	},
	{
		name: "patroni streaming replica's cached timeline trails a switchover", control: true, fail: true,
		mutate: func(o *model.Observation) { pg(o, 0).Timeline = 2 },
	},
	{
		name: "patroni replica on a timeline above the primary's", control: true, fail: false,
		mutate: func(o *model.Observation) { pg(o, 2).Timeline = 3 },
		codes:  []string{"replica_diverged pg-2"},
	},
	{
		name: "patroni foreign system identifier", control: false, fail: false,
		mutate: func(o *model.Observation) {
			pg(o, 2).SystemID = pgOtherSystem
			o.Members[2].Engine.ClusterID = pgOtherSystem
		},
		codes:  []string{"system_id_split"},
		phases: map[string]model.Phase{"pg-2": model.PhaseDiverged},
	},
	{
		name: "patroni paused", control: true, fail: false,
		mutate: func(o *model.Observation) { o.Cluster.Patroni.Paused = true },
		codes:  []string{"maintenance_paused"},
	},
	{
		name: "patroni synchronous mode without a sync standby", control: true, fail: false,
		mutate: func(o *model.Observation) { o.Cluster.Patroni.SynchronousMode = true },
		codes:  []string{"sync_standby_missing"},
	},
	{
		name: "patroni synchronous mode with a streaming sync standby", control: true, fail: true,
		mutate: func(o *model.Observation) {
			o.Cluster.Patroni.SynchronousMode = true
			pg(o, 0).Replication[0].SyncState = "sync"
		},
	},
	{
		name: "patroni pending restart is information", control: true, fail: true,
		mutate: func(o *model.Observation) { pg(o, 1).PendingRestart = true },
		codes:  []string{"pending_restart pg-1"},
	},
	{
		name: "patroni replica without xlog (status query failed)", control: true, fail: false,
		mutate: func(o *model.Observation) {
			pg(o, 1).State, pg(o, 1).ReceivedLocation, pg(o, 1).ReplayedLocation = "unknown", nil, nil
		},
		codes: []string{"lag_unknown pg-1"},
		lags:  map[string]int64{"pg-1": -1},
	},
	{
		name: "patroni PDB lets two go", control: true, fail: false,
		mutate: func(o *model.Observation) { o.PDB.MaxUnavailable = 2 },
		codes:  []string{"pdb_allows_quorum_loss"},
		detail: "lets 2 pods of 3 go at once",
	},
	{
		name: "patroni PDB with minAvailable 1 of 3 (Crunchy PGO's default)", control: true, fail: false,
		mutate: func(o *model.Observation) { o.PDB.MaxUnavailable, o.PDB.MinAvailable = -1, 1 },
		codes:  []string{"pdb_allows_quorum_loss"},
		detail: "lets 2 pods of 3 go at once",
	},
	{
		name: "patroni two members on one node", control: true, fail: false,
		mutate: func(o *model.Observation) { o.Members[1].Pod.Node = "kwok-node-0" },
		codes:  []string{"members_colocated"},
	},
	{
		name: "patroni the postgresql says Running while the primary is frozen and its lock stale", control: false, fail: false,
		mutate: func(o *model.Observation) {
			zalandoRunning(o)
			o.Cluster.Patroni.LockRenew = now.Add(-45 * time.Second)
			o.Members[0].Engine = &model.EngineFacts{Failure: model.ProbeFailureTimeout, Err: "no reply", ProbedAt: now.Add(-2 * time.Second)}
		},
		codes:  []string{"leader_lock_stale pg-0", "member_unreachable pg-0", "primary_missing", "cr_status_stale"},
		detail: "postgresql pg says Running but no member answers",
	},
	{
		name: "patroni the postgresql's Running is not called stale while the lock is fresh", control: false, fail: false,
		mutate: func(o *model.Observation) {
			zalandoRunning(o)
			o.Members[0].Engine = &model.EngineFacts{Failure: model.ProbeFailureTimeout, Err: "no reply", ProbedAt: now.Add(-2 * time.Second)}
		},
		codes: []string{"member_unreachable pg-0", "primary_missing"},
	},
	{
		name: "patroni the postgresql's Running is not called stale while a running member went unasked", control: false, fail: false,
		mutate: func(o *model.Observation) {
			zalandoRunning(o)
			o.Cluster.Patroni.LockRenew = now.Add(-45 * time.Second)
			o.Members[0].Engine = &model.EngineFacts{Failure: model.ProbeFailureCredentials, Err: "forbidden", ProbedAt: now.Add(-2 * time.Second)}
		},
		codes: []string{"leader_lock_stale pg-0", "credentials_unavailable pg-0", "primary_missing"},
	},
	{
		name: "patroni not probed: the lock and pause still speak", control: false, fail: false,
		mutate: func(o *model.Observation) {
			o.EngineProbed = false
			o.Cluster.Patroni.LockRenew = now.Add(-time.Minute)
		},
		codes: []string{"leader_lock_stale pg-0", "lag_unknown pg-0", "lag_unknown pg-1", "lag_unknown pg-2"},
	},
}

func init() {
	for _, r := range pgRows {
		mutate := r.mutate
		r.mutate = func(o *model.Observation) {
			*o = pgHealthy()
			mutate(o)
		}
		rows = append(rows, r)
	}
}

// zalandoRunning has Zalando's postgresql say Running beside o.
func zalandoRunning(o *model.Observation) {
	up := true
	o.Cluster.Operator = &model.OperatorFacts{Kind: "postgresql", Name: "pg", AvailableType: "PostgresClusterStatus", Status: "Running", Available: &up}
}
