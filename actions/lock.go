package actions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/model"
)

// DefaultLockDuration is the lease duration of the action lock. The holder
// renews it every third of that.
const DefaultLockDuration = 30 * time.Second

// Annotations on the lock's Lease and the ledger's ConfigMap.
const (
	// AnnotationAction says what the lock holder is doing
	// ("replace etcd-1").
	AnnotationAction = "hactl.dev/action"
	// LabelCluster names the cluster a Lease or ConfigMap belongs to.
	LabelCluster = "hactl.dev/cluster"
)

// LockName is the name of a cluster's lock Lease and ledger ConfigMap.
func LockName(cluster string) string { return "hactl-" + cluster }

// Lock is a held action lock. Release it when done.
type Lock struct {
	client    kubernetes.Interface
	namespace string
	name      string
	identity  string
	duration  time.Duration
	now       func() time.Time

	dryRun bool

	mu    sync.Mutex
	lease *coordinationv1.Lease
	// TookOver names the stale holder this lock was taken from, "" if
	// none.
	TookOver     string
	TookOverWhy  string
	lost         chan struct{}
	lostOnce     sync.Once
	stopRenew    chan struct{}
	renewStopped chan struct{}
}

// ReadLock returns the lock's facts, nil when the Lease does not exist.
func ReadLock(ctx context.Context, c kubernetes.Interface, namespace, cluster string) (*model.LockFacts, error) {
	l, err := c.CoordinationV1().Leases(namespace).Get(ctx, LockName(cluster), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading lease %s/%s: %w", namespace, LockName(cluster), err)
	}
	return lockFacts(l), nil
}

func lockFacts(l *coordinationv1.Lease) *model.LockFacts {
	f := &model.LockFacts{Name: l.Name, ResourceVersion: l.ResourceVersion}
	s := l.Spec
	if s.HolderIdentity != nil {
		f.Holder = *s.HolderIdentity
	}
	if s.AcquireTime != nil {
		f.AcquiredAt = s.AcquireTime.Time
	}
	if s.RenewTime != nil {
		f.RenewedAt = s.RenewTime.Time
	}
	if s.LeaseDurationSeconds != nil {
		f.Duration = time.Duration(*s.LeaseDurationSeconds) * time.Second
	}
	if f.Holder != "" {
		f.HolderGone = HolderGone(f.Holder)
	}
	return f
}

// LockOptions configure AcquireLock.
type LockOptions struct {
	Identity string
	// Duration of the lease (DefaultLockDuration when zero; whole
	// seconds).
	Duration time.Duration
	// What the holder does, shown to others ("replace etcd-1").
	Action string
	// Owner, when set, becomes the Lease's owner reference (the
	// StatefulSet), so the Lease goes with the cluster.
	Owner *metav1.OwnerReference
	// DryRun only checks that the lock could be taken (server dry run).
	DryRun bool
	Now    func() time.Time
}

