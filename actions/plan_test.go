package actions_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/actions"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
)

// planned is a replace of etcd-1 as the classifier plans it on a
// static-existing cluster: every kind of field PlanDiff looks at is set.
func planned() model.Decision {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	pod := &model.Fence{Kind: "Pod", Namespace: "db", Name: "etcd-1", UID: "pod-uid-1", ResourceVersion: "100", Fingerprint: "fp-pod"}
	pvc := &model.Fence{Kind: "PersistentVolumeClaim", Namespace: "db", Name: "data-etcd-1", UID: "pvc-uid-1", ResourceVersion: "90", Fingerprint: "fp-pvc"}
	peer := []string{"http://etcd-1.etcd:2380", "http://10.0.0.1:2380"}
	return model.Decision{
		Intent: model.Intent{Action: model.ActionReplace, Member: "etcd-1",
			Options: model.ActionOptions{LockHolder: "hactl/planner/1/aa"}},
		Cluster: model.ClusterRef{Namespace: "db", Name: "etcd", UID: "sts-uid", Engine: etcdengine.Name},
		Shape:   model.ShapeStaticExisting, Flow: model.FlowLearner, Verb: model.VerbProceed,
		Phase: model.ActionPhaseRemoving,
		Steps: []model.Step{
			{Kind: model.StepRemoveMember, Phase: model.ActionPhaseRemoving, Member: "etcd-1", MemberID: "m1", Detail: "remove member m1"},
			{Kind: model.StepAddLearner, Phase: model.ActionPhaseRestoring, Member: "etcd-1", PeerURLs: peer, Detail: "add a learner"},
			{Kind: model.StepDeletePVC, Phase: model.ActionPhaseRemoving, Member: "etcd-1", Fence: pvc, Detail: "delete pvc"},
			{Kind: model.StepDeletePod, Phase: model.ActionPhaseRemoving, Member: "etcd-1", Fence: pod, Detail: "delete pod"},
			{Kind: model.StepAwaitPodGone, Phase: model.ActionPhaseRemoving, Member: "etcd-1", Detail: "wait"},
			{Kind: model.StepPromoteLearner, Phase: model.ActionPhaseCatchingUp, Member: "etcd-1", Detail: "promote"},
		},
		Fences:      []model.Fence{*pvc, *pod},
		MemberFence: &model.MemberFence{ID: "m1", Name: "etcd-1", PeerURLs: peer, ClusterID: "c1"},
		PeerURLs:    peer,
		Replaced:    model.Replaced{PodUID: "pod-uid-1", PVCUID: "pvc-uid-1", MemberID: "m1", PeerURLs: peer},
		Quorum: model.Quorum{Voters: 3, Quorum: 2, HealthyVoters: []string{"etcd-0", "etcd-1", "etcd-2"},
			HealthyWithout: 2, TargetVotes: true, Checked: true, OK: true},
		Leader:     "etcd-0",
		ClusterID:  "c1",
		Notes:      []model.Note{},
		Blockers:   []model.Blocker{},
		Verdict:    []model.Reason{{Code: "member_lagging", Member: "etcd-1"}},
		ObservedAt: at,
		DecidedAt:  at.Add(time.Second),
	}
}

// restorePlanned is a restore with its generation pinned and the
// StatefulSet fenced by its scale steps.
func restorePlanned() model.Decision {
	d := planned()
	sts := &model.Fence{Kind: "StatefulSet", Namespace: "db", Name: "etcd", UID: "sts-uid", ResourceVersion: "7", Fingerprint: "fp-sts"}
	d.Intent = model.Intent{Action: model.ActionRestore, Options: model.ActionOptions{Generation: "g1", SeedStore: "s3://b/etcd", AgentImage: "img:1",
		Source: &model.GenerationFacts{Generation: "g1", Engine: etcdengine.Name, ClusterID: "c0", Revision: 42, Digest: "sha256:aaa"}}}
	d.Flow = model.FlowRestore
	d.Steps = []model.Step{
		{Kind: model.StepScaleDown, Fence: sts, Detail: "scale down"},
		{Kind: model.StepRunRestore, Member: "etcd-0", Detail: "restore etcd-0"},
		{Kind: model.StepScaleUp, Fence: sts, Replicas: 3, Detail: "scale up"},
	}
	d.Fences, d.MemberFence, d.Replaced, d.Replicas = []model.Fence{}, nil, model.Replaced{}, 3
	return d
}

