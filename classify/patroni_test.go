package classify

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/model"
)

const (
	pgSystemID = "7714413371406231513"
	pgFrontier = int64(67108864)
)

// pgHealthy is a failover-ready three-member Patroni cluster pg led by
// pg-0, observed at now: pg-1 replays 100 bytes behind, pg-2 200.
func pgHealthy() model.Observation {
	obs := model.Observation{
		At: now,
		Cluster: model.ClusterFacts{
			Namespace: "db", Name: "pg", Engine: patroni.Name, UID: "pg-sts-uid", ResourceVersion: "700",
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
		name := fmt.Sprintf("pg-%d", i)
		p := &model.PatroniFacts{Name: name, Scope: "pg", Role: "replica", State: "running", Timeline: 1,
			ReceivedLocation: ptr(pgFrontier), ReplayedLocation: ptr(pgFrontier - int64(100*i)),
			SystemID: pgSystemID, ServerVersion: 150018, PatroniVersion: "3.0.2", ViewLeader: "pg-0"}
		role := "replica"
		if i == 0 {
			role = "master"
			p.Role, p.ReceivedLocation, p.ReplayedLocation, p.WALLocation = "master", nil, nil, ptr(pgFrontier)
			p.Replication = []model.PatroniReplication{{Name: "pg-1", State: "streaming", SyncState: "async"}, {Name: "pg-2", State: "streaming", SyncState: "async"}}
		}
		obs.Members = append(obs.Members, model.Member{
			Name: name, Ordinal: i,
			Pod: &model.PodFacts{Name: name, UID: "pod-uid-" + name, ResourceVersion: fmt.Sprintf("30%d", i),
				Node: fmt.Sprintf("node-%d", i), Phase: "Running", Started: true, Running: true, Ready: true, EverStarted: true,
				CreatedAt: now.Add(-24 * time.Hour), RoleLabel: role, Fingerprint: "pgfp-" + name},
			PVC: &model.PVCFacts{Name: "pgdata-" + name, UID: "pvc-uid-" + name, ResourceVersion: fmt.Sprintf("40%d", i), Phase: "Bound", Fingerprint: "pvcfp-" + name},
			Engine: &model.EngineFacts{Reachable: true, MemberID: name, ClusterID: pgSystemID, LeaderID: "pg-0",
				Version: "15.18", Patroni: p, ProbedAt: now},
		})
	}
	return obs
}

func pgf(o *model.Observation, i int) *model.PatroniFacts { return o.Members[i].Engine.Patroni }

// notStreaming takes pg-i out of the primary's replication list.
func notStreaming(o *model.Observation, i int) {
	name := fmt.Sprintf("pg-%d", i)
	p := pgf(o, 0)
	p.Replication = slices.DeleteFunc(slices.Clone(p.Replication), func(r model.PatroniReplication) bool { return r.Name == name })
}

// promoted makes pg-to the primary and pg-from a running replica.
func promoted(o *model.Observation, from, to int) {
	a, b := pgf(o, from), pgf(o, to)
	a.Role, a.WALLocation, a.Replication, a.ReceivedLocation, a.ReplayedLocation = "replica", nil, nil, ptr(pgFrontier+500), ptr(pgFrontier+500)
	b.Role, b.WALLocation, b.ReceivedLocation, b.ReplayedLocation = "master", ptr(pgFrontier+500), nil, nil
	b.Replication = nil
	for i := range o.Members {
		if i != to {
			b.Replication = append(b.Replication, model.PatroniReplication{Name: fmt.Sprintf("pg-%d", i), State: "streaming", SyncState: "async"})
			if i != from {
				pgf(o, i).ReplayedLocation = ptr(pgFrontier + 500)
			}
		}
	}
	o.Cluster.Patroni.LockHolder = fmt.Sprintf("pg-%d", to)
	o.Members[from].Pod.RoleLabel, o.Members[to].Pod.RoleLabel = "replica", "master"
	o.ClientEndpoints.Pods = []string{fmt.Sprintf("pg-%d", to)}
}

func pgEntry(a model.Action, member string, receipts ...model.Receipt) model.LedgerEntry {
	e := model.LedgerEntry{ID: string(a) + "." + member + ".20261129t115900z.ef56", Action: a, Member: member,
		Holder: "hactl/host/9/ef56", State: model.EntryInProgress, Phase: model.ActionPhaseRemoving,
		StartedAt: now.Add(-time.Minute), UpdatedAt: now.Add(-10 * time.Second),
		Replaced: model.Replaced{PodUID: "pod-uid-" + member, PVCUID: "pvc-uid-" + member, MemberID: member}}
	for i, r := range receipts {
		r.Seq = i + 1
		e.Receipts = append(e.Receipts, r)
	}
	return e
}

func done(k model.StepKind) model.Receipt {
	return model.Receipt{Step: k, Outcome: model.OutcomeDone, At: now.Add(-5 * time.Second)}
}

var (
	reseedPlan  = []model.StepKind{model.StepReinitialize, model.StepAwaitRebuild, model.StepAwaitStreaming}
	pgReplace   = []model.StepKind{model.StepDeletePVC, model.StepDeletePod, model.StepAwaitPodGone, model.StepAwaitPodRecreated, model.StepAwaitStreaming}
	switchPlan  = []model.StepKind{model.StepSwitchover, model.StepAwaitSwitchover}
	pgReseed1   = model.Intent{Action: model.ActionReseed, Member: "pg-1"}
	pgReplace1  = model.Intent{Action: model.ActionReplace, Member: "pg-1"}
	pgSwitch    = model.Intent{Action: model.ActionSwitchover}
	pgSwitchTo2 = model.Intent{Action: model.ActionSwitchover, Member: "pg-2"}
)

// switchStep checks the first switchover step: from the primary, to.
func switchStep(from, to string) func(*testing.T, model.Decision) {
	return func(t *testing.T, d model.Decision) {
		t.Helper()
		for _, s := range d.Steps {
			if s.Kind == model.StepSwitchover {
				if s.From != from || s.MemberID != to || s.Member != to {
					t.Errorf("switchover step %+v, want from %s to %s", s, from, to)
				}
				return
			}
		}
		t.Errorf("no switchover step: %v", kinds(d))
	}
}

func blockDetail(code model.Code, sub string) func(*testing.T, model.Decision) {
	return func(t *testing.T, d model.Decision) {
		t.Helper()
		for _, b := range d.Blockers {
			if b.Code == code && strings.Contains(b.Detail, sub) {
				return
			}
		}
		t.Errorf("no %s blocker saying %q: %+v", code, sub, d.Blockers)
	}
}

func patroniRows() []row {
	pgRow := func(r row) row { r.base = pgHealthy; return r }
	return []row{
		pgRow(row{name: "patroni: reseed a replica", intent: pgReseed1, verb: model.VerbProceed, steps: reseedPlan,
			check: func(t *testing.T, d model.Decision) {
				want := []model.Fence{{Kind: "Pod", Namespace: "db", Name: "pg-1", UID: "pod-uid-pg-1", ResourceVersion: "301", Fingerprint: "pgfp-pg-1", Role: "replica"}}
				if !reflect.DeepEqual(d.Fences, want) || d.Leader != "pg-0" {
					t.Errorf("fences %+v leader %s", d.Fences, d.Leader)
				}
				if d.Replaced.PodUID != "pod-uid-pg-1" || d.Replaced.PVCUID != "pvc-uid-pg-1" {
					t.Errorf("replaced %+v", d.Replaced)
				}
			}}),
		pgRow(row{name: "patroni: reseed a replica whose PostgreSQL just started waits for it to settle", intent: pgReseed1, verb: model.VerbProceed,
			mutate: func(o *model.Observation) {
				pgf(o, 1).PostmasterStart = now.Add(-600 * time.Millisecond).Format("2006-01-02 15:04:05.999999-07:00")
			},
			steps: append([]model.StepKind{model.StepAwaitSettled}, reseedPlan...)}),
		pgRow(row{name: "patroni: reseed a replica whose start is just ahead of this clock waits too", intent: pgReseed1, verb: model.VerbProceed,
			mutate: func(o *model.Observation) {
				pgf(o, 1).PostmasterStart = now.Add(time.Second).Format("2006-01-02 15:04:05-07:00")
			},
			steps: append([]model.StepKind{model.StepAwaitSettled}, reseedPlan...)}),
		pgRow(row{name: "patroni: reseed a replica that started 11 s ago goes ahead", intent: pgReseed1, verb: model.VerbProceed,
			mutate: func(o *model.Observation) {
				pgf(o, 1).PostmasterStart = now.Add(-11 * time.Second).Format("2006-01-02 15:04:05.999999-07:00")
			},
			steps: reseedPlan}),
		pgRow(row{name: "patroni: a start an hour in this clock's future cannot be judged and holds nothing back", intent: pgReseed1, verb: model.VerbProceed,
			mutate: func(o *model.Observation) {
				pgf(o, 1).PostmasterStart = now.Add(time.Hour).Format("2006-01-02 15:04:05-07:00")
			},
			steps: reseedPlan}),
		pgRow(row{name: "patroni: reseed the primary", intent: intentFor(model.ActionReseed, "pg-0"), verb: model.VerbRefuse, codes: []model.Code{model.CodeTargetIsPrimary},
			check: func(t *testing.T, d model.Decision) {
				if d.Blockers[0].Override != model.FlagSwitchoverFirst || d.Deletes() {
					t.Errorf("blocker %+v, deletes %v", d.Blockers[0], d.Deletes())
				}
			}}),
		pgRow(row{name: "patroni: reseed the primary, switching over first", intent: withOpts(intentFor(model.ActionReseed, "pg-0"), func(o *model.ActionOptions) { o.SwitchoverFirst = true }),
			verb: model.VerbProceed, steps: append(slices.Clone(switchPlan), reseedPlan...), notes: []model.Code{model.CodeSwitchoverFirst}, check: switchStep("pg-0", "pg-1")}),
		pgRow(row{name: "patroni: replace the primary, switching over first, pg-1 lagging: no failover candidate left", intent: withOpts(intentFor(model.ActionReplace, "pg-0"), func(o *model.ActionOptions) { o.SwitchoverFirst = true }),
			mutate: func(o *model.Observation) { pgf(o, 1).ReplayedLocation = ptr(pgFrontier - 5<<20) },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeLastFailoverReplica}, check: blockDetail(model.CodeLastFailoverReplica, "hands the primary role to pg-2 first")}),
		pgRow(row{name: "patroni: replace the primary, switching over first, pg-1 lagging, --accept-no-failover", intent: withOpts(intentFor(model.ActionReplace, "pg-0"), func(o *model.ActionOptions) { o.SwitchoverFirst, o.AcceptNoFailover = true, true }),
			mutate: func(o *model.Observation) { pgf(o, 1).ReplayedLocation = ptr(pgFrontier - 5<<20) },
			verb:   model.VerbProceed, steps: append(slices.Clone(switchPlan), pgReplace...), check: switchStep("pg-0", "pg-2")}),
		pgRow(row{name: "patroni: reseed the last failover-capable replica", intent: pgReseed1,
			mutate: func(o *model.Observation) { pgf(o, 2).ReplayedLocation = ptr(pgFrontier - 5<<20) },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeLastFailoverReplica},
			check: func(t *testing.T, d model.Decision) {
				blockDetail(model.CodeLastFailoverReplica, "pg-2: its replay is")(t, d)
				if len(d.Blockers) != 1 || d.Blockers[0].Override != model.FlagAcceptNoFailover {
					t.Errorf("blockers %+v, want one with override %s", d.Blockers, model.FlagAcceptNoFailover)
				}
			}}),
		pgRow(row{name: "patroni: replace the last failover-capable replica (the other tagged nofailover)", intent: pgReplace1,
			mutate: func(o *model.Observation) { pgf(o, 2).NoFailover = true },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeLastFailoverReplica}}),
		pgRow(row{name: "patroni: reseed the last failover-capable replica, --accept-no-failover", intent: withOpts(pgReseed1, func(o *model.ActionOptions) { o.AcceptNoFailover = true }),
			mutate: func(o *model.Observation) { pgf(o, 2).ReplayedLocation = ptr(pgFrontier - 5<<20) },
			verb:   model.VerbProceed, steps: reseedPlan}),
		pgRow(row{name: "patroni: reseed a lagging replica while another can take over", intent: pgReseed1,
			mutate: func(o *model.Observation) { pgf(o, 1).ReplayedLocation = ptr(pgFrontier - 5<<20) },
			verb:   model.VerbProceed, steps: reseedPlan}),
		pgRow(row{name: "patroni: reseed the synchronous standby under synchronous_mode_strict", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Cluster.Patroni.SynchronousMode, o.Cluster.Patroni.SynchronousModeStrict, o.Cluster.Patroni.SyncStandby = true, true, "pg-1"
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeSyncStandbyStrict}, check: blockDetail(model.CodeSyncStandbyStrict, "commits no writes")}),
		pgRow(row{name: "patroni: reseed the synchronous standby under synchronous_mode_strict, --accept-write-stall", intent: withOpts(pgReseed1, func(o *model.ActionOptions) { o.AcceptWriteStall = true }),
			mutate: func(o *model.Observation) {
				o.Cluster.Patroni.SynchronousMode, o.Cluster.Patroni.SynchronousModeStrict, o.Cluster.Patroni.SyncStandby = true, true, "pg-1"
			},
			verb: model.VerbProceed, steps: reseedPlan}),
		pgRow(row{name: "patroni: reseed the synchronous standby, not strict", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Cluster.Patroni.SynchronousMode, o.Cluster.Patroni.SyncStandby = true, "pg-1"
			},
			verb: model.VerbProceed, steps: reseedPlan}),
		pgRow(row{name: "patroni: reseed in maintenance mode", intent: pgReseed1,
			mutate: func(o *model.Observation) { o.Cluster.Patroni.Paused = true },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeMaintenancePaused}, check: blockDetail(model.CodeMaintenancePaused, "patronictl resume pg")}),
		pgRow(row{name: "patroni: replace in maintenance mode (a member says so)", intent: pgReplace1,
			mutate: func(o *model.Observation) { pgf(o, 2).Paused = true },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeMaintenancePaused}}),
		pgRow(row{name: "patroni: switchover in maintenance mode", intent: pgSwitch,
			mutate: func(o *model.Observation) { o.Cluster.Patroni.Paused = true },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeMaintenancePaused}}),
		pgRow(row{name: "patroni: reseed the primary, no candidate", intent: withOpts(intentFor(model.ActionReseed, "pg-0"), func(o *model.ActionOptions) { o.SwitchoverFirst = true }),
			mutate: func(o *model.Observation) { notStreaming(o, 1); notStreaming(o, 2) },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeNoSwitchoverCandidate}, check: blockDetail(model.CodeNoSwitchoverCandidate, "pg-1: it is not streaming from the primary pg-0")}),
		pgRow(row{name: "patroni: replace a replica", intent: pgReplace1, verb: model.VerbProceed, steps: pgReplace,
			check: func(t *testing.T, d model.Decision) {
				if len(d.Fences) != 2 || d.Fences[0].UID != "pvc-uid-pg-1" || d.Fences[1].UID != "pod-uid-pg-1" || d.Fences[1].Fingerprint != "pgfp-pg-1" {
					t.Errorf("fences %+v", d.Fences)
				}
			}}),
		pgRow(row{name: "patroni: replace on an operator-owned cluster", intent: pgReplace1,
			mutate: func(o *model.Observation) {
				o.Cluster.Shape, o.Cluster.Template.OperatorOwner = model.ShapeOperatorOwned, "postgresql/pg"
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeShapeOperatorOwned}}),
		pgRow(row{name: "patroni: replace on a Crunchy PGO cluster names PGO's way", intent: pgReplace1,
			mutate: func(o *model.Observation) {
				o.Cluster.Shape, o.Cluster.Template.OperatorOwner = model.ShapeOperatorOwned, "PostgresCluster/pg"
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeShapeOperatorOwned},
			check: blockDetail(model.CodeShapeOperatorOwned, "Crunchy PGO's PostgresCluster/pg, which owns each instance's StatefulSet and its claim <instance>-pgdata")}),
		pgRow(row{name: "patroni: reseed on an operator-owned cluster", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Cluster.Shape, o.Cluster.Template.OperatorOwner = model.ShapeOperatorOwned, "postgresql/pg"
			}, verb: model.VerbProceed, steps: reseedPlan}),
		pgRow(row{name: "patroni: replace the primary", intent: intentFor(model.ActionReplace, "pg-0"), verb: model.VerbRefuse, codes: []model.Code{model.CodeTargetIsPrimary}}),
		pgRow(row{name: "patroni: replace a diverged replica (the repair)", intent: pgReplace1,
			mutate: func(o *model.Observation) { pgf(o, 1).SystemID = "1234"; o.Members[1].Engine.ClusterID = "1234" },
			verb:   model.VerbProceed, steps: pgReplace}),
		pgRow(row{name: "patroni: another member on another system", intent: pgReplace1,
			mutate: func(o *model.Observation) { pgf(o, 2).SystemID = "1234"; o.Members[2].Engine.ClusterID = "1234" },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeClusterIDSplit, model.CodeLastFailoverReplica}}),
		pgRow(row{name: "patroni: switchover to the least lagging", intent: pgSwitch, verb: model.VerbProceed, steps: switchPlan, check: switchStep("pg-0", "pg-1")}),
		pgRow(row{name: "patroni: switchover --to pg-2", intent: pgSwitchTo2, verb: model.VerbProceed, steps: switchPlan, check: switchStep("pg-0", "pg-2")}),
		pgRow(row{name: "patroni: switchover in synchronous mode prefers the sync standby", intent: pgSwitch,
			mutate: func(o *model.Observation) {
				o.Cluster.Patroni.SynchronousMode = true
				pgf(o, 0).Replication[1].SyncState = "sync"
			}, verb: model.VerbProceed, steps: switchPlan, check: switchStep("pg-0", "pg-2")}),
		pgRow(row{name: "patroni: switchover skips nofailover", intent: pgSwitch,
			mutate: func(o *model.Observation) { pgf(o, 1).NoFailover = true }, verb: model.VerbProceed, steps: switchPlan, check: switchStep("pg-0", "pg-2")}),
		pgRow(row{name: "patroni: switchover --to a lagging replica", intent: pgSwitchTo2,
			mutate: func(o *model.Observation) { pgf(o, 2).ReplayedLocation = ptr(pgFrontier - 2<<20) },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeNoSwitchoverCandidate}, check: blockDetail(model.CodeNoSwitchoverCandidate, "more than the threshold")}),
		pgRow(row{name: "patroni: switchover --to a diverged replica", intent: pgSwitchTo2,
			mutate: func(o *model.Observation) { pgf(o, 2).Timeline = 2 },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeNoSwitchoverCandidate}, check: blockDetail(model.CodeNoSwitchoverCandidate, "diverged")}),
		pgRow(row{name: "patroni: switchover, no healthy replica", intent: pgSwitch,
			mutate: func(o *model.Observation) {
				notStreaming(o, 1)
				pgf(o, 2).State = "starting"
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeNoSwitchoverCandidate}}),
		pgRow(row{name: "patroni: switchover --to the primary", intent: intentFor(model.ActionSwitchover, "pg-0"), verb: model.VerbDone, noSteps: true}),
		pgRow(row{name: "patroni: switchover --to no member", intent: intentFor(model.ActionSwitchover, "pg-9"), verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberNotFound}}),
		pgRow(row{name: "patroni: two writable primaries", intent: pgSwitch,
			mutate: func(o *model.Observation) { pgf(o, 2).Role, pgf(o, 2).WALLocation = "master", ptr(pgFrontier) },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodePrimaryUnknown}, check: blockDetail(model.CodePrimaryUnknown, "primary_split")}),
		pgRow(row{name: "patroni: two pods labelled master", intent: pgReseed1,
			mutate: func(o *model.Observation) { o.Members[2].Pod.RoleLabel = "master" },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodePrimaryUnknown}, check: blockDetail(model.CodePrimaryUnknown, "primary_split")}),
		pgRow(row{name: "patroni: no primary", intent: pgReplace1,
			mutate: func(o *model.Observation) { pgf(o, 0).State = "stopped" },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodePrimaryUnknown}, check: blockDetail(model.CodePrimaryUnknown, "primary_missing")}),
		pgRow(row{name: "patroni: leader lock stale", intent: pgSwitch,
			mutate: func(o *model.Observation) { o.Cluster.Patroni.LockRenew = now.Add(-time.Minute) },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodePrimaryUnknown}, check: blockDetail(model.CodePrimaryUnknown, "leader_lock_stale")}),
		pgRow(row{name: "patroni: the lock names another member", intent: pgSwitch,
			mutate: func(o *model.Observation) { o.Cluster.Patroni.LockHolder = "pg-2" },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodePrimaryUnknown}, check: blockDetail(model.CodePrimaryUnknown, "leader_mismatch")}),
		pgRow(row{name: "patroni: the leader lock could not be read", intent: pgSwitch,
			mutate: func(o *model.Observation) {
				o.Cluster.Patroni = &model.PatroniClusterFacts{Scope: "pg", RoleLabel: "role", RESTPort: 8008, ObjectsErr: "configmaps is forbidden"}
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodePrimaryUnknown}, check: blockDetail(model.CodePrimaryUnknown, "leader_lock_unknown")}),
		pgRow(row{name: "patroni: no leader ConfigMap", intent: pgReseed1,
			mutate: func(o *model.Observation) { o.Cluster.Patroni.LockFound, o.Cluster.Patroni.LockHolder = false, "" },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodePrimaryUnknown}, check: blockDetail(model.CodePrimaryUnknown, "leader_lock_unknown")}),
		pgRow(row{name: "patroni: another switchover is pending", intent: pgSwitch,
			mutate: func(o *model.Observation) { o.Cluster.Patroni.FailoverPending = true },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeActionInProgress}, check: blockDetail(model.CodeActionInProgress, "-failover")}),
		pgRow(row{name: "patroni: not probed", intent: pgReseed1, mutate: func(o *model.Observation) { o.EngineProbed = false }, verb: model.VerbRefuse, codes: []model.Code{model.CodeNotProbed}}),
		pgRow(row{name: "patroni: nobody answers", intent: pgSwitch,
			mutate: func(o *model.Observation) {
				for i := range o.Members {
					o.Members[i].Engine = &model.EngineFacts{Reachable: false, Failure: model.ProbeFailureTimeout, Err: "deadline exceeded", ProbedAt: now}
				}
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeClusterUnreachable}}),
		pgRow(row{name: "patroni: reseed a member whose Patroni does not answer", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Members[1].Engine = &model.EngineFacts{Reachable: false, Failure: model.ProbeFailureTimeout, Err: "deadline exceeded", ProbedAt: now}
				notStreaming(o, 1)
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberUnreachable}}),
		pgRow(row{name: "patroni: reseed from a generation", intent: withOpts(pgReseed1, func(o *model.ActionOptions) { o.Generation = "g1" }), verb: model.VerbRefuse, codes: []model.Code{model.CodeGenerationUnsupported}}),
		pgRow(row{name: "patroni: no such member", intent: intentFor(model.ActionReseed, "pg-7"), verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberNotFound}}),
		pgRow(row{name: "patroni: seed", intent: intentFor(model.ActionSeed, ""), verb: model.VerbRefuse, codes: []model.Code{model.CodeActionUnsupported}}),
		pgRow(row{name: "patroni: restore", intent: restoreIntent, verb: model.VerbRefuse, codes: []model.Code{model.CodeActionUnsupported}}),
		{name: "etcd: switchover", intent: intentFor(model.ActionSwitchover, "etcd-1"), verb: model.VerbRefuse, codes: []model.Code{model.CodeActionUnsupported}},
		pgRow(row{name: "patroni: pod being deleted", intent: pgReplace1, mutate: func(o *model.Observation) { o.Members[1].Pod.DeletionMarked = true },
			verb: model.VerbAwait, codes: []model.Code{model.CodePodTerminating}}),
		pgRow(row{name: "patroni: pod never started", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				p := o.Members[1].Pod
				p.Started, p.Running, p.Ready, p.EverStarted, p.Phase = false, false, false, false, "Pending"
				o.Members[1].Engine = nil
			}, verb: model.VerbObserve, codes: []model.Code{model.CodePodNeverStarted}}),
		pgRow(row{name: "patroni: lock held", intent: pgSwitch, mutate: func(o *model.Observation) { o.Lock = lockStates[1].lock },
			verb: model.VerbRefuse, codes: []model.Code{model.CodeLockHeld}}),

		// Resume from the ledger.
		pgRow(row{name: "patroni resume: reinitialize sent, not seen rebuilding yet", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-1", done(model.StepReinitialize))}
			}, verb: model.VerbProceed, steps: []model.StepKind{model.StepAwaitRebuild, model.StepAwaitStreaming}, notes: []model.Code{model.CodeResuming}}),
		pgRow(row{name: "patroni resume: reinitialize answered long ago, streaming: rebuilt", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				r := done(model.StepReinitialize)
				r.At = now.Add(-patroni.RebuildSeenAfter - time.Second)
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-1", r)}
			}, verb: model.VerbDone, noSteps: true}),
		pgRow(row{name: "patroni resume: reinitialize sent, rebuilding", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-1", done(model.StepReinitialize))}
				notStreaming(o, 1)
				pgf(o, 1).State, pgf(o, 1).Role = "creating replica", "uninitialized"
			}, verb: model.VerbProceed, steps: []model.StepKind{model.StepAwaitStreaming}}),
		pgRow(row{name: "patroni resume: rebuilt and streaming", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-1", done(model.StepReinitialize), done(model.StepAwaitRebuild))}
			}, verb: model.VerbDone, noSteps: true}),
		pgRow(row{name: "patroni resume: rebuilt, still behind", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-1", done(model.StepReinitialize), done(model.StepAwaitRebuild))}
				pgf(o, 1).ReplayedLocation = ptr(pgFrontier - 3<<20)
			}, verb: model.VerbProceed, steps: []model.StepKind{model.StepAwaitStreaming}}),
		pgRow(row{name: "patroni resume: reinitialize only written ahead", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-1", model.Receipt{Step: model.StepReinitialize, Outcome: model.OutcomeSending})}
			}, verb: model.VerbProceed, steps: reseedPlan}),
		pgRow(row{name: "patroni resume: answered long ago, streaming, but PostgreSQL never restarted: not rebuilt", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				r := done(model.StepReinitialize)
				r.At, r.Since = now.Add(-patroni.RebuildSeenAfter-time.Minute), "2026-12-01 18:46:53.4+00:00"
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-1", r, done(model.StepAwaitRebuild))}
				pgf(o, 1).PostmasterStart = r.Since
			}, verb: model.VerbProceed, steps: []model.StepKind{model.StepAwaitRebuild, model.StepAwaitStreaming}}),
		pgRow(row{name: "patroni resume: PostgreSQL restarted since the reinitialize and streams: rebuilt", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				r := done(model.StepReinitialize)
				r.Since = "2026-12-01 18:46:53.4+00:00"
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-1", r)}
				pgf(o, 1).PostmasterStart = "2026-12-01 19:02:11.9+00:00"
			}, verb: model.VerbDone, noSteps: true}),
		pgRow(row{name: "patroni resume: reinitialize only written ahead, PostgreSQL restarted since: not counted as rebuilt, sent again", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-1", model.Receipt{Step: model.StepReinitialize, Outcome: model.OutcomeSending, Since: "2026-12-01 18:46:53.4+00:00"})}
				pgf(o, 1).PostmasterStart = "2026-12-01 19:02:11.9+00:00"
			}, verb: model.VerbProceed, steps: reseedPlan}),
		pgRow(row{name: "patroni resume: reinitialize unanswered, PostgreSQL restarted since: sent again", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-1",
					model.Receipt{Step: model.StepReinitialize, Outcome: model.OutcomeSending, Since: "2026-12-01 18:46:53.4+00:00"},
					model.Receipt{Step: model.StepReinitialize, Outcome: model.OutcomeUnknown, Since: "2026-12-01 18:46:53.4+00:00"})}
				pgf(o, 1).PostmasterStart = "2026-12-01 19:02:11.9+00:00"
			}, verb: model.VerbProceed, steps: reseedPlan}),
		pgRow(row{name: "patroni resume: reinitialize already in progress (answered), restarted, streaming: rebuilt", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-1",
					model.Receipt{Step: model.StepReinitialize, Outcome: model.OutcomeAlready, Since: "2026-12-01 18:46:53.4+00:00"})}
				pgf(o, 1).PostmasterStart = "2026-12-01 19:02:11.9+00:00"
			}, verb: model.VerbDone, noSteps: true}),
		pgRow(row{name: "patroni resume: reinitialize sent again after an unanswered one: the rebuild that counts is the last answered one's", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-1",
					model.Receipt{Step: model.StepReinitialize, Outcome: model.OutcomeSending, Since: "S0"},
					model.Receipt{Step: model.StepReinitialize, Outcome: model.OutcomeSending, Since: "S1"},
					model.Receipt{Step: model.StepReinitialize, Outcome: model.OutcomeDone, Since: "S1", At: now.Add(-2 * time.Second)})}
				pgf(o, 1).PostmasterStart = "S1" // not stopped yet by the second reinitialize
			}, verb: model.VerbProceed, steps: []model.StepKind{model.StepAwaitRebuild, model.StepAwaitStreaming}}),
		pgRow(row{name: "patroni resume: rebuilt while the other replica went down: done, the risk gates do not hold the end", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				r := done(model.StepReinitialize)
				r.Since = "S0"
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-1", r)}
				pgf(o, 1).PostmasterStart = "S1"
				pgf(o, 2).ReplayedLocation = ptr(pgFrontier - 5<<20)
			}, verb: model.VerbDone, noSteps: true}),
		pgRow(row{name: "patroni resume: replaced member streams again, the cluster paused meanwhile: done", intent: pgReplace1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReplace, "pg-1", done(model.StepDeletePVC), done(model.StepDeletePod))}
				o.Members[1].Pod.UID, o.Members[1].PVC.UID = "pod-uid-new", "pvc-uid-new"
				o.Cluster.Patroni.Paused = true
			}, verb: model.VerbDone, noSteps: true}),
		pgRow(row{name: "patroni resume: replace whose pod is still to be deleted, the last candidate: refused", intent: pgReplace1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReplace, "pg-1", done(model.StepDeletePVC))}
				o.Members[1].PVC.DeletionMarked = true
				pgf(o, 2).ReplayedLocation = ptr(pgFrontier - 5<<20)
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeLastFailoverReplica}, noSteps: true}),
		pgRow(row{name: "patroni resume: replace after its volume's delete, the member promoted since: refused, nothing deleted", intent: pgReplace1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReplace, "pg-1", done(model.StepDeletePVC))}
				o.Members[1].PVC.DeletionMarked = true
				promoted(o, 0, 1)
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeTargetPromoted},
			check: func(t *testing.T, d model.Decision) {
				blockDetail(model.CodeTargetPromoted, "Patroni promoted it after replace ledger entry")(t, d)
				if d.Deletes() || len(d.Steps) > 0 || len(d.Blockers) != 1 || d.Blockers[0].Override != model.FlagSwitchoverFirst {
					t.Errorf("steps %v, blockers %+v", kinds(d), d.Blockers)
				}
			}}),
		pgRow(row{name: "patroni resume: replace after its volume's delete, the member promoted since, --switchover-first: hands over before the delete", intent: withOpts(pgReplace1, func(o *model.ActionOptions) { o.SwitchoverFirst = true }),
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReplace, "pg-1", done(model.StepDeletePVC))}
				o.Members[1].PVC.DeletionMarked = true
				promoted(o, 0, 1)
			}, verb: model.VerbProceed, notes: []model.Code{model.CodeSwitchoverFirst},
			steps: []model.StepKind{model.StepSwitchover, model.StepAwaitSwitchover, model.StepDeletePod, model.StepAwaitPodGone, model.StepAwaitPodRecreated, model.StepAwaitStreaming},
			check: switchStep("pg-1", "pg-0")}),
		pgRow(row{name: "patroni resume: reseed whose member was promoted since: refused", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-1", done(model.StepReinitialize))}
				promoted(o, 0, 1)
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeTargetPromoted}}),
		pgRow(row{name: "patroni resume: replace resumed in maintenance mode before its pod's delete: refused", intent: pgReplace1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReplace, "pg-1", done(model.StepDeletePVC))}
				o.Members[1].PVC.DeletionMarked = true
				o.Cluster.Patroni.Paused = true
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeMaintenancePaused}}),
		pgRow(row{name: "patroni resume: replace resumed with no primary: refused", intent: pgReplace1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReplace, "pg-1", done(model.StepDeletePVC))}
				o.Members[1].PVC.DeletionMarked = true
				pgf(o, 0).State = "stopped"
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodePrimaryUnknown}}),
		pgRow(row{name: "patroni resume: replaced pod streams", intent: pgReplace1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReplace, "pg-1", done(model.StepDeletePVC), done(model.StepDeletePod))}
				o.Members[1].Pod.UID, o.Members[1].PVC.UID = "pod-uid-new", "pvc-uid-new"
			}, verb: model.VerbDone, noSteps: true}),
		pgRow(row{name: "patroni resume: replaced pod bootstrapping", intent: pgReplace1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReplace, "pg-1", done(model.StepDeletePVC), done(model.StepDeletePod))}
				o.Members[1].Pod.UID, o.Members[1].PVC.UID = "pod-uid-new", "pvc-uid-new"
				notStreaming(o, 1)
				pgf(o, 1).State = "creating replica"
			}, verb: model.VerbProceed, steps: []model.StepKind{model.StepAwaitStreaming}}),
		pgRow(row{name: "patroni resume: pod gone, volume going", intent: pgReplace1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReplace, "pg-1", done(model.StepDeletePVC), done(model.StepDeletePod))}
				o.Members[1].Pod, o.Members[1].Engine = nil, nil
				o.Members[1].PVC.DeletionMarked = true
				notStreaming(o, 1)
			}, verb: model.VerbProceed, steps: []model.StepKind{model.StepAwaitPodRecreated, model.StepAwaitStreaming},
			check: func(t *testing.T, d model.Decision) {
				if d.Deletes() {
					t.Errorf("deletes again: %+v", d.Fences)
				}
			}}),
		pgRow(row{name: "patroni resume: new pod on the old volume", intent: pgReplace1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReplace, "pg-1", done(model.StepDeletePod))}
				o.Members[1].Pod.UID = "pod-uid-new"
			}, verb: model.VerbProceed, steps: pgReplace,
			check: func(t *testing.T, d model.Decision) {
				if d.Fences[1].UID != "pod-uid-new" || d.Fences[0].UID != "pvc-uid-pg-1" {
					t.Errorf("fences %+v", d.Fences)
				}
			}}),
		pgRow(row{name: "patroni resume: switchover answered, settled", intent: pgSwitch,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionSwitchover, "", model.Receipt{Step: model.StepSwitchover, Outcome: model.OutcomeDone, MemberID: "pg-1", From: "pg-0"})}
				promoted(o, 0, 1)
			}, verb: model.VerbDone, noSteps: true,
			check: func(t *testing.T, d model.Decision) {
				if d.Leader != "pg-1" {
					t.Errorf("leader %s", d.Leader)
				}
			}}),
		pgRow(row{name: "patroni resume: switchover answered, old primary still demoting", intent: pgSwitch,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionSwitchover, "", model.Receipt{Step: model.StepSwitchover, Outcome: model.OutcomeDone, MemberID: "pg-1", From: "pg-0"})}
				promoted(o, 0, 1)
				pgf(o, 0).Role, pgf(o, 0).State = "demoted", "stopping"
			}, verb: model.VerbDone, noSteps: true, notes: []model.Code{model.CodeRejoinPending}}),
		pgRow(row{name: "patroni resume: switchover answered, old primary cannot rejoin: done, reported", intent: pgSwitch,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionSwitchover, "", model.Receipt{Step: model.StepSwitchover, Outcome: model.OutcomeDone, MemberID: "pg-1", From: "pg-0", At: now.Add(-time.Hour)})}
				promoted(o, 0, 1)
				pgf(o, 0).State = "stopped"
			}, verb: model.VerbDone, noSteps: true, notes: []model.Code{model.CodeRejoinPending},
			check: func(t *testing.T, d model.Decision) {
				if d.Leader != "pg-1" {
					t.Errorf("leader %s", d.Leader)
				}
			}}),
		pgRow(row{name: "patroni resume: switchover answered, Patroni chose another member: done, named", intent: pgSwitch,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionSwitchover, "", model.Receipt{Step: model.StepSwitchover, Outcome: model.OutcomeDone, MemberID: "pg-1", From: "pg-0"})}
				promoted(o, 0, 2)
			}, verb: model.VerbDone, noSteps: true, notes: []model.Code{model.CodeSwitchoverOther},
			check: func(t *testing.T, d model.Decision) {
				if d.Leader != "pg-2" {
					t.Errorf("leader %s", d.Leader)
				}
			}}),
		pgRow(row{name: "patroni resume: switchover answered long ago, the old primary leads again: stale, a new switchover through every gate", intent: pgSwitch,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionSwitchover, "", model.Receipt{Step: model.StepSwitchover, Outcome: model.OutcomeDone, MemberID: "pg-1", From: "pg-0", At: now.Add(-patroni.SwitchoverSettleAfter - time.Minute)})}
			}, verb: model.VerbProceed, steps: switchPlan, notes: []model.Code{model.CodeSuperseding},
			check: func(t *testing.T, d model.Decision) {
				if d.Resume != "" || len(d.Supersedes) != 1 {
					t.Errorf("resume %q supersedes %v", d.Resume, d.Supersedes)
				}
			}}),
		pgRow(row{name: "patroni: a switchover entry that has happened does not block a reseed", intent: intentFor(model.ActionReseed, "pg-0"),
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionSwitchover, "", model.Receipt{Step: model.StepSwitchover, Outcome: model.OutcomeDone, MemberID: "pg-1", From: "pg-0"})}
				promoted(o, 0, 1)
				pgf(o, 0).State = "stopped" // the old primary cannot rejoin: reseeding it is the repair
				notStreaming(o, 0)
			}, verb: model.VerbProceed, steps: reseedPlan, notes: []model.Code{model.CodeSuperseding}}),
		pgRow(row{name: "patroni: a switchover entry still settling blocks a reseed", intent: pgReseed1,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionSwitchover, "", model.Receipt{Step: model.StepSwitchover, Outcome: model.OutcomeDone, MemberID: "pg-1", From: "pg-0", At: now.Add(-5 * time.Second)})}
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeActionInProgress}}),
		pgRow(row{name: "patroni resume: switchover unanswered, nothing moved", intent: pgSwitch,
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionSwitchover, "", model.Receipt{Step: model.StepSwitchover, Outcome: model.OutcomeUnknown, MemberID: "pg-1", From: "pg-0"})}
			}, verb: model.VerbProceed, steps: switchPlan, check: switchStep("pg-0", "pg-1")}),
		pgRow(row{name: "patroni resume: reseed of the old primary after its switchover, still stopping: waits before the reinitialize", intent: withOpts(intentFor(model.ActionReseed, "pg-0"), func(o *model.ActionOptions) { o.SwitchoverFirst = true }),
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-0", model.Receipt{Step: model.StepSwitchover, Outcome: model.OutcomeDone, MemberID: "pg-1", From: "pg-0"})}
				promoted(o, 0, 1)
				pgf(o, 0).State = "stopping"
			}, verb: model.VerbProceed, steps: append([]model.StepKind{model.StepAwaitSwitchover}, reseedPlan...)}),
		pgRow(row{name: "patroni resume: reseed of the old primary after its switchover", intent: withOpts(intentFor(model.ActionReseed, "pg-0"), func(o *model.ActionOptions) { o.SwitchoverFirst = true }),
			mutate: func(o *model.Observation) {
				o.Ledger = []model.LedgerEntry{pgEntry(model.ActionReseed, "pg-0", model.Receipt{Step: model.StepSwitchover, Outcome: model.OutcomeDone, MemberID: "pg-1", From: "pg-0"})}
				promoted(o, 0, 1)
			}, verb: model.VerbProceed, steps: reseedPlan}),
	}
}

