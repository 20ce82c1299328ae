package actions

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/model"
)

// GC collects the seed generations of one cluster's store: it plans what
// to delete from the store's listing and the ledgers of every cluster
// with generations there (what their in-progress actions use is kept),
// and deletes under the cluster's lock, checking before each deletion
// that the lock is still held and the item still unused. Each deletion is
// an Event on the StatefulSet (when it exists).
type GC struct {
	Client kubernetes.Interface
	// Store is the cluster's store (OpenClusterStore); its StatefulSet,
	// when set, owns the lock and receives the Events.
	Store *ClusterStore
	// Scope says whose generations are candidates; Scope.Cluster is the
	// cluster gc runs for (with its StatefulSet's UID when it exists).
	Scope artifact.GCScope
	// Options are the retention rules; InUse and Now are set by Plan.
	Options artifact.GCOptions
	// Identity is the lock holder (ProcessIdentity when empty).
	Identity string
	// Warn reports what does not stop gc (a ledger of another cluster
	// that cannot be read, an Event not written); nil drops them.
	Warn func(string)

	entries []artifact.Entry
	planned bool
}

// What gc's Events say: action generations-gc, step delete-generation,
// reason GenerationDeleted.
const (
	gcAction     model.Action   = "generations-gc"
	gcStepDelete model.StepKind = "delete-generation"
)

// ErrGCLockLost says gc's lock was taken away (or expired) while it
// deleted: it stopped before the next deletion.
var ErrGCLockLost = errors.New("lock lost")

func (g *GC) warn(format string, args ...any) {
	if g.Warn != nil {
		g.Warn(fmt.Sprintf(format, args...))
	}
}

func (g *GC) self() artifact.Owner { return g.Scope.Cluster }

// ledgerClusters are the clusters whose ledgers say what is in use: this
// one (required), and every other cluster with generations in the store,
// required with AllClusters (their generations may then be deleted),
// consulted when readable otherwise (one of them may be restoring from
// this cluster's generation).
func (g *GC) ledgerClusters() (required, optional []artifact.Owner) {
	required = []artifact.Owner{g.self()}
	seen := map[string]bool{g.self().String(): true} // one ledger per name
	for _, e := range g.entries {
		ow, ok := artifact.OwnerOf(e)
		if !ok || seen[ow.String()] {
			continue
		}
		seen[ow.String()] = true
		if g.Scope.AllClusters {
			required = append(required, ow)
		} else {
			optional = append(optional, ow)
		}
	}
	return required, optional
}

// inUse reads the ledgers of the clusters with generations in the store
// and returns the generations their in-progress actions name, each with
// why. A required ledger that cannot be read is an error; an optional one
// a warning (when warn).
func (g *GC) inUse(ctx context.Context, warn bool) (map[string]string, error) {
	required, optional := g.ledgerClusters()
	out := map[string]string{}
	for i, ow := range append(append([]artifact.Owner(nil), required...), optional...) {
		cur, err := InUseGenerations(ctx, g.Client, ow.Namespace, ow.Cluster)
		if err != nil && i < len(required) {
			return nil, fmt.Errorf("reading the ledger of %s, to keep the generations its actions use (nothing was deleted): %w", ow, err)
		}
		if err != nil {
			if warn {
				g.warn("cannot read the ledger of %s (it has generations in this store; one it restores from right now would not be seen): %v", ow, err)
			}
			continue
		}
		for gen, why := range cur {
			if !ow.Named(g.self()) {
				why = ow.String() + ": " + why
			}
			out[gen] = why
		}
	}
	return out, nil
}

