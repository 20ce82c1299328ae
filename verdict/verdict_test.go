package verdict

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const (
	clusterID = "cdf818194e3a8c32"
	otherID   = "5b2a4b9c0e1f7d21"
)

// memberID returns the etcd member ID of etcd-<i>.
func memberID(i int) string { return fmt.Sprintf("%016x", 0xa1a1a1a100000000+uint64(i)+1) }

func peer(i int) model.Peer {
	return model.Peer{
		ID:         memberID(i),
		Name:       fmt.Sprintf("etcd-%d", i),
		PeerURLs:   []string{fmt.Sprintf("https://etcd-%d.etcd-headless.db.svc:2380", i)},
		ClientURLs: []string{fmt.Sprintf("https://etcd-%d.etcd-headless.db.svc:2379", i)},
	}
}

// operatorSays is an operator's word on o as cozystack's EtcdCluster and
// EtcdMembers would say it: every member recorded by the ID it has, the
// cluster Available or not.
func operatorSays(o *model.Observation, available bool) *model.OperatorFacts {
	op := &model.OperatorFacts{Kind: "EtcdCluster", Name: o.Cluster.Name, MemberKind: "EtcdMember", ClusterID: clusterID, Available: &available, ReadyMembers: len(o.Members)}
	op.AvailableReason = "QuorumHealthy"
	if !available {
		op.AvailableReason = "QuorumLost"
	}
	for i, m := range o.Members {
		op.Members = append(op.Members, model.OperatorMember{Name: m.Name, MemberID: memberID(i), Voter: true, Seed: i == 0})
	}
	return op
}

// druidSays is etcd-druid's word on o as its Etcd's status says it:
// Ready, every member recorded by the ID it has.
func druidSays(o *model.Observation) *model.OperatorFacts {
	ready := true
	op := &model.OperatorFacts{Kind: "Etcd", Name: o.Cluster.Name, AvailableType: "Ready", Available: &ready, AvailableReason: "Quorate", ReadyMembers: len(o.Members), RemovesByName: true}
	for i, m := range o.Members {
		op.Members = append(op.Members, model.OperatorMember{Name: m.Name, MemberID: memberID(i), Voter: true})
	}
	return op
}

func peers(n int) []model.Peer {
	out := make([]model.Peer, n)
	for i := range out {
		out[i] = peer(i)
	}
	return out
}

// newMember returns a healthy running member etcd-<i> of an n-member
// cluster led by etcd-0, on its own node.
func newMember(i, n int) model.Member {
	name := fmt.Sprintf("etcd-%d", i)
	e := &model.EngineFacts{
		Reachable:   true,
		MemberID:    memberID(i),
		ClusterID:   clusterID,
		LeaderID:    memberID(0),
		RaftTerm:    7,
		RaftIndex:   4998,
		RaftApplied: 4990,
		DBSize:      100 << 20,
		DBSizeInUse: 80 << 20,
		Version:     "3.6.16",
		Peers:       peers(n),
		ProbedAt:    now.Add(-2 * time.Second),
	}
	if i == 0 {
		e.RaftIndex, e.RaftApplied = 5000, 5000
	}
	return model.Member{
		Name:    name,
		Ordinal: i,
		Pod: &model.PodFacts{
			Name: name, UID: "pod-uid-" + name, ResourceVersion: "100",
			Node: fmt.Sprintf("kwok-node-%d", i), Phase: "Running",
			Started: true, Running: true, Ready: true, EverStarted: true,
			CreatedAt: now.Add(-24 * time.Hour),
		},
		PVC:    &model.PVCFacts{Name: "data-" + name, UID: "pvc-uid-" + name, ResourceVersion: "50", Phase: "Bound"},
		Engine: e,
	}
}

// healthy is the base observation: three members, etcd-0 leading, all
// ready, one per node, PDB maxUnavailable 1, client endpoints ready.
func healthy() model.Observation {
	obs := model.Observation{
		At: now.Add(-2 * time.Second),
		Cluster: model.ClusterFacts{
			Namespace: "db", Name: "etcd", Engine: etcdengine.Name,
			UID: "sts-uid", ResourceVersion: "1000",
			Replicas: 3, ReadyReplicas: 3,
			CreatedAt:   now.Add(-24 * time.Hour),
			ServiceName: "etcd-headless",
			Template:    model.TemplateFacts{InitialClusterState: "existing", InitialClusterStateFrom: "arg", ClientPort: 2379, Image: "registry.k8s.io/etcd:3.6.16"},
			Shape:       model.ShapeStaticExisting,
		},
		PDB:             &model.PDBFacts{Name: "etcd", MinAvailable: -1, MaxUnavailable: 1},
		ClientEndpoints: &model.EndpointFacts{Service: "etcd-client", Ready: 3, Total: 3},
		EngineProbed:    true,
	}
	for i := range 3 {
		obs.Members = append(obs.Members, newMember(i, 3))
	}
	return obs
}

func eng(o *model.Observation, i int) *model.EngineFacts { return o.Members[i].Engine }

func unreachable(o *model.Observation, i int, f model.ProbeFailure) {
	o.Members[i].Engine = &model.EngineFacts{Reachable: false, Failure: f, Err: "context deadline exceeded", ProbedAt: now.Add(-2 * time.Second)}
}

// seed000 turns etcd-i into a member that re-bootstrapped alone on an
// empty data dir: healthy by its own account, leading a one-member cluster.
func seed000(o *model.Observation, i int, cluster string) {
	e := eng(o, i)
	e.ClusterID = cluster
	e.LeaderID = e.MemberID
	e.RaftTerm, e.RaftIndex, e.RaftApplied = 2, 4, 4
	e.Peers = []model.Peer{peer(i)}
}

func setPeers(o *model.Observation, ps []model.Peer) {
	for i := range o.Members {
		if e := o.Members[i].Engine; e != nil && e.Reachable {
			e.Peers = slices.Clone(ps)
		}
	}
}

type row struct {
	name    string
	mutate  func(o *model.Observation)
	opts    model.VerdictOptions
	control bool
	fail    bool
	// codes is the exact set of reasons: "code" for cluster-wide ones,
	// "code member" for per-member ones.
	codes []string
	// phases and lags, when set, are asserted per member; a lag of -1
	// asserts a nil (unknown) lag.
	phases map[string]model.Phase
	lags   map[string]int64
	// detail, when set, must be a substring of some reason's detail.
	detail string
}