// TestPlanDiffEveryFieldThatMatters flips each field a saved plan is
// held to, one at a time: each flip is named.
func TestPlanDiffEveryFieldThatMatters(t *testing.T) {
	cases := []struct {
		name string
		base func() model.Decision
		flip func(d *model.Decision)
		want string
	}{
		{"verb", planned, func(d *model.Decision) {
			d.Verb = model.VerbRefuse
			d.Blockers = []model.Blocker{{Code: model.CodeTargetIsLeader, Detail: "etcd-1 leads"}}
		}, "target_is_leader"},
		{"action", planned, func(d *model.Decision) { d.Intent.Action = model.ActionReseed }, "action is now reseed"},
		{"member", planned, func(d *model.Decision) { d.Intent.Member = "etcd-2" }, "member is now etcd-2"},
		{"move-leader", planned, func(d *model.Decision) { d.Intent.Options.MoveLeader = true }, "--move-leader"},
		{"supersede", planned, func(d *model.Decision) { d.Intent.Options.Supersede = true }, "--supersede"},
		{"switchover-first", planned, func(d *model.Decision) { d.Intent.Options.SwitchoverFirst = true }, "--switchover-first"},
		{"switchover from another primary", planned, func(d *model.Decision) { d.Steps[0].From = "etcd-2" }, "now hands over from etcd-2"},
		{"force", planned, func(d *model.Decision) { d.Intent.Options.Force = true }, "--force"},
		{"generation option", planned, func(d *model.Decision) { d.Intent.Options.Generation = "g2" }, "--generation"},
		{"store", planned, func(d *model.Decision) { d.Intent.Options.SeedStore = "s3://other" }, "seed store"},
		{"agent image", planned, func(d *model.Decision) { d.Intent.Options.AgentImage = "evil:1" }, "--agent-image"},
		{"store secret", planned, func(d *model.Decision) { d.Intent.Options.StoreSecret = "other" }, "--store-secret"},
		{"statefulset uid", planned, func(d *model.Decision) { d.Cluster.UID = "sts-uid-2" }, "uid sts-uid-2"},
		{"shape", planned, func(d *model.Decision) { d.Shape = model.ShapeSelfRegistering }, "bootstrap shape"},
		{"flow", planned, func(d *model.Decision) { d.Flow = model.FlowDelegate }, "flow is now delegate"},
		{"leader", planned, func(d *model.Decision) { d.Leader = "etcd-2" }, "leader is now etcd-2"},
		{"cluster id", planned, func(d *model.Decision) { d.ClusterID = "c2" }, "cluster ID is now c2"},
		{"member fence id", planned, func(d *model.Decision) { d.MemberFence.ID = "m9" }, "member to remove is now m9"},
		{"member fence peer", planned, func(d *model.Decision) { d.MemberFence.PeerURLs = []string{"http://10.0.0.9:2380"} }, "10.0.0.9"},
		{"member fence gone", planned, func(d *model.Decision) { d.MemberFence = nil }, "would no longer be removed"},
		{"pod uid", planned, func(d *model.Decision) {
			d.Fences[1].UID = "pod-uid-2"
			f := d.Fences[1]
			d.Steps[3].Fence = &f
		}, "Pod db/etcd-1 was replaced"},
		{"pod spec", planned, func(d *model.Decision) {
			d.Fences[1].ResourceVersion, d.Fences[1].Fingerprint = "101", "fp-pod-2"
			f := d.Fences[1]
			d.Steps[3].Fence = &f
		}, "Pod db/etcd-1 changed"},
		{"pod rv without fingerprint", func() model.Decision {
			d := planned()
			d.Fences[1].Fingerprint = ""
			f := d.Fences[1]
			d.Steps[3].Fence = &f
			return d
		}, func(d *model.Decision) {
			d.Fences[1].ResourceVersion = "101"
			f := d.Fences[1]
			d.Steps[3].Fence = &f
		}, "Pod db/etcd-1 changed"},
		{"pvc gone", planned, func(d *model.Decision) {
			d.Fences = d.Fences[1:]
			d.Steps = append(d.Steps[:2], d.Steps[3:]...)
		}, "PersistentVolumeClaim db/data-etcd-1"},
		{"another object", planned, func(d *model.Decision) {
			d.Fences = append(d.Fences, model.Fence{Kind: "Pod", Namespace: "db", Name: "etcd-2", UID: "u2", ResourceVersion: "1"})
		}, "Pod db/etcd-2 (uid u2) would now be changed too"},
		{"step added", planned, func(d *model.Decision) {
			d.Steps = append([]model.Step{{Kind: model.StepMoveLeader, MemberID: "m2"}}, d.Steps...)
		}, "move-leader"},
		{"step member id", planned, func(d *model.Decision) { d.Steps[0].MemberID = "m7" }, "step 1 (remove-member)"},
		{"step peer url", planned, func(d *model.Decision) { d.Steps[1].PeerURLs = []string{"http://x:2380"} }, "step 2 (add-learner)"},
		{"replaced", planned, func(d *model.Decision) { d.Replaced.PodUID = "pod-uid-0" }, "what is replaced"},
		{"peer urls", planned, func(d *model.Decision) { d.PeerURLs = []string{"http://y:2380"} }, "peer URLs are now"},
		{"resume", planned, func(d *model.Decision) { d.Resume = "replace.etcd-1.x" }, "resumes ledger entry replace.etcd-1.x"},
		{"supersedes", planned, func(d *model.Decision) { d.Supersedes = []string{"reseed.etcd-2.y"} }, "supersedes"},
		{"voters", planned, func(d *model.Decision) { d.Quorum.Voters, d.Quorum.Quorum = 5, 3 }, "quorum is now 5 voters"},
		{"restore digest", restorePlanned, func(d *model.Decision) {
			s := *d.Intent.Options.Source
			s.Digest = "sha256:bbb"
			d.Intent.Options.Source = &s
		}, "manifest digest is now sha256:bbb"},
		{"restore revision", restorePlanned, func(d *model.Decision) {
			s := *d.Intent.Options.Source
			s.Revision = 43
			d.Intent.Options.Source = &s
		}, "revision 43"},
		{"restore source unread", restorePlanned, func(d *model.Decision) { d.Intent.Options.Source = nil }, "not read"},
		{"restore replicas", restorePlanned, func(d *model.Decision) { d.Replicas = 5 }, "scales back to 5"},
		{"statefulset spec", restorePlanned, func(d *model.Decision) {
			f := *d.Steps[0].Fence
			f.ResourceVersion, f.Fingerprint = "8", "fp-sts-2"
			d.Steps[0].Fence, d.Steps[2].Fence = &f, &f
		}, "StatefulSet db/etcd changed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := roundTrip(t, c.base())
			now := roundTrip(t, c.base())
			if got := actions.PlanDiff(plan, now); len(got) != 0 {
				t.Fatalf("unchanged decision: %q", got)
			}
			c.flip(&now)
			got := actions.PlanDiff(plan, now)
			if len(got) == 0 {
				t.Fatalf("flipping %s went unnoticed", c.name)
			}
			if !strings.Contains(strings.Join(got, "\n"), c.want) {
				t.Errorf("changes %q do not name %q", got, c.want)
			}
		})
	}
}

