package actions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
)

// releaseTimeout bounds the release of a lock after its holder's work.
const releaseTimeout = 10 * time.Second

// WithLock is the one sequence every changing command holds its cluster's
// action lock by:
//
//  1. take the lock (a *LockHeldError when another live action holds it;
//     o.OnWait hears of a takeover being waited for);
//  2. tell o.Warn when a stale holder was taken over;
//  3. run fn with a context that ends as soon as the lock is lost (taken
//     by another process, or this one frozen past its renew deadline);
//  4. release the lock, whatever fn returned (o.Warn hears of a release
//     that failed: the Lease then expires on its own).
//
// When the lock was lost while fn ran, the error returned wraps
// ErrLockLost (and fn's own error), so a caller can tell "stopped because
// another process holds the cluster now" from any other failure. fn must
// still check lk.Valid() right before each change it makes.
func WithLock(ctx context.Context, c kubernetes.Interface, namespace, cluster string, o LockOptions, fn func(ctx context.Context, lk *Lock) error) error {
	lk, err := AcquireLock(ctx, c, namespace, cluster, o)
	if err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		if rerr := lk.Release(rctx); rerr != nil && o.Warn != nil {
			o.Warn(rerr.Error())
		}
	}()
	if lk.TookOver != "" && o.Warn != nil {
		o.Warn(fmt.Sprintf("took the lock over from stale holder %s (%s)", lk.TookOver, lk.TookOverWhy))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-lk.Lost():
			cancel()
		case <-ctx.Done():
		}
	}()
	err = fn(ctx, lk)
	select {
	case <-lk.Lost():
		if errors.Is(err, ErrLockLost) {
			return err
		}
		lost := fmt.Errorf("%w: another process took lease %s/%s while this action ran; it stopped (rerun to resume)", ErrLockLost, namespace, LockName(cluster))
		if err == nil {
			return lost
		}
		return fmt.Errorf("%w (%w)", lost, err)
	default:
	}
	return err
}
