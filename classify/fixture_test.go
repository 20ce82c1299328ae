package classify

import (
	"fmt"
	"time"

	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
)

// now is the fixed clock of every test.
var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const (
	clusterID = "cdf818194e3a8c32"
	otherID   = "ff00ee11dd22cc33"
)

var memberIDs = []string{"8e9e05c52164694d", "91bc3c398fb3c146", "fd422379fda50e48", "a1b2c3d4e5f60718", "0f1e2d3c4b5a6978"}

func peerURL(i int) string {
	return fmt.Sprintf("http://etcd-%d.etcd-headless.db.svc.cluster.local:2380", i)
}

func peers(n int) []model.Peer {
	out := make([]model.Peer, n)
	for i := range out {
		out[i] = model.Peer{ID: memberIDs[i], Name: fmt.Sprintf("etcd-%d", i), PeerURLs: []string{peerURL(i)},
			ClientURLs: []string{fmt.Sprintf("http://etcd-%d.etcd-headless.db.svc.cluster.local:2379", i)}}
	}
	return out
}

// healthy is a 3-member static-existing etcd cluster, every member a
// caught-up voter, etcd-0 leading, observed at now.
func healthy() model.Observation {
	return healthyN(3)
}

func healthyN(n int) model.Observation {
	var ic []model.InitialClusterEntry
	for i := 0; i < n; i++ {
		ic = append(ic, model.InitialClusterEntry{Name: fmt.Sprintf("etcd-%d", i), PeerURL: peerURL(i)})
	}
	obs := model.Observation{
		At: now,
		Cluster: model.ClusterFacts{
			Namespace: "db", Name: "etcd", Engine: etcdengine.Name, UID: "sts-uid", ResourceVersion: "500",
			Replicas: n, ReadyReplicas: n, CreatedAt: now.Add(-72 * time.Hour), ServiceName: "etcd-headless",
			Template: model.TemplateFacts{
				InitialClusterState: "existing", InitialClusterStateFrom: "arg", ClientPort: 2379,
				Image: "registry.k8s.io/etcd:3.6.16-0", Container: "etcd",
				InitialCluster: ic, InitialClusterDecoded: true,
			},
			Shape:          model.ShapeStaticExisting,
			UpdateRevision: "etcd-rev1",
		},
		EngineProbed: true,
	}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("etcd-%d", i)
		obs.Members = append(obs.Members, model.Member{
			Name: name, Ordinal: i,
			Pod: &model.PodFacts{Name: name, UID: fmt.Sprintf("pod-uid-%d", i), ResourceVersion: fmt.Sprintf("10%d", i),
				Node: fmt.Sprintf("node-%d", i), Phase: "Running", Started: true, Running: true, Ready: true,
				EverStarted: true, CreatedAt: now.Add(-72 * time.Hour), Revision: "etcd-rev1", Fingerprint: fmt.Sprintf("podfp%d", i)},
			PVC: &model.PVCFacts{Name: "data-" + name, UID: fmt.Sprintf("pvc-uid-%d", i), ResourceVersion: fmt.Sprintf("20%d", i), Phase: "Bound", Fingerprint: fmt.Sprintf("pvcfp%d", i)},
			Engine: &model.EngineFacts{Reachable: true, MemberID: memberIDs[i], ClusterID: clusterID, LeaderID: memberIDs[0],
				RaftTerm: 4, RaftIndex: 5000, RaftApplied: 5000, Version: "3.6.16", Peers: peers(n), ProbedAt: now},
		})
	}
	return obs
}

// setPeers gives every answering member the same member list.
func setPeers(obs *model.Observation, list []model.Peer) {
	for i := range obs.Members {
		if e := obs.Members[i].Engine; e != nil && e.Reachable && !e.IsLearner {
			e.Peers = append([]model.Peer(nil), list...)
		}
	}
}

// down makes member i unreachable (its process is gone, pod crash-loops).
func down(obs *model.Observation, i int) {
	m := &obs.Members[i]
	m.Engine = &model.EngineFacts{Reachable: false, Failure: model.ProbeFailureConnect, Err: "connection refused", ProbedAt: now}
	m.Pod.Ready, m.Pod.Running, m.Pod.Started = false, false, false
	m.Pod.Restarts = 7
	m.Pod.Waiting, m.Pod.WaitingReason = model.WaitingCrashLoop, "CrashLoopBackOff"
}

