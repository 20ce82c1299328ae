package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/verdict"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Backend is the TUI's reading edge. Every method may block; the model
// calls them only inside a tea.Cmd and gets the answers back as messages.
type Backend interface {
	// Start runs the watches and returns once their caches have synced
	// (or with the reason they could not).
	Start(ctx context.Context) error
	// Changes delivers a value after watched objects changed; a burst of
	// changes may deliver one value.
	Changes() <-chan struct{}
	// Errors delivers watch failures (RBAC, connectivity) as they happen.
	Errors() <-chan error
	// Observe reads every cluster in scope from the watch caches and,
	// with probe, asks every member on its own.
	Observe(ctx context.Context, probe bool) ([]status.Result, status.Warnings, error)
}

// ErrCacheSync is returned by Start when the watch caches did not fill in
// time.
var ErrCacheSync = errors.New("watch caches did not sync")

// CacheSyncTimeout bounds Start.
const CacheSyncTimeout = 30 * time.Second

// KubeBackend watches the API server with informers (status.CacheSource)
// and probes members through status.Observer.
type KubeBackend struct {
	client    kubernetes.Interface
	namespace string
	factory   informers.SharedInformerFactory
	observer  status.Observer
	changes   chan struct{}
	errs      chan error
}

// NewKubeBackend returns a backend for the clusters in namespace ("" for
// all namespaces). observer supplies the engines, the dialer (nil: no
// probes), the Secret reader, the probe timeout and the verdict options;
// its Source is replaced by the informer caches.
func NewKubeBackend(client kubernetes.Interface, namespace string, observer status.Observer) *KubeBackend {
	var opts []informers.SharedInformerOption
	if namespace != "" {
		opts = append(opts, informers.WithNamespace(namespace))
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	observer.Source = status.NewCacheSource(f)
	return &KubeBackend{
		client:    client,
		namespace: namespace,
		factory:   f,
		observer:  observer,
		changes:   make(chan struct{}, 1),
		errs:      make(chan error, 8),
	}
}

// informers returns the watched informers; optional ones (events) may be
// forbidden without stopping the view, as in status.
func (b *KubeBackend) informers() (required, optional []cache.SharedIndexInformer) {
	f := b.factory
	return []cache.SharedIndexInformer{
			f.Apps().V1().StatefulSets().Informer(),
			f.Core().V1().Pods().Informer(),
			f.Core().V1().PersistentVolumeClaims().Informer(),
			f.Policy().V1().PodDisruptionBudgets().Informer(),
			f.Core().V1().Services().Informer(),
			f.Discovery().V1().EndpointSlices().Informer(),
		}, []cache.SharedIndexInformer{
			f.Core().V1().Events().Informer(),
		}
}

// watchError is a watch failure of one informer.
type watchError struct {
	err      error
	required bool
}

// Start implements Backend. The watches stop when ctx is done. It returns
// once the required caches synced, or at once with the reason when one of
// them is forbidden.
func (b *KubeBackend) Start(ctx context.Context) error {
	notify := func() {
		select {
		case b.changes <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	syncing := make(chan watchError, 16)
	var started atomic.Bool
	required, optional := b.informers()
	var synced []cache.InformerSynced
	for i, inf := range append(append([]cache.SharedIndexInformer(nil), required...), optional...) {
		isRequired := i < len(required)
		if isRequired {
			synced = append(synced, inf.HasSynced)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("watching: %w", err)
		}
		_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			if !reportable(err) || ctx.Err() != nil {
				return
			}
			err = fmt.Errorf("watch %s: %w", r.TypeDescription(), err)
			if !started.Load() {
				select {
				case syncing <- watchError{err: err, required: isRequired}:
				default:
				}
			}
			select {
			case b.errs <- err:
			default:
			}
		})
	}
	b.factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, CacheSyncTimeout)
	defer cancel()
	done := make(chan bool, 1)
	go func() { done <- cache.WaitForCacheSync(syncCtx.Done(), synced...) }()
	for {
		select {
		case ok := <-done:
			started.Store(true)
			if ok {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return b.explain(ctx, fmt.Errorf("%w within %s", ErrCacheSync, CacheSyncTimeout))
		case we := <-syncing:
			if we.required && (apierrors.IsForbidden(we.err) || apierrors.IsUnauthorized(we.err)) {
				// Fail at once with the reason rather than at the timeout.
				started.Store(true)
				cancel()
				return b.explain(ctx, we.err)
			}
		}
	}
}

// explain surfaces the real reason a sync failed (RBAC, connectivity) with
// one list call, falling back to err.
func (b *KubeBackend) explain(ctx context.Context, err error) error {
	if _, lerr := (status.APISource{Client: b.client}).Read(ctx, b.namespace); lerr != nil {
		return lerr
	}
	return err
}

// reportable: a watch error worth showing (not the routine end of a watch
// or an expired resource version, which the informer handles).
func reportable(err error) bool {
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return false
	case apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		return false
	}
	return true
}

