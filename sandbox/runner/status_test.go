package runner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func condition(st corev1.PodStatus, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func TestPodStatus(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Minute))
	prev := corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: earlier},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: earlier},
	}}
	running := &corev1.ContainerStateRunning{StartedAt: earlier}
	last := &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}
	for name, tc := range map[string]struct {
		views     []containerView
		phase     corev1.PodPhase
		ready     corev1.ConditionStatus
		readyKept bool // the Ready condition keeps its earlier transition time
	}{
		"never started": {
			views: []containerView{{Name: "etcd"}},
			phase: corev1.PodPending, ready: corev1.ConditionFalse, readyKept: true,
		},
		"running, probe not passed yet": {
			views: []containerView{{Name: "etcd", Running: running, EverStarted: true}},
			phase: corev1.PodRunning, ready: corev1.ConditionFalse, readyKept: true,
		},
		"running and ready": {
			views: []containerView{{Name: "etcd", Running: running, Ready: true, EverStarted: true}},
			phase: corev1.PodRunning, ready: corev1.ConditionTrue,
		},
		"crash looping": {
			views: []containerView{{Name: "etcd", EverStarted: true, RestartCount: 3, Last: last,
				Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
			phase: corev1.PodRunning, ready: corev1.ConditionFalse, readyKept: true,
		},
	} {
		st := podStatus(prev, tc.views, "10.244.1.1", "127.0.0.1", now)
		if st.Phase != tc.phase {
			t.Errorf("%s: phase %s, want %s", name, st.Phase, tc.phase)
		}
		r := condition(st, corev1.PodReady)
		if r == nil || r.Status != tc.ready {
			t.Errorf("%s: Ready %+v, want %s", name, r, tc.ready)
			continue
		}
		if kept := r.LastTransitionTime.Equal(&earlier); kept != tc.readyKept {
			t.Errorf("%s: Ready transition time kept = %v", name, kept)
		}
		if cr := condition(st, corev1.ContainersReady); cr == nil || cr.Status != tc.ready {
			t.Errorf("%s: ContainersReady %+v", name, cr)
		}
		if s := condition(st, corev1.PodScheduled); s == nil || !s.LastTransitionTime.Equal(&earlier) {
			t.Errorf("%s: PodScheduled not kept: %+v", name, s)
		}
		if st.PodIP != "10.244.1.1" || len(st.PodIPs) != 1 || st.HostIP != "127.0.0.1" {
			t.Errorf("%s: addresses %q %v %q", name, st.PodIP, st.PodIPs, st.HostIP)
		}
		cs := st.ContainerStatuses[0]
		if cs.Name != "etcd" || cs.RestartCount != tc.views[0].RestartCount || cs.Started == nil {
			t.Errorf("%s: container status %+v", name, cs)
		}
		if tc.views[0].Last != nil && cs.LastTerminationState.Terminated == nil {
			t.Errorf("%s: last termination lost", name)
		}
	}
}

func TestNextBackoff(t *testing.T) {
	var got []time.Duration
	d := time.Duration(0)
	for range 6 {
		got = append(got, d)
		d = nextBackoff(d)
	}
	want := []time.Duration{0, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("back-off sequence %v, want %v", got, want)
		}
	}
}

func TestProberThresholds(t *testing.T) {
	pr := &prober{p: &Probe{SuccessThreshold: 1, FailureThreshold: 3}}
	fail := errTest("no")
	steps := []struct {
		err  error
		want bool
	}{{fail, false}, {nil, true}, {fail, true}, {fail, true}, {fail, false}, {nil, true}}
	for i, s := range steps {
		if got := pr.observe(s.err); got != s.want {
			t.Fatalf("step %d: ready %v, want %v", i, got, s.want)
		}
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }
