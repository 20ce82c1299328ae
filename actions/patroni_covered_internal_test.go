package actions

import (
	"errors"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/model"
)

// TestVerifyPatroniSteps: under the lock, a switchover is covered only
// from the same observed primary to the same candidate, and a
// reinitialize only of the same member on the pod as confirmed (same UID
// and fingerprint; its resourceVersion may move, as Patroni patches the
// pod every loop). Anything else is a fence conflict before any change.
func TestVerifyPatroniSteps(t *testing.T) {
	pod := func(uid, rv, fp string) *model.Fence {
		return &model.Fence{Kind: "Pod", Namespace: "db", Name: "pg-1", UID: uid, ResourceVersion: rv, Fingerprint: fp}
	}
	dec := func(steps ...model.Step) model.Decision {
		d := model.Decision{Verb: model.VerbProceed, Steps: steps}
		for _, s := range steps {
			if s.Fence != nil {
				d.Fences = append(d.Fences, *s.Fence)
			}
		}
		return d
	}
	sw := func(from, to string) model.Step {
		return model.Step{Kind: model.StepSwitchover, Member: to, MemberID: to, From: from, Detail: "switch over from " + from + " to " + to}
	}
	ri := func(f *model.Fence) model.Step {
		return model.Step{Kind: model.StepReinitialize, Member: "pg-1", MemberID: "pg-1", Fence: f, Detail: "reinitialize pg-1"}
	}
	confirmedSw := dec(sw("pg-0", "pg-1"), model.Step{Kind: model.StepAwaitSwitchover, Detail: "wait"})
	confirmedRi := dec(ri(pod("u1", "10", "fp")), model.Step{Kind: model.StepAwaitRebuild, Detail: "wait"})
	cases := []struct {
		name      string
		confirmed model.Decision
		now       model.Decision
		conflict  string // "" when it verifies
	}{
		{"same switchover", confirmedSw, dec(sw("pg-0", "pg-1")), ""},
		{"another primary", confirmedSw, dec(sw("pg-2", "pg-1")), "switch over from pg-2 to pg-1, which the confirmed plan did not show"},
		{"another candidate", confirmedSw, dec(sw("pg-0", "pg-2")), "which the confirmed plan did not show"},
		{"same pod, Patroni patched it", confirmedRi, dec(ri(pod("u1", "11", "fp"))), ""},
		{"pod recreated", confirmedRi, dec(ri(pod("u2", "12", "fp2"))), "was replaced"},
		{"pod edited", confirmedRi, dec(ri(pod("u1", "13", "fp-edited"))), "changed"},
	}
	for _, tc := range cases {
		err := verify(tc.confirmed, tc.now)
		switch {
		case tc.conflict == "" && err != nil:
			t.Errorf("%s: %v, want verified", tc.name, err)
		case tc.conflict != "" && (!errors.Is(err, ErrFenceConflict) || !strings.Contains(err.Error(), tc.conflict)):
			t.Errorf("%s: %v, want a fence conflict saying %q", tc.name, err, tc.conflict)
		}
	}
	// A later decision after the first change: a reinitialize of a pod
	// the confirmed plan did not show is not covered.
	if err := covered(confirmedRi, ri(pod("u1", "14", "fp-edited"))); err == nil || !strings.Contains(err.Error(), "only the member as confirmed") {
		t.Errorf("covered an edited pod: %v", err)
	}
	if err := covered(confirmedRi, ri(pod("u1", "15", "fp"))); err != nil {
		t.Errorf("the same pod, status moved: %v", err)
	}
}

// TestVerifyRoleAndLedger: a pod confirmed as a replica and labelled the
// primary now is a fence conflict for a reinitialize and a delete (the
// fingerprint leaves the role label out); the reverse (the primary
// handed over first) is covered. A decision that now resumes or
// supersedes other ledger entries than the confirmed one is not the
// confirmed plan.
func TestVerifyRoleAndLedger(t *testing.T) {
	pod := func(role string) *model.Fence {
		return &model.Fence{Kind: "Pod", Namespace: "db", Name: "pg-1", UID: "u1", ResourceVersion: "10", Fingerprint: "fp", Role: role}
	}
	ri := func(role string) model.Step {
		return model.Step{Kind: model.StepReinitialize, Member: "pg-1", MemberID: "pg-1", Fence: pod(role), Detail: "reinitialize pg-1"}
	}
	del := func(role string) model.Step {
		return model.Step{Kind: model.StepDeletePod, Member: "pg-1", Fence: pod(role), Detail: "delete pod pg-1"}
	}
	dec := func(s model.Step) model.Decision {
		return model.Decision{Verb: model.VerbProceed, Steps: []model.Step{s}, Fences: []model.Fence{*s.Fence}}
	}
	for _, step := range []func(string) model.Step{ri, del} {
		if err := covered(dec(step("replica")), step("master")); err == nil || !strings.Contains(err.Error(), "Patroni promoted it") {
			t.Errorf("%s of a pod promoted since: %v, want refused", step("").Kind, err)
		}
		if err := verify(dec(step("replica")), dec(step("primary"))); !errors.Is(err, ErrFenceConflict) {
			t.Errorf("verify %s of a pod promoted since: %v, want a fence conflict", step("").Kind, err)
		}
		if err := covered(dec(step("master")), step("replica")); err != nil {
			t.Errorf("%s of the old primary after its hand-over: %v", step("").Kind, err)
		}
		if err := covered(dec(step("replica")), step("replica")); err != nil {
			t.Errorf("%s of the same replica: %v", step("").Kind, err)
		}
	}
	base := dec(ri("replica"))
	for name, mut := range map[string]func(*model.Decision){
		"resumes another entry": func(d *model.Decision) { d.Resume = "reseed.pg-1.x" },
		"supersedes an entry":   func(d *model.Decision) { d.Supersedes = []string{"switchover.y"} },
	} {
		now := base
		mut(&now)
		if err := verify(base, now); !errors.Is(err, ErrFenceConflict) || !strings.Contains(err.Error(), "confirmed plan") {
			t.Errorf("%s: %v, want a fence conflict", name, err)
		}
		if err := verify(now, now); err != nil {
			t.Errorf("%s, as confirmed: %v", name, err)
		}
	}
}