// withoutPeer removes the member list entry with id.
func withoutPeer(list []model.Peer, id string) []model.Peer {
	var out []model.Peer
	for _, p := range list {
		if p.ID != id {
			out = append(out, p)
		}
	}
	return out
}

// inProgress is a ledger entry of a replace of etcd-1 that recorded the
// original pod, volume and member.
func inProgress() model.LedgerEntry {
	return model.LedgerEntry{
		ID: "replace.etcd-1.20261129t115900z.ab12", Action: model.ActionReplace, Member: "etcd-1",
		Holder: "hactl/host/123/ab12", State: model.EntryInProgress, Phase: model.ActionPhaseRemoving,
		StartedAt: now.Add(-time.Minute), UpdatedAt: now.Add(-30 * time.Second),
		Replaced: model.Replaced{PodUID: "pod-uid-1", PVCUID: "pvc-uid-1", MemberID: memberIDs[1], PeerURLs: []string{peerURL(1)}},
	}
}

const learnerID = "1234abcd5678ef90"

func ptr[T any](v T) *T { return &v }

// restorable makes obs a cluster a restore can act on: Parallel pods, a
// data directory inside its volume.
func restorable(obs *model.Observation) {
	obs.Cluster.PodManagementPolicy = "Parallel"
	obs.Cluster.Fingerprint = "stsfp"
	t := &obs.Cluster.Template
	t.DataDir, t.DataVolume, t.DataMount = "/var/run/etcd/default.etcd", "data", "/var/run/etcd"
}

// lostQuorum: members 1 and 2 are down; 0 answers alone, no leader.
func lostQuorum(obs *model.Observation) {
	restorable(obs)
	down(obs, 1)
	down(obs, 2)
	obs.Members[0].Engine.LeaderID = ""
}

const genID = "nightly-1"

var restoreIntent = model.Intent{Action: model.ActionRestore, Options: model.ActionOptions{Generation: genID, SeedStore: "s3://b",
	Source: &model.GenerationFacts{Generation: genID, Engine: etcdengine.Name, ClusterID: clusterID, Revision: 4000, Digest: genDigest}}}

const genDigest = "sha256:6c1f0e6a"

// restoreEntry is the ledger entry of a restore in progress.
func restoreEntry(receipts ...model.StepKind) model.LedgerEntry {
	e := model.LedgerEntry{ID: "restore.20261129t115900z.cd34", Action: model.ActionRestore, Holder: "hactl/host/1/cd34",
		State: model.EntryInProgress, Phase: model.ActionPhaseRemoving, StartedAt: now.Add(-time.Minute), UpdatedAt: now,
		Generation: genID, Digest: genDigest, Replicas: 3, FromClusterID: clusterID}
	for i, k := range receipts {
		e.Receipts = append(e.Receipts, model.Receipt{Seq: i, Step: k, Outcome: model.OutcomeDone})
	}
	return e
}

// restorePods adds one restore pod per member in phase.
func restorePods(obs *model.Observation, action string, phases ...string) {
	for i, ph := range phases {
		name := fmt.Sprintf("etcd-%d", i)
		obs.Cluster.RestorePods = append(obs.Cluster.RestorePods, model.RestorePodFacts{
			Name: "hactl-restore-" + name, UID: fmt.Sprintf("rp-uid-%d", i), ResourceVersion: fmt.Sprintf("90%d", i),
			Member: name, Generation: genID, Action: action, Phase: ph, Fingerprint: "rpfp"})
		if ph == "Failed" {
			obs.Cluster.RestorePods[len(obs.Cluster.RestorePods)-1].Message = "refused: checksum mismatch in member/snap/db"
		}
	}
}

// scaledToZero: the StatefulSet wants no replicas and its pods are gone.
func scaledToZero(obs *model.Observation) {
	obs.Cluster.Replicas = 0
	for i := range obs.Members {
		obs.Members[i].Pod, obs.Members[i].Engine = nil, nil
	}
}
