package controlplane_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/sandbox/controlplane"
)

// cp is shared by the tests of this package: one control plane with the
// controller manager and scheduler, started by TestMain.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	testenv.Main(m, controlplane.Options{ControllerManager: true, Scheduler: true}, &cp)
}

func timeout(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "registry.invalid/never-pulled:0",
		}}},
	}
}

func TestDeleteWithStalePreconditionsConflicts(t *testing.T) {
	testenv.SkipShort(t)
	ctx := timeout(t)
	ns := testenv.Namespace(t, cp)
	pods := testenv.Clientset(t, cp.Admin).CoreV1().Pods(ns)

	// The shared control plane runs a scheduler, which would write the
	// pod's PodScheduled condition (a new resourceVersion) at a moment of
	// its choosing. A pod addressed to a scheduler that does not exist is
	// changed by nobody but this test.
	pod := newPod("member-0")
	pod.Spec.SchedulerName = "hactl-test-no-such-scheduler"
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	staleRV := created.ResourceVersion
	created.Labels = map[string]string{"changed": "yes"}
	current, err := pods.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if current.ResourceVersion == staleRV {
		t.Fatal("update did not change the resourceVersion")
	}

	stillThere := func(what string) {
		t.Helper()
		got, err := pods.Get(ctx, "member-0", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("after %s: %v", what, err)
		}
		if got.UID != current.UID || got.DeletionTimestamp != nil {
			t.Fatalf("after %s the pod changed: uid %s, deletionTimestamp %v", what, got.UID, got.DeletionTimestamp)
		}
	}

	err = pods.Delete(ctx, "member-0", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{
		UID: &current.UID, ResourceVersion: &staleRV,
	}})
	if !apierrors.IsConflict(err) {
		t.Fatalf("delete with a stale resourceVersion: got %v, want a 409 Conflict", err)
	}
	stillThere("a stale-resourceVersion delete")

	wrongUID := types.UID("00000000-0000-0000-0000-000000000000")
	err = pods.Delete(ctx, "member-0", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrongUID}})
	if !apierrors.IsConflict(err) {
		t.Fatalf("delete with a wrong UID: got %v, want a 409 Conflict", err)
	}
	stillThere("a wrong-UID delete")

	err = pods.Delete(ctx, "member-0", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{
		UID: &current.UID, ResourceVersion: &current.ResourceVersion,
	}})
	if err != nil {
		t.Fatalf("delete with current preconditions: %v", err)
	}
	// Never scheduled to a node, so nothing waits for a kubelet.
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		_, err := pods.Get(ctx, "member-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func TestRestrictedUserIsForbiddenToDelete(t *testing.T) {
	testenv.SkipShort(t)
	ctx := timeout(t)
	ns := testenv.Namespace(t, cp)
	admin := testenv.Clientset(t, cp.Admin).CoreV1().Pods(ns)
	if _, err := admin.Create(ctx, newPod("member-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	kubeconfig, cfg := testenv.RestrictedUser(t, cp, ns, []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"},
	}})
	// The kubeconfig file and the rest.Config are the same identity.
	fromFile, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name, cs := range map[string]kubernetes.Interface{
		"rest.Config": testenv.Clientset(t, cfg),
		"kubeconfig":  testenv.Clientset(t, fromFile),
	} {
		pods := cs.CoreV1().Pods(ns)
		err := pods.Delete(ctx, "member-0", metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("%s: delete by a read-only user: got %v, want 403 Forbidden", name, err)
		}
		for _, want := range []string{`cannot delete resource "pods"`, `in the namespace "` + ns + `"`, "restricted-"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: Forbidden error %q does not mention %q", name, err, want)
			}
		}
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s: list by a read-only user: %v", name, err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != "member-0" {
			t.Fatalf("%s: list returned %d pods", name, len(list.Items))
		}
		// Outside its namespace the user holds nothing.
		if _, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("%s: list in another namespace: got %v, want Forbidden", name, err)
		}
	}
	if _, err := admin.Get(ctx, "member-0", metav1.GetOptions{}); err != nil {
		t.Fatalf("pod gone after forbidden deletes: %v", err)
	}
}

func TestStatefulSetControllerCreatesPods(t *testing.T) {
	testenv.SkipShort(t)
	ctx := timeout(t)
	ns := testenv.Namespace(t, cp)
	cs := testenv.Clientset(t, cp.Admin)
	replicas := int32(3)
	labels := map[string]string{"app": "etcd"}
	sts, err := cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &replicas,
			ServiceName: "etcd-headless",
			// Parallel: without nodes no pod becomes Ready, and OrderedReady
			// would stop at etcd-0.
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       newPod("").Spec,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"etcd-0", "etcd-1", "etcd-2"}
	testenv.Poll(t, 60*time.Second, func() (bool, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var names []string
		for _, p := range list.Items {
			owner := metav1.GetControllerOf(&p)
			if owner == nil || owner.UID != sts.UID {
				return false, nil
			}
			names = append(names, p.Name)
		}
		slices.Sort(names)
		return slices.Equal(names, want), nil
	})
}

