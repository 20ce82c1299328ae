package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/internal/testbins"
	"github.com/hactl-dev/hactl/sandbox/controlplane"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
)

// StartTimeout bounds starting a control plane or an etcd cluster.
const StartTimeout = 2 * time.Minute

// SkipShort skips a test that needs real components under -short.
func SkipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs real components; skipped under -short")
	}
}

// BinDir returns the test binaries' directory (building them on first
// use) or fails the test.
func BinDir(t testing.TB) string {
	t.Helper()
	d, err := testbins.Dir()
	if err != nil {
		t.Fatalf("test binaries: %v", err)
	}
	return d
}

// ControlPlane starts a control plane for one test (in a temporary dir
// unless o.Dir is set; BinDir filled in unless set) and stops it in
// t.Cleanup. If the test failed, the components' log tails are logged.
func ControlPlane(t testing.TB, o controlplane.Options) *controlplane.ControlPlane {
	t.Helper()
	SkipShort(t)
	if o.BinDir == "" {
		o.BinDir = BinDir(t)
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	cp, err := controlplane.Start(ctx, o)
	if err != nil {
		_ = controlplane.KillRecorded(o.Dir)
		t.Fatalf("starting control plane: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logTails(t, cp.LogFiles())
		}
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping control plane: %v", err)
		}
		if left := LeftoverProcesses(cp.Dir); len(left) > 0 {
			t.Errorf("processes left running after Stop: %v", left)
			_ = controlplane.KillRecorded(cp.Dir)
		}
	})
	return cp
}

// Main is for TestMain: it starts one control plane shared by the
// package's tests, stores it in *cp, runs the tests, stops it and exits
// with the tests' status. Under -short it runs the tests with *cp nil
// (tests that use it call SkipShort first).
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) { testenv.Main(m, controlplane.Options{}, &cp) }
func Main(m *testing.M, o controlplane.Options, cp **controlplane.ControlPlane) {
	os.Exit(runMain(m, o, cp))
}

func runMain(m *testing.M, o controlplane.Options, cp **controlplane.ControlPlane) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	if o.BinDir == "" {
		d, err := testbins.Dir()
		if err != nil {
			fmt.Fprintf(os.Stderr, "testenv: test binaries: %v\n", err)
			return 1
		}
		o.BinDir = d
	}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "hactl-controlplane-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
			return 1
		}
		defer os.RemoveAll(d)
		o.Dir = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	c, err := controlplane.Start(ctx, o)
	cancel()
	if err != nil {
		_ = controlplane.KillRecorded(o.Dir)
		fmt.Fprintf(os.Stderr, "testenv: starting control plane: %v\n", err)
		return 1
	}
	*cp = c
	code := m.Run()
	if code != 0 {
		for name, path := range c.LogFiles() {
			fmt.Fprintf(os.Stderr, "--- last lines of %s (%s) ---\n%s\n", name, path, tail(path, 30))
		}
	}
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stopping control plane: %v\n", err)
		code = max(code, 1)
	}
	if left := LeftoverProcesses(c.Dir); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "testenv: processes left running after Stop: %v\n", left)
		_ = controlplane.KillRecorded(c.Dir)
		code = max(code, 1)
	}
	return code
}

// EtcdCluster starts an etcd cluster for one test (temporary dir and
// BinDir filled in unless set) and stops it in t.Cleanup.
func EtcdCluster(t testing.TB, o etcdcluster.Options) *etcdcluster.Cluster {
	t.Helper()
	SkipShort(t)
	if o.BinDir == "" {
		o.BinDir = BinDir(t)
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	c, err := etcdcluster.Start(ctx, o)
	if err != nil {
		_ = etcdcluster.KillRecorded(o.Dir)
		t.Fatalf("starting etcd cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs := map[string]string{}
			for _, m := range c.Members {
				logs[m.Name] = m.LogPath
			}
			logTails(t, logs)
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stopping etcd cluster: %v", err)
		}
		if left := LeftoverProcesses(c.Dir); len(left) > 0 {
			t.Errorf("processes left running after Stop: %v", left)
			_ = etcdcluster.KillRecorded(c.Dir)
		}
	})
	return c
}

