package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/sandbox/fault"
	"github.com/hactl-dev/hactl/sandbox/internal/reap"
)

// memberPod is a long-running pod (restartPolicy Always) running command.
func memberPod(name string, command ...string) *corev1.Pod {
	return oneShot(name, corev1.RestartPolicyAlways, command...)
}

// procsNamed lists the live processes whose command line contains s.
func procsNamed(s string) []reap.Stat {
	var out []reap.Stat
	for _, p := range reap.All() {
		if p.Alive() && strings.Contains(reap.Cmdline(p.Pid), s) {
			out = append(out, p)
		}
	}
	return out
}

// states maps each marker to the state of the one live process whose
// command line contains it ("" if none).
func states(markers ...string) map[string]string {
	out := map[string]string{}
	for _, m := range markers {
		ps := procsNamed(m)
		if len(ps) == 1 {
			out[m] = ps[0].State
		} else {
			out[m] = fmt.Sprintf("%d processes", len(ps))
		}
	}
	return out
}

// waitStates polls until every marker's process is in a state want
// accepts.
func waitStates(t *testing.T, want func(marker, state string) bool, markers ...string) {
	t.Helper()
	testenv.Poll(t, 15*time.Second, func() (bool, error) {
		for m, st := range states(markers...) {
			if !want(m, st) {
				return false, nil
			}
		}
		return true, nil
	})
}

