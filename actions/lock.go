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
	"github.com/hactl-dev/hactl/status"
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
	LabelCluster = status.LabelCluster
)

// LockName is the name of a cluster's lock Lease and ledger ConfigMap.
func LockName(cluster string) string { return status.LockName(cluster) }

// Lock is a held action lock. Release it when done.
type Lock struct {
	client    kubernetes.Interface
	namespace string
	name      string
	identity  string
	duration  time.Duration
	now       func() time.Time

	dryRun bool
	// locks is the set the lock joined while held (nil for a dry run).
	locks *Locks

	mu    sync.Mutex
	lease *coordinationv1.Lease
	// renewedSent is when (on this process's monotonic clock) the request
	// that last wrote the lease successfully was sent: no other process
	// can judge the lease expired before renewedSent + duration.
	renewedSent time.Time
	// renewedWall is the same instant on the wall clock: a monotonic
	// clock stops while the machine is suspended, the wall clock does
	// not, and the older of the two ages counts.
	renewedWall time.Time
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
	return LockFactsOf(l), nil
}

// LockFactsOf reads a lock Lease already fetched, with whether its holder
// is a process on this host that no longer runs.
func LockFactsOf(l *coordinationv1.Lease) *model.LockFacts {
	f := status.DecodeLock(l)
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
	// OnWait is told when AcquireLock watches a lease that looks expired
	// by this machine's clock before taking it over.
	OnWait func(string)
	// Warn is told, by WithLock, of a stale holder taken over and of a
	// release that failed.
	Warn func(string)
	// Locks is the set the lock joins while held, which guarded
	// transports consult (ProcessLocks when nil).
	Locks *Locks
}

// ValidityMargin is the part of the lease a holder keeps in reserve: it
// starts a changing step only while its last renewal was sent less than
// duration - duration/ValidityMargin ago, so the step is sent well before
// any other process could judge the lease expired.
const ValidityMargin = 3

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
	sent := time.Now()
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
		if sent, err = lk.take(ctx, cur, spec, o, dry); err != nil {
			return nil, err
		}
	}
	lk.renewedSent, lk.renewedWall = sent, sent.Round(0)
	if o.DryRun {
		close(lk.renewStopped)
		return lk, nil
	}
	lk.locks = o.Locks
	if lk.locks == nil {
		lk.locks = ProcessLocks
	}
	lk.locks.add(lk)
	go lk.renew()
	return lk, nil
}

// take updates an existing Lease to this holder: a free one, its own,
// or a stale one (its holder's process on this host gone, or the lease
// unchanged for its whole duration while this process watched). The
// Lease's resourceVersion is the precondition, so of concurrent takers
// one wins. It returns when the winning request was sent.
func (lk *Lock) take(ctx context.Context, cur *coordinationv1.Lease, spec coordinationv1.LeaseSpec, o LockOptions, dry []string) (time.Time, error) {
	f := LockFactsOf(cur)
	if f.Holder != "" && f.Holder != o.Identity {
		if f.Held(o.Now()) {
			return time.Time{}, heldError(cur)
		}
		lk.TookOver = f.Holder
		lk.TookOverWhy = "its process on this host no longer runs"
		if !f.HolderGone {
			// The holder's renewTime was written by its clock, not
			// ours: expiry is judged as leader election does, by
			// watching the lease not change for one whole lease
			// duration on this process's own monotonic clock.
			var err error
			cur, err = lk.awaitExpiry(ctx, cur, o.OnWait)
			if err != nil {
				return time.Time{}, err
			}
			lk.TookOverWhy = fmt.Sprintf("the lease did not change for %s (its duration) while this process watched it; last renewed %s by its holder's clock",
				leaseDuration(cur), f.RenewedAt.UTC().Format(time.RFC3339))
		}
	}
	spec.AcquireTime, spec.RenewTime = ptr.To(metav1.NewMicroTime(o.Now())), ptr.To(metav1.NewMicroTime(o.Now()))
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
	// cur.ResourceVersion is the precondition: a concurrent taker makes
	// this a 409.
	sent := time.Now()
	updated, err := lk.client.CoordinationV1().Leases(lk.namespace).Update(ctx, upd, metav1.UpdateOptions{DryRun: dry})
	if apierrors.IsConflict(err) {
		return time.Time{}, lk.heldBy(ctx)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("taking lease %s/%s: %w", lk.namespace, lk.name, err)
	}
	lk.lease = updated
	return sent, nil
}

func leaseDuration(l *coordinationv1.Lease) time.Duration {
	if s := ptr.Deref(l.Spec.LeaseDurationSeconds, 0); s > 0 {
		return time.Duration(s) * time.Second
	}
	return DefaultLockDuration
}