// TestPatroniIsRegistered: Patroni clusters are planned by Patroni's
// rules.
func TestPatroniIsRegistered(t *testing.T) {
	if r := judgedIntent(model.Intent{}).Options.Verdict.Rules[patroni.Name]; !isClassify(r) {
		t.Fatalf("Patroni's rules %T plan no actions (model.ClassifyRules)", r)
	}
}

// TestPatroniInvariants classifies every action on every member of a
// Patroni cluster in many states and checks what must always hold: the
// primary is never reinitialized or deleted, a switchover hands over
// only to a healthy candidate from the observed primary, a refusal or
// wait never changes anything, and every delete is fenced as observed.
func TestPatroniInvariants(t *testing.T) {
	states := map[string]func(*model.Observation, int){
		"healthy":       func(*model.Observation, int) {},
		"not-streaming": func(o *model.Observation, i int) { notStreaming(o, i) },
		"lagging":       func(o *model.Observation, i int) { pgf(o, i).ReplayedLocation = ptr(pgFrontier - 4<<20) },
		"unreachable": func(o *model.Observation, i int) {
			o.Members[i].Engine = &model.EngineFacts{Reachable: false, Failure: model.ProbeFailureTimeout, Err: "timeout", ProbedAt: now}
		},
		"terminating": func(o *model.Observation, i int) { o.Members[i].Pod.DeletionMarked = true },
		"absent":      func(o *model.Observation, i int) { o.Members[i].Pod, o.Members[i].Engine = nil, nil },
		"nofailover":  func(o *model.Observation, i int) { pgf(o, i).NoFailover = true },
		"writable":    func(o *model.Observation, i int) { pgf(o, i).Role, pgf(o, i).WALLocation = "master", ptr(pgFrontier) },
		"diverged":    func(o *model.Observation, i int) { pgf(o, i).Timeline = 3 },
	}
	n := 0
	for _, action := range []model.Action{model.ActionReseed, model.ActionReplace, model.ActionSwitchover} {
		for _, target := range []string{"", "pg-0", "pg-1", "pg-2"} {
			for sn, s := range states {
				for on, os := range states {
					for _, first := range []bool{false, true} {
						obs := pgHealthy()
						s(&obs, 1)
						os(&obs, 2)
						if sn == "writable" && on == "healthy" {
							s(&obs, 0) // the primary itself in that state too
						}
						in := model.Intent{Action: action, Member: target, Options: model.ActionOptions{SwitchoverFirst: first}}
						d := judgedClassify(obs, in, now)
						n++
						name := fmt.Sprintf("%s %q pg-1=%s pg-2=%s first=%v", action, target, sn, on, first)
						checkPatroni(t, name, obs, in, d)
					}
				}
			}
		}
	}
	t.Logf("%d combinations", n)
}

