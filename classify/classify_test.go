package classify

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
)

type row struct {
	name    string
	intent  model.Intent
	mutate  func(*model.Observation)
	verb    model.Verb
	codes   []model.Code     // blockers expected (exactly)
	steps   []model.StepKind // expected step kinds (exactly), nil: not checked
	notes   []model.Code     // notes expected among the notes
	check   func(*testing.T, model.Decision)
	noSteps bool
	// base is the observation the row starts from (healthy() when nil).
	base func() model.Observation
}

var (
	replace1 = model.Intent{Action: model.ActionReplace, Member: "etcd-1"}
	fullPlan = []model.StepKind{
		model.StepRemoveMember, model.StepAddLearner, model.StepDeletePVC, model.StepDeletePod,
		model.StepAwaitPodGone, model.StepAwaitPodRecreated, model.StepAwaitMemberStarted,
		model.StepAwaitCaughtUp, model.StepPromoteLearner, model.StepAwaitVoterReady,
	}
	delegatePlan = []model.StepKind{
		model.StepRemoveMember, model.StepDeletePVC, model.StepDeletePod, model.StepAwaitPodGone,
		model.StepAwaitPodRecreated, model.StepAwaitMemberStarted, model.StepAwaitVoterReady,
	}
)

func withOpts(in model.Intent, f func(*model.ActionOptions)) model.Intent {
	f(&in.Options)
	return in
}

func intentFor(a model.Action, member string) model.Intent {
	return model.Intent{Action: a, Member: member}
}