// Clientset returns a typed client for cfg or fails the test.
func Clientset(t testing.TB, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Namespace creates a uniquely named namespace with its "default"
// ServiceAccount (which kube-controller-manager would create, and which
// pod admission needs) and deletes the namespace in t.Cleanup.
func Namespace(t testing.TB, cp *controlplane.ControlPlane) string {
	t.Helper()
	cs := Clientset(t, cp.Admin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	_, err = cs.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating default service account: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// RestrictedUser creates a user holding only rules: a Role and RoleBinding
// in namespace, or a ClusterRole and ClusterRoleBinding when namespace is
// "". It waits until the authorizer grants the first rule, removes the
// RBAC objects in t.Cleanup, and returns the user's kubeconfig and
// rest.Config (client certificate signed by the cluster CA).
func RestrictedUser(t testing.TB, cp *controlplane.ControlPlane, namespace string, rules []rbacv1.PolicyRule) (kubeconfigPath string, cfg *rest.Config) {
	t.Helper()
	user := "restricted-" + randomHex(4)
	cs := Clientset(t, cp.Admin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	meta := metav1.ObjectMeta{Name: user, Namespace: namespace}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	rbac := cs.RbacV1()
	var cleanup func(context.Context)
	if namespace != "" {
		if _, err := rbac.Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating role: %v", err)
		}
		if _, err := rbac.RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: meta, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating role binding: %v", err)
		}
		cleanup = func(ctx context.Context) {
			_ = rbac.RoleBindings(namespace).Delete(ctx, user, metav1.DeleteOptions{})
			_ = rbac.Roles(namespace).Delete(ctx, user, metav1.DeleteOptions{})
		}
	} else {
		if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating cluster role: %v", err)
		}
		if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: meta, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating cluster role binding: %v", err)
		}
		cleanup = func(ctx context.Context) {
			_ = rbac.ClusterRoleBindings().Delete(ctx, user, metav1.DeleteOptions{})
			_ = rbac.ClusterRoles().Delete(ctx, user, metav1.DeleteOptions{})
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cleanup(ctx)
	})

	path, cfg, err := cp.UserKubeconfig(user)
	if err != nil {
		t.Fatalf("issuing credentials for %s: %v", user, err)
	}
	if review := firstReview(namespace, rules); review != nil {
		ucs := Clientset(t, cfg)
		Poll(t, 30*time.Second, func() (bool, error) {
			r, err := ucs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review.DeepCopy(), metav1.CreateOptions{})
			if err != nil {
				return false, err
			}
			return r.Status.Allowed, nil
		})
	}
	return path, cfg
}

// firstReview is an access review for the first permission rules grant.
func firstReview(namespace string, rules []rbacv1.PolicyRule) *authorizationv1.SelfSubjectAccessReview {
	for _, r := range rules {
		if len(r.Verbs) == 0 {
			continue
		}
		if len(r.NonResourceURLs) > 0 {
			return &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: r.NonResourceURLs[0], Verb: r.Verbs[0]},
			}}
		}
		if len(r.Resources) == 0 {
			continue
		}
		group := ""
		if len(r.APIGroups) > 0 {
			group = r.APIGroups[0]
		}
		ra := &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: r.Verbs[0], Group: group, Resource: r.Resources[0]}
		if len(r.ResourceNames) > 0 {
			ra.Name = r.ResourceNames[0]
		}
		return &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra}}
	}
	return nil
}

// Poll calls cond until it returns true, failing the test if cond returns
// an error or timeout passes first. It is poll.Until for conditions that
// answer true or false; poll.Until, whose conditions say why they do not
// hold yet, gives the better failure message.
func Poll(t testing.TB, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	poll.Until(t, timeout, "the condition", func() error {
		t.Helper()
		ok, err := cond()
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		if !ok {
			return errNotYet
		}
		return nil
	})
}

var errNotYet = errors.New("it does not hold yet")

// LeftoverProcesses lists live processes whose command line mentions a
// path inside dir (every process the harness starts has such a path in its
// arguments).
// It reads /proc directly, independently of the harness's pid files.
func LeftoverProcesses(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	self := os.Getpid()
	needle := []byte(filepath.Clean(dir) + string(filepath.Separator))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, needle) {
			continue
		}
		if Alive(pid) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// Alive reports whether pid is a live (non-zombie) process.
func Alive(pid int) bool {
	st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(st, ')')
	return i >= 0 && i+2 < len(st) && st[i+2] != 'Z' && st[i+2] != 'X'
}

func logTails(t testing.TB, logs map[string]string) {
	t.Helper()
	names := make([]string, 0, len(logs))
	for n := range logs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		t.Logf("--- last lines of %s (%s) ---\n%s", n, logs[n], tail(logs[n], 30))
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