func checkPatroni(t *testing.T, name string, obs model.Observation, in model.Intent, d model.Decision) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Errorf("%s: %s\n%s", name, fmt.Sprintf(format, args...), strings.Join(Describe(d), "\n"))
	}
	switch d.Verb {
	case model.VerbProceed, model.VerbDone:
		if len(d.Blockers) > 0 {
			fail("%s with blockers", d.Verb)
		}
	default:
		if len(d.Blockers) == 0 {
			fail("%s without a blocker", d.Verb)
		}
		if len(d.Steps) > 0 {
			fail("%s with steps", d.Verb)
		}
	}
	if d.Verb == model.VerbProceed && len(d.Steps) == 0 {
		fail("proceed without steps")
	}
	assertFencesObserved(t, obs, d)
	writable := 0
	for i := range obs.Members {
		if p := pgOf(&obs.Members[i]); p.Writable() && p.State == "running" {
			writable++
		}
	}
	if d.Verb == model.VerbProceed && writable != 1 {
		fail("proceeds with %d writable primaries", writable)
	}
	switched := false
	for _, s := range d.Steps {
		if !slices.Contains(model.AllStepKinds, s.Kind) || s.Phase != s.Kind.PhaseOf() || s.Detail == "" {
			fail("step %+v", s)
		}
		switch s.Kind {
		case model.StepSwitchover:
			switched = true
			if s.From != "pg-0" {
				fail("switchover from %s, the observed primary is pg-0", s.From)
			}
			if why := noCandidate(verdictObs(obs), s.MemberID, "pg-0"); why != "" {
				fail("switchover to %s, which is no candidate: %s", s.MemberID, why)
			}
		case model.StepReinitialize, model.StepDeletePod, model.StepDeletePVC:
			if !switched && s.Member == "pg-0" {
				fail("%s of the primary without switching over first", s.Kind)
			}
			if s.Member == "pg-0" && !in.Options.SwitchoverFirst {
				fail("%s of the primary without --switchover-first", s.Kind)
			}
		}
	}
	if again := judgedClassify(obs, in, now); !reflect.DeepEqual(again, d) {
		fail("a second classification differs")
	}
}