var rows = []row{
	{
		name: "healthy", control: true, fail: true,
		mutate: func(o *model.Observation) {},
		phases: map[string]model.Phase{"etcd-0": model.PhaseMember, "etcd-1": model.PhaseMember, "etcd-2": model.PhaseMember},
		lags:   map[string]int64{"etcd-0": 0, "etcd-1": 10, "etcd-2": 10},
	},

	// --- engine ---
	{
		name:   "an engine hactl has no rules for",
		mutate: func(o *model.Observation) { o.Cluster.Engine = "redis" },
		codes:  []string{"engine_unsupported"}, detail: `engine "redis"`,
		phases: map[string]model.Phase{"etcd-0": model.PhaseUnknown, "etcd-1": model.PhaseUnknown, "etcd-2": model.PhaseUnknown},
		lags:   map[string]int64{"etcd-0": -1, "etcd-1": -1, "etcd-2": -1},
	},

	// --- freshness ---
	{
		name:   "observation older than StaleAfter",
		mutate: func(o *model.Observation) { o.At = now.Add(-45 * time.Second) },
		codes:  []string{"observation_stale"}, detail: "observed 45s ago, older than 30s",
	},
	{
		name:   "observation fresh under a longer StaleAfter",
		mutate: func(o *model.Observation) { o.At = now.Add(-45 * time.Second) },
		opts:   model.VerdictOptions{StaleAfter: time.Minute}, control: true, fail: true,
	},
	{
		name:   "observation without a time",
		mutate: func(o *model.Observation) { o.At = time.Time{} },
		codes:  []string{"observation_stale"},
	},

	// --- pods and volumes ---
	{
		name: "pod missing",
		mutate: func(o *model.Observation) {
			o.Members[2].Pod, o.Members[2].Engine = nil, nil
		},
		control: true, codes: []string{"pod_missing etcd-2"},
		phases: map[string]model.Phase{"etcd-2": model.PhaseAbsent},
	},
	{
		name: "pod never started: image pull unauthorized",
		mutate: func(o *model.Observation) {
			p := o.Members[2].Pod
			p.Phase, p.Started, p.Running, p.Ready, p.EverStarted = "Pending", false, false, false, false
			p.Waiting, p.WaitingReason, p.PullFailure = model.WaitingPullFailure, "ImagePullBackOff", model.PullFailureUnauthorized
			o.Members[2].Engine = nil
		},
		control: true, codes: []string{"pod_never_started etcd-2"},
		phases: map[string]model.Phase{"etcd-2": model.PhasePending},
		detail: "image pull failing (unauthorized): ImagePullBackOff",
	},
	{
		name: "pod unscheduled, claim pending",
		mutate: func(o *model.Observation) {
			p := o.Members[1].Pod
			p.Phase, p.Node, p.Started, p.Running, p.Ready, p.EverStarted = "Pending", "", false, false, false, false
			p.Waiting = model.WaitingUnscheduled
			o.Members[1].PVC.Phase = "Pending"
			o.Members[1].Engine = nil
		},
		control: true, codes: []string{"pod_never_started etcd-1", "pvc_pending etcd-1"},
		detail: "not scheduled to a node",
	},
	{
		name: "pod crash-looping, engine unreachable",
		mutate: func(o *model.Observation) {
			p := o.Members[1].Pod
			p.Running, p.Ready, p.Restarts = false, false, 12
			p.Waiting, p.WaitingReason = model.WaitingCrashLoop, "CrashLoopBackOff"
			unreachable(o, 1, model.ProbeFailureConnect)
		},
		control: true, codes: []string{"pod_crashlooping etcd-1", "member_unreachable etcd-1"},
		phases: map[string]model.Phase{"etcd-1": model.PhaseUnknown},
		detail: "CrashLoopBackOff, 12 restarts",
	},
	{
		name:    "pod running but not ready, engine healthy",
		mutate:  func(o *model.Observation) { o.Members[0].Pod.Ready = false },
		control: true, codes: []string{"pod_not_ready etcd-0"},
		phases: map[string]model.Phase{"etcd-0": model.PhaseMember},
	},
	{
		name:    "pod terminating, still answering",
		mutate:  func(o *model.Observation) { o.Members[1].Pod.DeletionMarked = true },
		control: true, codes: []string{"pod_terminating etcd-1"},
		phases: map[string]model.Phase{"etcd-1": model.PhaseTerminating},
		lags:   map[string]int64{"etcd-1": 10},
	},

	// --- placement and disruption budget ---
	{
		name:    "two of three members on one node",
		mutate:  func(o *model.Observation) { o.Members[1].Pod.Node = "kwok-node-0" },
		control: true, codes: []string{"members_colocated"},
		detail: "2 of 3 members on node kwok-node-0",
	},
	{
		name: "five members, two per node keeps quorum",
		mutate: func(o *model.Observation) {
			o.Cluster.Replicas = 5
			o.PDB.MaxUnavailable = 2
			o.ClientEndpoints.Ready, o.ClientEndpoints.Total = 5, 5
			o.Members = nil
			for i := range 5 {
				m := newMember(i, 5)
				m.Pod.Node = fmt.Sprintf("kwok-node-%d", i/2)
				o.Members = append(o.Members, m)
			}
		},
		control: true, fail: true,
	},
	{
		name: "one voter",
		mutate: func(o *model.Observation) {
			o.Cluster.Replicas = 1
			o.Members = []model.Member{newMember(0, 1)}
		},
		control: true, codes: []string{"members_colocated", "pdb_allows_quorum_loss"},
		phases: map[string]model.Phase{"etcd-0": model.PhaseMember},
	},
	{
		name:    "no PodDisruptionBudget",
		mutate:  func(o *model.Observation) { o.PDB = nil },
		control: true, codes: []string{"pdb_missing"},
	},
	{
		name: "static pods: no budget asked of mirror pods, which no eviction reaches",
		mutate: func(o *model.Observation) {
			o.PDB, o.Cluster.ManagedBy = nil, &model.Manager{Name: "the kubelet", Unevictable: true}
		},
		control: true, fail: true,
	},
	{
		name:    "PDB maxUnavailable 2 of 3",
		mutate:  func(o *model.Observation) { o.PDB.MaxUnavailable = 2 },
		control: true, codes: []string{"pdb_allows_quorum_loss"},
		detail: "lets 2 pods go at once; 3 voters tolerate losing 1",
	},
	{
		name:    "PDB minAvailable 1 of 3",
		mutate:  func(o *model.Observation) { o.PDB.MaxUnavailable, o.PDB.MinAvailable = -1, 1 },
		control: true, codes: []string{"pdb_allows_quorum_loss"},
	},
	{
		name:    "PDB minAvailable 2 of 3",
		mutate:  func(o *model.Observation) { o.PDB.MaxUnavailable, o.PDB.MinAvailable = -1, 2 },
		control: true, fail: true,
	},
	{
		name:    "PDB with neither bound",
		mutate:  func(o *model.Observation) { o.PDB.MaxUnavailable, o.PDB.MinAvailable = -1, -1 },
		control: true, codes: []string{"pdb_allows_quorum_loss"},
	},

	// --- client endpoints ---
	{
		name:   "no client Service",
		mutate: func(o *model.Observation) { o.ClientEndpoints = nil },
		codes:  []string{"client_endpoints_missing"},
	},
	{
		name:   "client Service without ready endpoints",
		mutate: func(o *model.Observation) { o.ClientEndpoints.Ready = 0 },
		codes:  []string{"client_endpoints_missing"}, detail: "0 of 3",
	},
	{
		name: "static pods: no client Service expected (clients are handed the members)",
		mutate: func(o *model.Observation) {
			o.ClientEndpoints, o.Cluster.ManagedBy = nil, &model.Manager{Name: "the kubelet", NoService: true}
		},
		control: true, fail: true,
	},
	{
		name: "static pods: a client Service that exists is still judged",
		mutate: func(o *model.Observation) {
			o.ClientEndpoints.Ready, o.Cluster.ManagedBy = 0, &model.Manager{Name: "the kubelet", NoService: true}
		},
		codes: []string{"client_endpoints_missing"}, detail: "0 of 3",
	},

	// --- bootstrap flags and phases (seed 000) ---
	{
		name: "template hard-codes initial-cluster-state=new on a formed cluster",
		mutate: func(o *model.Observation) {
			o.Cluster.Template.InitialClusterState = "new"
			o.Cluster.Shape = model.ShapeStaticNew
		},
		control: true, codes: []string{"bootstrap_flag_stale"},
		detail: "cluster ID " + clusterID,
	},
	{
		name: "initial-cluster-state=new from env, unknown shape",
		mutate: func(o *model.Observation) {
			o.Cluster.Template.InitialClusterState, o.Cluster.Template.InitialClusterStateFrom = "new", "env"
			o.Cluster.Shape = model.ShapeUnknown
		},
		control: true, codes: []string{"bootstrap_flag_stale"},
	},
	{
		name: "initial-cluster-state=new in a self-registering entrypoint",
		mutate: func(o *model.Observation) {
			o.Cluster.Template.InitialClusterState, o.Cluster.Template.InitialClusterStateFrom = "new", "env"
			o.Cluster.Shape = model.ShapeSelfRegistering
		},
		control: true, fail: true,
	},
	{
		name: "bootstrapping: young StatefulSet, no member answers yet",
		mutate: func(o *model.Observation) {
			o.Cluster.CreatedAt = now.Add(-time.Minute)
			o.Cluster.Template.InitialClusterState = "new"
			o.Cluster.Shape = model.ShapeStaticNew
			o.ClientEndpoints.Ready = 0
			for i := range o.Members {
				o.Members[i].Pod.Ready = false
				unreachable(o, i, model.ProbeFailureConnect)
			}
		},
		codes: []string{
			"client_endpoints_missing", "quorum_unavailable",
			"member_unreachable etcd-0", "member_unreachable etcd-1", "member_unreachable etcd-2",
			"pod_not_ready etcd-0", "pod_not_ready etcd-1", "pod_not_ready etcd-2",
		},
		phases: map[string]model.Phase{"etcd-0": model.PhaseBootstrapping, "etcd-1": model.PhaseBootstrapping, "etcd-2": model.PhaseBootstrapping},
		lags:   map[string]int64{"etcd-0": -1, "etcd-1": -1, "etcd-2": -1},
	},
	{
		name: "no member answers on an old StatefulSet: presumed formed",
		mutate: func(o *model.Observation) {
			o.Cluster.Template.InitialClusterState = "new"
			o.Cluster.Shape = model.ShapeStaticNew
			for i := range o.Members {
				unreachable(o, i, model.ProbeFailureTimeout)
			}
		},
		codes: []string{
			"bootstrap_flag_stale", "quorum_unavailable",
			"member_unreachable etcd-0", "member_unreachable etcd-1", "member_unreachable etcd-2",
		},
		phases: map[string]model.Phase{"etcd-0": model.PhaseUnknown, "etcd-1": model.PhaseUnknown, "etcd-2": model.PhaseUnknown},
		detail: "StatefulSet is 24h0m0s old",
	},
	{
		name: "no member answers on a young StatefulSet with a recorded cluster ID",
		mutate: func(o *model.Observation) {
			o.Cluster.CreatedAt = now.Add(-time.Minute)
			o.Cluster.KnownClusterID = clusterID
			o.Cluster.Template.InitialClusterState = "new"
			for i := range o.Members {
				unreachable(o, i, model.ProbeFailureTimeout)
			}
		},
		codes: []string{
			"bootstrap_flag_stale", "quorum_unavailable",
			"member_unreachable etcd-0", "member_unreachable etcd-1", "member_unreachable etcd-2",
		},
		phases: map[string]model.Phase{"etcd-0": model.PhaseUnknown},
		detail: "recorded cluster ID " + clusterID,
	},

	// --- reachability and quorum ---
	{
		name:    "paused member: 2 of 3 answer",
		mutate:  func(o *model.Observation) { unreachable(o, 2, model.ProbeFailureTimeout) },
		control: true, codes: []string{"member_unreachable etcd-2"},
		phases: map[string]model.Phase{"etcd-2": model.PhaseUnknown, "etcd-1": model.PhaseMember},
		lags:   map[string]int64{"etcd-2": -1, "etcd-1": 10},
		detail: "no answer (timeout): context deadline exceeded",
	},
	{
		name: "static pods: a paused member is found in the list by its node's name (kubeadm names members after nodes)",
		mutate: func(o *model.Observation) {
			o.Cluster.Shape = model.ShapeStaticPods
			ps := peers(3)
			for i := range ps {
				ps[i].Name = o.Members[i].Pod.Node
			}
			setPeers(o, ps)
			unreachable(o, 2, model.ProbeFailureTimeout)
		},
		control: true, codes: []string{"member_unreachable etcd-2"},
		phases: map[string]model.Phase{"etcd-2": model.PhaseUnknown, "etcd-1": model.PhaseMember},
		detail: "no answer (timeout): context deadline exceeded",
	},
	// --- an operator's word (cozystack's EtcdCluster and EtcdMembers) ---
	{
		name: "operator: each member's own pod; the seed's still says new after the cluster formed (seed 000)",
		mutate: func(o *model.Observation) {
			o.Cluster.Shape = model.ShapeOperatorOwned
			for i := range o.Members {
				st := "existing"
				if i == 0 {
					st = "new"
				}
				o.Members[i].Template = &model.TemplateFacts{InitialClusterState: st, InitialClusterStateFrom: "arg"}
			}
			o.Cluster.Operator = operatorSays(o, true)
		},
		control: true, codes: []string{"bootstrap_flag_stale etcd-0"},
		detail: "its pod sets initial-cluster-state=new (arg) but the cluster has formed (cluster ID " + clusterID + ")",
	},
	{
		name: "operator: says Available while no quorum answers (cozystack/etcd-operator#367)",
		mutate: func(o *model.Observation) {
			o.Cluster.Shape = model.ShapeOperatorOwned
			unreachable(o, 1, model.ProbeFailureTimeout)
			unreachable(o, 2, model.ProbeFailureTimeout)
			o.Cluster.Operator = operatorSays(o, true)
		},
		codes:  []string{"quorum_unavailable", "cr_status_stale", "member_unreachable etcd-1", "member_unreachable etcd-2"},
		detail: "EtcdCluster etcd says Available (QuorumHealthy, 3 members ready) but 1 of 3 voters answered; quorum needs 2",
	},
	{
		name: "operator: says not Available while no quorum answers: it tells the truth",
		mutate: func(o *model.Observation) {
			o.Cluster.Shape = model.ShapeOperatorOwned
			unreachable(o, 1, model.ProbeFailureTimeout)
			unreachable(o, 2, model.ProbeFailureTimeout)
			o.Cluster.Operator = operatorSays(o, false)
		},
		codes: []string{"quorum_unavailable", "member_unreachable etcd-1", "member_unreachable etcd-2"},
	},
	{
		name: "operator: says Available while hactl could not ask the members (no credentials): nothing contradicts it",
		mutate: func(o *model.Observation) {
			o.Cluster.Shape = model.ShapeOperatorOwned
			o.Cluster.CreatedAt = now.Add(-time.Minute)
			for i := range o.Members {
				unreachable(o, i, model.ProbeFailureCredentials)
				eng(o, i).Err = "secret db/etcd-operator-client-tls: forbidden"
			}
			o.Cluster.Operator = operatorSays(o, true)
		},
		codes: []string{"credentials_unavailable etcd-0", "credentials_unavailable etcd-1", "credentials_unavailable etcd-2"},
	},
	{
		name: "operator: records another member ID than the member answers with",
		mutate: func(o *model.Observation) {
			o.Cluster.Shape = model.ShapeOperatorOwned
			o.Cluster.Operator = operatorSays(o, true)
			o.Cluster.Operator.Members[2].MemberID = otherID
		},
		control: true, codes: []string{"cr_member_mismatch etcd-2"},
		detail: "the operator records member ID " + otherID + " for it, which answers as " + memberID(2) + ": deleting its EtcdMember would remove " + otherID + " (no member the others list), not it",
	},
	{
		name: "operator: records another cluster ID than the members answer for",
		mutate: func(o *model.Observation) {
			o.Cluster.Shape = model.ShapeOperatorOwned
			o.Cluster.Operator = operatorSays(o, true)
			o.Cluster.Operator.ClusterID = otherID
		},
		control: true, codes: []string{"cr_status_stale"},
		detail: "EtcdCluster etcd records cluster ID " + otherID + "; the members answer for " + clusterID,
	},
	{
		name: "etcd-druid: its Etcd says Ready while no quorum answers (its member Leases lag by minutes)",
		mutate: func(o *model.Observation) {
			o.Cluster.Shape = model.ShapeOperatorOwned
			unreachable(o, 1, model.ProbeFailureTimeout)
			unreachable(o, 2, model.ProbeFailureTimeout)
			o.Cluster.Operator = druidSays(o)
		},
		codes:  []string{"quorum_unavailable", "cr_status_stale", "member_unreachable etcd-1", "member_unreachable etcd-2"},
		detail: "Etcd etcd says Ready (Quorate, 3 members ready) but 1 of 3 voters answered; quorum needs 2",
	},
	{
		name: "etcd-druid: its status records another member ID: stale, but its way removes by name",
		mutate: func(o *model.Observation) {
			o.Cluster.Shape = model.ShapeOperatorOwned
			o.Cluster.Operator = druidSays(o)
			o.Cluster.Operator.Members[2].MemberID = otherID
		},
		control: true, codes: []string{"cr_member_mismatch etcd-2"},
		detail: "Etcd etcd records member ID " + otherID + " (no member the others list) for it, which answers as " + memberID(2) + ": the operator's word on it is stale",
	},
	{
		name: "operator: its resources could not be read: nothing is held against them",
		mutate: func(o *model.Observation) {
			o.Cluster.Shape = model.ShapeOperatorOwned
			o.Cluster.Operator = operatorSays(o, true)
			o.Cluster.Operator.Members[2].MemberID = otherID
			o.Cluster.Operator.Err = "forbidden"
		},
		control: true, fail: true,
	},
	{
		name: "two of three members unreachable",
		mutate: func(o *model.Observation) {
			unreachable(o, 1, model.ProbeFailureTimeout)
			unreachable(o, 2, model.ProbeFailureTimeout)
		},
		codes:  []string{"quorum_unavailable", "member_unreachable etcd-1", "member_unreachable etcd-2"},
		detail: "1 of 3 voters answered; quorum needs 2",
	},
	{
		name:    "leader unreachable: followers' lag is unknown, not 0",
		mutate:  func(o *model.Observation) { unreachable(o, 0, model.ProbeFailureTimeout) },
		control: true,
		codes:   []string{"member_unreachable etcd-0", "lag_unknown etcd-1", "lag_unknown etcd-2"},
		phases:  map[string]model.Phase{"etcd-0": model.PhaseUnknown, "etcd-1": model.PhaseUnknown, "etcd-2": model.PhaseUnknown},
		lags:    map[string]int64{"etcd-0": -1, "etcd-1": -1, "etcd-2": -1},
		detail:  "leader etcd-0 did not answer",
	},
	{
		name: "leader reports raft index 0: no frontier",
		mutate: func(o *model.Observation) {
			eng(o, 0).RaftIndex = 0
		},
		control: true,
		codes:   []string{"lag_unknown etcd-0", "lag_unknown etcd-1", "lag_unknown etcd-2"},
		lags:    map[string]int64{"etcd-1": -1},
		detail:  "reported raft index 0",
	},
	{
		name: "credentials rejected by one member",
		mutate: func(o *model.Observation) {
			unreachable(o, 2, model.ProbeFailureCredentials)
			eng(o, 2).Err = "tls: bad certificate"
		},
		codes:  []string{"credentials_unavailable etcd-2"},
		detail: "credentials missing or rejected: tls: bad certificate",
	},
	{
		name: "no client certificate, a metrics listener: still a credentials failure, saying what the listener says and what stays unknown",
		mutate: func(o *model.Observation) {
			unreachable(o, 2, model.ProbeFailureCredentials)
			eng(o, 2).Err = "tls: certificate required"
			eng(o, 2).Metrics = &model.MetricsFacts{MemberID: memberID(2), HasLeader: true, Applied: 4990, Committed: 5000, Version: "3.6.16", Port: 2381}
		},
		codes:  []string{"credentials_unavailable etcd-2"},
		detail: "its metrics listener (port 2381, no certificate needed) says member " + memberID(2) + ", a follower, has a leader, applied 4990 of 5000 committed, version 3.6.16; its cluster ID, member list, term and alarms stay unknown without a client certificate",
	},
	{
		name: "a serving certificate expiring within the warning window",
		mutate: func(o *model.Observation) {
			eng(o, 1).ServingCerts = []model.CertFacts{{Subject: "CN=etcd-1", Issuer: "CN=etcd-ca", Port: 2379, NotAfter: now.Add(10 * 24 * time.Hour), Verified: true}}
			eng(o, 2).ServingCerts = []model.CertFacts{{Subject: "CN=etcd-2", Issuer: "CN=etcd-ca", Port: 2379, NotAfter: now.Add(300 * 24 * time.Hour), Verified: true}}
		},
		control: true, fail: true,
		codes:  []string{"cert_expiring etcd-1"},
		detail: "the serving certificate on port 2379 (CN=etcd-1, issued by CN=etcd-ca) expires " + now.Add(10*24*time.Hour).UTC().Format(time.RFC3339) + ", in 10d (warning window 30d)",
	},
	{
		name: "a narrower warning window: the same certificate is not reported",
		mutate: func(o *model.Observation) {
			eng(o, 1).ServingCerts = []model.CertFacts{{Subject: "CN=etcd-1", Port: 2379, NotAfter: now.Add(10 * 24 * time.Hour), Verified: true}}
		},
		opts:    model.VerdictOptions{CertWarn: 7 * 24 * time.Hour},
		control: true, fail: true,
		codes: []string{},
	},
	{
		name: "a peer certificate valid only from tomorrow (a clock that disagrees): the member still answers",
		mutate: func(o *model.Observation) {
			eng(o, 0).ServingCerts = []model.CertFacts{{Subject: "CN=etcd-0", Port: 2379, NotAfter: now.Add(300 * 24 * time.Hour)},
				{Subject: "CN=etcd-0-peer", Port: 2380, NotBefore: now.Add(24 * time.Hour), NotAfter: now.Add(400 * 24 * time.Hour)}}
		},
		control: true,
		codes:   []string{"cert_not_yet_valid etcd-0"},
		detail:  "the serving certificate on port 2380 (CN=etcd-0-peer, issued by no issuer) is not valid until " + now.Add(24*time.Hour).UTC().Format(time.RFC3339),
	},
	{
		name: "an expired serving certificate: the handshake failed on it",
		mutate: func(o *model.Observation) {
			unreachable(o, 2, model.ProbeFailureCredentials)
			eng(o, 2).Err = "tls: failed to verify certificate: x509: certificate has expired or is not yet valid"
			eng(o, 2).ServingCerts = []model.CertFacts{{Subject: "CN=etcd-2", Issuer: "CN=etcd-ca", Port: 2379, NotAfter: now.Add(-3 * time.Hour)}}
		},
		codes:  []string{"cert_expired etcd-2", "credentials_unavailable etcd-2"},
		detail: "expired " + now.Add(-3*time.Hour).UTC().Format(time.RFC3339) + ", 3h0m0s ago",
	},
	{
		name: "credentials unavailable for every member of a young cluster: quorum not claimed lost",
		mutate: func(o *model.Observation) {
			o.Cluster.CreatedAt = now.Add(-time.Minute)
			for i := range o.Members {
				unreachable(o, i, model.ProbeFailureCredentials)
				eng(o, i).Err = "secret db/etcd-client-tls not found"
			}
		},
		codes:  []string{"credentials_unavailable etcd-0", "credentials_unavailable etcd-1", "credentials_unavailable etcd-2"},
		phases: map[string]model.Phase{"etcd-0": model.PhaseUnknown, "etcd-1": model.PhaseUnknown, "etcd-2": model.PhaseUnknown},
	},
	{
		name:    "running member not probed",
		mutate:  func(o *model.Observation) { o.Members[2].Engine = nil },
		control: true, codes: []string{"lag_unknown etcd-2"},
		phases: map[string]model.Phase{"etcd-2": model.PhaseUnknown},
		detail: "engine not asked",
	},

	// --- leader ---
	{
		name: "no member knows a leader",
		mutate: func(o *model.Observation) {
			for i := range o.Members {
				eng(o, i).LeaderID = "0"
			}
		},
		codes: []string{"leader_missing", "lag_unknown etcd-0", "lag_unknown etcd-1", "lag_unknown etcd-2"},
	},
	{
		name:   "one member follows another leader",
		mutate: func(o *model.Observation) { eng(o, 2).LeaderID = memberID(1) },
		codes:  []string{"leader_disagreement"},
		detail: "leader etcd-0 for etcd-0, etcd-1; leader etcd-1 for etcd-2",
		lags:   map[string]int64{"etcd-2": 10},
	},
	{
		name:   "one member knows no leader",
		mutate: func(o *model.Observation) { eng(o, 2).LeaderID = "" },
		codes:  []string{"leader_disagreement"},
	},

	// --- identity (seed 000) ---
	{
		name: "a cloned volume: two pods answer with one member ID, both named",
		mutate: func(o *model.Observation) {
			eng(o, 2).MemberID = eng(o, 1).MemberID
		},
		// etcd-2's own member is not heard from: the clone answers in its
		// place.
		codes:  []string{"member_id_duplicate etcd-1", "member_id_duplicate etcd-2", "member_unreachable etcd-2"},
		detail: "as etcd-2 does",
	},
	{
		name: "seed 000: healthy by its own account, other cluster ID, lists only itself",
		mutate: func(o *model.Observation) {
			seed000(o, 2, otherID)
		},
		codes:  []string{"cluster_id_split etcd-2"},
		phases: map[string]model.Phase{"etcd-2": model.PhaseDiverged, "etcd-1": model.PhaseMember},
		lags:   map[string]int64{"etcd-2": -1},
		detail: "its member list holds only itself",
	},
	{
		name: "seed 000 with the same cluster ID: lists only itself, leads itself",
		mutate: func(o *model.Observation) {
			seed000(o, 2, clusterID)
		},
		codes:  []string{"leader_disagreement", "member_list_disagreement etcd-2"},
		phases: map[string]model.Phase{"etcd-2": model.PhaseDiverged},
		lags:   map[string]int64{"etcd-2": -1},
		detail: "holds only itself while the StatefulSet has 3 replicas",
	},
	{
		name: "seed 000 member is the only one answering",
		mutate: func(o *model.Observation) {
			seed000(o, 2, clusterID)
			unreachable(o, 0, model.ProbeFailureTimeout)
			unreachable(o, 1, model.ProbeFailureTimeout)
		},
		codes: []string{
			"quorum_unavailable", "member_list_disagreement etcd-2",
			"member_unreachable etcd-0", "member_unreachable etcd-1",
		},
		phases: map[string]model.Phase{"etcd-2": model.PhaseDiverged},
		detail: "0 of 3 voters answered",
	},
	{
		name: "cluster ID tie broken by the recorded cluster ID",
		mutate: func(o *model.Observation) {
			o.Cluster.KnownClusterID = otherID
			unreachable(o, 0, model.ProbeFailureTimeout)
			eng(o, 1).ClusterID = otherID
		},
		// etcd-1 is the reference now; etcd-2 answers for the other ID.
		codes: []string{
			"cluster_id_split etcd-2", "quorum_unavailable",
			"member_unreachable etcd-0", "lag_unknown etcd-1",
		},
		phases: map[string]model.Phase{"etcd-1": model.PhaseUnknown, "etcd-2": model.PhaseDiverged},
	},
	{
		name: "one member lists a fourth member",
		mutate: func(o *model.Observation) {
			eng(o, 2).Peers = append(peers(3), model.Peer{ID: "ffff000000000004", Name: "etcd-x"})
		},
		control: true, codes: []string{"member_list_disagreement etcd-2"},
		detail: "lists 4 members, the majority 3; extra etcd-x",
	},
	{
		name: "member list holds a voter no pod answers for",
		mutate: func(o *model.Observation) {
			setPeers(o, append(peers(3), model.Peer{ID: "ffff000000000004", Name: "etcd-old"}))
		},
		// 4 voters, quorum 3: still control-ready with 3 answering.
		control: true, codes: []string{"member_unreachable etcd-old"},
	},
	{
		name: "member list holds a voter that never started",
		mutate: func(o *model.Observation) {
			setPeers(o, append(peers(3), model.Peer{ID: "ffff000000000004"}))
		},
		control: true, codes: []string{"member_unreachable ffff000000000004"},
		detail: "added to the member list but has never started",
	},

	// --- lag and learners ---
	{
		name:    "follower 2000 entries behind",
		mutate:  func(o *model.Observation) { eng(o, 2).RaftApplied = 3000 },
		control: true, codes: []string{"member_lagging etcd-2"},
		phases: map[string]model.Phase{"etcd-2": model.PhaseCatchingUp},
		lags:   map[string]int64{"etcd-2": 2000},
		detail: "lag 2000 entries > threshold 1000",
	},
	{
		name:    "follower exactly at the threshold",
		mutate:  func(o *model.Observation) { eng(o, 2).RaftApplied = 4000 },
		control: true, fail: true,
		phases: map[string]model.Phase{"etcd-2": model.PhaseMember},
		lags:   map[string]int64{"etcd-2": 1000},
	},
	{
		name:    "follower within a larger threshold",
		mutate:  func(o *model.Observation) { eng(o, 2).RaftApplied = 3000 },
		opts:    model.VerdictOptions{LagThreshold: 5000},
		control: true, fail: true,
	},
	{
		name:    "follower applied past the frontier read earlier: lag clamps at 0",
		mutate:  func(o *model.Observation) { eng(o, 2).RaftApplied = 5100 },
		control: true, fail: true,
		lags: map[string]int64{"etcd-2": 0},
	},
	{
		name: "fourth member is a learner",
		mutate: func(o *model.Observation) {
			o.Cluster.Replicas = 4
			o.ClientEndpoints.Ready, o.ClientEndpoints.Total = 4, 4
			ps := append(peers(3), peer(3))
			ps[3].IsLearner = true
			m := newMember(3, 4)
			m.Engine.IsLearner = true
			m.Engine.RaftApplied = 1200
			o.Members = append(o.Members, m)
			setPeers(o, ps)
		},
		control: true, codes: []string{"learner_pending etcd-3"},
		phases: map[string]model.Phase{"etcd-3": model.PhaseJoining},
		lags:   map[string]int64{"etcd-3": 3800},
		detail: "learner, 3800 entries behind the leader",
	},
	{
		name: "learner in the member list that does not answer",
		mutate: func(o *model.Observation) {
			o.Cluster.Replicas = 4
			ps := append(peers(3), peer(3))
			ps[3].IsLearner = true
			setPeers(o, ps)
			m := newMember(3, 4)
			m.Engine = nil
			o.Members = append(o.Members, m)
		},
		control: true, codes: []string{"learner_pending etcd-3"},
		phases: map[string]model.Phase{"etcd-3": model.PhaseUnknown},
	},

	// --- versions, alarms, size ---
	{
		name:    "one member on another version",
		mutate:  func(o *model.Observation) { eng(o, 2).Version = "3.5.21" },
		control: true, codes: []string{"version_mismatch"},
		detail: "3.5.21 on etcd-2; 3.6.16 on etcd-0, etcd-1",
	},
	{
		name: "NOSPACE alarm, reported by every member",
		mutate: func(o *model.Observation) {
			for i := range o.Members {
				eng(o, i).Alarms = []model.Alarm{{Type: "NOSPACE", MemberID: memberID(1)}}
			}
		},
		codes: []string{"alarm_nospace etcd-1"},
	},
	{
		name: "CORRUPT alarm",
		mutate: func(o *model.Observation) {
			eng(o, 0).Alarms = []model.Alarm{{Type: "CORRUPT", MemberID: memberID(2)}}
		},
		codes: []string{"alarm_corrupt etcd-2"},
	},
	{
		name:    "db above 80% of the default 2 GiB quota",
		mutate:  func(o *model.Observation) { eng(o, 1).DBSize = 1800 << 20 },
		control: true, codes: []string{"db_near_quota etcd-1"},
		detail: "db 1.8 GiB of 2.0 GiB default quota (88%, threshold 80%)",
	},
	{
		name: "db well below an 8 GiB quota",
		mutate: func(o *model.Observation) {
			eng(o, 1).DBSize = 1800 << 20
			o.Cluster.Template.QuotaBackendBytes = 8 << 30
		},
		control: true, fail: true,
	},
	{
		name: "quota the member reports wins over the template's",
		mutate: func(o *model.Observation) {
			eng(o, 1).DBSize = 900 << 20
			eng(o, 1).DBSizeQuota = 1 << 30
			o.Cluster.Template.QuotaBackendBytes = 8 << 30
		},
		control: true, codes: []string{"db_near_quota etcd-1"},
		detail: "db 900.0 MiB of 1.0 GiB quota (88%, threshold 80%)",
	},

	// --- without probes ---
	{
		name:    "engine not probed: control from Kubernetes, lag unknown",
		mutate:  func(o *model.Observation) { o.EngineProbed = false },
		control: true,
		codes:   []string{"lag_unknown etcd-0", "lag_unknown etcd-1", "lag_unknown etcd-2"},
		phases:  map[string]model.Phase{"etcd-0": model.PhaseUnknown, "etcd-1": model.PhaseUnknown, "etcd-2": model.PhaseUnknown},
		lags:    map[string]int64{"etcd-0": -1, "etcd-1": -1, "etcd-2": -1},
		detail:  "engine not probed",
	},
	{
		name: "engine not probed: two containers not running prove quorum lost",
		mutate: func(o *model.Observation) {
			o.EngineProbed = false
			for _, i := range []int{1, 2} {
				p := o.Members[i].Pod
				p.Running, p.Ready, p.Restarts = false, false, 30
				p.Waiting, p.WaitingReason = model.WaitingCrashLoop, "CrashLoopBackOff"
			}
		},
		codes: []string{
			"quorum_unavailable", "lag_unknown etcd-0",
			"pod_crashlooping etcd-1", "pod_crashlooping etcd-2",
		},
		detail: "1 of 3 voters have a running container; quorum needs 2",
	},
}

