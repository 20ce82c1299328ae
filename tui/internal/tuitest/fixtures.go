package tuitest

import (
	"errors"
	"fmt"
	"maps"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	patroniengine "github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// Now is the fixed clock of the tests.
var Now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Clock returns Now.
func Clock() time.Time { return Now }

// ClusterID is the etcd fixtures' cluster ID.
const ClusterID = "8e9e05c52164694d"

// MemberID is the etcd fixtures' ID of member i.
func MemberID(i int) string { return fmt.Sprintf("%016x", 0x1a2b3c4d5e6f7081*uint64(i+3)) }

// Views are the views of the engines hactl ships, as the faces hand
// them (engine/registry).
var Views = engine.Views(registry.Engines())

// Judged is o with the verdict rules of the engines hactl ships handed in,
// as the faces hand them (engine/registry), beside any o holds already.
func Judged(o model.VerdictOptions) model.VerdictOptions {
	rules := engine.VerdictRules(registry.Engines())
	maps.Copy(rules, o.Rules)
	o.Rules = rules
	return o
}

// Evaluate judges o at Now with the shipped engines' rules.
func Evaluate(o model.Observation) status.Result {
	return status.Evaluate(o, Now, Judged(model.VerdictOptions{}))
}

func peers(name string, n int) []model.Peer {
	out := make([]model.Peer, n)
	for i := range out {
		m := fmt.Sprintf("%s-%d", name, i)
		out[i] = model.Peer{ID: MemberID(i), Name: m, PeerURLs: []string{fmt.Sprintf("http://%s.%s-headless.db.svc:2380", m, name)}}
	}
	return out
}

func initialCluster(name string, n int) []model.InitialClusterEntry {
	var out []model.InitialClusterEntry
	for _, p := range peers(name, n) {
		out = append(out, model.InitialClusterEntry{Name: p.Name, PeerURL: p.PeerURLs[0]})
	}
	return out
}

// HealthyObs is a failover-ready 3-member etcd cluster led by member 0.
func HealthyObs(ns, name string) model.Observation {
	obs := model.Observation{
		At: Now,
		Cluster: model.ClusterFacts{
			Namespace: ns, Name: name, Engine: etcdengine.Name, UID: "sts-" + name, ResourceVersion: "1000",
			Replicas: 3, ReadyReplicas: 3, CreatedAt: Now.Add(-24 * time.Hour), ServiceName: name + "-headless",
			Template: model.TemplateFacts{InitialClusterState: "existing", InitialClusterStateFrom: "arg", ClientPort: 2379,
				Container: "etcd", Image: "registry.k8s.io/etcd:3.6.16-0", InitialClusterDecoded: true, InitialCluster: initialCluster(name, 3)},
			Shape: model.ShapeStaticExisting,
		},
		PDB:             &model.PDBFacts{Name: name, MinAvailable: -1, MaxUnavailable: 1},
		ClientEndpoints: &model.EndpointFacts{Service: name, Ready: 3, Total: 3},
		EngineProbed:    true,
	}
	for i := range 3 {
		pod := fmt.Sprintf("%s-%d", name, i)
		e := &model.EngineFacts{
			Reachable: true, MemberID: MemberID(i), ClusterID: ClusterID, LeaderID: MemberID(0),
			RaftTerm: 7, RaftIndex: 5000, RaftApplied: 4990, Version: "3.6.16", Peers: peers(name, 3), ProbedAt: Now,
		}
		if i == 0 {
			e.RaftApplied = 5000
		}
		obs.Members = append(obs.Members, model.Member{
			Name: pod, Ordinal: i,
			Pod: &model.PodFacts{
				Name: pod, UID: "uid-" + pod, ResourceVersion: "100", Node: fmt.Sprintf("node-%c", 'a'+i), Phase: "Running",
				Started: true, Running: true, Ready: true, EverStarted: true, CreatedAt: Now.Add(-90 * time.Minute),
			},
			PVC:    &model.PVCFacts{Name: "data-" + pod, UID: "pvc-" + pod, ResourceVersion: "55", Phase: "Bound"},
			Engine: e,
		})
	}
	return obs
}

// DegradedObs: member 2's container runs but is not ready and does not
// answer.
func DegradedObs(ns, name string) model.Observation {
	o := HealthyObs(ns, name)
	m := &o.Members[2]
	m.Pod.Ready = false
	m.Pod.Restarts = 4
	m.Engine = &model.EngineFacts{Err: "dial: connection refused", Failure: model.ProbeFailureConnect, ProbedAt: Now}
	o.ClientEndpoints.Ready = 2
	o.Events = []model.EventFacts{
		{Type: "Warning", Reason: "Unhealthy", Object: "Pod/" + m.Name, Message: "Readiness probe failed: connection refused", Count: 12, Last: Now.Add(-time.Minute)},
	}
	return o
}

// LearnerObs: member 2 is a learner 4000 entries behind.
func LearnerObs(ns, name string) model.Observation {
	o := HealthyObs(ns, name)
	e := o.Members[2].Engine
	e.IsLearner = true
	e.RaftApplied = 1000
	for i := range o.Members {
		for j := range o.Members[i].Engine.Peers {
			if j == 2 {
				o.Members[i].Engine.Peers[j].IsLearner = true
			}
		}
	}
	return o
}

func i64p(n int64) *int64 { return &n }

// PatroniObs is a three-member Patroni cluster led by <name>-0, whose
// replica <name>-2 has stalled replay 6.4 MiB behind the primary.
func PatroniObs(ns, name string) model.Observation {
	obs := model.Observation{
		At: Now,
		Cluster: model.ClusterFacts{
			Namespace: ns, Name: name, Engine: patroniengine.Name, UID: "sts-" + name,
			Replicas: 3, ReadyReplicas: 3, CreatedAt: Now.Add(-24 * time.Hour),
			Template: model.TemplateFacts{ClientPort: 8008, Container: "patroni"}, Shape: model.ShapeSelfRegistering,
			Patroni: &model.PatroniClusterFacts{Scope: name, RoleLabel: "role", RESTPort: 8008, LockFound: true, LockHolder: name + "-0",
				LockRenew: Now.Add(-4 * time.Second), LockTTL: 30 * time.Second, ConfigFound: true, MaximumLagOnFailover: 1 << 20, Initialize: "7714413371406231513"},
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
				Started: true, Running: true, Ready: true, EverStarted: true, CreatedAt: Now.Add(-time.Hour), RoleLabel: role},
			PVC:    &model.PVCFacts{Name: "pgdata-" + m, Phase: "Bound"},
			Engine: &model.EngineFacts{Reachable: true, MemberID: m, ClusterID: p.SystemID, LeaderID: name + "-0", Version: "15.18", Patroni: p, ProbedAt: Now},
		})
	}
	return obs
}