func rows() []row {
	return []row{
		{name: "healthy follower: full learner flow", intent: replace1, verb: model.VerbProceed, steps: fullPlan,
			check: func(t *testing.T, d model.Decision) {
				want := []model.Fence{
					{Kind: "PersistentVolumeClaim", Namespace: "db", Name: "data-etcd-1", UID: "pvc-uid-1", ResourceVersion: "201", Fingerprint: "pvcfp1"},
					{Kind: "Pod", Namespace: "db", Name: "etcd-1", UID: "pod-uid-1", ResourceVersion: "101", Fingerprint: "podfp1"},
				}
				if !reflect.DeepEqual(d.Fences, want) {
					t.Errorf("fences = %+v, want %+v", d.Fences, want)
				}
				if d.MemberFence == nil || d.MemberFence.ID != memberIDs[1] || d.MemberFence.ClusterID != clusterID || d.MemberFence.PeerURLs[0] != peerURL(1) {
					t.Errorf("member fence = %+v", d.MemberFence)
				}
				if q := d.Quorum; !q.Checked || !q.OK || q.Voters != 3 || q.Quorum != 2 || q.HealthyWithout != 2 {
					t.Errorf("quorum = %+v", q)
				}
				if d.Steps[1].PeerURLs[0] != peerURL(1) {
					t.Errorf("learner peer URL = %v", d.Steps[1].PeerURLs)
				}
				if d.Phase != model.ActionPhaseRemoving {
					t.Errorf("phase = %s", d.Phase)
				}
				if d.Replaced.PodUID != "pod-uid-1" || d.Replaced.PVCUID != "pvc-uid-1" || d.Replaced.MemberID != memberIDs[1] {
					t.Errorf("replaced = %+v", d.Replaced)
				}
			}},
		{name: "reseed takes the same flow", intent: intentFor(model.ActionReseed, "etcd-2"), verb: model.VerbProceed, steps: fullPlan},
		{name: "static pods: the kubelet's, refused with its runbook filled in", intent: intentFor(model.ActionReseed, "etcd-2"),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "the kubelet", Runbook: []string{"on {healthyNode}: member remove {memberID}", "on {node}: rm -r {dataDir} of {member} in {namespace}/{cluster}"}}
				o.Cluster.Template.DataDir = "/var/lib/etcd"
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged}, noSteps: true,
			check: func(t *testing.T, d model.Decision) {
				want := []string{"on node-0: member remove " + memberIDs[2], "on node-2: rm -r /var/lib/etcd of etcd-2 in db/etcd"}
				if len(d.Steps) != 0 || d.Flow != model.FlowNone {
					t.Errorf("steps %+v flow %s: a refused change plans nothing", d.Steps, d.Flow)
				}
				if !slices.Equal(d.Runbook, want) {
					t.Errorf("runbook %q, want %q", d.Runbook, want)
				}
				if len(d.Fences) != 0 || d.MemberFence != nil {
					t.Errorf("fences %+v %+v: a refused change fences nothing", d.Fences, d.MemberFence)
				}
			}},
		{name: "static pods: a replace that would lose quorum gets no runbook", intent: intentFor(model.ActionReplace, "etcd-1"),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "the kubelet", Runbook: []string{"member remove {memberID}"}}
				down(o, 2)
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged, model.CodeQuorumWouldBreak}, notes: []model.Code{model.CodeRunbookWithheld}, noSteps: true,
			check: func(t *testing.T, d model.Decision) {
				if len(d.Runbook) != 0 {
					t.Errorf("runbook %q handed out while removing etcd-1 leaves 1 healthy voter of 3", d.Runbook)
				}
			}},
		{name: "static pods: the runbook of a member that is down names it by the others' member list", intent: intentFor(model.ActionReplace, "etcd-2"),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "the kubelet", Runbook: []string{"member remove {memberID}"}}
				for i := range o.Members {
					o.Members[i].Pod.Node = "node-" + string(rune('0'+i))
				}
				for i := range o.Members {
					for j := range o.Members[i].Engine.Peers {
						o.Members[i].Engine.Peers[j].Name = "node-" + string(rune('0'+j))
					}
				}
				down(o, 2)
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged}, noSteps: true,
			check: func(t *testing.T, d model.Decision) {
				if want := []string{"member remove " + memberIDs[2]}; !slices.Equal(d.Runbook, want) {
					t.Errorf("runbook %q, want %q", d.Runbook, want)
				}
			}},
		{name: "static pods: no runbook while another learner is pending (etcd takes one at a time)", intent: intentFor(model.ActionReplace, "etcd-1"),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "the kubelet", Runbook: []string{"member remove {memberID}"}}
				for i := range o.Members {
					for j := range o.Members[i].Engine.Peers {
						if o.Members[i].Engine.Peers[j].ID == memberIDs[2] {
							o.Members[i].Engine.Peers[j].IsLearner = true
						}
					}
				}
				o.Members[2].Engine.IsLearner = true
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged, model.CodeLearnerPending}, notes: []model.Code{model.CodeRunbookWithheld}, noSteps: true},
		{name: "static pods: an unknown member gets no runbook", intent: intentFor(model.ActionReseed, "etcd-9"),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "the kubelet", Runbook: []string{"member remove {memberID}"}}
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged, model.CodeMemberNotFound}, notes: []model.Code{model.CodeRunbookWithheld}, noSteps: true},
		{name: "static pods: a seed is refused, with no runbook", intent: intentFor(model.ActionSeed, ""),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "the kubelet", Runbook: []string{"member remove {memberID}"}}
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged}, noSteps: true,
			check: func(t *testing.T, d model.Decision) {
				if len(d.Runbook) != 0 {
					t.Errorf("runbook %q for a seed", d.Runbook)
				}
			}},
		{name: "operator: its record of the member agrees: its runbook is handed over", intent: intentFor(model.ActionReplace, "etcd-2"),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "the operator", Runbook: []string{"delete {member} ({memberID})"}}
				o.Cluster.Operator = operatorRecords(o)
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged}, noSteps: true,
			check: func(t *testing.T, d model.Decision) {
				if want := []string{"delete etcd-2 (" + memberIDs[2] + ")"}; !slices.Equal(d.Runbook, want) {
					t.Errorf("runbook %q, want %q", d.Runbook, want)
				}
			}},
		{name: "operator: it records another member ID: deleting its record would remove another member, so no runbook", intent: intentFor(model.ActionReplace, "etcd-2"),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "the operator", Runbook: []string{"delete {member} ({memberID})"}}
				o.Cluster.Operator = operatorRecords(o)
				o.Cluster.Operator.Members[2].MemberID = memberIDs[1]
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged, model.CodeOperatorRecordMismatch}, notes: []model.Code{model.CodeRunbookWithheld}, noSteps: true,
			check: func(t *testing.T, d model.Decision) {
				if len(d.Runbook) != 0 {
					t.Errorf("runbook %q handed out while the operator would remove %s", d.Runbook, memberIDs[1])
				}
				if b := d.Blockers[1]; !strings.Contains(b.Detail, "would remove "+memberIDs[1]) {
					t.Errorf("blocker %q does not say which member would go", b.Detail)
				}
			}},
		{name: "operator: its records could not be read: whether its steps remove the member cannot be checked, so no runbook", intent: intentFor(model.ActionReplace, "etcd-2"),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "the operator", Runbook: []string{"delete {member}"}}
				o.Cluster.Operator = &model.OperatorFacts{Kind: "EtcdCluster", Name: "etcd", Err: "list etcdmembers: forbidden"}
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged, model.CodeOperatorRecordMismatch}, notes: []model.Code{model.CodeRunbookWithheld}, noSteps: true},
		{name: "operator: it records another cluster ID than the members answer for: no runbook", intent: intentFor(model.ActionReplace, "etcd-2"),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "the operator", Runbook: []string{"delete {member}"}}
				o.Cluster.Operator = operatorRecords(o)
				o.Cluster.Operator.ClusterID = "5b2a4b9c0e1f7d21"
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged, model.CodeOperatorRecordMismatch}, notes: []model.Code{model.CodeRunbookWithheld}, noSteps: true},
		{name: "operator: no member ID recorded yet, the member listed under its name: its steps, the ID padded as the operator writes it", intent: intentFor(model.ActionReplace, "etcd-2"),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "the operator", Runbook: []string{"check {memberID16}"}}
				o.Cluster.Operator = operatorRecords(o)
				o.Cluster.Operator.Members[2].MemberID = ""
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged}, noSteps: true,
			check: func(t *testing.T, d model.Decision) {
				if want := []string{"check " + memberIDs[2]}; !slices.Equal(d.Runbook, want) {
					t.Errorf("runbook %q, want %q", d.Runbook, want)
				}
			}},
		{name: "operator: it has no record of the member: no runbook", intent: intentFor(model.ActionReseed, "etcd-2"),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "the operator", Runbook: []string{"delete {member}"}}
				o.Cluster.Operator = operatorRecords(o)
				o.Cluster.Operator.Members = o.Cluster.Operator.Members[:2]
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged, model.CodeOperatorRecordMismatch}, notes: []model.Code{model.CodeRunbookWithheld}, noSteps: true},
		{name: "operator removing by name (etcd-druid): a stale recorded ID does not matter, its runbook is handed over", intent: intentFor(model.ActionReplace, "etcd-2"),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "etcd-druid", Runbook: []string{"delete pod {member} ({memberID}, lease {memberName})"}}
				o.Cluster.Operator = operatorRecords(o)
				o.Cluster.Operator.RemovesByName = true
				o.Cluster.Operator.Members[2].MemberID = memberIDs[1]
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged}, noSteps: true,
			check: func(t *testing.T, d model.Decision) {
				if want := []string{"delete pod etcd-2 (" + memberIDs[2] + ", lease etcd-2)"}; !slices.Equal(d.Runbook, want) {
					t.Errorf("runbook %q, want %q", d.Runbook, want)
				}
			}},
		{name: "operator removing by name (etcd-druid): its resource unread, or being deleted, or two members of the name: no runbook", intent: intentFor(model.ActionReplace, "etcd-2"),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "etcd-druid", Runbook: []string{"delete pod {member}"}}
				o.Cluster.Operator = operatorRecords(o)
				o.Cluster.Operator.RemovesByName, o.Cluster.Operator.Err = true, "list etcds: forbidden"
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged, model.CodeOperatorRecordMismatch}, notes: []model.Code{model.CodeRunbookWithheld}, noSteps: true,
			check: func(t *testing.T, d model.Decision) {
				for _, mut := range []func(op *model.OperatorFacts, o *model.Observation){
					func(op *model.OperatorFacts, _ *model.Observation) { op.Deleting = true },
					func(_ *model.OperatorFacts, o *model.Observation) {
						for i := range o.Members {
							for j := range o.Members[i].Engine.Peers {
								if o.Members[i].Engine.Peers[j].ID == memberIDs[1] {
									o.Members[i].Engine.Peers[j].Name = "etcd-2"
								}
							}
						}
					},
				} {
					o := healthyN(3)
					o.Cluster.ManagedBy = &model.Manager{Name: "etcd-druid", Runbook: []string{"delete pod {member}"}}
					o.Cluster.Operator = operatorRecords(&o)
					o.Cluster.Operator.RemovesByName = true
					mut(o.Cluster.Operator, &o)
					d := judgedClassify(o, intentFor(model.ActionReplace, "etcd-2"), now)
					if len(d.Runbook) != 0 || !slices.ContainsFunc(d.Blockers, func(b model.Blocker) bool { return b.Code == model.CodeOperatorRecordMismatch }) {
						t.Errorf("runbook %q handed out, blockers %+v", d.Runbook, d.Blockers)
					}
				}
			}},
		{name: "operator removing by name (etcd-druid): the members' list has no member under its name, so no runbook", intent: intentFor(model.ActionReplace, "etcd-2"),
			mutate: func(o *model.Observation) {
				o.Cluster.ManagedBy = &model.Manager{Name: "etcd-druid", Runbook: []string{"delete pod {member}"}}
				o.Cluster.Operator = operatorRecords(o)
				o.Cluster.Operator.RemovesByName = true
				for i := range o.Members {
					for j := range o.Members[i].Engine.Peers {
						if o.Members[i].Engine.Peers[j].ID == memberIDs[2] {
							o.Members[i].Engine.Peers[j].Name = "etcd-2-old"
						}
					}
				}
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberManaged, model.CodeOperatorRecordMismatch}, notes: []model.Code{model.CodeRunbookWithheld}, noSteps: true,
			check: func(t *testing.T, d model.Decision) {
				if b := d.Blockers[1]; !strings.Contains(b.Detail, "no member named etcd-2 for etcd-2") {
					t.Errorf("blocker %q does not say the member is not listed under its name", b.Detail)
				}
			}},
		{name: "auth enabled: the learner flow cannot watch a learner catch up (etcd issues it no token)", intent: intentFor(model.ActionReplace, "etcd-2"),
			mutate: func(o *model.Observation) {
				o.Cluster.Template.Password, o.Cluster.Template.PasswordFrom = &model.SecretKeyRef{Secret: "etcd", Key: "etcd-root-password"}, "env ETCD_ROOT_PASSWORD"
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeActionUnsupported}, noSteps: true},
		{name: "auth enabled: a seed is planned as any (the capture gives the password; docs/actions.md)", intent: withOpts(intentFor(model.ActionSeed, ""), func(o *model.ActionOptions) { o.SeedStore = "s3://b" }),
			mutate: func(o *model.Observation) {
				o.Cluster.Template.Password, o.Cluster.Template.PasswordFrom = &model.SecretKeyRef{Secret: "etcd", Key: "etcd-root-password"}, "env ETCD_ROOT_PASSWORD"
			},
			verb: model.VerbProceed, steps: []model.StepKind{model.StepCaptureSnapshot, model.StepUpload, model.StepPublish}},
		{name: "leader without --move-leader", intent: intentFor(model.ActionReplace, "etcd-0"), verb: model.VerbRefuse,
			codes: []model.Code{model.CodeTargetIsLeader},
			check: func(t *testing.T, d model.Decision) {
				if d.Blockers[0].Override != model.FlagMoveLeader {
					t.Errorf("override = %q", d.Blockers[0].Override)
				}
			}},
		{name: "leader with --move-leader moves leadership first", intent: withOpts(intentFor(model.ActionReplace, "etcd-0"), func(o *model.ActionOptions) { o.MoveLeader = true }),
			verb: model.VerbProceed, steps: append([]model.StepKind{model.StepMoveLeader}, fullPlan...), notes: []model.Code{model.CodeLeaderMove},
			check: func(t *testing.T, d model.Decision) {
				if s := d.Steps[0]; s.Member != "etcd-1" || s.MemberID != memberIDs[1] {
					t.Errorf("move-leader to %s/%s, want etcd-1", s.Member, s.MemberID)
				}
			}},
		{name: "--move-leader prefers the least lagging follower", intent: withOpts(intentFor(model.ActionReplace, "etcd-0"), func(o *model.ActionOptions) { o.MoveLeader = true }),
			mutate: func(o *model.Observation) { o.Members[1].Engine.RaftApplied = 4990 },
			verb:   model.VerbProceed,
			check: func(t *testing.T, d model.Decision) {
				if s := d.Steps[0]; s.Member != "etcd-2" {
					t.Errorf("move-leader to %s, want etcd-2 (lag 0)", s.Member)
				}
			}},
		{name: "another member down: removing a healthy one breaks quorum", intent: replace1,
			mutate: func(o *model.Observation) { down(o, 2) }, verb: model.VerbRefuse, codes: []model.Code{model.CodeQuorumWouldBreak},
			check: func(t *testing.T, d model.Decision) {
				if !strings.Contains(d.Blockers[0].Detail, "etcd-2") || d.Quorum.HealthyWithout != 1 || d.Quorum.OK {
					t.Errorf("blocker %q, quorum %+v", d.Blockers[0].Detail, d.Quorum)
				}
			}},
		{name: "replacing the member that is down keeps quorum", intent: intentFor(model.ActionReplace, "etcd-2"),
			mutate: func(o *model.Observation) { down(o, 2) }, verb: model.VerbProceed, steps: fullPlan},
		{name: "5 members, 2 down: replacing a third healthy one breaks quorum", intent: replace1,
			mutate: func(o *model.Observation) { *o = healthyN(5); down(o, 3); down(o, 4) },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeQuorumWouldBreak}},
		{name: "5 members, 1 down: replacing a healthy one keeps quorum", intent: replace1,
			mutate: func(o *model.Observation) { *o = healthyN(5); down(o, 4) }, verb: model.VerbProceed},
		{name: "a lagging voter is not healthy", intent: replace1,
			mutate: func(o *model.Observation) { o.Members[2].Engine.RaftApplied = 1000 }, verb: model.VerbRefuse, codes: []model.Code{model.CodeQuorumWouldBreak}},
		{name: "stale observation", intent: replace1, mutate: func(o *model.Observation) { o.At = now.Add(-time.Minute) },
			verb: model.VerbRefuse, codes: []model.Code{model.CodeObservationStale}},
		{name: "observation without time", intent: replace1, mutate: func(o *model.Observation) { o.At = time.Time{} },
			verb: model.VerbRefuse, codes: []model.Code{model.CodeObservationStale}},
		{name: "lock held by another action", intent: replace1,
			mutate: func(o *model.Observation) {
				o.Lock = &model.LockFacts{Name: "hactl-etcd", Holder: "hactl/other/1/x", AcquiredAt: now.Add(-5 * time.Second), RenewedAt: now.Add(-2 * time.Second), Duration: 30 * time.Second}
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeLockHeld},
			check: func(t *testing.T, d model.Decision) {
				if !d.OnlyLockHeld() {
					t.Error("OnlyLockHeld = false")
				}
			}},
		{name: "own lock does not block", intent: withOpts(replace1, func(o *model.ActionOptions) { o.LockHolder = "hactl/me/2/y" }),
			mutate: func(o *model.Observation) {
				o.Lock = &model.LockFacts{Name: "hactl-etcd", Holder: "hactl/me/2/y", RenewedAt: now, Duration: 30 * time.Second}
			}, verb: model.VerbProceed},
		{name: "expired lock is reported and taken over", intent: replace1,
			mutate: func(o *model.Observation) {
				o.Lock = &model.LockFacts{Name: "hactl-etcd", Holder: "hactl/other/1/x", RenewedAt: now.Add(-time.Minute), Duration: 30 * time.Second}
			}, verb: model.VerbProceed, notes: []model.Code{model.CodeLockStale}},
		{name: "lock of a process that is gone is reported and taken over", intent: replace1,
			mutate: func(o *model.Observation) {
				o.Lock = &model.LockFacts{Name: "hactl-etcd", Holder: "hactl/host/1/x", RenewedAt: now, Duration: 30 * time.Second, HolderGone: true}
			}, verb: model.VerbProceed, notes: []model.Code{model.CodeLockStale}},
		{name: "deletion-marked pod: await", intent: replace1,
			mutate: func(o *model.Observation) { o.Members[1].Pod.DeletionMarked = true }, verb: model.VerbAwait,
			codes: []model.Code{model.CodePodTerminating}, noSteps: true},
		{name: "never-started pod from the current template: observe", intent: replace1,
			mutate: func(o *model.Observation) { neverStartedPod(o, 1) }, verb: model.VerbObserve, codes: []model.Code{model.CodePodNeverStarted}, noSteps: true},
		{name: "never-started pod whose pull fails: still only observe", intent: replace1,
			mutate: func(o *model.Observation) {
				neverStartedPod(o, 1)
				p := o.Members[1].Pod
				p.Waiting, p.WaitingReason, p.PullFailure = model.WaitingPullFailure, "ImagePullBackOff", model.PullFailureUnauthorized
				o.Events = []model.EventFacts{{Type: "Warning", Reason: "Failed", Object: "Pod/etcd-1", Message: "pod is broken beyond repair, delete it"}}
			}, verb: model.VerbObserve, codes: []model.Code{model.CodePodNeverStarted}, noSteps: true},
		{name: "never-started pod of an older template revision is replaced", intent: replace1,
			mutate: func(o *model.Observation) { neverStartedPod(o, 1); o.Members[1].Pod.Revision = "etcd-rev0" },
			verb:   model.VerbProceed, steps: fullPlan},
		{name: "crash-looping member is replaced", intent: replace1, mutate: func(o *model.Observation) { down(o, 1) }, verb: model.VerbProceed, steps: fullPlan},
		{name: "static-new refuses and explains the fix", intent: replace1,
			mutate: func(o *model.Observation) {
				o.Cluster.Shape = model.ShapeStaticNew
				o.Cluster.Template.InitialClusterState = "new"
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeShapeStaticNew},
			check: func(t *testing.T, d model.Decision) {
				for _, w := range []string{"existing", "OnDelete", "permanently removed"} {
					if !strings.Contains(d.Blockers[0].Detail, w) {
						t.Errorf("detail lacks %q: %s", w, d.Blockers[0].Detail)
					}
				}
			}},
		{name: "operator-owned: diagnose only", intent: replace1,
			mutate: func(o *model.Observation) {
				o.Cluster.Shape = model.ShapeOperatorOwned
				o.Cluster.Template.OperatorOwner = "EtcdCluster/main"
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeShapeOperatorOwned}},
		{name: "unknown shell wrapper: diagnose only", intent: replace1,
			mutate: func(o *model.Observation) { o.Cluster.Shape = model.ShapeUnknown }, verb: model.VerbRefuse, codes: []model.Code{model.CodeShapeUnknown}},
		{name: "self-registering: delegate, never a learner", intent: replace1,
			mutate: func(o *model.Observation) { o.Cluster.Shape = model.ShapeSelfRegistering },
			verb:   model.VerbProceed, steps: delegatePlan, notes: []model.Code{model.CodeDelegated}},
		{name: "self-registering whose preStop removed the member already", intent: replace1,
			mutate: func(o *model.Observation) {
				o.Cluster.Shape = model.ShapeSelfRegistering
				down(o, 1)
				setPeers(o, withoutPeer(peers(3), memberIDs[1]))
			},
			verb: model.VerbProceed, notes: []model.Code{model.CodeMemberRemoved},
			steps: []model.StepKind{model.StepDeletePVC, model.StepDeletePod, model.StepAwaitPodGone,
				model.StepAwaitPodRecreated, model.StepAwaitMemberStarted, model.StepAwaitVoterReady}},
		{name: "self-registering starting from a snapshot", intent: replace1,
			mutate: func(o *model.Observation) {
				o.Cluster.Shape = model.ShapeSelfRegistering
				o.Cluster.Template.StartFromSnapshot = true
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeStartFromSnapshot}},
		{name: "engine not probed", intent: replace1, mutate: func(o *model.Observation) { o.EngineProbed = false },
			verb: model.VerbRefuse, codes: []model.Code{model.CodeNotProbed}},
		{name: "no such member", intent: intentFor(model.ActionReplace, "etcd-9"), verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberNotFound}},
		{name: "member beyond replicas", intent: intentFor(model.ActionReplace, "etcd-2"),
			mutate: func(o *model.Observation) { o.Cluster.Replicas = 2 }, verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberNotWanted}},
		{name: "engine without rules", intent: replace1, mutate: func(o *model.Observation) { o.Cluster.Engine = engineToy },
			verb: model.VerbRefuse, codes: []model.Code{model.CodeEngineUnsupported}},
		{name: "unknown action", intent: intentFor(model.Action("explode"), "etcd-1"), verb: model.VerbRefuse, codes: []model.Code{model.CodeEngineUnsupported}},
		{name: "template lists fewer members than the cluster", intent: replace1,
			mutate: func(o *model.Observation) { o.Cluster.Template.InitialCluster = o.Cluster.Template.InitialCluster[:2] },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeTemplateMismatch},
			check: func(t *testing.T, d model.Decision) {
				if !strings.Contains(d.Blockers[0].Detail, "member count is unequal") {
					t.Errorf("detail: %s", d.Blockers[0].Detail)
				}
			}},
		{name: "template peer URL differs", intent: replace1,
			mutate: func(o *model.Observation) {
				o.Cluster.Template.InitialCluster[2].PeerURL = "http://etcd-2.other.db.svc:2381"
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeTemplateMismatch}},
		{name: "template sets no --initial-cluster", intent: replace1,
			mutate: func(o *model.Observation) { o.Cluster.Template.InitialCluster = nil },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeTemplateMismatch}},
		{name: "template not decoded", intent: replace1,
			mutate: func(o *model.Observation) { o.Cluster.Template.InitialClusterDecoded = false },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeTemplateUnverified}},
		{name: "members advertise addresses where the template names pods", intent: replace1,
			mutate: func(o *model.Observation) {
				l := peers(3)
				for i := range l {
					l[i].PeerURLs = []string{"http://127.3.1." + string(rune('1'+i)) + ":2380"}
				}
				setPeers(o, l)
			}, verb: model.VerbProceed, steps: fullPlan,
			check: func(t *testing.T, d model.Decision) {
				if d.Steps[1].PeerURLs[0] != "http://127.3.1.2:2380" {
					t.Errorf("learner URL = %v, want the member list's", d.Steps[1].PeerURLs)
				}
			}},
		{name: "another learner is pending", intent: replace1,
			mutate: func(o *model.Observation) {
				l := append(peers(3), model.Peer{ID: learnerID, PeerURLs: []string{"http://etcd-3.etcd-headless.db.svc.cluster.local:2380"}, IsLearner: true})
				setPeers(o, l)
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeLearnerPending, model.CodeTemplateMismatch}},
		{name: "another action in progress", intent: replace1,
			mutate: func(o *model.Observation) {
				e := inProgress()
				e.Member, e.ID = "etcd-2", "replace.etcd-2.x"
				o.Ledger = []model.LedgerEntry{e}
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeActionInProgress},
			check: func(t *testing.T, d model.Decision) {
				if d.Blockers[0].Override != model.FlagSupersede {
					t.Errorf("override = %q", d.Blockers[0].Override)
				}
			}},
		{name: "--supersede ends the other action", intent: withOpts(replace1, func(o *model.ActionOptions) { o.Supersede = true }),
			mutate: func(o *model.Observation) {
				e := inProgress()
				e.Member, e.ID = "etcd-2", "replace.etcd-2.x"
				o.Ledger = []model.LedgerEntry{e}
			}, verb: model.VerbProceed, notes: []model.Code{model.CodeSuperseding},
			check: func(t *testing.T, d model.Decision) {
				if !slices.Equal(d.Supersedes, []string{"replace.etcd-2.x"}) {
					t.Errorf("supersedes = %v", d.Supersedes)
				}
			}},
		{name: "a finished action does not block", intent: replace1,
			mutate: func(o *model.Observation) {
				e := inProgress()
				e.State = model.EntryDone
				o.Ledger = []model.LedgerEntry{e}
			}, verb: model.VerbProceed, steps: fullPlan},
		{name: "another member answers for a different cluster", intent: replace1,
			mutate: func(o *model.Observation) {
				e := o.Members[2].Engine
				e.ClusterID, e.LeaderID = otherID, e.MemberID
				e.Peers = []model.Peer{peers(3)[2]}
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeClusterIDSplit, model.CodeQuorumWouldBreak}},
		{name: "the diverged member itself is replaced", intent: intentFor(model.ActionReplace, "etcd-2"),
			mutate: func(o *model.Observation) {
				e := o.Members[2].Engine
				e.ClusterID, e.LeaderID = otherID, e.MemberID
				e.Peers = []model.Peer{peers(3)[2]}
			}, verb: model.VerbProceed, steps: fullPlan,
			check: func(t *testing.T, d model.Decision) {
				if d.MemberFence.ID != memberIDs[2] || d.MemberFence.ClusterID != clusterID {
					t.Errorf("member fence %+v: want etcd-2's entry in the reference cluster", d.MemberFence)
				}
			}},
		{name: "no agreed leader", intent: replace1,
			mutate: func(o *model.Observation) {
				for i := range o.Members {
					o.Members[i].Engine.LeaderID = ""
				}
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeLeaderUnknown, model.CodeQuorumWouldBreak}},
		{name: "no member answers", intent: replace1,
			mutate: func(o *model.Observation) { down(o, 0); down(o, 1); down(o, 2) },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeClusterUnreachable}},
		{name: "no member list in time says why and what to try", intent: replace1,
			mutate: func(o *model.Observation) {
				setPeers(o, nil)
				for i := range o.Members {
					o.Members[i].Engine.PeersErr = "timeout (MemberList: context deadline exceeded)"
				}
			},
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberListUnknown},
			check: func(t *testing.T, d model.Decision) {
				msg := d.Blockers[0].Detail
				if !strings.Contains(msg, "etcd-1: timeout (MemberList") || !strings.Contains(msg, "--probe-timeout") {
					t.Errorf("message %q: want each member's answer and the --probe-timeout hint", msg)
				}
			}},
		{name: "no member list", intent: replace1,
			mutate: func(o *model.Observation) { setPeers(o, nil) },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeMemberListUnknown}},
		{name: "peer URL unknown", intent: replace1,
			mutate: func(o *model.Observation) {
				down(o, 1)
				setPeers(o, withoutPeer(peers(3), memberIDs[1]))
				o.Cluster.Template.InitialCluster = nil
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodePeerURLUnknown}},
		{name: "reseed from a generation is not supported yet", intent: withOpts(intentFor(model.ActionReseed, "etcd-1"), func(o *model.ActionOptions) { o.Generation = "g1" }),
			verb: model.VerbRefuse, codes: []model.Code{model.CodeGenerationUnsupported}},
		{name: "seed without a store", intent: intentFor(model.ActionSeed, ""), verb: model.VerbRefuse, codes: []model.Code{model.CodeSeedStoreMissing}},
		{name: "seed picks a caught-up follower", intent: withOpts(intentFor(model.ActionSeed, ""), func(o *model.ActionOptions) { o.SeedStore = "s3://b" }),
			verb: model.VerbProceed, steps: []model.StepKind{model.StepCaptureSnapshot, model.StepUpload, model.StepPublish},
			check: func(t *testing.T, d model.Decision) {
				if d.Steps[0].Member != "etcd-1" || d.Flow != model.FlowSeed || d.Phase != model.ActionPhaseCapturing {
					t.Errorf("source %s flow %s phase %s", d.Steps[0].Member, d.Flow, d.Phase)
				}
			}},
		{name: "seed source is stable while lag moves within the threshold", intent: withOpts(intentFor(model.ActionSeed, ""), func(o *model.ActionOptions) { o.SeedStore = "s3://b" }),
			mutate: func(o *model.Observation) { o.Members[1].Engine.RaftApplied = 4990 },
			verb:   model.VerbProceed,
			check: func(t *testing.T, d model.Decision) {
				if d.Steps[0].Member != "etcd-1" {
					t.Errorf("source %s, want etcd-1: a lag within the threshold must not move the source between two observations", d.Steps[0].Member)
				}
			}},
		{name: "seed from a lagging member", intent: withOpts(intentFor(model.ActionSeed, "etcd-2"), func(o *model.ActionOptions) { o.SeedStore = "s3://b" }),
			mutate: func(o *model.Observation) { o.Members[2].Engine.RaftApplied = 10 },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeNoSeedSource}},
		{name: "seed from a member that does not exist", intent: withOpts(intentFor(model.ActionSeed, "etcd-7"), func(o *model.ActionOptions) { o.SeedStore = "s3://b" }),
			verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberNotFound}},
		{name: "seed without a leader frontier", intent: withOpts(intentFor(model.ActionSeed, ""), func(o *model.ActionOptions) { o.SeedStore = "s3://b" }),
			mutate: func(o *model.Observation) { down(o, 0) },
			verb:   model.VerbRefuse, codes: []model.Code{model.CodeNoSeedSource}},
		{name: "leader cannot hand over: no healthy follower", intent: withOpts(intentFor(model.ActionReplace, "etcd-0"), func(o *model.ActionOptions) { o.MoveLeader = true }),
			mutate: func(o *model.Observation) {
				for _, i := range []int{1, 2} {
					o.Members[i].Engine.RaftApplied = 1
				}
			}, verb: model.VerbRefuse, codes: []model.Code{model.CodeQuorumWouldBreak, model.CodeNoLeaderCandidate}},
		{name: "replacing a learner does not touch quorum", intent: intentFor(model.ActionReplace, "etcd-2"),
			mutate: func(o *model.Observation) {
				l := peers(3)
				l[2].IsLearner = true
				setPeers(o, l)
				o.Members[2].Engine.IsLearner = true
				down(o, 1)
			}, verb: model.VerbProceed, steps: fullPlan,
			check: func(t *testing.T, d model.Decision) {
				if d.Quorum.Checked || !d.MemberFence.IsLearner {
					t.Errorf("quorum %+v fence %+v", d.Quorum, d.MemberFence)
				}
			}},
		{name: "restore after quorum loss: scale to zero, one restore pod each, scale back", intent: restoreIntent, mutate: lostQuorum,
			verb: model.VerbProceed, notes: []model.Code{model.CodeWritesDiscarded},
			steps: []model.StepKind{model.StepScaleDown, model.StepAwaitMembersStopped, model.StepRunRestore, model.StepRunRestore, model.StepRunRestore,
				model.StepAwaitRestore, model.StepScaleUp, model.StepAwaitRestored, model.StepDeleteRestorePod, model.StepDeleteRestorePod, model.StepDeleteRestorePod},
			check: func(t *testing.T, d model.Decision) {
				if len(d.Fences) != 0 || d.Deletes() {
					t.Errorf("a fresh restore deletes nothing: fences %+v", d.Fences)
				}
				if f := d.Steps[0].Fence; f == nil || f.Kind != "StatefulSet" || f.UID != "sts-uid" || f.ResourceVersion != "500" || f.Fingerprint != "stsfp" {
					t.Errorf("scale-down fence %+v", f)
				}
				if d.Steps[2].Member != "etcd-0" || d.Steps[2].PeerURLs[0] != peerURL(0) || d.Flow != model.FlowRestore || d.Phase != model.ActionPhaseRemoving {
					t.Errorf("restore step %+v flow %s phase %s", d.Steps[2], d.Flow, d.Phase)
				}
			}},
		{name: "restore of a cluster with quorum needs --force", intent: restoreIntent, mutate: restorable,
			verb: model.VerbRefuse, codes: []model.Code{model.CodeClusterHasQuorum},
			check: func(t *testing.T, d model.Decision) {
				if d.Blockers[0].Override != model.FlagForce {
					t.Errorf("override %q", d.Blockers[0].Override)
				}
			}},
		{name: "restore of a cluster with quorum, forced", intent: withOpts(restoreIntent, func(o *model.ActionOptions) { o.Force = true }), mutate: restorable,
			verb: model.VerbProceed, notes: []model.Code{model.CodeWritesDiscarded}},
		{name: "restore of another cluster's generation", intent: withOpts(restoreIntent, func(o *model.ActionOptions) {
			o.Source = &model.GenerationFacts{Generation: genID, Engine: etcdengine.Name, ClusterID: "0123456789abcdef", Revision: 10}
		}), mutate: lostQuorum, verb: model.VerbRefuse, codes: []model.Code{model.CodeGenerationForeign}},
		{name: "restore of an unverified generation", intent: withOpts(restoreIntent, func(o *model.ActionOptions) { o.Source = nil }), mutate: lostQuorum,
			verb: model.VerbRefuse, codes: []model.Code{model.CodeGenerationUnverified}},
		{name: "restore with OrderedReady pods and the data dir at the mount point", intent: restoreIntent, mutate: func(o *model.Observation) {
			lostQuorum(o)
			o.Cluster.PodManagementPolicy = "OrderedReady"
			o.Cluster.Template.DataDir = "/var/run/etcd"
		}, verb: model.VerbRefuse, codes: []model.Code{model.CodeRestoreUnsupported, model.CodeTemplateUnverified}},
		{name: "restore naming a member", intent: func() model.Intent { in := restoreIntent; in.Member = "etcd-1"; return in }(), mutate: lostQuorum,
			verb: model.VerbRefuse, codes: []model.Code{model.CodeRestoreUnsupported}},
		{name: "restore resumed after scaling down: only the restore pods not yet created", intent: restoreIntent, mutate: func(o *model.Observation) {
			lostQuorum(o)
			scaledToZero(o)
			o.Ledger = []model.LedgerEntry{restoreEntry(model.StepScaleDown)}
			restorePods(o, o.Ledger[0].ID, "Succeeded")
		}, verb: model.VerbProceed, notes: []model.Code{model.CodeResuming},
			steps: []model.StepKind{model.StepRunRestore, model.StepRunRestore, model.StepAwaitRestore, model.StepScaleUp, model.StepAwaitRestored,
				model.StepDeleteRestorePod, model.StepDeleteRestorePod, model.StepDeleteRestorePod}},
		{name: "restore resumed with a failed restore pod refuses", intent: restoreIntent, mutate: func(o *model.Observation) {
			lostQuorum(o)
			scaledToZero(o)
			o.Ledger = []model.LedgerEntry{restoreEntry(model.StepScaleDown)}
			restorePods(o, o.Ledger[0].ID, "Succeeded", "Failed", "Running")
		}, verb: model.VerbRefuse, codes: []model.Code{model.CodeRestoreFailed},
			check: func(t *testing.T, d model.Decision) {
				if !strings.Contains(d.Blockers[0].Detail, "checksum mismatch") {
					t.Errorf("the agent's message is not shown: %s", d.Blockers[0].Detail)
				}
			}},
		{name: "restore resumed once every restore pod succeeded: scale back, never down", intent: restoreIntent, mutate: func(o *model.Observation) {
			lostQuorum(o)
			scaledToZero(o)
			o.Ledger = []model.LedgerEntry{restoreEntry(model.StepScaleDown, model.StepRunRestore)}
			restorePods(o, o.Ledger[0].ID, "Succeeded", "Succeeded", "Succeeded")
		}, verb: model.VerbProceed,
			steps: []model.StepKind{model.StepScaleUp, model.StepAwaitRestored, model.StepDeleteRestorePod, model.StepDeleteRestorePod, model.StepDeleteRestorePod}},
		{name: "restored and healthy: delete the restore pods", intent: restoreIntent, mutate: func(o *model.Observation) {
			restorable(o)
			o.Ledger = []model.LedgerEntry{restoreEntry(model.StepScaleDown, model.StepRunRestore, model.StepScaleUp)}
			restorePods(o, o.Ledger[0].ID, "Succeeded", "Succeeded", "Succeeded")
		}, verb: model.VerbProceed,
			steps: []model.StepKind{model.StepDeleteRestorePod, model.StepDeleteRestorePod, model.StepDeleteRestorePod},
			check: func(t *testing.T, d model.Decision) {
				if len(d.Fences) != 3 || d.Fences[0].UID != "rp-uid-0" {
					t.Errorf("fences %+v", d.Fences)
				}
			}},
		{name: "restore resumed after deleting one restore pod: the others, never a scale-down", intent: restoreIntent, mutate: func(o *model.Observation) {
			restorable(o)
			o.Ledger = []model.LedgerEntry{restoreEntry(model.StepScaleDown, model.StepRunRestore, model.StepScaleUp)}
			restorePods(o, o.Ledger[0].ID, "Succeeded", "Succeeded", "Succeeded")
			o.Cluster.RestorePods = o.Cluster.RestorePods[1:]
		}, verb: model.VerbProceed,
			steps: []model.StepKind{model.StepDeleteRestorePod, model.StepDeleteRestorePod}},
		{name: "restore finished: done", intent: restoreIntent, mutate: func(o *model.Observation) {
			restorable(o)
			o.Ledger = []model.LedgerEntry{restoreEntry(model.StepScaleDown, model.StepRunRestore, model.StepScaleUp, model.StepAwaitRestored, model.StepDeleteRestorePod)}
		}, verb: model.VerbDone, noSteps: true},
		{name: "leftover restore pods of another generation are deleted first", intent: restoreIntent, mutate: func(o *model.Observation) {
			lostQuorum(o)
			restorePods(o, "restore.old", "Failed")
			o.Cluster.RestorePods[0].Generation = "older"
		}, verb: model.VerbProceed,
			check: func(t *testing.T, d model.Decision) {
				if d.Steps[0].Kind != model.StepDeleteRestorePod || d.Steps[0].Fence == nil || d.Steps[0].Fence.UID != "rp-uid-0" {
					t.Errorf("first step %+v", d.Steps[0])
				}
			}},
		{name: "a clone answers with the target's member ID: refused, no member named", intent: replace1, mutate: func(o *model.Observation) {
			o.Members[2].Engine.MemberID = memberIDs[1]
		}, verb: model.VerbRefuse, codes: []model.Code{model.CodeMemberIDDuplicate}, noSteps: true},
		{name: "restore of a self-registering cluster", intent: restoreIntent, mutate: func(o *model.Observation) {
			lostQuorum(o)
			o.Cluster.Shape = model.ShapeSelfRegistering
		}, verb: model.VerbRefuse, codes: []model.Code{model.CodeRestoreUnsupported}},
	}
}

