package runner

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// containerView is what the runner knows about one container, for the
// pod's status.
type containerView struct {
	Name, Image string
	// Exactly one of Running, Waiting, Terminated describes the current
	// state.
	Running    *corev1.ContainerStateRunning
	Waiting    *corev1.ContainerStateWaiting
	Terminated *corev1.ContainerStateTerminated
	// Last is the previous termination, if the container ever ended.
	Last         *corev1.ContainerStateTerminated
	Ready        bool
	RestartCount int32
	ContainerID  string
	// EverStarted is true once the container has run at least once.
	EverStarted bool
	// Final is true once the container has exited for good: its pod's
	// restartPolicy (Never, or OnFailure after a zero exit) does not
	// restart it. Terminated then holds its last state.
	Final bool
}

// podStatus computes the status the runner reports for a pod, from the
// previous status (to keep PodScheduled and unchanged transition times),
// the containers' views and the pod's addresses, as a kubelet would: once
// every container has exited for good (Final), the pod is Succeeded if all
// of them exited 0 and Failed otherwise.
func podStatus(prev corev1.PodStatus, cs []containerView, podIP, hostIP string, now time.Time) corev1.PodStatus {
	st := corev1.PodStatus{
		Phase:    corev1.PodPending,
		HostIP:   hostIP,
		PodIP:    podIP,
		QOSClass: prev.QOSClass,
	}
	if hostIP != "" {
		st.HostIPs = []corev1.HostIP{{IP: hostIP}}
	}
	if podIP != "" {
		st.PodIPs = []corev1.PodIP{{IP: podIP}}
	}
	st.StartTime = prev.StartTime
	if st.StartTime == nil {
		t := metav1.NewTime(now)
		st.StartTime = &t
	}
	allReady := len(cs) > 0
	started := false
	var notReady []string
	for _, c := range cs {
		s := corev1.ContainerStatus{
			Name:         c.Name,
			Image:        c.Image,
			ImageID:      c.Image,
			Ready:        c.Ready,
			RestartCount: c.RestartCount,
			ContainerID:  c.ContainerID,
		}
		st0 := c.Running != nil
		s.Started = &st0
		switch {
		case c.Running != nil:
			s.State.Running = c.Running
		case c.Terminated != nil:
			s.State.Terminated = c.Terminated
		case c.Waiting != nil:
			s.State.Waiting = c.Waiting
		default:
			s.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		}
		if c.Last != nil {
			s.LastTerminationState.Terminated = c.Last
		}
		st.ContainerStatuses = append(st.ContainerStatuses, s)
		if c.EverStarted {
			started = true
		}
		if !c.Ready {
			allReady = false
			notReady = append(notReady, c.Name)
		}
	}
	if started {
		st.Phase = corev1.PodRunning
	}
	if phase, ok := terminalPhase(cs); ok {
		st.Phase = phase
	}
	terminal := st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed
	msg := ""
	reason := ""
	switch {
	case allReady:
	case st.Phase == corev1.PodSucceeded:
		// What the kubelet says of a completed pod.
		reason = "PodCompleted"
	default:
		reason = "ContainersNotReady"
		msg = "containers with unready status: ["
		for i, n := range notReady {
			if i > 0 {
				msg += " "
			}
			msg += n
		}
		msg += "]"
	}
	cond := func(t corev1.PodConditionType, ok bool, reason, msg string) corev1.PodCondition {
		status := corev1.ConditionFalse
		if ok {
			status = corev1.ConditionTrue
			reason, msg = "", ""
		}
		c := corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(now)}
		for _, p := range prev.Conditions {
			if p.Type == t && p.Status == status {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
		return c
	}
	st.Conditions = []corev1.PodCondition{
		// A terminal pod's sandbox is gone.
		cond(corev1.PodReadyToStartContainers, !terminal, "", ""),
		cond(corev1.PodInitialized, true, "", ""),
		cond(corev1.ContainersReady, allReady, reason, msg),
		cond(corev1.PodReady, allReady, reason, msg),
	}
	for _, p := range prev.Conditions {
		if p.Type == corev1.PodScheduled {
			st.Conditions = append(st.Conditions, p)
		}
	}
	return st
}

// terminalPhase reports Succeeded or Failed once every container has
// exited for good.
func terminalPhase(cs []containerView) (corev1.PodPhase, bool) {
	if len(cs) == 0 {
		return "", false
	}
	phase := corev1.PodSucceeded
	for _, c := range cs {
		if !c.Final || c.Terminated == nil {
			return "", false
		}
		if c.Terminated.ExitCode != 0 {
			phase = corev1.PodFailed
		}
	}
	return phase, true
}

// restartsAfter reports whether a container that exited with code is started
// again under policy (the kubelet's rule: Always, the default, restarts
// every exit; OnFailure only a non-zero one; Never none).
func restartsAfter(policy corev1.RestartPolicy, code int) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return code != 0
	}
	return true
}

// Restart back-off: the kubelet's doubling back-off, scaled down for a
// sandbox. The first restart after an exit is immediate, later ones wait
// 2 s doubling to 30 s; a container that ran for backoffReset starts over.
const (
	backoffFirst = 2 * time.Second
	backoffMax   = 30 * time.Second
	backoffReset = time.Minute
)

// nextBackoff is the wait after cur for the restart following the next
// exit.
func nextBackoff(cur time.Duration) time.Duration {
	switch {
	case cur == 0:
		return backoffFirst
	case cur*2 > backoffMax:
		return backoffMax
	default:
		return cur * 2
	}
}