// reasonKeys renders reasons as "code" or "code member", sorted.
func reasonKeys(rs []model.Reason) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		k := string(r.Code)
		if r.Member != "" {
			k += " " + r.Member
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func TestEvaluate(t *testing.T) {
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			obs := healthy()
			tc.mutate(&obs)
			derived, v := Evaluate(obs, now, judged(tc.opts))

			if v.ControlReady != tc.control || v.FailoverReady != tc.fail {
				t.Errorf("control_ready=%v failover_ready=%v, want %v %v", v.ControlReady, v.FailoverReady, tc.control, tc.fail)
			}
			want := slices.Clone(tc.codes)
			sort.Strings(want)
			if want == nil {
				want = []string{}
			}
			if got := reasonKeys(v.Reasons); !slices.Equal(got, want) {
				t.Errorf("codes\n got %q\nwant %q", got, want)
			}
			for _, r := range v.Reasons {
				if r.Detail == "" {
					t.Errorf("%s %s has no detail", r.Code, r.Member)
				}
			}
			if tc.detail != "" && !slices.ContainsFunc(v.Reasons, func(r model.Reason) bool { return strings.Contains(r.Detail, tc.detail) }) {
				t.Errorf("no reason detail contains %q", tc.detail)
			}
			// Readiness follows from the impacts of the reasons.
			control, failover := true, true
			for _, r := range v.Reasons {
				switch r.Code.Impact() {
				case model.ImpactControl:
					control, failover = false, false
				case model.ImpactFailover:
					failover = false
				}
			}
			if control != v.ControlReady || failover != v.FailoverReady {
				t.Errorf("readiness does not follow from the reasons' impacts")
			}

			byName := map[string]model.Member{}
			for _, m := range derived.Members {
				byName[m.Name] = m
			}
			for name, want := range tc.phases {
				if got := byName[name].Phase; got != want {
					t.Errorf("%s phase %q, want %q", name, got, want)
				}
			}
			for name, want := range tc.lags {
				got := byName[name].Lag
				switch {
				case want < 0 && got != nil:
					t.Errorf("%s lag %d, want unknown (nil)", name, *got)
				case want >= 0 && got == nil:
					t.Errorf("%s lag unknown, want %d", name, want)
				case want >= 0 && *got != want:
					t.Errorf("%s lag %d, want %d", name, *got, want)
				}
			}
			// Compute agrees with Evaluate.
			if v2 := Compute(obs, now, judged(tc.opts)); !slices.Equal(v2.Reasons, v.Reasons) || v2.ControlReady != v.ControlReady || v2.FailoverReady != v.FailoverReady {
				t.Errorf("Compute and Evaluate disagree")
			}
		})
	}
}

