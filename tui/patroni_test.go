package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	patroniengine "github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/model"
)

func i64p(n int64) *int64 { return &n }

// patroniObs is a three-member Patroni cluster led by <name>-0, whose
// replica <name>-2 has stalled replay 6.4 MiB behind the primary.
func patroniObs(ns, name string) model.Observation {
	obs := model.Observation{
		At: now,
		Cluster: model.ClusterFacts{
			Namespace: ns, Name: name, Engine: patroniengine.Name, UID: "sts-" + name,
			Replicas: 3, ReadyReplicas: 3, CreatedAt: now.Add(-24 * time.Hour),
			Template: model.TemplateFacts{ClientPort: 8008, Container: "patroni"}, Shape: model.ShapeSelfRegistering,
			Patroni: &model.PatroniClusterFacts{Scope: name, RoleLabel: "role", RESTPort: 8008, LockFound: true, LockHolder: name + "-0",
				LockRenew: now.Add(-4 * time.Second), LockTTL: 30 * time.Second, ConfigFound: true, MaximumLagOnFailover: 1 << 20, Initialize: "7714413371406231513"},
		},
		PDB:             &model.PDBFacts{Name: name, MinAvailable: -1, MaxUnavailable: 1},
		ClientEndpoints: &model.EndpointFacts{Service: name, Ready: 1, Total: 1, Pods: []string{name + "-0"}},
		EngineProbed:    true,
	}
	const frontier = 167772160
	for i := range 3 {
		m := fmt.Sprintf("%s-%d", name, i)
		p := &model.PatroniFacts{Role: "replica", State: "running", Timeline: 2, SystemID: "7714413371406231513",
			ReceivedLocation: i64p(frontier), ReplayedLocation: i64p(frontier), ServerVersion: 150018, ViewLeader: name + "-0"}
		role := "replica"
		if i == 0 {
			role = "master"
			p.Role, p.ReceivedLocation, p.ReplayedLocation, p.WALLocation = "master", nil, nil, i64p(frontier)
			p.Replication = []model.PatroniReplication{{Name: name + "-1", State: "streaming", SyncState: "async"}, {Name: name + "-2", State: "streaming", SyncState: "async"}}
		}
		if i == 2 {
			p.ReplayedLocation = i64p(frontier - 6_700_000)
		}
		obs.Members = append(obs.Members, model.Member{
			Name: m, Ordinal: i,
			Pod: &model.PodFacts{Name: m, UID: "uid-" + m, Node: fmt.Sprintf("node-%d", i+1), Phase: "Running",
				Started: true, Running: true, Ready: true, EverStarted: true, CreatedAt: now.Add(-time.Hour), RoleLabel: role},
			PVC:    &model.PVCFacts{Name: "pgdata-" + m, Phase: "Bound"},
			Engine: &model.EngineFacts{Reachable: true, MemberID: m, ClusterID: p.SystemID, LeaderID: name + "-0", Version: "15.18", Patroni: p, ProbedAt: now},
		})
	}
	return obs
}

// TestPatroniViews: a Patroni cluster shows Patroni's roles, lag in bytes
// of WAL against the primary's position, the leader lock, and the
// primary's replication list instead of raft learners.
func TestPatroniViews(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "db"}, Deps{}, patroniObs("db", "pg"))
	m = press(t, m, "enter")
	members := frame(m)
	for _, want := range []string{"patroni · self-registering · leader pg-0", "lock pg-0, renewed 4s ago", "primary", "replica", "6.4MiB", "replica_lagging", "STATE", "running", "TL", "frontier 0/A000000"} {
		if !strings.Contains(members, want) {
			t.Errorf("members view lacks %q:\n%s", want, members)
		}
	}
	m = press(t, m, "3")
	readiness := frame(m)
	for _, want := range []string{"frontier: WAL position 0/A000000 of primary pg-0", "lag threshold 1048576 bytes of WAL",
		"Replication", "pg-1: streaming from the primary (async)", "pg-2: streaming from the primary (async)"} {
		if !strings.Contains(readiness, want) {
			t.Errorf("readiness view lacks %q:\n%s", want, readiness)
		}
	}
	if strings.Contains(readiness, "Learners") {
		t.Errorf("a Patroni cluster has no learners:\n%s", readiness)
	}
}