// firstLog is the log of the pod's first run ("" until there is one).
func firstLog(e *runnerEnv, pod *corev1.Pod) string {
	b, _ := os.ReadFile(filepath.Join(e.dir, "runner", "logs", "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID), "main", "0.log"))
	return string(b)
}

func stopped(st string) bool { return st == "T" || st == "t" }

// TestEscapeesFollowTheContainer runs a container whose child leaves its
// session with setsid (as PostgreSQL's postmaster under Patroni does) and
// starts a child of its own: pause, freeze-patroni, stall-replay, kill
// and delete must reach (or spare) exactly the right processes, and the
// escapee must be recorded for `down`.
func TestEscapeesFollowTheContainer(t *testing.T) {
	e := startRunner(t)
	ctx := context.Background()
	tag := fmt.Sprintf("%d", 7000000+os.Getpid()%1000000)
	main, esc, escChild, startup := "sleep 1"+tag, "sleep 2"+tag, "sleep 3"+tag, "startup recovering "+tag
	script := fmt.Sprintf(`setsid bash -c 'sleep 3%[1]s & (exec -a "postgres: c: startup recovering %[1]s" sleep 4%[1]s) & exec sleep 2%[1]s' & exec sleep 1%[1]s`, tag)
	e.create(t, memberPod("esc", "bash", "-c", script))
	markers := []string{main, esc, escChild, startup}
	waitStates(t, func(_, st string) bool { return st == "S" }, markers...)

	// The escapee is recorded (pid and start time) beside the container.
	var rec []reap.Stat
	testenv.Poll(t, 10*time.Second, func() (bool, error) {
		var err error
		rec, err = reap.Recorded(filepath.Join(e.dir, "runner"))
		if err != nil {
			return false, err
		}
		for _, s := range rec {
			if strings.Contains(reap.Cmdline(s.Pid), esc) {
				return true, nil
			}
		}
		return false, nil
	})
	var names []string
	for _, s := range reap.Descendants(rec) {
		names = append(names, reap.Cmdline(s.Pid))
	}
	for _, m := range markers {
		if !strings.Contains(strings.Join(names, "\n"), m) {
			t.Errorf("recorded processes and their descendants miss %q: %q", m, names)
		}
	}

	t.Run("pause reaches the escapees", func(t *testing.T) {
		if err := e.r.Break(ctx, e.ns, "esc", fault.Pause, nil); err != nil {
			t.Fatal(err)
		}
		waitStates(t, func(_, st string) bool { return stopped(st) }, markers...)
		if err := e.r.Break(ctx, e.ns, "esc", fault.Resume, nil); err != nil {
			t.Fatal(err)
		}
		waitStates(t, func(_, st string) bool { return st == "S" }, markers...)
	})
	t.Run("freeze-patroni stops the main process only", func(t *testing.T) {
		if err := e.r.Break(ctx, e.ns, "esc", fault.FreezePatroni, nil); err != nil {
			t.Fatal(err)
		}
		waitStates(t, func(m, st string) bool { return stopped(st) == (m == main) }, markers...)
		if err := e.r.Break(ctx, e.ns, "esc", fault.Resume, nil); err != nil {
			t.Fatal(err)
		}
		waitStates(t, func(_, st string) bool { return st == "S" }, markers...)
	})
	t.Run("stall-replay stops the startup process only", func(t *testing.T) {
		if err := e.r.Break(ctx, e.ns, "esc", fault.StallReplay, nil); err != nil {
			t.Fatal(err)
		}
		waitStates(t, func(m, st string) bool { return stopped(st) == (m == startup) }, markers...)
		if err := e.r.Break(ctx, e.ns, "esc", fault.StallReceive, nil); err == nil {
			t.Error("stall-receive found a walreceiver where there is none")
		}
		if err := e.r.Break(ctx, e.ns, "esc", fault.Resume, nil); err != nil {
			t.Fatal(err)
		}
		waitStates(t, func(_, st string) bool { return st == "S" }, markers...)
	})
	t.Run("kill ends the escapees; the restart starts afresh", func(t *testing.T) {
		before := procsNamed(esc)
		if err := e.r.Break(ctx, e.ns, "esc", fault.Kill, nil); err != nil {
			t.Fatal(err)
		}
		testenv.Poll(t, 20*time.Second, func() (bool, error) {
			p, err := e.kc.CoreV1().Pods(e.ns).Get(ctx, "esc", metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].RestartCount < 1 {
				return false, err
			}
			for _, s := range before {
				if reap.Same(s) {
					return false, nil
				}
			}
			return true, nil
		})
		waitStates(t, func(_, st string) bool { return st == "S" }, markers...)
	})
	t.Run("delete leaves nothing", func(t *testing.T) {
		if err := e.kc.CoreV1().Pods(e.ns).Delete(ctx, "esc", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.Poll(t, 20*time.Second, func() (bool, error) {
			for _, m := range markers {
				if len(procsNamed(m)) > 0 {
					return false, nil
				}
			}
			// The escapees' pid files go once they are gone.
			ents, err := filepath.Glob(filepath.Join(e.dir, "runner", "pids", "*escaped*"))
			return len(ents) == 0, err
		})
	})
}

// TestRunAsUser runs a container with runAsUser/runAsGroup under a root
// runner: the process runs as that user, owns its volume, home and TMPDIR,
// and reaches them although the sandbox's directory is not searchable for
// it (t.TempDir is mode 0700); exec runs as the same user.
func TestRunAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the runner honours runAsUser only when it can switch users")
	}
	e := startRunner(t)
	ctx := context.Background()
	uid, gid := int64(65534), int64(65533)
	pod := memberPod("asuser", "sh", "-c",
		`echo "id $(id -u):$(id -g)"; echo data > /data/file && echo wrote; touch "$TMPDIR/t" && echo tmp $TMPDIR; exec sleep 600`)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &gid}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-asuser"}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	p := e.create(t, pod)
	var log string
	testenv.Poll(t, 20*time.Second, func() (bool, error) {
		log = firstLog(e, p)
		return strings.Contains(log, " tmp "), nil
	})
	if !strings.Contains(log, "id 65534:65533") || !strings.Contains(log, "wrote") {
		t.Fatalf("container log:\n%s", log)
	}
	fi, err := os.Stat(filepath.Join(e.dir, "volumes", "data-asuser", "file"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || st.Gid != 65533 {
		t.Errorf("file written as %d:%d", st.Uid, st.Gid)
	}
	out, err := e.r.Exec(ctx, e.ns, "asuser", "", []string{"sh", "-c", "id -u; cat /data/file"})
	if err != nil || out != "65534\ndata\n" {
		t.Errorf("exec: %q, %v", out, err)
	}
}

// TestServiceAccountKubeconfig gives a pod a kubeconfig with its
// ServiceAccount's token: kubectl in the container acts as the
// ServiceAccount, with the Role it is bound to.
func TestServiceAccountKubeconfig(t *testing.T) {
	e := startRunnerWith(t, func(o *Options) { o.Server, o.CA = cp.Server, cp.CAData })
	ctx := context.Background()
	kc := e.kc
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "member"}}
	if _, err := kc.CoreV1().ServiceAccounts(e.ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "member"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}
	if _, err := kc.RbacV1().Roles(e.ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "member"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "member"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "member", Namespace: e.ns}}}
	if _, err := kc.RbacV1().RoleBindings(e.ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(testenv.BinDir(t), "kubectl")
	script := fmt.Sprintf(`%[1]s --context %[2]s auth whoami -o jsonpath='user={.status.userInfo.username}{"\n"}'; `+
		`%[1]s --context %[2]s get configmaps -o name >/dev/null && echo list-ok; `+
		`%[1]s --context %[2]s get secrets 2>&1 | grep -q Forbidden && echo secrets-forbidden; echo "tmp=$TMPDIR"; exec sleep 600`,
		kubectl, KubeContext)
	pod := memberPod("sa", "sh", "-c", script)
	yes := true
	pod.Spec.AutomountServiceAccountToken = &yes
	pod.Spec.ServiceAccountName = "member"
	p := e.create(t, pod)
	var log string
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		log = firstLog(e, p)
		return strings.Contains(log, "tmp="), nil
	})
	for _, want := range []string{"user=system:serviceaccount:" + e.ns + ":member", "list-ok", "secrets-forbidden",
		"tmp=" + filepath.Join(e.dir, "runner", "pods")} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// TestAdoptedOrphansFollowTheContainer: a process the container starts