// awaitExpiry watches a lease that another holder names until it has not
// changed for one whole lease duration, measured from this process's
// first look on its own monotonic clock (never from the renewTime the
// holder's clock wrote). Any change (a renewal, a new holder) means the
// lease is live: *LockHeldError. It returns the lease as last read, whose
// resourceVersion the takeover must carry.
func (lk *Lock) awaitExpiry(ctx context.Context, cur *coordinationv1.Lease, onWait func(string)) (*coordinationv1.Lease, error) {
	d := leaseDuration(cur)
	if onWait != nil {
		onWait(fmt.Sprintf("lease %s/%s names holder %s, which looks expired by this machine's clock; watching it for %s before taking it over (clocks may disagree)",
			lk.namespace, lk.name, ptr.Deref(cur.Spec.HolderIdentity, ""), d))
	}
	first := time.Now()
	poll := min(d/10, time.Second)
	leases := lk.client.CoordinationV1().Leases(lk.namespace)
	for {
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		got, err := leases.Get(ctx, lk.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, &LockHeldError{Lease: lk.name, Holder: "nobody now: the lease was deleted while this process watched it; run again"}
		case err != nil:
			return nil, fmt.Errorf("watching lease %s/%s: %w", lk.namespace, lk.name, err)
		case got.ResourceVersion != cur.ResourceVersion && ptr.Deref(got.Spec.HolderIdentity, "") == "":
			return got, nil // released meanwhile: free to take
		case got.ResourceVersion != cur.ResourceVersion:
			return nil, heldError(got)
		}
		if time.Since(first) > d {
			return got, nil
		}
	}
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
	f := LockFactsOf(l)
	return &LockHeldError{Lease: l.Name, Holder: f.Holder, RenewedAt: f.RenewedAt, Duration: f.Duration, Action: l.Annotations[AnnotationAction]}
}

// Identity is the holder identity.
func (lk *Lock) Identity() string { return lk.identity }

// Lost is closed when the lock was taken away while held.
func (lk *Lock) Lost() <-chan struct{} { return lk.lost }

func (lk *Lock) markLost() { lk.lostOnce.Do(func() { close(lk.lost) }) }

func (lk *Lock) renew() {
	defer close(lk.renewStopped)
	every := lk.duration / 3
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-lk.stopRenew:
			return
		case <-t.C:
		}
		if lk.Valid() != nil {
			// Past its renew deadline (an API server that did not
			// answer, or this process frozen): another process may hold
			// the lease by now, so this holder stops for good.
			lk.markLost()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		err := lk.renewOnce(ctx)
		cancel()
		switch {
		case errors.Is(err, ErrLockLost):
			lk.markLost()
			return
		case err != nil:
			t.Reset(min(every, time.Second)) // retry soon; Valid bounds how long
		default:
			t.Reset(every)
		}
	}
}

// Valid reports whether the lock is known to be held now: not lost, and
// its last successful renewal sent less than the lease duration minus a
// margin (a third) ago on this process's monotonic clock. A holder checks
// it right before every changing step; a holder frozen past its lease
// (SIGSTOP, a paused VM) finds it invalid when it wakes and stops.
func (lk *Lock) Valid() error {
	select {
	case <-lk.lost:
		return fmt.Errorf("%w: another process took lease %s/%s", ErrLockLost, lk.namespace, lk.name)
	default:
	}
	lk.mu.Lock()
	sent, wall := lk.renewedSent, lk.renewedWall
	lk.mu.Unlock()
	deadline := lk.duration - lk.duration/ValidityMargin
	if age := max(time.Since(sent), time.Now().Round(0).Sub(wall)); age > deadline {
		lk.markLost()
		return fmt.Errorf("%w: lease %s/%s was last renewed %s ago (this process was frozen, or the API server did not answer), past its renew deadline of %s: another process may hold it now",
			ErrLockLost, lk.namespace, lk.name, age.Round(100*time.Millisecond), deadline)
	}
	return nil
}

// renewOnce extends the lease, with its resourceVersion as precondition.
func (lk *Lock) renewOnce(ctx context.Context) error {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	leases := lk.client.CoordinationV1().Leases(lk.namespace)
	upd := lk.lease.DeepCopy()
	now := metav1.NewMicroTime(lk.now())
	upd.Spec.RenewTime = &now
	sent := time.Now()
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
		sent = time.Now()
		got, err = leases.Update(ctx, upd, metav1.UpdateOptions{})
	}
	if apierrors.IsNotFound(err) {
		return ErrLockLost
	}
	if err != nil {
		return err
	}
	lk.lease, lk.renewedSent, lk.renewedWall = got, sent, sent.Round(0)
	return nil
}

// Release stops renewing and frees the Lease (holder cleared, with its
// resourceVersion as precondition). Releasing a lock that was lost, or a
// dry-run lock, does nothing.
func (lk *Lock) Release(ctx context.Context) error {
	if lk.locks != nil {
		defer lk.locks.remove(lk)
	}
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