// TestPlanDiffIgnoresWhatDoesNotMatter: timestamps, wording, notes,
// status reasons, which voters are healthy, the lock holder and a
// resourceVersion moved by status alone do not refuse a plan.
func TestPlanDiffIgnoresWhatDoesNotMatter(t *testing.T) {
	for name, flip := range map[string]func(d *model.Decision){
		"observedAt":  func(d *model.Decision) { d.ObservedAt = d.ObservedAt.Add(9 * time.Minute) },
		"decidedAt":   func(d *model.Decision) { d.DecidedAt = d.DecidedAt.Add(9 * time.Minute) },
		"step detail": func(d *model.Decision) { d.Steps[0].Detail = "remove member m1 (applied index 99)" },
		"notes": func(d *model.Decision) {
			d.Notes = []model.Note{{Code: model.CodeLockStale, Detail: "stale holder"}}
		},
		"verdict reasons": func(d *model.Decision) { d.Verdict = nil },
		"healthy voters": func(d *model.Decision) {
			d.Quorum.HealthyVoters = []string{"etcd-0", "etcd-2"}
		},
		"lock holder": func(d *model.Decision) { d.Intent.Options.LockHolder = "hactl/applier/2/bb" },
		"pod status moved": func(d *model.Decision) {
			d.Fences[1].ResourceVersion = "105" // same UID, same fingerprint
			f := d.Fences[1]
			d.Steps[3].Fence = &f
		},
		"peer url order": func(d *model.Decision) {
			d.MemberFence.PeerURLs = []string{"http://10.0.0.1:2380", "http://etcd-1.etcd:2380"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			plan, now := roundTrip(t, planned()), roundTrip(t, planned())
			flip(&now)
			if got := actions.PlanDiff(plan, now); len(got) != 0 {
				t.Errorf("%s refused the plan: %q", name, got)
			}
		})
	}
}