// handedCodes are only ever emitted by rules an engine keeps in its own
// package (engine/http's and engine/cnpg's tests produce each of them).
var handedCodes = []model.ReasonCode{model.ReasonEngineConfigInvalid, model.ReasonMemberNotReady,
	model.ReasonSwitchoverInProgress, model.ReasonSwitchoverTargetLagging}

// TestEveryReasonCodeReachable fails when a reason code exists in model
// that no row of TestEvaluate produces.
func TestEveryReasonCodeReachable(t *testing.T) {
	produced := map[model.ReasonCode]bool{}
	for _, tc := range rows {
		obs := healthy()
		tc.mutate(&obs)
		for _, r := range Compute(obs, now, judged(tc.opts)).Reasons {
			produced[r.Code] = true
		}
	}
	for _, c := range model.AllReasonCodes() {
		if !produced[c] && !slices.Contains(handedCodes, c) {
			t.Errorf("no row produces reason code %s", c)
		}
	}
	for c := range produced {
		if !slices.Contains(model.AllReasonCodes(), c) {
			t.Errorf("verdict emits %s, which model does not list", c)
		}
	}
}

// TestEveryPhaseDerivable fails when a phase exists in model that no row
// of TestEvaluate derives.
func TestEveryPhaseDerivable(t *testing.T) {
	derived := map[model.Phase]bool{}
	for _, tc := range rows {
		obs := healthy()
		tc.mutate(&obs)
		for _, m := range Derive(obs, now, judged(tc.opts)).Members {
			if !slices.Contains(model.AllPhases, m.Phase) {
				t.Errorf("row %q: %s has phase %q, not in model.AllPhases", tc.name, m.Name, m.Phase)
			}
			derived[m.Phase] = true
		}
	}
	for _, p := range model.AllPhases {
		if !derived[p] {
			t.Errorf("no row derives phase %s", p)
		}
	}
}