func neverStartedPod(o *model.Observation, i int) {
	m := &o.Members[i]
	m.Pod.Started, m.Pod.Running, m.Pod.Ready, m.Pod.EverStarted = false, false, false, false
	m.Pod.Phase = "Pending"
	m.Pod.Waiting, m.Pod.WaitingReason = model.WaitingCreating, "ContainerCreating"
	m.Engine = nil
}

func TestClassify(t *testing.T) {
	seenVerb := map[model.Verb]bool{}
	seenCode := map[model.Code]bool{}
	for _, r := range append(rows(), patroniRows()...) {
		t.Run(r.name, func(t *testing.T) {
			obs := healthy()
			if r.base != nil {
				obs = r.base()
			}
			if r.mutate != nil {
				r.mutate(&obs)
			}
			d := judgedClassify(obs, r.intent, now)
			seenVerb[d.Verb] = true
			for _, b := range d.Blockers {
				seenCode[b.Code] = true
			}
			for _, n := range d.Notes {
				seenCode[n.Code] = true
			}
			if d.Verb != r.verb {
				t.Errorf("verb = %s, want %s\n%s", d.Verb, r.verb, strings.Join(Describe(d), "\n"))
			}
			var got []model.Code
			for _, b := range d.Blockers {
				got = append(got, b.Code)
			}
			slices.Sort(got)
			want := slices.Clone(r.codes)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("blockers = %v, want %v\n%s", got, want, strings.Join(Describe(d), "\n"))
			}
			if r.steps != nil {
				if k := kinds(d); !slices.Equal(k, r.steps) {
					t.Errorf("steps = %v, want %v", k, r.steps)
				}
			}
			if r.noSteps && len(d.Steps) > 0 {
				t.Errorf("steps = %v, want none", kinds(d))
			}
			for _, n := range r.notes {
				if !slices.ContainsFunc(d.Notes, func(x model.Note) bool { return x.Code == n }) {
					t.Errorf("note %s missing: %+v", n, d.Notes)
				}
			}
			if r.check != nil {
				r.check(t, d)
			}
		})
	}
	for _, rs := range resumeRows() {
		obs := healthy()
		rs.mutate(&obs)
		d := judgedClassify(obs, replace1, now)
		seenVerb[d.Verb] = true
		for _, n := range d.Notes {
			seenCode[n.Code] = true
		}
		for _, b := range d.Blockers {
			seenCode[b.Code] = true
		}
	}
	for _, v := range model.AllVerbs {
		if !seenVerb[v] {
			t.Errorf("no row decides %s", v)
		}
	}
	for _, c := range append(slices.Clone(model.AllBlockerCodes), model.AllNoteCodes...) {
		if !seenCode[c] {
			t.Errorf("no row produces %s", c)
		}
	}
}

func kinds(d model.Decision) []model.StepKind {
	var out []model.StepKind
	for _, s := range d.Steps {
		out = append(out, s.Kind)
	}
	return out
}

// operatorRecords is an operator's record of o's members, each by the ID
// it answers with.
func operatorRecords(o *model.Observation) *model.OperatorFacts {
	op := &model.OperatorFacts{Kind: "EtcdCluster", Name: o.Cluster.Name, MemberKind: "EtcdMember", ClusterID: clusterID}
	for i, m := range o.Members {
		op.Members = append(op.Members, model.OperatorMember{Name: m.Name, MemberID: memberIDs[i], Voter: true})
	}
	return op
}
