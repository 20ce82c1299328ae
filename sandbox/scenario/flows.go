package scenario

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/hactl-dev/hactl/sandbox/fault"
)

// poll is how often scenarios re-check a condition.
const poll = 200 * time.Millisecond

// apply renders shape with p and creates its objects, or updates the
// StatefulSet's spec (replicas and template) if it exists.
func apply(ctx context.Context, env Env, shape Shape, p Params) error {
	p.Namespace = env.Namespace
	o, err := Render(shape, p)
	if err != nil {
		return err
	}
	core := env.Kube.CoreV1()
	for _, x := range o.ServiceAccounts {
		if _, err := core.ServiceAccounts(env.Namespace).Create(ctx, x, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ServiceAccount %s: %w", x.Name, err)
		}
	}
	for _, x := range o.Roles {
		if _, err := env.Kube.RbacV1().Roles(env.Namespace).Create(ctx, x, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Role %s: %w", x.Name, err)
		}
	}
	for _, x := range o.RoleBindings {
		if _, err := env.Kube.RbacV1().RoleBindings(env.Namespace).Create(ctx, x, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating RoleBinding %s: %w", x.Name, err)
		}
	}
	for _, x := range o.Secrets {
		if _, err := core.Secrets(env.Namespace).Create(ctx, x, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Secret %s: %w", x.Name, err)
		}
	}
	for _, x := range o.ConfigMaps {
		if _, err := core.ConfigMaps(env.Namespace).Create(ctx, x, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ConfigMap %s: %w", x.Name, err)
		}
	}
	for _, svc := range o.Services {
		if _, err := core.Services(env.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Service %s: %w", svc.Name, err)
		}
	}
	if o.PDB != nil {
		if _, err := env.Kube.PolicyV1().PodDisruptionBudgets(env.Namespace).Create(ctx, o.PDB, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PodDisruptionBudget %s: %w", o.PDB.Name, err)
		}
	}
	sets := env.Kube.AppsV1().StatefulSets(env.Namespace)
	_, err = sets.Create(ctx, o.StatefulSet, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := sets.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Replicas = o.StatefulSet.Spec.Replicas
		cur.Spec.Template = o.StatefulSet.Spec.Template
		_, err = sets.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// formStaticExisting forms a static-existing cluster the documented way:
// install with --initial-cluster-state=new, wait for every member, then
// upgrade the template to "existing" (a rolling update) and wait for it.
// It returns the final parameters.
func formStaticExisting(ctx context.Context, env Env, p Params) (Params, error) {
	p.State = "new"
	if err := apply(ctx, env, StaticExisting, p); err != nil {
		return p, err
	}
	if err := waitRollout(ctx, env, p.Name); err != nil {
		return p, err
	}
	p.State = "existing"
	if err := apply(ctx, env, StaticExisting, p); err != nil {
		return p, err
	}
	return p, waitRollout(ctx, env, p.Name)
}

func waitRollout(ctx context.Context, env Env, name string) error {
	return WaitRollout(ctx, env.Kube, env.Namespace, name)
}

// WaitRollout waits until the StatefulSet's controller has seen its
// latest spec and every replica is updated and Ready.
func WaitRollout(ctx context.Context, kc kubernetes.Interface, ns, name string) error {
	var last string
	for {
		sts, err := kc.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if rolledOut(sts) {
				return nil
			}
			s := sts.Status
			last = fmt.Sprintf("ready %d/%d, updated %d, revision %s→%s", s.ReadyReplicas, *sts.Spec.Replicas, s.UpdatedReplicas, s.CurrentRevision, s.UpdateRevision)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for StatefulSet %s to roll out (%s): %w", name, last, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func rolledOut(sts *appsv1.StatefulSet) bool {
	s := sts.Status
	n := int32(1)
	if sts.Spec.Replicas != nil {
		n = *sts.Spec.Replicas
	}
	return s.ObservedGeneration >= sts.Generation && s.Replicas == n && s.ReadyReplicas == n &&
		s.UpdatedReplicas == n && (s.CurrentRevision == s.UpdateRevision || s.CurrentRevision == "")
}

// waitPod waits until the pod satisfies ok.
func waitPod(ctx context.Context, env Env, name, what string, ok func(*corev1.Pod) bool) error {
	for {
		pod, err := env.Kube.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil && ok(pod) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for pod %s to be %s: %w", name, what, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func crashLooping(pod *corev1.Pod) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			return true
		}
	}
	return false
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// client dials exactly the given members (never syncing endpoints).
func client(env Env, pods ...string) (*clientv3.Client, error) {
	var eps []string
	for _, p := range pods {
		a, err := env.Address(p)
		if err != nil {
			return nil, err
		}
		eps = append(eps, "http://"+a+":2379")
	}
	return clientv3.New(clientv3.Config{
		Endpoints:   eps,
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
	})
}

// MemberStatus is what a member says about itself.
type MemberStatus struct {
	ClusterID, MemberID, Leader uint64
	RaftIndex, AppliedIndex     uint64
	IsLearner                   bool
}

// Status asks the member of pod for its status, through its own address.
func Status(ctx context.Context, env Env, pod string) (MemberStatus, error) {
	c, err := client(env, pod)
	if err != nil {
		return MemberStatus{}, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	s, err := c.Status(ctx, c.Endpoints()[0])
	if err != nil {
		return MemberStatus{}, err
	}
	return MemberStatus{
		ClusterID: s.Header.ClusterId, MemberID: s.Header.MemberId, Leader: s.Leader,
		RaftIndex: s.RaftIndex, AppliedIndex: s.RaftAppliedIndex, IsLearner: s.IsLearner,
	}, nil
}

// putKeys writes n keys with prefix through the cluster's voters, 16 at a
// time, each as its own raft entry.
func putKeys(ctx context.Context, c *clientv3.Client, prefix string, n int) error {
	work := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				var err error
				for attempt := 0; attempt < 20; attempt++ {
					wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
					_, err = c.Put(wctx, fmt.Sprintf("%s%06d", prefix, i), strings.Repeat("x", 128))
					cancel()
					if err == nil || ctx.Err() != nil {
						break
					}
					time.Sleep(poll)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := range n {
		select {
		case work <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

func runSeedRebootstrap(ctx context.Context, env Env, s *Scenario) error {
	p := Params{Name: s.Name, Namespace: env.Namespace, Replicas: 3, AntiAffinity: "required", PDB: true}
	if err := apply(ctx, env, StaticNew, p); err != nil {
		return err
	}
	if err := waitRollout(ctx, env, s.Name); err != nil {
		return err
	}
	seed, peer := MemberName(s.Name, 0), MemberName(s.Name, 1)
	c, err := client(env, peer, MemberName(s.Name, 2))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := putKeys(ctx, c, "/sentinel/", 10); err != nil {
		return fmt.Errorf("writing sentinel keys: %w", err)
	}
	before, err := Status(ctx, env, peer)
	if err != nil {
		return err
	}
	env.Logf("scenario %s: re-bootstrapping %s with the seed's flags", s.Name, seed)
	if err := env.Break(ctx, seed, fault.Rebootstrap, nil); err != nil {
		return err
	}
	if err := waitPod(ctx, env, seed, "Ready again", func(pod *corev1.Pod) bool {
		return PodReady(pod) && pod.Status.ContainerStatuses[0].RestartCount > 0
	}); err != nil {
		return err
	}
	for {
		st, err := Status(ctx, env, seed)
		if err == nil && st.ClusterID != before.ClusterID {
			env.Logf("scenario %s: %s now has cluster ID %x (the others: %x), member ID %x", s.Name, seed, st.ClusterID, before.ClusterID, st.MemberID)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to form its own cluster (last: %+v, %v): %w", seed, st, err, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// laggingWrites is how many entries the lagging learner misses: twice
// hactl's default lag threshold (1000 entries).
const laggingWrites = 2000

func runLaggingLearner(ctx context.Context, env Env, s *Scenario) error {
	// Without the strict reconfiguration check, etcd accepts the learner
	// at once instead of after its members were connected for 5 s.
	p := Params{Name: s.Name, Replicas: 3, AntiAffinity: "spread-voters", Voters: 3, PDB: true, State: "new",
		ExtraArgs: []string{"--strict-reconfig-check=false"}}
	if err := apply(ctx, env, StaticExisting, p); err != nil {
		return err
	}
	if err := waitRollout(ctx, env, s.Name); err != nil {
		return err
	}
	voters := []string{MemberName(s.Name, 0), MemberName(s.Name, 1), MemberName(s.Name, 2)}
	learner := MemberName(s.Name, 3)
	c, err := client(env, voters...)
	if err != nil {
		return err
	}
	defer c.Close()
	addr, err := env.Address(learner)
	if err != nil {
		return err
	}
	peerURL := "http://" + addr + ":2380"
	// etcd refuses a member add until its members have been connected
	// for a few seconds ("unhealthy cluster"): retry.
	for {
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err = c.MemberAddAsLearner(actx, []string{peerURL})
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("adding learner %s: %w", learner, errors.Join(err, ctx.Err()))
		}
		time.Sleep(poll)
	}
	env.Logf("scenario %s: added %s as a learner; scaling to 4 with state existing", s.Name, learner)
	p.Replicas, p.Members, p.State = 4, 4, "existing"
	if err := apply(ctx, env, StaticExisting, p); err != nil {
		return err
	}
	if err := waitRollout(ctx, env, s.Name); err != nil {
		return err
	}
	if err := env.Break(ctx, learner, fault.Isolate, nil); err != nil {
		return err
	}
	if err := putKeys(ctx, c, "/after/", laggingWrites); err != nil {
		return fmt.Errorf("writing keys: %w", err)
	}
	for {
		ls, lerr := Status(ctx, env, learner)
		vs, verr := Status(ctx, env, voters[0])
		if lerr == nil && verr == nil && ls.IsLearner && vs.AppliedIndex >= ls.AppliedIndex+laggingWrites {
			env.Logf("scenario %s: learner %s applied %d, voter %s applied %d", s.Name, learner, ls.AppliedIndex, voters[0], vs.AppliedIndex)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to lag (learner %+v %v, voter %+v %v): %w", learner, ls, lerr, vs, verr, ctx.Err())
		case <-time.After(poll):
		}
	}
}