func TestKubeconfigsAndCertificates(t *testing.T) {
	testenv.SkipShort(t)
	ctx := timeout(t)
	adminCfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.Clientset(t, adminCfg).CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatalf("admin kubeconfig: %v", err)
	}

	// A user with no bindings is authenticated (403, not 401) and denied.
	_, cfg, err := cp.UserKubeconfig("nobody", "hactl:testers")
	if err != nil {
		t.Fatal(err)
	}
	_, err = testenv.Clientset(t, cfg).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "nobody"`) {
		t.Fatalf("unbound user listing namespaces: got %v, want Forbidden for User \"nobody\"", err)
	}

	certPath, keyPath, err := cp.IssueServingCert("kwok", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(keyPath); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(certPath)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatal("serving cert is not PEM")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(cp.CAData) {
		t.Fatal("CAData is not a PEM certificate")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Fatalf("serving cert does not verify for 127.0.0.1 against the cluster CA: %v", err)
	}
}

// TestStopLeavesNoProcess starts a separate control plane with every
// component and checks that Stop leaves nothing running.
func TestStopLeavesNoProcess(t *testing.T) {
	testenv.SkipShort(t)
	dir := t.TempDir()
	begin := time.Now()
	c, err := controlplane.Start(timeout(t), controlplane.Options{
		BinDir: testenv.BinDir(t), Dir: dir, ControllerManager: true, Scheduler: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane with controller-manager and scheduler ready after %s (%v)", time.Since(begin), c.Started)
	pids := c.Pids()
	slices.Sort(pids)
	if len(pids) != 4 {
		_ = c.Stop()
		t.Fatalf("%d pids for 4 components", len(pids))
	}
	if left := testenv.LeftoverProcesses(dir); !slices.Equal(left, pids) {
		_ = c.Stop()
		t.Fatalf("processes mentioning %s: %v, want exactly the components %v", dir, left, pids)
	}
	begin = time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Stop took %s", time.Since(begin))
	for _, pid := range pids {
		if testenv.Alive(pid) {
			t.Errorf("pid %d alive after Stop", pid)
		}
	}
	if left := testenv.LeftoverProcesses(dir); len(left) > 0 {
		t.Errorf("processes left after Stop: %v", left)
	}
	if got, _ := filepath.Glob(filepath.Join(dir, "pids", "*")); len(got) > 0 {
		t.Errorf("pid files left after Stop: %v", got)
	}
}

func TestKillRecordedAfterACrash(t *testing.T) {
	testenv.SkipShort(t)
	dir := t.TempDir()
	begin := time.Now()
	c, err := controlplane.Start(timeout(t), controlplane.Options{BinDir: testenv.BinDir(t), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	t.Logf("etcd + kube-apiserver ready after %s (%v)", time.Since(begin), c.Started)
	pids := c.Pids()
	// Only the pid files are left to go by, as after a crash.
	if err := controlplane.KillRecorded(dir); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if testenv.Alive(pid) {
			t.Errorf("pid %d alive after KillRecorded", pid)
		}
	}
	if left := testenv.LeftoverProcesses(dir); len(left) > 0 {
		t.Errorf("processes left after KillRecorded: %v", left)
	}
	if _, err := controlplane.Start(timeout(t), controlplane.Options{BinDir: testenv.BinDir(t), Dir: dir}); err == nil {
		t.Fatal("Start reused a directory that holds a control plane")
	}
}

func TestStartFailureCarriesTheLogTail(t *testing.T) {
	testenv.SkipShort(t)
	dir := t.TempDir()
	_, err := controlplane.Start(timeout(t), controlplane.Options{
		BinDir: testenv.BinDir(t), Dir: dir, APIServerArgs: []string{"--no-such-flag-for-this-test"},
	})
	if err == nil {
		t.Fatal("Start succeeded with an unknown kube-apiserver flag")
	}
	t.Logf("start error:\n%v", err)
	for _, want := range []string{"kube-apiserver", "unknown flag: --no-such-flag-for-this-test", filepath.Join(dir, "logs", "kube-apiserver.log")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error does not mention %q:\n%v", want, err)
		}
	}
	if left := testenv.LeftoverProcesses(dir); len(left) > 0 {
		t.Errorf("processes left after a failed Start: %v", left)
	}
}
