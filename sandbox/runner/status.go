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
}

// podStatus computes the status the runner reports for a pod, from the
// previous status (to keep PodScheduled and unchanged transition times),
// the containers' views and the pod's addresses, as a kubelet would.
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
	msg := ""
	reason := ""
	if !allReady {
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
		cond(corev1.PodReadyToStartContainers, true, "", ""),
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
