package tui

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/internal/feed"
)

// Backend is the TUI's reading edge (the feed's: tui/internal/feed).
// Every method may block; the model calls them only inside a tea.Cmd and
// gets the answers back as messages.
type Backend = feed.Backend

// DirectObserver is a Backend that can also read every cluster in scope
// straight from the API server, probing the members when probes are on,
// without waiting for Start: the model's first screen comes from it while
// the watches sync, then the caches take over.
type DirectObserver = feed.DirectObserver

// ErrCacheSync is returned by Start when the watch caches did not sync in
// time.
var ErrCacheSync = status.ErrCacheSync

// CacheSyncTimeout bounds each of Start's long waits
// (status.Watcher.Start): for the direct read's lists, then for the
// caches. Between them Start waits for the direct read's probes, no
// longer than status.DirectProbeGrace.
const CacheSyncTimeout = status.CacheSyncTimeout

// KubeBackend watches the API server through a status.Watcher and probes
// members through its observer.
type KubeBackend struct {
	client    kubernetes.Interface
	namespace string
	watcher   *status.Watcher
	probes    bool
	verdict   model.VerdictOptions
}

// NewKubeBackend returns a backend for the clusters in namespace ("" for
// all namespaces). observer supplies the engines, the dialer (nil: no
// probes), the Secret reader, the probe timeout and the verdict options;
// its Source is replaced by the watch caches.
func NewKubeBackend(client kubernetes.Interface, namespace string, observer status.Observer) *KubeBackend {
	if observer.HolderGone == nil {
		observer.HolderGone = actions.HolderGone
	}
	return &KubeBackend{
		client:    client,
		namespace: namespace,
		watcher:   status.NewWatcher(client, namespace, status.WatchOptions{Observer: observer, SyncTimeout: CacheSyncTimeout}),
		probes:    observer.Dial != nil,
		verdict:   observer.VerdictOptions(),
	}
}

// Start implements Backend. The watches stop when ctx is done. It returns
// once the required caches synced, or at once with the reason when one of
// them is forbidden; events are optional (status.Watcher).
func (b *KubeBackend) Start(ctx context.Context) error { return b.watcher.Start(ctx) }

// Shutdown ends the watches and waits for their goroutines.
func (b *KubeBackend) Shutdown() { b.watcher.Stop() }

// Changes implements Backend.
func (b *KubeBackend) Changes() <-chan struct{} { return b.watcher.Changes() }

// Errors implements Backend.
func (b *KubeBackend) Errors() <-chan error { return b.watcher.Errors() }

// Observe implements Backend. Each cluster's action lock and ledger come
// with it (the watcher's), so the seed-phase view shows actions run from
// anywhere.
func (b *KubeBackend) Observe(ctx context.Context, probe bool) ([]status.Result, status.Warnings, error) {
	return b.watcher.Observe(ctx, "", probe)
}

// ExpectDirect implements DirectObserver.
func (b *KubeBackend) ExpectDirect() { b.watcher.ExpectDirect() }

// ObserveDirect implements DirectObserver: one list of each resource type
// and a probe of every member, as `status` reads, while the watches sync.
func (b *KubeBackend) ObserveDirect(ctx context.Context) ([]status.Result, status.Warnings, error) {
	return b.watcher.ObserveDirect(ctx, "", b.probes)
}

// Probes reports whether the backend dials members at all.
func (b *KubeBackend) Probes() bool { return b.probes }

// VerdictOptions are the thresholds the backend's verdicts use.
func (b *KubeBackend) VerdictOptions() model.VerdictOptions { return b.verdict }