// roundTrip passes d through JSON, as a saved plan does.
func roundTrip(t *testing.T, d model.Decision) model.Decision {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var out model.Decision
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTargetDiff(t *testing.T) {
	plan := actions.PlanTarget{Namespace: "db", StatefulSet: "etcd", StatefulSetUID: "u1", KubeSystemUID: "k1", Server: "https://a:6443"}
	for _, c := range []struct {
		name string
		now  actions.PlanTarget
		want string
	}{
		{"same", actions.PlanTarget{Namespace: "db", StatefulSet: "etcd", StatefulSetUID: "u1", KubeSystemUID: "k1", Server: "https://b:443"}, ""},
		{"kube-system unreadable now", actions.PlanTarget{Namespace: "db", StatefulSet: "etcd", StatefulSetUID: "u1"}, ""},
		{"another kube cluster", actions.PlanTarget{Namespace: "db", StatefulSet: "etcd", StatefulSetUID: "u1", KubeSystemUID: "k2"}, "another Kubernetes cluster"},
		{"statefulset recreated", actions.PlanTarget{Namespace: "db", StatefulSet: "etcd", StatefulSetUID: "u2", KubeSystemUID: "k1"}, "is another one now"},
		{"statefulset gone", actions.PlanTarget{Namespace: "db", StatefulSet: "etcd", KubeSystemUID: "k1"}, "no longer exists"},
		{"another namespace", actions.PlanTarget{Namespace: "prod", StatefulSet: "etcd", StatefulSetUID: "u1", KubeSystemUID: "k1"}, "not prod/etcd"},
	} {
		got := strings.Join(actions.TargetDiff(plan, c.now), "\n")
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestPlanConflictIsAFenceConflict(t *testing.T) {
	err := error(&actions.PlanConflictError{Changes: []string{"the leader is now etcd-2, the plan's was etcd-0"}})
	if !errors.Is(err, actions.ErrFenceConflict) || !strings.Contains(err.Error(), "leader is now etcd-2") || !strings.Contains(err.Error(), "make a new plan") {
		t.Fatalf("%v", err)
	}
}
