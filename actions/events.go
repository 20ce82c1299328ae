package actions

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// EventSource is the component hactl's Events are reported by.
const EventSource = "hactl"

// eventReason is the Event reason for a receipt (CamelCase, as kubectl
// shows reasons).
func eventReason(r model.Receipt) string {
	switch r.Action {
	case model.ActionSeed:
		return seedEventReason(r)
	case gcAction:
		return "GenerationDeleted"
	}
	switch r.Outcome {
	case model.OutcomeConflict:
		return "FenceConflict"
	case model.OutcomeRefused:
		return "ActionRefused"
	case model.OutcomeFailed:
		return "ActionFailed"
	}
	switch r.Step {
	case model.StepAcquireLock:
		return "ActionStarted"
	case model.StepVerifyFences:
		return "FencesVerified"
	case model.StepMoveLeader:
		return "LeadershipMoved"
	case model.StepRemoveMember:
		return "MemberRemoved"
	case model.StepAddLearner:
		return "LearnerAdded"
	case model.StepDeletePVC:
		return "VolumeDeleted"
	case model.StepDeletePod:
		return "PodDeleted"
	case model.StepPromoteLearner:
		return "LearnerPromoted"
	case model.StepReleaseLock:
		return "ActionReady"
	}
	return "ActionProgress"
}

// seedEventReason names a seed's Events (docs/seed-generations.md).
func seedEventReason(r model.Receipt) string {
	switch {
	case r.Outcome == model.OutcomeFailed || r.Outcome == model.OutcomeRefused || r.Outcome == model.OutcomeConflict:
		return "SeedFailed"
	case r.Step == model.StepAcquireLock:
		return "SeedStarted"
	case r.Step == model.StepCaptureSnapshot:
		return "SeedCaptured"
	case r.Step == model.StepUpload:
		return "SeedUploaded"
	case r.Step == model.StepPublish:
		return "SeedPublished"
	}
	return "SeedProgress"
}

// RecordEvent writes an Event on the StatefulSet for a receipt. Events are
// best effort: a failure is returned for the caller to warn about, never
// to stop the action.
func RecordEvent(ctx context.Context, c kubernetes.Interface, sts corev1.ObjectReference, r model.Receipt) error {
	typ := corev1.EventTypeNormal
	if r.Outcome == model.OutcomeConflict || r.Outcome == model.OutcomeRefused || r.Outcome == model.OutcomeFailed {
		typ = corev1.EventTypeWarning
	}
	msg := fmt.Sprintf("%s (phase %s, step %s, %s): %s", strings.TrimSpace(string(r.Action)+" "+r.Member), r.Phase, r.Step, r.Outcome, r.Detail)
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	at := metav1.NewTime(r.At)
	if r.At.IsZero() {
		at = metav1.NewTime(time.Now())
	}
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{GenerateName: sts.Name + ".hactl.", Namespace: sts.Namespace},
		InvolvedObject:      sts,
		Reason:              eventReason(r),
		Message:             msg,
		Type:                typ,
		Source:              corev1.EventSource{Component: EventSource},
		FirstTimestamp:      at,
		LastTimestamp:       at,
		Count:               1,
		ReportingController: status.EventController,
		ReportingInstance:   r.Holder,
		Action:              string(r.Step),
	}
	_, err := c.CoreV1().Events(sts.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	return err
}