// Plan lists the store and the ledgers and says what a run would delete
// and keep, and why.
func (g *GC) Plan(ctx context.Context) (artifact.GCPlan, error) {
	entries, err := g.Store.Store.List(ctx)
	if err != nil {
		return artifact.GCPlan{}, err
	}
	g.entries, g.planned = entries, true
	inUse, err := g.inUse(ctx, true)
	if err != nil {
		return artifact.GCPlan{}, err
	}
	set := map[string]bool{}
	for gen := range inUse {
		set[gen] = true
	}
	o := g.Options
	o.InUse, o.Now = set, time.Now()
	return artifact.PlanClusterGC(entries, g.Scope, o), nil
}

// Run deletes what plan says under the cluster's lock. locked is false
// when the lock was not taken (err says why: ErrLockHeld when another
// action holds it); nothing was deleted then. Before each deletion the
// lock must still be ours (its renewal's verdict, and the Lease read
// now) and the ledgers are read again: only what is still not in use
// goes (a ledger that cannot be read keeps everything). A lock lost
// midway stops gc with ErrGCLockLost.
func (g *GC) Run(ctx context.Context, plan artifact.GCPlan) (res artifact.GCResult, locked bool, err error) {
	if !g.planned {
		// Without the store's listing, other clusters' ledgers are not
		// read: a restore from one of these generations would be missed.
		return res, false, errors.New("gc: Run needs the listing of its Plan; nothing was deleted")
	}
	identity := g.Identity
	if identity == "" {
		identity = ProcessIdentity()
	}
	cl := g.self()
	lo := LockOptions{Identity: identity, Action: "generations gc", Warn: g.Warn}
	sts := g.Store.StatefulSet
	if sts != nil {
		lo.Owner = &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID}
	}
	err = WithLock(ctx, g.Client, cl.Namespace, cl.Cluster, lo, func(ctx context.Context, lock *Lock) error {
		locked = true
		inUseNow := func(gen string) bool {
			cur, err := g.inUse(ctx, false)
			return err != nil || cur[gen] != ""
		}
		var err error
		res, err = g.Store.Store.RunGC(ctx, plan, artifact.GCApply{InUse: inUseNow, Continue: func() error { return g.stillHeld(ctx, lock, identity) }})
		return err
	})
	if locked && sts != nil {
		ref := corev1.ObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: sts.Namespace, Name: sts.Name, UID: sts.UID}
		for _, it := range res.Deleted {
			rc := model.Receipt{Action: gcAction, Holder: identity, Step: gcStepDelete, Outcome: model.OutcomeDone,
				Detail: fmt.Sprintf("deleted %s from %s: %s", GCItemName(it), g.Store.Store, it.Reason), At: time.Now()}
			if eerr := RecordEvent(ctx, g.Client, ref, rc); eerr != nil {
				g.warn("event for %s not written: %v", GCItemName(it), eerr)
			}
		}
	}
	return res, locked, err
}

// stillHeld checks, before a deletion, that gc still holds the lock: its
// renewal says so and the Lease, read now, names this process.
func (g *GC) stillHeld(ctx context.Context, lock *Lock, identity string) error {
	if err := lock.Valid(); err != nil { // lost, or past its renew deadline (frozen)
		return fmt.Errorf("%w: %v", ErrGCLockLost, err)
	}
	cl := g.self()
	name := LockName(cl.Cluster)
	l, err := g.Client.CoordinationV1().Leases(cl.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: the lock was deleted by someone else", ErrGCLockLost)
	case err != nil:
		return fmt.Errorf("reading lease %s/%s to check that gc still holds it: %w", cl.Namespace, name, err)
	case l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "":
		return fmt.Errorf("%w: the lock was released by someone else", ErrGCLockLost)
	case *l.Spec.HolderIdentity != identity:
		return fmt.Errorf("%w: the lock is now held by %s", ErrGCLockLost, *l.Spec.HolderIdentity)
	}
	return nil
}

// GCItemName names a gc item: "generation G" or "upload U of G".
func GCItemName(it artifact.GCItem) string {
	if it.Kind == artifact.GCUpload {
		return fmt.Sprintf("upload %s of %s", it.Upload, it.Generation)
	}
	return "generation " + it.Generation
}