// KeyMsg is the press of one key by name ("down", "enter", "q", "x").
func KeyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	}
	r := []rune(k)
	if len(r) != 1 {
		panic("unknown key " + k)
	}
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

// ClassifyOn decides with the real classifier on fixed observations, as
// the executor would on a fresh one.
func ClassifyOn(obs ...model.Observation) func(common.Request) (model.Decision, error) {
	return func(req common.Request) (model.Decision, error) {
		for _, o := range obs {
			if o.Cluster.Namespace == req.Namespace && o.Cluster.Name == req.Cluster {
				in := req.Intent
				in.Options.Verdict = Judged(in.Options.Verdict)
				return classify.Classify(o, in, Now), nil
			}
		}
		return model.Decision{}, errors.New("no such cluster")
	}
}

// RestoreGens are etcd-a's generations: two published, one partial (the
// newest) and the oldest published listed first.
func RestoreGens() []common.Generation {
	return []common.Generation{
		{ID: "etcd-a-old", Created: Now.Add(-48 * time.Hour), SourceMember: "etcd-a-1", Revision: 3000, Bytes: 2 << 20, Complete: true},
		{ID: "etcd-a-partial", Created: Now.Add(-10 * time.Minute), SourceMember: "etcd-a-0", Revision: 5100, Complete: false},
		{ID: "etcd-a-new", Created: Now.Add(-2 * time.Hour), SourceMember: "etcd-a-0", Revision: 4900, Bytes: 3 << 20, Complete: true},
	}
}
