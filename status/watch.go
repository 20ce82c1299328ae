package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/source"
)

// ErrCacheSync is returned by Watcher.Start when the watch caches did not
// fill in time.
var ErrCacheSync = errors.New("watch caches did not sync")

// CacheSyncTimeout bounds each of Watcher.Start's waits, unless
// WatchOptions say otherwise: for a direct read's lists (when one runs),
// then for the caches.
const CacheSyncTimeout = 30 * time.Second

// DirectProbeGrace is how long, by default, the watches wait for a direct
// read's probes once its lists have returned (WatchOptions).
const DirectProbeGrace = 500 * time.Millisecond

// WatchOptions configure a Watcher.
type WatchOptions struct {
	// Observer supplies the engines, the dialer (nil: no probes), the
	// Secret reader, the probe timeout and the verdict options; its
	// Source is replaced by the watch caches.
	Observer Observer
	// SyncTimeout bounds each of Start's two long waits: for a direct
	// read's lists, and for the caches (CacheSyncTimeout when zero).
	SyncTimeout time.Duration
	// DirectProbeGrace is how long the watches wait, after a direct
	// read's lists, for its probes (DirectProbeGrace when zero). On the
	// 2-core benchmark machine the watches' lists beside the probes'
	// port-forwards slowed the TUI's first probed screen (bench/RESULTS.md,
	// fifth run); a member that does not answer holds the caches back by
	// this much at most.
	DirectProbeGrace time.Duration
}

// Watcher follows the API server with informers, for `status --watch`
// and the TUI: Start fills the caches, Changes says when watched objects
// changed, and Observe builds observations from the caches, so a read
// costs no API call.
//
// Events are optional: a user who may not list or watch them still gets
// every observation, and each observation's Warnings say that events are
// not shown. Every other resource is required.
type Watcher struct {
	client    kubernetes.Interface
	namespace string
	opts      WatchOptions
	// memory is the last probe's facts of each cluster: a read without a
	// probe shows the members as they last answered.
	memory  probeMemory
	factory informers.SharedInformerFactory
	source  CacheSource
	events  cache.SharedIndexInformer
	// configMaps hold what engines keep beside their members (Patroni's
	// leader locks) and the engines' settings: optional, like events.
	configMaps cache.SharedIndexInformer
	// hactl watches hactl's own lock Leases and ledger ConfigMaps (by
	// their label): optional too. Until they synced (or when they may
	// not be listed) a read asks the API server for them.
	hactl   informers.SharedInformerFactory
	leases  cache.SharedIndexInformer
	ledgers cache.SharedIndexInformer

	changes chan struct{}
	errs    chan error
	// refused carries RBAC and authentication refusals of required
	// watches, so that Start fails at once with the reason.
	refused chan error

	mu        sync.Mutex
	eventsErr error // the events watch's last failure
	// requiredErr is the last failure of a required watch, at
	// requiredErrAt (the one before at requiredErrPrev): while they are
	// recent the caches may be stale (Stale).
	requiredErr                    error
	requiredErrAt, requiredErrPrev time.Time
	// cmErr is the ConfigMaps watch's last failure. It is not reported
	// on Errors: only the clusters of engines that keep objects in
	// ConfigMaps need them, and their observations say it (the lock is
	// then unknown).
	cmErr error
	// leasesErr and ledgersErr are the last failures of the watches of
	// hactl's own objects (not reported on Errors: reads then ask the
	// API server).
	leasesErr, ledgersErr error
	// lastActions are hactl's own objects as last read from the API
	// server (haveActions: read once), while their watches cannot be
	// trusted.
	lastActions actionObjects
	haveActions bool
	// lastCozystack are the cozystack etcd-operator's resources as last
	// read (cachedRead), nil before the first read.
	lastCozystack *source.Cozystack
	// lastDruid are etcd-druid's Etcds and Leases as last read (likewise).
	lastDruid *source.Druid
	// lastZalando are Zalando's postgresqls as last read (likewise).
	lastZalando *source.Zalando
	// lastCNPG are CloudNativePG's Clusters as last read (likewise).
	lastCNPG *source.CNPG
	// lastEndpoints are the v1 Endpoints as last read (likewise), for
	// Patroni clusters whose DCS is on Endpoints.
	lastEndpoints *endpointsRead
	cancel        context.CancelFunc

	// directBegun is set by ExpectDirect (or ObserveDirect), and listed
	// closed once the direct read's lists have returned: Start waits for
	// them before its own lists.
	directBegun atomic.Bool
	listed      chan struct{}
	listedOnce  sync.Once
	// answered is closed once the direct read has returned.
	answered     chan struct{}
	answeredOnce sync.Once
}

