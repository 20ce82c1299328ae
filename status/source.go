package status

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// Objects is one read of everything status needs in a namespace ("" for
// all namespaces).
type Objects struct {
	StatefulSets   []appsv1.StatefulSet
	Pods           []corev1.Pod
	PVCs           []corev1.PersistentVolumeClaim
	PDBs           []policyv1.PodDisruptionBudget
	Services       []corev1.Service
	EndpointSlices []discoveryv1.EndpointSlice
	Events         []corev1.Event
	// EventsErr is set when events could not be read; events are
	// optional, everything else is required.
	EventsErr error
	// ConfigMaps hold Patroni's leader lock and configuration; they are
	// listed only when a Patroni cluster is present. ConfigMapsErr is set
	// when they could not be read (the verdict then cannot judge the
	// lock).
	ConfigMaps    []corev1.ConfigMap
	ConfigMapsErr error
}

// Source reads Objects.
type Source interface {
	Read(ctx context.Context, namespace string) (*Objects, error)
}

// APISource reads with one list call per resource type: seven calls,
// however many clusters and members there are (eight when a Patroni
// cluster is present: its ConfigMaps).
type APISource struct {
	Client kubernetes.Interface
}

// Read implements Source.
func (s APISource) Read(ctx context.Context, ns string) (*Objects, error) {
	c := s.Client
	o := &Objects{}
	lo := metav1.ListOptions{}
	sts, err := c.AppsV1().StatefulSets(ns).List(ctx, lo)
	if err != nil {
		return nil, explainAPIError(err, "list", "statefulsets.apps", ns)
	}
	o.StatefulSets = sts.Items
	if len(sts.Items) == 0 {
		return o, nil
	}
	pods, err := c.CoreV1().Pods(ns).List(ctx, lo)
	if err != nil {
		return nil, explainAPIError(err, "list", "pods", ns)
	}
	o.Pods = pods.Items
	pvcs, err := c.CoreV1().PersistentVolumeClaims(ns).List(ctx, lo)
	if err != nil {
		return nil, explainAPIError(err, "list", "persistentvolumeclaims", ns)
	}
	o.PVCs = pvcs.Items
	pdbs, err := c.PolicyV1().PodDisruptionBudgets(ns).List(ctx, lo)
	if err != nil {
		return nil, explainAPIError(err, "list", "poddisruptionbudgets.policy", ns)
	}
	o.PDBs = pdbs.Items
	svcs, err := c.CoreV1().Services(ns).List(ctx, lo)
	if err != nil {
		return nil, explainAPIError(err, "list", "services", ns)
	}
	o.Services = svcs.Items
	eps, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, lo)
	if err != nil {
		return nil, explainAPIError(err, "list", "endpointslices.discovery.k8s.io", ns)
	}
	o.EndpointSlices = eps.Items
	evs, err := c.CoreV1().Events(ns).List(ctx, lo)
	if err != nil {
		o.EventsErr = explainAPIError(err, "list", "events", ns)
	} else {
		o.Events = evs.Items
	}
	if anyPatroni(o.StatefulSets) {
		cms, err := c.CoreV1().ConfigMaps(ns).List(ctx, lo)
		if err != nil {
			o.ConfigMapsErr = explainAPIError(err, "list", "configmaps", ns)
		} else {
			o.ConfigMaps = cms.Items
		}
	}
	return o, nil
}

// CacheSource reads from informer caches (a Watcher's): no API call per
// read once the caches have synced.
type CacheSource struct {
	Factory informers.SharedInformerFactory
}

// NewCacheSource registers the informers status needs on f. Start the
// factory and wait for its caches before the first Read.
func NewCacheSource(f informers.SharedInformerFactory) CacheSource {
	f.Apps().V1().StatefulSets().Informer()
	f.Core().V1().Pods().Informer()
	f.Core().V1().PersistentVolumeClaims().Informer()
	f.Policy().V1().PodDisruptionBudgets().Informer()
	f.Core().V1().Services().Informer()
	f.Discovery().V1().EndpointSlices().Informer()
	f.Core().V1().Events().Informer()
	f.Core().V1().ConfigMaps().Informer()
	return CacheSource{Factory: f}
}

// values copies the objects a lister returns into one slice of their
// size (nil when there are none).
func values[T any](xs []*T) []T {
	if len(xs) == 0 {
		return nil
	}
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = *x
	}
	return out
}

// Read implements Source.
func (s CacheSource) Read(_ context.Context, ns string) (*Objects, error) {
	f := s.Factory
	all := labels.Everything()
	o := &Objects{}
	sts, err := f.Apps().V1().StatefulSets().Lister().StatefulSets(ns).List(all)
	if err != nil {
		return nil, err
	}
	o.StatefulSets = values(sts)
	pods, _ := f.Core().V1().Pods().Lister().Pods(ns).List(all)
	o.Pods = values(pods)
	pvcs, _ := f.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(ns).List(all)
	o.PVCs = values(pvcs)
	pdbs, _ := f.Policy().V1().PodDisruptionBudgets().Lister().PodDisruptionBudgets(ns).List(all)
	o.PDBs = values(pdbs)
	svcs, _ := f.Core().V1().Services().Lister().Services(ns).List(all)
	o.Services = values(svcs)
	eps, _ := f.Discovery().V1().EndpointSlices().Lister().EndpointSlices(ns).List(all)
	o.EndpointSlices = values(eps)
	evs, _ := f.Core().V1().Events().Lister().Events(ns).List(all)
	o.Events = values(evs)
	if anyPatroni(o.StatefulSets) {
		if !f.Core().V1().ConfigMaps().Informer().HasSynced() {
			o.ConfigMapsErr = errors.New("the ConfigMaps watch has not synced yet")
			return o, nil
		}
		cms, _ := f.Core().V1().ConfigMaps().Lister().ConfigMaps(ns).List(all)
		o.ConfigMaps = values(cms)
	}
	return o, nil
}