// AcquireLock takes the cluster's lock: it creates the Lease, or updates a
// free or stale one with its resourceVersion as precondition, so that of
// any number of concurrent callers exactly one wins; the others get a
// *LockHeldError. Taking over a stale holder (lease expired, or its
// process on this host gone) is recorded in Lock.TookOver. The lock is
// renewed in the background until Release; Lost is closed if it is taken
// away.
func AcquireLock(ctx context.Context, c kubernetes.Interface, namespace, cluster string, o LockOptions) (*Lock, error) {
	if o.Duration <= 0 {
		o.Duration = DefaultLockDuration
	}
	if o.Duration < time.Second {
		o.Duration = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	lk := &Lock{client: c, namespace: namespace, name: LockName(cluster), identity: o.Identity, duration: o.Duration, now: o.Now,
		dryRun: o.DryRun, lost: make(chan struct{}), stopRenew: make(chan struct{}), renewStopped: make(chan struct{})}
	leases := c.CoordinationV1().Leases(namespace)
	var dry []string
	if o.DryRun {
		dry = []string{metav1.DryRunAll}
	}
	now := metav1.NewMicroTime(o.Now())
	secs := int32(o.Duration / time.Second)
	spec := coordinationv1.LeaseSpec{
		HolderIdentity: ptr.To(o.Identity), LeaseDurationSeconds: ptr.To(secs),
		AcquireTime: &now, RenewTime: &now,
	}
	cur, err := leases.Get(ctx, lk.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: lk.name, Namespace: namespace,
				Labels:      map[string]string{LabelCluster: cluster},
				Annotations: map[string]string{AnnotationAction: o.Action}},
			Spec: spec,
		}
		if o.Owner != nil {
			l.OwnerReferences = []metav1.OwnerReference{*o.Owner}
		}
		created, err := leases.Create(ctx, l, metav1.CreateOptions{DryRun: dry})
		if apierrors.IsAlreadyExists(err) {
			return nil, lk.heldBy(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("creating lease %s/%s: %w", namespace, lk.name, err)
		}
		lk.lease = created
	case err != nil:
		return nil, fmt.Errorf("reading lease %s/%s: %w", namespace, lk.name, err)
	default:
		f := lockFacts(cur)
		if f.Holder != "" && f.Holder != o.Identity {
			if f.Held(o.Now()) {
				return nil, heldError(cur)
			}
			lk.TookOver = f.Holder
			lk.TookOverWhy = fmt.Sprintf("lease not renewed since %s (duration %s)", f.RenewedAt.UTC().Format(time.RFC3339), f.Duration)
			if f.HolderGone {
				lk.TookOverWhy = "its process on this host no longer runs"
			}
		}
		upd := cur.DeepCopy()
		upd.Spec = spec
		if f.Holder != "" && f.Holder != o.Identity {
			upd.Spec.LeaseTransitions = ptr.To(ptr.Deref(cur.Spec.LeaseTransitions, 0) + 1)
		} else {
			upd.Spec.LeaseTransitions = cur.Spec.LeaseTransitions
		}
		if upd.Annotations == nil {
			upd.Annotations = map[string]string{}
		}
		upd.Annotations[AnnotationAction] = o.Action
		// cur.ResourceVersion is the precondition: a concurrent taker
		// makes this a 409.
		updated, err := leases.Update(ctx, upd, metav1.UpdateOptions{DryRun: dry})
		if apierrors.IsConflict(err) {
			return nil, lk.heldBy(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("taking lease %s/%s: %w", namespace, lk.name, err)
		}
		lk.lease = updated
	}
	if o.DryRun {
		close(lk.renewStopped)
		return lk, nil
	}
	go lk.renew()
	return lk, nil
}

// heldBy reads the Lease after losing a race and reports its holder.
func (lk *Lock) heldBy(ctx context.Context) error {
	cur, err := lk.client.CoordinationV1().Leases(lk.namespace).Get(ctx, lk.name, metav1.GetOptions{})
	if err != nil {
		return &LockHeldError{Lease: lk.name, Holder: "another hactl process (it won the race)"}
	}
	return heldError(cur)
}

func heldError(l *coordinationv1.Lease) error {
	f := lockFacts(l)
	return &LockHeldError{Lease: l.Name, Holder: f.Holder, RenewedAt: f.RenewedAt, Duration: f.Duration, Action: l.Annotations[AnnotationAction]}
}

// Identity is the holder identity.
func (lk *Lock) Identity() string { return lk.identity }

// Lost is closed when the lock was taken away while held.
func (lk *Lock) Lost() <-chan struct{} { return lk.lost }

func (lk *Lock) markLost() { lk.lostOnce.Do(func() { close(lk.lost) }) }

func (lk *Lock) renew() {
	defer close(lk.renewStopped)
	t := time.NewTicker(lk.duration / 3)
	defer t.Stop()
	for {
		select {
		case <-lk.stopRenew:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), lk.duration/3)
		err := lk.renewOnce(ctx)
		cancel()
		if errors.Is(err, ErrLockLost) {
			lk.markLost()
			return
		}
	}
}

// renewOnce extends the lease, with its resourceVersion as precondition.
func (lk *Lock) renewOnce(ctx context.Context) error {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	leases := lk.client.CoordinationV1().Leases(lk.namespace)
	upd := lk.lease.DeepCopy()
	now := metav1.NewMicroTime(lk.now())
	upd.Spec.RenewTime = &now
	got, err := leases.Update(ctx, upd, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		cur, gerr := leases.Get(ctx, lk.name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		if ptr.Deref(cur.Spec.HolderIdentity, "") != lk.identity {
			return ErrLockLost
		}
		upd = cur.DeepCopy()
		upd.Spec.RenewTime = &now
		got, err = leases.Update(ctx, upd, metav1.UpdateOptions{})
	}
	if apierrors.IsNotFound(err) {
		return ErrLockLost
	}
	if err != nil {
		return err
	}
	lk.lease = got
	return nil
}

// Release stops renewing and frees the Lease (holder cleared, with its
// resourceVersion as precondition). Releasing a lock that was lost, or a
// dry-run lock, does nothing.
func (lk *Lock) Release(ctx context.Context) error {
	select {
	case <-lk.stopRenew:
	default:
		close(lk.stopRenew)
	}
	<-lk.renewStopped
	select {
	case <-lk.lost:
		return nil
	default:
	}
	if lk.dryRun || lk.lease == nil {
		return nil
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	leases := lk.client.CoordinationV1().Leases(lk.namespace)
	for attempt := 0; attempt < 3; attempt++ {
		upd := lk.lease.DeepCopy()
		upd.Spec.HolderIdentity = nil
		upd.Spec.AcquireTime = nil
		upd.Spec.RenewTime = nil
		delete(upd.Annotations, AnnotationAction)
		_, err := leases.Update(ctx, upd, metav1.UpdateOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) {
			return fmt.Errorf("releasing lease %s/%s: %w", lk.namespace, lk.name, err)
		}
		cur, gerr := leases.Get(ctx, lk.name, metav1.GetOptions{})
		if gerr != nil {
			return fmt.Errorf("releasing lease %s/%s: %w", lk.namespace, lk.name, gerr)
		}
		if ptr.Deref(cur.Spec.HolderIdentity, "") != lk.identity {
			return nil // someone else holds it now; not ours to free
		}
		lk.lease = cur
	}
	return fmt.Errorf("releasing lease %s/%s: conflicts persisted", lk.namespace, lk.name)
}