// NewWatcher returns a watcher of the clusters in namespace ("" for all
// namespaces). Nothing is watched before Start.
func NewWatcher(client kubernetes.Interface, namespace string, opts WatchOptions) *Watcher {
	var fo []informers.SharedInformerOption
	if namespace != "" {
		fo = append(fo, informers.WithNamespace(namespace))
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = CacheSyncTimeout
	}
	if opts.DirectProbeGrace <= 0 {
		opts.DirectProbeGrace = DirectProbeGrace
	}
	if opts.Observer.Dial != nil && opts.Observer.Conns == nil {
		// A watch probes the same members round after round: keep their
		// connections open (closed by Stop).
		opts.Observer.Conns = engine.NewConns()
	}
	// Nothing hactl shows reads managedFields: the caches keep none
	// (a third of a pod's bytes, or more).
	fo = append(fo, informers.WithTransform(stripManagedFields))
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, fo...)
	hf := informers.NewSharedInformerFactoryWithOptions(client, 0, append(fo, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = LabelCluster
	}))...)
	return &Watcher{
		hactl:      hf,
		leases:     hf.Coordination().V1().Leases().Informer(),
		ledgers:    hf.Core().V1().ConfigMaps().Informer(),
		client:     client,
		namespace:  namespace,
		opts:       opts,
		factory:    f,
		source:     withEngines(NewCacheSource(f), opts.Observer.Engines),
		events:     f.Core().V1().Events().Informer(),
		configMaps: f.Core().V1().ConfigMaps().Informer(),
		changes:    make(chan struct{}, 1),
		errs:       make(chan error, 8),
		refused:    make(chan error, 16),
		listed:     make(chan struct{}),
		answered:   make(chan struct{}),
	}
}

// stripManagedFields drops an object's managedFields before it is cached.
func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// required are the informers without which there is no observation.
func (w *Watcher) required() []cache.SharedIndexInformer {
	f := w.factory
	return []cache.SharedIndexInformer{
		f.Apps().V1().StatefulSets().Informer(),
		f.Core().V1().Pods().Informer(),
		f.Core().V1().PersistentVolumeClaims().Informer(),
		f.Policy().V1().PodDisruptionBudgets().Informer(),
		f.Core().V1().Services().Informer(),
		f.Discovery().V1().EndpointSlices().Informer(),
	}
}

