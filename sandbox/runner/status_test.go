package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

func TestPodStatusTerminal(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ok := &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}
	bad := &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error", Message: "boom\n"}
	running := &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}
	for name, tc := range map[string]struct {
		views  []containerView
		phase  corev1.PodPhase
		reason string
	}{
		"completed": {
			views: []containerView{{Name: "a", EverStarted: true, Terminated: ok, Final: true}},
			phase: corev1.PodSucceeded, reason: "PodCompleted",
		},
		"failed": {
			views: []containerView{{Name: "a", EverStarted: true, Terminated: bad, Final: true}},
			phase: corev1.PodFailed, reason: "ContainersNotReady",
		},
		"one failed, one completed": {
			views: []containerView{{Name: "a", EverStarted: true, Terminated: ok, Final: true}, {Name: "b", EverStarted: true, Terminated: bad, Final: true}},
			phase: corev1.PodFailed, reason: "ContainersNotReady",
		},
		"one done, one still running": {
			views: []containerView{{Name: "a", EverStarted: true, Terminated: ok, Final: true}, {Name: "b", EverStarted: true, Running: running, Ready: true}},
			phase: corev1.PodRunning, reason: "ContainersNotReady",
		},
		"stopped by break stop (not final)": {
			views: []containerView{{Name: "a", EverStarted: true, Terminated: bad}},
			phase: corev1.PodRunning, reason: "ContainersNotReady",
		},
	} {
		st := podStatus(corev1.PodStatus{}, tc.views, "10.244.1.1", "127.0.0.1", now)
		if st.Phase != tc.phase {
			t.Errorf("%s: phase %s, want %s", name, st.Phase, tc.phase)
		}
		r := condition(st, corev1.PodReady)
		if r == nil || r.Status != corev1.ConditionFalse || r.Reason != tc.reason {
			t.Errorf("%s: Ready %+v, want False/%s", name, r, tc.reason)
		}
		terminal := tc.phase == corev1.PodSucceeded || tc.phase == corev1.PodFailed
		if c := condition(st, corev1.PodReadyToStartContainers); c == nil || (c.Status == corev1.ConditionTrue) == terminal {
			t.Errorf("%s: PodReadyToStartContainers %+v", name, c)
		}
		for i, v := range tc.views {
			cs := st.ContainerStatuses[i]
			if v.Terminated != nil && (cs.State.Terminated == nil || *cs.State.Terminated != *v.Terminated) {
				t.Errorf("%s: container %s state %+v", name, v.Name, cs.State)
			}
		}
	}
}

func TestRestartsAfter(t *testing.T) {
	for _, tc := range []struct {
		policy corev1.RestartPolicy
		code   int
		want   bool
	}{
		{"", 0, true}, {"", 1, true},
		{corev1.RestartPolicyAlways, 0, true}, {corev1.RestartPolicyAlways, 2, true},
		{corev1.RestartPolicyOnFailure, 0, false}, {corev1.RestartPolicyOnFailure, 2, true},
		{corev1.RestartPolicyNever, 0, false}, {corev1.RestartPolicyNever, 2, false},
	} {
		if got := restartsAfter(tc.policy, tc.code); got != tc.want {
			t.Errorf("restartsAfter(%q, %d) = %v", tc.policy, tc.code, got)
		}
	}
}

func TestLogTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := &criWriter{f: f}
	var in strings.Builder
	for i := range 100 {
		fmt.Fprintf(&in, "line %d\n", i)
	}
	w.copy("stdout", strings.NewReader(in.String()))
	w.copy("stderr", strings.NewReader("no newline at the end"))
	f.Close()

	got := logTail(path, 80, 4096)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 80 || lines[0] != "line 21" || lines[78] != "line 99" || lines[79] != "no newline at the end" {
		t.Fatalf("80-line tail: %d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	if got := logTail(path, 80, 30); got != "line 99\nno newline at the end\n" {
		t.Fatalf("30-byte tail %q", got)
	}
	if got := logTail(filepath.Join(t.TempDir(), "missing.log"), 80, 2048); got != "" {
		t.Fatalf("tail of a missing log %q", got)
	}
}