// verdictObs is obs with derived phases and lag.
func verdictObs(obs model.Observation) model.Observation {
	o := obs
	o.Members = verdictMembers(obs)
	return o
}

// TestPatroniResumeNeverActsOnThePrimary resumes replace and reseed
// entries at every recorded point, for every member, after Patroni
// promoted each member in turn, in several states of the others and
// with and without the overrides: no plan ever deletes, or reinitializes,
// the member that answers as the primary now, unless it hands the
// primary role away first.
func TestPatroniResumeNeverActsOnThePrimary(t *testing.T) {
	receipts := map[string][]model.Receipt{
		"nothing":        nil,
		"pvc deleted":    {done(model.StepDeletePVC)},
		"pod deleted":    {done(model.StepDeletePVC), done(model.StepDeletePod)},
		"pvc sending":    {{Step: model.StepDeletePVC, Outcome: model.OutcomeSending}},
		"reinit done":    {done(model.StepReinitialize)},
		"reinit sending": {{Step: model.StepReinitialize, Outcome: model.OutcomeSending, Since: "t0"}},
		"reinit unknown": {{Step: model.StepReinitialize, Outcome: model.OutcomeUnknown, Since: "t0"}},
		"switched":       {{Step: model.StepSwitchover, Outcome: model.OutcomeDone, From: "pg-1", MemberID: "pg-2", At: now.Add(-time.Minute)}},
	}
	others := map[string]func(*model.Observation, int){
		"healthy":    func(*model.Observation, int) {},
		"lagging":    func(o *model.Observation, i int) { pgf(o, i).ReplayedLocation = ptr(pgFrontier - 4<<20) },
		"terminated": func(o *model.Observation, i int) { o.Members[i].PVC.DeletionMarked = true },
		"restarted":  func(o *model.Observation, i int) { pgf(o, i).PostmasterStart = "t1" },
	}
	n := 0
	for _, action := range []model.Action{model.ActionReplace, model.ActionReseed} {
		for _, target := range []string{"pg-1", "pg-2"} {
			for rn, rs := range receipts {
				for _, to := range []int{0, 1, 2} {
					for on, os := range others {
						for _, opts := range []model.ActionOptions{{}, {SwitchoverFirst: true}, {AcceptNoFailover: true, SwitchoverFirst: true}} {
							obs := pgHealthy()
							if to != 0 {
								promoted(&obs, 0, to)
							}
							ti := int(target[3] - '0')
							os(&obs, ti)
							obs.Ledger = []model.LedgerEntry{pgEntry(action, target, slices.Clone(rs)...)}
							in := model.Intent{Action: action, Member: target, Options: opts}
							d := judgedClassify(obs, in, now)
							n++
							prim := fmt.Sprintf("pg-%d", to)
							name := fmt.Sprintf("%s %s, %s recorded, %s primary, target %s, switchover-first=%v accept-no-failover=%v", action, target, rn, prim, on, opts.SwitchoverFirst, opts.AcceptNoFailover)
							handedOver := false
							for _, s := range d.Steps {
								switch s.Kind {
								case model.StepSwitchover:
									if s.From != prim {
										t.Errorf("%s: switchover from %s, the primary is %s", name, s.From, prim)
									}
									handedOver = true
								case model.StepReinitialize, model.StepDeletePod, model.StepDeletePVC:
									if s.Member == prim && !handedOver {
										t.Errorf("%s: %s of the primary %s:\n%s", name, s.Kind, prim, strings.Join(Describe(d), "\n"))
									}
								}
							}
							if target == prim && !opts.SwitchoverFirst && d.Verb != model.VerbRefuse {
								t.Errorf("%s: %s, want refused:\n%s", name, d.Verb, strings.Join(Describe(d), "\n"))
							}
							if target == prim && !opts.SwitchoverFirst && rs != nil && !d.Blocked(model.CodeTargetPromoted) && !d.Blocked(model.CodeTargetIsPrimary) {
								t.Errorf("%s: blockers %+v, want target_promoted", name, d.Blockers)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d resumed decisions", n)
}

// pgOf is what member m's Patroni answered, nil when it did not.
func pgOf(m *model.Member) *model.PatroniFacts {
	if m == nil || m.Engine == nil || !m.Engine.Reachable {
		return nil
	}
	return m.Engine.Patroni
}

// noCandidate says why member name of obs (phases derived) could not
// take over from primary, judged from the facts alone: it must answer as
// a replica in the member phase (caught up) without nofailover, from a
// ready pod, streaming from primary as primary itself reports.
func noCandidate(obs model.Observation, name, primary string) string {
	var prim *model.PatroniFacts
	for i := range obs.Members {
		if obs.Members[i].Name == primary {
			prim = pgOf(&obs.Members[i])
		}
	}
	for i := range obs.Members {
		m := &obs.Members[i]
		if m.Name != name {
			continue
		}
		switch p := pgOf(m); {
		case p == nil:
			return "it does not answer"
		case p.Writable():
			return "it is writable"
		case p.NoFailover:
			return "it is tagged nofailover"
		case m.Phase != model.PhaseMember:
			return "its phase is " + m.Phase.String()
		case m.Pod == nil || !m.Pod.Ready:
			return "its pod is not ready"
		}
		if _, ok := prim.Streaming(name); !ok {
			return "the primary does not list it as streaming"
		}
		return ""
	}
	return "no such member"
}
