package actions_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/model"
)

// TestLaterDeleteNeedsTheConfirmedFence: after the member was removed,
// someone adds a finalizer and an annotation to the volume. The volume is
// no longer the object the operator confirmed: the delete must not be
// sent (exit 6), although the executor decides afresh after every step.
func TestLaterDeleteNeedsTheConfirmedFence(t *testing.T) {
	e := newEnv(t, true)
	e.startKubelet()
	target := e.follower()
	x := e.executor()
	d := e.decide(x, target)
	if d.Verb != model.VerbProceed {
		t.Fatalf("decision:\n%s", strings.Join(classify.Describe(d), "\n"))
	}
	pvcName := "data-" + target
	confirmed := e.pvc(pvcName)
	ctx := context.Background()
	var editErr error
	res, err := x.Execute(ctx, d, actions.ExecOptions{OnReceipt: func(r model.Receipt) {
		if r.Step != model.StepRemoveMember || r.Outcome != model.OutcomeDone {
			return
		}
		p, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, pvcName, metav1.GetOptions{})
		if err != nil {
			editErr = err
			return
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations["backup.example.com/hold"] = "legal"
		p.Finalizers = append(p.Finalizers, "backup.example.com/protect")
		_, editErr = e.cs.CoreV1().PersistentVolumeClaims(e.ns).Update(ctx, p, metav1.UpdateOptions{})
	}})
	if editErr != nil {
		t.Fatalf("editing the volume: %v", editErr)
	}
	if !errors.Is(err, actions.ErrFenceConflict) {
		t.Fatalf("execute: %v, want a fence conflict%s", err, receiptsText(res.Receipts))
	}
	// Independent observation: the volume stands, with its UID and the
	// edit; it carries no deletion mark.
	now := e.pvc(pvcName)
	if now.UID != confirmed.UID || now.DeletionTimestamp != nil || now.Annotations["backup.example.com/hold"] != "legal" {
		t.Fatalf("volume %s: uid %s (was %s), deletion %v, annotations %v", pvcName, now.UID, confirmed.UID, now.DeletionTimestamp, now.Annotations)
	}
	for _, r := range res.Receipts {
		if r.Step == model.StepDeletePVC && r.Outcome == model.OutcomeDone {
			t.Errorf("the volume was deleted: %s", r.Detail)
		}
	}
	// Release the finalizer so the namespace can go.
	now.Finalizers = nil
	_, _ = e.cs.CoreV1().PersistentVolumeClaims(e.ns).Update(ctx, now, metav1.UpdateOptions{})
}