// through a short-lived parent (as Patroni starts the postmaster) becomes
// the runner's child (child subreaper) at once; the runner tells it by
// the container's marker in its environment and signals and ends it with
// the container.
func TestAdoptedOrphansFollowTheContainer(t *testing.T) {
	e := startRunner(t)
	ctx := context.Background()
	tag := fmt.Sprintf("%d", 8000000+os.Getpid()%1000000)
	main, orphan := "sleep 5"+tag, "sleep 6"+tag
	e.create(t, memberPod("orphan", "bash", "-c", fmt.Sprintf(`(setsid sleep 6%[1]s &); exec sleep 5%[1]s`, tag)))
	waitStates(t, func(_, st string) bool { return st == "S" }, main, orphan)
	if ps := procsNamed(orphan); len(ps) != 1 || ps[0].PPid != os.Getpid() {
		t.Fatalf("the orphan is not the runner's child: %+v", ps)
	}
	testenv.Poll(t, 10*time.Second, func() (bool, error) {
		files, err := filepath.Glob(filepath.Join(e.dir, "runner", "pids", "*escaped*"))
		return len(files) == 1, err
	})
	if err := e.r.Break(ctx, e.ns, "orphan", fault.Pause, nil); err != nil {
		t.Fatal(err)
	}
	waitStates(t, func(_, st string) bool { return stopped(st) }, main, orphan)
	if err := e.r.Break(ctx, e.ns, "orphan", fault.Resume, nil); err != nil {
		t.Fatal(err)
	}
	waitStates(t, func(_, st string) bool { return st == "S" }, main, orphan)
	if err := e.kc.CoreV1().Pods(e.ns).Delete(ctx, "orphan", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, 20*time.Second, func() (bool, error) {
		return len(procsNamed(main)) == 0 && len(procsNamed(orphan)) == 0, nil
	})
}