func TestReasonsSortedByImpactThenCodeThenMember(t *testing.T) {
	obs := healthy()
	obs.PDB = nil
	obs.Members[1].Pod.Node = "kwok-node-0"
	eng(&obs, 2).Version = "3.5.21"
	unreachable(&obs, 1, model.ProbeFailureTimeout)
	unreachable(&obs, 2, model.ProbeFailureTimeout)
	v := Compute(obs, now, judged(model.VerdictOptions{}))
	if len(v.Reasons) < 4 {
		t.Fatalf("want several reasons, got %v", v.Reasons)
	}
	if v.Reasons[0].Code != model.ReasonQuorumUnavailable {
		t.Errorf("first reason %s, want the control-impact quorum_unavailable", v.Reasons[0].Code)
	}
	for i := 1; i < len(v.Reasons); i++ {
		a, b := v.Reasons[i-1], v.Reasons[i]
		ok := a.Code.Impact() > b.Code.Impact() ||
			(a.Code.Impact() == b.Code.Impact() && (a.Code < b.Code || (a.Code == b.Code && a.Member <= b.Member)))
		if !ok {
			t.Errorf("reasons out of order at %d: %v before %v", i, a, b)
		}
	}
}

func TestDeterministic(t *testing.T) {
	obs := healthy()
	seed000(&obs, 2, otherID)
	eng(&obs, 1).Version = "3.5.21"
	obs.Members[1].Pod.Node = "kwok-node-0"
	first := Compute(obs, now, judged(model.VerdictOptions{}))
	for range 50 {
		if v := Compute(obs, now, judged(model.VerdictOptions{})); !slices.Equal(v.Reasons, first.Reasons) {
			t.Fatalf("verdict changed between runs:\n%v\n%v", first.Reasons, v.Reasons)
		}
	}
}

