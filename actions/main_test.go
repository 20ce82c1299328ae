package actions_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine/registry"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/sandbox/controlplane"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	if lockHelperAsked() {
		os.Exit(lockHelper())
	}
	actions.SetGuardTestConfig(func() *rest.Config {
		if cp == nil {
			return nil
		}
		return cp.Admin
	})
	testenv.Main(m, controlplane.Options{}, &cp)
}

// env is one test's cluster: a namespace on the shared control plane with
// a fixture StatefulSet "etcd" (pods etcd-0..2), optionally backed by real
// etcd members reached through a loopback dialer.
type env struct {
	t      *testing.T
	cs     *kubernetes.Clientset
	ns     string
	etcd   *etcdcluster.Cluster
	dialer *loopDialer
}

func newEnv(t *testing.T, withEtcd bool) *env {
	t.Helper()
	return newEnvSpec(t, withEtcd, fixtures.DefaultSpec("etcd"))
}

// newEnvSpec is newEnv with the fixture cluster spec given.
func newEnvSpec(t *testing.T, withEtcd bool, spec fixtures.Spec) *env {
	t.Helper()
	testenv.SkipShort(t)
	e := &env{t: t, cs: testenv.Clientset(t, cp.Admin), ns: testenv.Namespace(t, cp)}
	fixtures.CreateCluster(t, e.cs, e.ns, spec)
	if withEtcd {
		e.etcd = testenv.EtcdCluster(t, etcdcluster.Options{Members: 3})
		e.dialer = &loopDialer{addrs: map[string]string{}}
		for _, m := range e.etcd.Members {
			e.dialer.set(m.Name, m.ClientURL)
		}
		// The template names the members' real peer URLs, as a chart
		// would name the pods' DNS names.
		ctx := context.Background()
		sts, err := e.cs.AppsV1().StatefulSets(e.ns).Get(ctx, "etcd", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := &sts.Spec.Template.Spec.Containers[0]
		c.Command = []string{"etcd", "--name=$(POD_NAME)", "--initial-cluster-state=existing",
			"--initial-cluster=" + e.etcd.InitialCluster(), "--data-dir=/var/lib/etcd"}
		if _, err := e.cs.AppsV1().StatefulSets(e.ns).Update(ctx, sts, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) observer() *actions.Observer {
	o := &actions.Observer{Engines: registry.Engines(), Client: e.cs, ProbeTimeout: 2 * time.Second}
	if e.dialer != nil {
		o.Dial = e.dialer.dial
	}
	return o
}

func (e *env) executor() *actions.Executor {
	return &actions.Executor{Observer: e.observer(), Seeders: registry.Seeders(), PollInterval: 100 * time.Millisecond, WaitTimeout: 90 * time.Second,
		LockDuration: 5 * time.Second, RefuseGrace: 20 * time.Second}
}

func (e *env) pod(name string) *corev1.Pod {
	e.t.Helper()
	p, err := e.cs.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get pod %s: %v", name, err)
	}
	return p
}

func (e *env) pvc(name string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	p, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get pvc %s: %v", name, err)
	}
	return p
}

// loopDialer maps each pod to its member's real loopback address, standing
// in for the port-forward.
type loopDialer struct {
	mu    sync.Mutex
	addrs map[string]string
}

func (d *loopDialer) set(pod, clientURL string) {
	u, _ := url.Parse(clientURL)
	d.mu.Lock()
	d.addrs[pod] = u.Host
	d.mu.Unlock()
}

func (d *loopDialer) dial(ctx context.Context, ns, pod string, port int) (net.Conn, error) {
	d.mu.Lock()
	addr, ok := d.addrs[pod]
	d.mu.Unlock()
	if !ok || port != 2379 {
		return nil, fmt.Errorf("no member behind pod %s port %d", pod, port)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", addr)
}

// kubelet plays, for the fixture cluster, what kubelet, the StatefulSet
// controller and the PVC protection controller do: a deleted pod is
// stopped and force-deleted, a deleted claim goes once no pod uses it, and
// a missing pod is recreated (with a new claim, and the member started on
// an empty data dir with the template's flags, if its claim was new).
type kubelet struct {
	e        *env
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	recreate map[string]int
	errs     []error
}

func (e *env) startKubelet() *kubelet {
	k := &kubelet{e: e, stop: make(chan struct{}), done: make(chan struct{}), recreate: map[string]int{}}
	go k.run()
	e.t.Cleanup(k.close)
	return k
}

func (k *kubelet) close() {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	<-k.done
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, err := range k.errs {
		k.e.t.Errorf("kubelet: %v", err)
	}
}

func (k *kubelet) recreated(pod string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.recreate[pod]
}

func (k *kubelet) run() {
	defer close(k.done)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		if err := k.sync(); err != nil {
			k.mu.Lock()
			k.errs = append(k.errs, err)
			k.mu.Unlock()
			return
		}
	}
}

func (k *kubelet) sync() error {
	e := k.e
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods := e.cs.CoreV1().Pods(e.ns)
	pvcs := e.cs.CoreV1().PersistentVolumeClaims(e.ns)
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("etcd-%d", i)
		member := e.etcd.Member(name)
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			p = nil
		case err != nil:
			return nil // transient
		}
		if p != nil && p.DeletionTimestamp != nil {
			if err := member.Stop(); err != nil {
				return err
			}
			err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0)),
				Preconditions: &metav1.Preconditions{UID: ptr.To(p.UID)}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return err
			}
			continue
		}
		claim, err := pvcs.Get(ctx, "data-"+name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			claim = nil
		case err != nil:
			return nil
		}
		if claim != nil && claim.DeletionTimestamp != nil {
			if p == nil && len(claim.Finalizers) > 0 {
				claim.Finalizers = nil
				if _, err := pvcs.Update(ctx, claim, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
					return err
				}
			}
			continue // the StatefulSet controller waits for the claim to go
		}
		if p != nil {
			continue
		}
		fresh := claim == nil
		if fresh {
			c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-" + name,
				Labels: map[string]string{"app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": "etcd"}},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: mustQty("1Gi")}}}}
			c, err = pvcs.Create(ctx, c, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("create pvc: %w", err)
			}
			c.Status.Phase = corev1.ClaimBound
			if _, err := pvcs.UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		if err := k.createPod(ctx, i); err != nil {
			return err
		}
		if fresh {
			if err := member.Stop(); err != nil {
				return err
			}
			if err := member.Wipe(); err != nil {
				return err
			}
		}
		args := etcdcluster.MemberArgs{InitialClusterState: "existing", InitialCluster: templateInitialCluster(e), NoWait: true}
		if err := member.Restart(ctx, args); err != nil {
			return err
		}
		k.mu.Lock()
		k.recreate[name]++
		k.mu.Unlock()
	}
	return nil
}

func templateInitialCluster(e *env) string {
	sts, err := e.cs.AppsV1().StatefulSets(e.ns).Get(context.Background(), "etcd", metav1.GetOptions{})
	if err != nil {
		return e.etcd.InitialCluster()
	}
	for _, a := range sts.Spec.Template.Spec.Containers[0].Command {
		if v, ok := strings.CutPrefix(a, "--initial-cluster="); ok {
			return v
		}
	}
	return e.etcd.InitialCluster()
}

func (k *kubelet) createPod(ctx context.Context, i int) error {
	e := k.e
	sts, err := e.cs.AppsV1().StatefulSets(e.ns).Get(ctx, "etcd", metav1.GetOptions{})
	if err != nil {
		return err
	}
	name := fmt.Sprintf("etcd-%d", i)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: sts.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: []string{"node-a", "node-b", "node-c"}[i], Containers: sts.Spec.Template.Spec.Containers},
	}
	pod, err = e.cs.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create pod: %w", err)
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "etcd", Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
	}
	_, err = e.cs.CoreV1().Pods(e.ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

func mustQty(s string) resource.Quantity { return resource.MustParse(s) }