// Shutdown waits for the watch goroutines to end (after Start's ctx is
// done).
func (b *KubeBackend) Shutdown() { b.factory.Shutdown() }

// Changes implements Backend.
func (b *KubeBackend) Changes() <-chan struct{} { return b.changes }

// Errors implements Backend.
func (b *KubeBackend) Errors() <-chan error { return b.errs }

// Observe implements Backend. With probe it also reads each cluster's
// action lock and ledger (two GETs per cluster), so the seed-phase view
// shows actions run from anywhere.
func (b *KubeBackend) Observe(ctx context.Context, probe bool) ([]status.Result, status.Warnings, error) {
	o := b.observer
	if !probe {
		o.Dial = nil
	}
	rs, warn, err := o.Observe(ctx, b.namespace, "")
	if err != nil || !probe {
		return rs, warn, err
	}
	for i := range rs {
		c := rs[i].Observation.Cluster
		lock, err := actions.ReadLock(ctx, b.client, c.Namespace, c.Name)
		if err == nil {
			var led actions.LedgerContents
			led, err = actions.ReadLedger(ctx, b.client, c.Namespace, c.Name)
			rs[i].Observation.Lock, rs[i].Observation.Ledger = lock, led.Entries
		}
		if err != nil {
			warn = append(warn, fmt.Sprintf("%s/%s: actions not shown: %v", c.Namespace, c.Name, err))
		}
	}
	return rs, warn, nil
}

// Probes reports whether the backend dials members at all.
func (b *KubeBackend) Probes() bool { return b.observer.Dial != nil }

// VerdictOptions are the thresholds the backend's verdicts use.
func (b *KubeBackend) VerdictOptions() verdict.Options { return b.observer.Verdict }

// memberKey names one member incarnation: a pod recreated under the same
// name is a different key, so its old engine facts are never reused.
type memberKey struct {
	namespace, cluster, member, podUID string
}

// probeFacts are the engine facts of the last probe, by member
// incarnation, the clusters that probe covered, and their locks and
// ledgers.
type probeFacts struct {
	members  map[memberKey]model.EngineFacts
	clusters map[string]bool
	actions  map[string]clusterActions
}

// clusterActions are a cluster's action lock and ledger as last read.
type clusterActions struct {
	lock   *model.LockFacts
	ledger []model.LedgerEntry
}

// factsOf collects the engine facts of probed results.
func factsOf(rs []status.Result) probeFacts {
	pf := probeFacts{members: map[memberKey]model.EngineFacts{}, clusters: map[string]bool{}, actions: map[string]clusterActions{}}
	for _, r := range rs {
		o := r.Observation
		pf.actions[clusterKey(o.Cluster)] = clusterActions{lock: o.Lock, ledger: o.Ledger}
		if !o.EngineProbed {
			continue
		}
		pf.clusters[clusterKey(o.Cluster)] = true
		for _, m := range o.Members {
			if m.Pod == nil || m.Engine == nil {
				continue
			}
			pf.members[memberKey{o.Cluster.Namespace, o.Cluster.Name, m.Name, m.Pod.UID}] = *m.Engine
		}
	}
	return pf
}

// graft puts the last probe's engine facts into results read from the
// caches alone (matching each member by pod UID) and evaluates them again,
// so watch events update the view at once without dialling anyone.
func graft(rs []status.Result, pf probeFacts, opts verdict.Options, now time.Time) []status.Result {
	out := make([]status.Result, len(rs))
	for i, r := range rs {
		o := r.Observation
		if a, ok := pf.actions[clusterKey(o.Cluster)]; ok {
			o.Lock, o.Ledger = a.lock, a.ledger
			r.Observation.Lock, r.Observation.Ledger = a.lock, a.ledger
		}
		if !pf.clusters[clusterKey(o.Cluster)] {
			out[i] = r
			continue
		}
		o.EngineProbed = true
		members := make([]model.Member, len(o.Members))
		copy(members, o.Members)
		for j := range members {
			m := &members[j]
			if m.Pod == nil {
				continue
			}
			if f, ok := pf.members[memberKey{o.Cluster.Namespace, o.Cluster.Name, m.Name, m.Pod.UID}]; ok {
				m.Engine = &f
			}
		}
		o.Members = members
		out[i] = status.Evaluate(o, now, opts)
	}
	return out
}

// clusterKey identifies a cluster across observations.
func clusterKey(c model.ClusterFacts) string { return c.Namespace + "/" + c.Name }