func TestDeriveLeavesInputAlone(t *testing.T) {
	obs := healthy()
	obs.Members[0].Phase = model.PhaseCatchingUp
	d := Derive(obs, now, judged(model.VerdictOptions{}))
	if obs.Members[0].Phase != model.PhaseCatchingUp || obs.Members[1].Lag != nil {
		t.Errorf("Derive changed its input")
	}
	if d.Members[0].Phase != model.PhaseMember {
		t.Errorf("Derive kept a stale phase %q", d.Members[0].Phase)
	}
}

func TestEmptyVerdictHasNonNilReasons(t *testing.T) {
	if v := Compute(healthy(), now, judged(model.VerdictOptions{})); v.Reasons == nil || len(v.Reasons) != 0 {
		t.Errorf("healthy verdict reasons = %#v, want empty non-nil", v.Reasons)
	}
}

func TestAnalyze(t *testing.T) {
	obs := healthy()
	a := Analyze(obs, now, judged(model.VerdictOptions{}))
	if a.Voters != 3 || !a.VotersFromMemberList || a.Quorum != 2 || a.Tolerance != 1 || a.AnsweringVoters != 3 {
		t.Errorf("quorum arithmetic: %+v", a)
	}
	if a.ClusterID != clusterID || a.LeaderID != memberID(0) || a.LeaderMember != "etcd-0" || a.Frontier == nil || *a.Frontier != 5000 {
		t.Errorf("identity and frontier: %+v", a)
	}

	obs.EngineProbed = false
	obs.Cluster.Replicas = 5
	a = Analyze(obs, now, judged(model.VerdictOptions{}))
	if a.Voters != 5 || a.VotersFromMemberList || a.Quorum != 3 || a.Frontier != nil {
		t.Errorf("without probes voters come from replicas: %+v", a)
	}
}

func TestDefaultOptions(t *testing.T) {
	o := DefaultOptions()
	if o.LagThreshold != 1000 || o.StaleAfter != 30*time.Second || o.BootstrapWindow != 10*time.Minute {
		t.Errorf("defaults: %+v", o)
	}
	if !reflect.DeepEqual(withDefaults(model.VerdictOptions{}), o) {
		t.Errorf("zero model.VerdictOptions do not mean defaults")
	}
}