// Start runs the watches and returns once the required caches synced and
// the events cache and those of hactl's own locks and ledgers synced or
// failed; at once with the reason when a
// required watch is forbidden; with the reason (or ErrCacheSync) after
// the sync timeout. While a direct read (ObserveDirect) runs, the watches
// start once its lists have returned (or after the sync timeout) and its
// probes have answered (or after the probe grace). The watches run until
// ctx is done or Stop is called.
// Call Start once.
func (w *Watcher) Start(ctx context.Context) error {
	required := w.required()
	for _, inf := range required {
		if err := w.hook(inf, true); err != nil {
			return err
		}
	}
	if err := w.hook(w.events, false); err != nil {
		return err
	}
	if err := w.hook(w.configMaps, false); err != nil {
		return err
	}
	for _, inf := range []cache.SharedIndexInformer{w.leases, w.ledgers} {
		if err := w.hook(inf, false); err != nil {
			return err
		}
	}
	if w.directBegun.Load() {
		// A direct read is listing the same objects: list after it, not
		// beside it, so that the first screen it makes is not slowed by
		// a second copy of every list (on the API server and here).
		// A read that hangs holds the watches back no longer than their
		// own sync timeout.
		listed, err := waitFor(ctx, w.listed, w.opts.SyncTimeout)
		if err != nil {
			return err
		}
		// Then its probes: the port-forwards they open share the API
		// server and this process with the watches' lists. A member that
		// does not answer holds the caches back no longer than the grace,
		// so that they show its cluster before its probe times out. Lists
		// that did not return are not waited for twice.
		if listed {
			if _, err := waitFor(ctx, w.answered, w.opts.DirectProbeGrace); err != nil {
				return err
			}
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	w.mu.Lock()
	w.cancel = cancel
	w.mu.Unlock()
	w.factory.Start(runCtx.Done())
	w.hactl.Start(runCtx.Done())
	return w.waitForSync(ctx, required)
}

// waitFor waits until ch is closed (true) or d has passed (false); ctx's
// error if it is done first.
func waitFor(ctx context.Context, ch <-chan struct{}, d time.Duration) (bool, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true, nil
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// hook registers the change notification and the watch error handler on
// one informer.
func (w *Watcher) hook(inf cache.SharedIndexInformer, required bool) error {
	delivered := w.notify
	if inf == w.leases || inf == w.ledgers {
		// A delivery says the watch works again: its cache is current.
		delivered = func() {
			w.mu.Lock()
			if inf == w.leases {
				w.leasesErr = nil
			} else {
				w.ledgersErr = nil
			}
			w.mu.Unlock()
			w.notify()
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { delivered() },
		UpdateFunc: func(any, any) { delivered() },
		DeleteFunc: func(any) { delivered() },
	}
	if _, err := inf.AddEventHandler(handler); err != nil {
		return fmt.Errorf("watching: %w", err)
	}
	return inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if !reportable(err) || ctx.Err() != nil {
			return
		}
		if inf == w.configMaps || inf == w.leases || inf == w.ledgers {
			// Optional, and said by each observation: the lock unknown,
			// hactl's own objects read from the API server instead.
			w.mu.Lock()
			switch inf {
			case w.configMaps:
				w.cmErr = err
			case w.leases:
				w.leasesErr = err
			case w.ledgers:
				w.ledgersErr = err
			}
			w.mu.Unlock()
			return
		}
		if inf == w.events {
			w.mu.Lock()
			w.eventsErr = err
			w.mu.Unlock()
		}
		err = fmt.Errorf("watch %s: %w", r.TypeDescription(), err)
		if required {
			w.mu.Lock()
			w.requiredErr, w.requiredErrPrev, w.requiredErrAt = err, w.requiredErrAt, time.Now()
			w.mu.Unlock()
		}
		if required && (apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)) {
			send(w.refused, err)
		}
		send(w.errs, err)
	})
}

// waitForSync waits for the required caches and for the events cache to
// sync or fail.
func (w *Watcher) waitForSync(ctx context.Context, required []cache.SharedIndexInformer) error {
	syncCtx, cancel := context.WithTimeout(ctx, w.opts.SyncTimeout)
	defer cancel()
	var synced []cache.InformerSynced
	for _, inf := range required {
		synced = append(synced, inf.HasSynced)
	}
	settled := append(slices.Clone(synced),
		func() bool { return w.events.HasSynced() || w.eventsFailure() != nil },
		func() bool { return w.leases.HasSynced() || w.failed(&w.leasesErr) },
		func() bool { return w.ledgers.HasSynced() || w.failed(&w.ledgersErr) })
	done := make(chan bool, 1)
	go func() { done <- waitSynced(syncCtx, settled) }()
	select {
	case ok := <-done:
		switch {
		case ok:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case allSynced(synced):
			// Only optional caches are late: go on without them.
			return nil
		}
		return w.explain(ctx, fmt.Errorf("%w within %s", ErrCacheSync, w.opts.SyncTimeout))
	case err := <-w.refused:
		// Fail at once with the reason rather than at the timeout.
		cancel()
		<-done
		return w.explain(ctx, err)
	}
}

// syncPoll is how often waitSynced looks at the caches: client-go's
// WaitForCacheSync looks every 100 ms, which a first screen would wait
// out; a look costs a few function calls.
const syncPoll = 5 * time.Millisecond

// waitSynced reports true once every settled holds, false when ctx ends
// first.
func waitSynced(ctx context.Context, settled []cache.InformerSynced) bool {
	t := time.NewTicker(syncPoll)
	defer t.Stop()
	for !allSynced(settled) {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

func allSynced(synced []cache.InformerSynced) bool {
	for _, s := range synced {
		if !s() {
			return false
		}
	}
	return true
}

// explain surfaces the real reason a sync failed (RBAC, connectivity) with
// one list call, falling back to err.
func (w *Watcher) explain(ctx context.Context, err error) error {
	if _, lerr := (APISource{Client: w.client, Engines: w.opts.Observer.Engines}).Read(ctx, w.namespace); lerr != nil {
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

// send delivers v on ch unless ch is full.
func send[T any](ch chan T, v T) {
	select {
	case ch <- v:
	default:
	}
}

func (w *Watcher) notify() { send(w.changes, struct{}{}) }

// Changes delivers a value after watched objects changed; a burst of
// changes may deliver one value.
func (w *Watcher) Changes() <-chan struct{} { return w.changes }

// Stale is an error while the caches may no longer follow the API server:
// required watches failed twice within the last window. A watch that
// cannot reach the server fails again at each of its retries (client-go's
// reflector backs off up to about a minute), so a window longer than that
// sees a failing watch as failing throughout, and a recovered one as
// recovered once the window has passed; one failure alone (a blip while
// the API server restarts, retried at once) is not staleness.
func (w *Watcher) Stale(window time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.requiredErr == nil || time.Since(w.requiredErrPrev) > window {
		return nil
	}
	if ago := time.Since(w.requiredErrAt); ago <= window {
		return fmt.Errorf("the watch caches may be stale: %s ago, %w", ago.Round(time.Second), w.requiredErr)
	}
	return nil
}

// Errors delivers watch failures (RBAC, connectivity) as they happen;
// failures nobody receives are dropped.
func (w *Watcher) Errors() <-chan error { return w.errs }

// failed reports whether the watch whose last failure *err is has failed.
func (w *Watcher) failed(err *error) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return *err != nil
}

// eventsFailure is why the events cache is empty: the events watch's
// last failure while it has not synced, nil otherwise.
func (w *Watcher) eventsFailure() error {
	if w.events.HasSynced() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.eventsErr
}

// Observe reads every cluster in scope from the caches, or only the one
// called name, and evaluates the verdict. With probe (and a dialer) it
// also asks every member on its own; without, each member whose pod is
// the one that last answered a probe (this one's or ObserveDirect's)
// carries that answer, so watch events are judged at once without
// dialling anyone, and by the one verdict.
func (w *Watcher) Observe(ctx context.Context, name string, probe bool) ([]Result, Warnings, error) {
	o := w.opts.Observer
	o.Source = watchSource{w: w, probe: probe}
	o.memory = &w.memory
	if !probe {
		o.Dial = nil
	}
	return o.Observe(ctx, w.namespace, name)
}

// ExpectDirect tells the watcher that ObserveDirect is about to run
// (in the background): a Start called before it begins still waits for
// its lists.
func (w *Watcher) ExpectDirect() { w.directBegun.Store(true) }

// ObserveDirect is Observe from one list of each resource type at the
// API server instead of the caches: what `status` reads. It needs no
// Start, so a first screen need not wait for the watches to sync.
func (w *Watcher) ObserveDirect(ctx context.Context, name string, probe bool) ([]Result, Warnings, error) {
	w.directBegun.Store(true)
	done := func() { w.listedOnce.Do(func() { close(w.listed) }) }
	defer w.answeredOnce.Do(func() { close(w.answered) })
	defer done()
	o := w.opts.Observer
	o.Source = listedSource{Source: APISource{Client: w.client, Engines: o.Engines}, listed: done}
	o.memory = &w.memory
	// Its own connections, closed after it: it may overlap a watch
	// round, whose kept clients it must neither replace nor retire.
	o.Conns = nil
	if !probe {
		o.Dial = nil
	}
	return o.Observe(ctx, w.namespace, name)
}

// PodIP is the IP the watched pod namespace/name reports, from the
// caches: what a dialer inside the cluster dials (agent exporter). An
// error says the pod is not in the caches or has no IP yet.
func (w *Watcher) PodIP(namespace, name string) (string, error) {
	p, err := w.factory.Core().V1().Pods().Lister().Pods(namespace).Get(name)
	if err != nil {
		return "", err
	}
	if p.Status.PodIP == "" {
		return "", fmt.Errorf("pod %s/%s has no IP yet (phase %s)", namespace, name, p.Status.Phase)
	}
	return p.Status.PodIP, nil
}

// Stop ends the watches and waits for their goroutines.
func (w *Watcher) Stop() {
	w.mu.Lock()
	cancel := w.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	w.factory.Shutdown()
	w.hactl.Shutdown()
	if c := w.opts.Observer.Conns; c != nil {
		c.Close()
	}
}

// listedSource is a Source that reports when its read has returned.
type listedSource struct {
	Source
	listed func()
}

// Read implements Source.
func (s listedSource) Read(ctx context.Context, ns string) (*Objects, error) {
	defer s.listed()
	return s.Source.Read(ctx, ns)
}

// watchSource reads the watcher's caches and says when events are
// missing from them; probe: the read is a probe round's.
type watchSource struct {
	w     *Watcher
	probe bool
}

// Read implements Source.
func (s watchSource) Read(ctx context.Context, ns string) (*Objects, error) {
	objs, err := s.w.source.Read(ctx, ns)
	if err != nil {
		return nil, err
	}
	if err := s.w.eventsFailure(); err != nil {
		objs.EventsErr = explainAPIError(err, "list and watch", "events", ns)
	}
	if objs.ConfigMapsErr != nil {
		s.w.mu.Lock()
		cmErr := s.w.cmErr
		s.w.mu.Unlock()
		if cmErr != nil {
			objs.ConfigMapsErr = explainAPIError(cmErr, "list and watch", "configmaps", ns)
		}
	}
	if needConfigMaps(objs.StatefulSets, partsOf(s.w.opts.Observer.Engines)) {
		// Patroni's Endpoints mode: not watched (v1 Endpoints change
		// with every Service), read again on probe rounds and once the
		// last read is endpointsMaxAge old (a leader record's renewal
		// is judged against the round's time).
		s.w.mu.Lock()
		last := s.w.lastEndpoints
		s.w.mu.Unlock()
		fresh := last != nil && time.Since(last.at) < endpointsMaxAge
		cachedRead(ctx, s.w, &s.w.lastEndpoints, s.probe || !fresh, func() *endpointsRead {
			r := readEndpoints(ctx, s.w.client, ns)
			return &r
		}).put(objs)
	}
	if source.HasCozystackPods(objs.Pods) {
		objs.Cozystack = cachedRead(ctx, s.w, &s.w.lastCozystack, s.probe, func() *source.Cozystack { return readCozystack(ctx, s.w.client, ns) })
	}
	if source.HasDruidStatefulSets(objs.StatefulSets) {
		objs.Druid = cachedRead(ctx, s.w, &s.w.lastDruid, s.probe, func() *source.Druid { return readDruid(ctx, s.w.client, ns) })
	}
	if source.HasCNPGPods(objs.Pods) {
		objs.CNPG = cachedRead(ctx, s.w, &s.w.lastCNPG, s.probe, func() *source.CNPG { return readCNPG(ctx, s.w.client, ns) })
	}
	if source.HasZalandoStatefulSets(objs.StatefulSets) {
		objs.Zalando = cachedRead(ctx, s.w, &s.w.lastZalando, s.probe, func() *source.Zalando { return readZalando(ctx, s.w.client, ns) })
	}
	if len(objs.StatefulSets) == 0 {
		return objs, nil
	}
	if s.w.actionsWatched() {
		all := labels.Everything()
		leases, _ := s.w.hactl.Coordination().V1().Leases().Lister().Leases(ns).List(all)
		ledgers, _ := s.w.hactl.Core().V1().ConfigMaps().Lister().ConfigMaps(ns).List(all)
		objs.Leases, objs.Ledgers = values(leases), values(ledgers)
		return objs, nil
	}
	s.w.actions(ctx, ns, objs, s.probe).put(objs)
	return objs, nil
}

// cachedRead is an operator's resources (they are not watched): read
// from the API server by read on a probe round, or when none were read
// yet (*last is nil); a round between probes reuses the last read. A
// read ctx cut short is not kept.
func cachedRead[T any](ctx context.Context, w *Watcher, last **T, probe bool, read func() *T) *T {
	w.mu.Lock()
	prev := *last
	w.mu.Unlock()
	if prev != nil && !probe {
		return prev
	}
	v := read()
	if ctx.Err() != nil {
		// Cut short by the round's end: not kept for the rounds after.
		return v
	}
	w.mu.Lock()
	*last = v
	w.mu.Unlock()
	return v
}

// actions are hactl's own objects read from the API server while their
// watches are not to be trusted (not synced, or failing): on a probe
// round, or when none were read yet; a round between probes reuses the
// last read, so that a user who may not list them costs no API call per
// watch event.
func (w *Watcher) actions(ctx context.Context, ns string, objs *Objects, probe bool) actionObjects {
	w.mu.Lock()
	last, ok := w.lastActions, w.haveActions
	w.mu.Unlock()
	if ok && !probe {
		return last
	}
	a := readActionObjects(ctx, w.client, ns, objs.StatefulSets, w.opts.Observer.Engines)
	w.mu.Lock()
	w.lastActions, w.haveActions = a, true
	w.mu.Unlock()
	return a
}

// actionsWatched reports whether the caches of hactl's own objects can be
// read: synced, and neither watch failing since its last delivery.
func (w *Watcher) actionsWatched() bool {
	if !w.leases.HasSynced() || !w.ledgers.HasSynced() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.leasesErr == nil && w.ledgersErr == nil
}

// withEngines is s with the engines whose keepers it consults.
func withEngines(s CacheSource, engines map[model.Engine]engine.Engine) CacheSource {
	s.Engines = engines
	return s
}
