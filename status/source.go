package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/source"
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
	// ConfigMaps hold what engines keep beside their members (Patroni's
	// leader lock and configuration, engine.Keeper) and the engines'
	// settings (AnnotationEngineConfig); they are listed only when a
	// cluster needs them. ConfigMapsRead says they were; ConfigMapsErr
	// is set when they could not be (the verdict then cannot judge the
	// lock).
	ConfigMaps     []corev1.ConfigMap
	ConfigMapsRead bool
	ConfigMapsErr  error
	// Endpoints are the v1 Endpoints, listed where ConfigMaps are:
	// Patroni's Kubernetes DCS in its Endpoints mode keeps its leader
	// record and configuration there. EndpointsErr is set when they
	// could not be read (only such clusters then cannot judge the lock).
	Endpoints     []corev1.Endpoints //nolint:staticcheck // Patroni writes v1 Endpoints; EndpointSlices do not carry its annotations.
	EndpointsRead bool
	EndpointsErr  error
	// Cozystack are the cozystack etcd-operator's resources, read only
	// where one of its members' pods is (nil elsewhere).
	Cozystack *source.Cozystack
	// Druid are etcd-druid's Etcds and Leases, read only where an
	// Etcd's StatefulSet is (source.IsDruidStatefulSet).
	Druid *source.Druid
	// Zalando are Zalando's postgresqls, read only where a StatefulSet
	// laid out by its operator is (source.IsZalandoStatefulSet).
	Zalando *source.Zalando
	// CNPG are CloudNativePG's Clusters, read only where an instance's
	// pod is (source.HasCNPGPods).
	CNPG *source.CNPG
	// Leases and Ledgers are hactl's own lock Leases and ledger
	// ConfigMaps (labelled LabelCluster), listed by that label, or read
	// one per cluster (GET hactl-NAME) where the list is forbidden.
	// ActionsErr is set when they could not be read at all, and
	// ActionsUnread names the clusters ("namespace/name") whose lock and
	// ledger could not be read: their locks and ledgers are then unknown
	// (actions refuse to start on them).
	Leases        []coordinationv1.Lease
	Ledgers       []corev1.ConfigMap
	ActionsErr    error
	ActionsUnread map[string]error
}

// Source reads Objects.
type Source interface {
	Read(ctx context.Context, namespace string) (*Objects, error)
}

// APISource reads with one list call per resource type: nine calls,
// however many clusters and members there are (ten when a Patroni
// cluster is present: its ConfigMaps): StatefulSets, pods, claims,
// disruption budgets, Services, EndpointSlices, Events, and hactl's own
// lock Leases and ledger ConfigMaps (by label). StatefulSets are listed
// first (they say whether ConfigMaps are needed); a namespace without
// any costs three more calls at once, for control-plane static pods
// (labelled tier=control-plane, kubeadm's etcd), the cozystack
// etcd-operator's pods (labelled etcd-operator.cozystack.io/cluster)
// and CloudNativePG's instances (labelled cnpg.io/cluster), and nothing
// else when it holds none; then all the others at once. Where a
// cozystack member's pod is, its EtcdClusters and EtcdMembers are read
// too (two GETs at once, after the others), and where a CloudNativePG
// instance's is, the Clusters.
type APISource struct {
	Client kubernetes.Interface
	// Cluster, when set, is the one cluster the read is for: its lock
	// Lease and ledger ConfigMap are read by name (hactl-NAME), whatever
	// their labels, instead of listed (what an action decides with).
	Cluster string
	// Engines are the engines whose clusters are found without the
	// hactl.dev/engine label, by their decoders (engine.Decoder). Only
	// where hactl's lock Leases and ledgers cannot be listed does the read
	// need them: it then reads those of each cluster by name, and without
	// Engines of every StatefulSet.
	Engines map[model.Engine]engine.Engine
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
	var pods *corev1.PodList
	if len(sts.Items) == 0 {
		// Without StatefulSets, only control-plane static pods (kubeadm's
		// etcd) and an operator's pods (cozystack's etcd-operator) can be
		// members: they alone are read, and nothing else when there are
		// none.
		pods, err = layoutPods(ctx, c, ns)
		switch {
		case apierrors.IsForbidden(err):
			// No cluster can be read here: as before static pods were
			// looked for, the namespace holds none to show.
			return o, nil
		case err != nil:
			return nil, explainAPIError(err, "list", "pods", ns)
		case !source.HasStaticPods(pods.Items) && !source.HasCozystackPods(pods.Items) && !source.HasCNPGPods(pods.Items):
			return o, nil
		}
	}
	// The other lists do not depend on each other: all at once, so the
	// read takes about two round trips, not seven or eight. The first error in
	// the order below is the one reported, whatever order they end in.
	readCMs := needConfigMaps(o.StatefulSets, partsOf(s.Engines))
	var pvcs *corev1.PersistentVolumeClaimList
	var pdbs *policyv1.PodDisruptionBudgetList
	var svcs *corev1.ServiceList
	var eps *discoveryv1.EndpointSliceList
	var evs *corev1.EventList
	var cms *corev1.ConfigMapList
	var podsErr, pvcsErr, pdbsErr, svcsErr, epsErr, evsErr, cmsErr error
	var wg sync.WaitGroup
	if pods == nil {
		wg.Go(func() { pods, podsErr = c.CoreV1().Pods(ns).List(ctx, lo) })
	}
	wg.Go(func() { pvcs, pvcsErr = c.CoreV1().PersistentVolumeClaims(ns).List(ctx, lo) })
	wg.Go(func() { pdbs, pdbsErr = c.PolicyV1().PodDisruptionBudgets(ns).List(ctx, lo) })
	wg.Go(func() { svcs, svcsErr = c.CoreV1().Services(ns).List(ctx, lo) })
	wg.Go(func() { eps, epsErr = c.DiscoveryV1().EndpointSlices(ns).List(ctx, lo) })
	wg.Go(func() { evs, evsErr = c.CoreV1().Events(ns).List(ctx, lo) })
	var dcsEndpoints endpointsRead
	if readCMs {
		wg.Go(func() { cms, cmsErr = c.CoreV1().ConfigMaps(ns).List(ctx, lo) })
		wg.Go(func() { dcsEndpoints = readEndpoints(ctx, c, ns) })
	}
	if source.HasDruidStatefulSets(o.StatefulSets) {
		wg.Go(func() { o.Druid = readDruid(ctx, c, ns) })
	}
	if source.HasZalandoStatefulSets(o.StatefulSets) {
		wg.Go(func() { o.Zalando = readZalando(ctx, c, ns) })
	}
	wg.Go(func() {
		if s.Cluster != "" {
			readLocksByName(ctx, c, [][2]string{{ns, s.Cluster}}).put(o)
			return
		}
		readActionObjects(ctx, c, ns, o.StatefulSets, s.Engines).put(o)
	})
	wg.Wait()
	if podsErr == nil && source.HasCozystackPods(pods.Items) {
		o.Cozystack = readCozystack(ctx, c, ns)
	}
	if podsErr == nil && source.HasCNPGPods(pods.Items) {
		o.CNPG = readCNPG(ctx, c, ns)
	}
	for _, l := range []struct {
		err      error
		resource string
	}{
		{podsErr, "pods"},
		{pvcsErr, "persistentvolumeclaims"},
		{pdbsErr, "poddisruptionbudgets.policy"},
		{svcsErr, "services"},
		{epsErr, "endpointslices.discovery.k8s.io"},
	} {
		if l.err != nil {
			return nil, explainAPIError(l.err, "list", l.resource, ns)
		}
	}
	o.Pods, o.PVCs, o.PDBs = pods.Items, pvcs.Items, pdbs.Items
	o.Services, o.EndpointSlices = svcs.Items, eps.Items
	if evsErr != nil {
		o.EventsErr = explainAPIError(evsErr, "list", "events", ns)
	} else {
		o.Events = evs.Items
	}
	if readCMs {
		if cmsErr != nil {
			o.ConfigMapsErr = explainAPIError(cmsErr, "list", "configmaps", ns)
		} else {
			o.ConfigMaps, o.ConfigMapsRead = cms.Items, true
		}
		dcsEndpoints.put(o)
	}
	return o, nil
}

// endpointsRead is one read of a namespace's v1 Endpoints, made at at.
type endpointsRead struct {
	items []corev1.Endpoints //nolint:staticcheck // see Objects.Endpoints
	err   error
	at    time.Time
}

// endpointsMaxAge is how old a Watcher's read of the Endpoints may be
// between probe rounds: well within a leader record's ttl less Patroni's
// loop (30 s and 10 s by default), so that a record it renewed is never
// judged stale from an old read.
const endpointsMaxAge = 5 * time.Second

// put sets o's Endpoints from r.
func (r endpointsRead) put(o *Objects) {
	o.Endpoints, o.EndpointsErr, o.EndpointsRead = r.items, r.err, r.err == nil
}

// readEndpoints lists ns's v1 Endpoints (Patroni's DCS in Endpoints
// mode). The API server's warning that v1 Endpoints are deprecated is
// not passed on: hactl reads them because Patroni writes them.
func readEndpoints(ctx context.Context, c kubernetes.Interface, ns string) endpointsRead {
	at := time.Now()
	l, err := c.CoreV1().Endpoints(ns).List(ctx, metav1.ListOptions{}) //nolint:staticcheck // see Objects.Endpoints
	if err != nil {
		return endpointsRead{err: explainAPIError(err, "list", "endpoints", ns), at: at}
	}
	return endpointsRead{items: l.Items, at: at}
}

// layoutPods lists the pods of the layouts that have no StatefulSet:
// control-plane static pods and cozystack etcd members, each by its
// label, both at once.
func layoutPods(ctx context.Context, c kubernetes.Interface, ns string) (*corev1.PodList, error) {
	sels := []string{source.StaticPodSelector, source.CozystackSelector, source.CNPGSelector}
	lists := make([]*corev1.PodList, len(sels))
	errs := make([]error, len(sels))
	var wg sync.WaitGroup
	for i, sel := range sels {
		wg.Go(func() { lists[i], errs[i] = c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel}) })
	}
	wg.Wait()
	out := &corev1.PodList{}
	seen := map[types.UID]bool{}
	for i := range sels {
		if errs[i] != nil {
			return nil, errs[i]
		}
		for _, p := range lists[i].Items {
			if !seen[p.UID] {
				seen[p.UID] = true
				out.Items = append(out.Items, p)
			}
		}
	}
	return out, nil
}

// readDruid reads etcd-druid's Etcds and Leases in ns, both at once.
// Where the Etcds cannot be read (druid's resource is not installed, or
// not readable), Err says why, and where the Leases cannot, LeasesErr:
// the clusters are then shown from their StatefulSets alone.
func readDruid(ctx context.Context, c kubernetes.Interface, ns string) *source.Druid {
	d := &source.Druid{}
	rc := c.Discovery().RESTClient()
	if rc == nil {
		d.Err = errors.New("no client reads the operator's resources")
		return d
	}
	var raw []byte
	var leases *coordinationv1.LeaseList
	var err error
	var wg sync.WaitGroup
	wg.Go(func() { raw, err = rc.Get().AbsPath(source.DruidPath(ns)).DoRaw(ctx) })
	wg.Go(func() {
		var lerr error
		leases, lerr = c.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{LabelSelector: source.DruidLeaseSelector})
		if lerr != nil {
			d.LeasesErr = explainOperatorRead(lerr, "leases.coordination.k8s.io", ns)
		}
	})
	wg.Wait()
	resource := "etcds." + source.DruidGroup
	switch {
	case apierrors.IsNotFound(err):
		d.Err = fmt.Errorf("the API server serves no %s: the operator's resources are not installed", resource)
	case err != nil:
		d.Err = explainOperatorRead(err, resource, ns)
	default:
		d.Etcds, d.Err = source.DecodeDruidEtcds(raw)
	}
	if d.LeasesErr == nil {
		d.Leases = leases.Items
	}
	return d
}

// readZalando reads Zalando's postgresqls in ns. Where they cannot be
// read (the operator's resource is not installed, or not readable), Err
// says why.
func readZalando(ctx context.Context, c kubernetes.Interface, ns string) *source.Zalando {
	z := &source.Zalando{}
	rc := c.Discovery().RESTClient()
	if rc == nil {
		z.Err = errors.New("no client reads the operator's resources")
		return z
	}
	raw, err := rc.Get().AbsPath(source.ZalandoPath(ns)).DoRaw(ctx)
	resource := "postgresqls." + source.ZalandoGroup
	switch {
	case apierrors.IsNotFound(err):
		z.Err = fmt.Errorf("the API server serves no %s: the operator's resources are not installed", resource)
	case err != nil:
		z.Err = explainOperatorRead(err, resource, ns)
	default:
		z.Clusters, z.Err = source.DecodeZalandoClusters(raw)
	}
	return z
}

// readCNPG reads CloudNativePG's Clusters in ns. Where they cannot be
// read (the operator's resource is not installed, or not readable), Err
// says why: the clusters are then shown from their pods alone.
func readCNPG(ctx context.Context, c kubernetes.Interface, ns string) *source.CNPG {
	cn := &source.CNPG{}
	rc := c.Discovery().RESTClient()
	if rc == nil {
		cn.Err = errors.New("no client reads the operator's resources")
		return cn
	}
	raw, err := rc.Get().AbsPath(source.CNPGPath(ns)).DoRaw(ctx)
	resource := "clusters." + source.CNPGGroup
	switch {
	case apierrors.IsNotFound(err):
		cn.Err = fmt.Errorf("the API server serves no %s: the operator's resources are not installed", resource)
	case err != nil:
		cn.Err = explainOperatorRead(err, resource, ns)
	default:
		cn.Clusters, cn.Err = source.DecodeCNPGClusters(raw)
	}
	return cn
}

// readCozystack reads the cozystack etcd-operator's EtcdClusters and
// EtcdMembers in ns, both at once. Where they cannot be read (the
// operator's resources are not installed, or not readable), Err says
// why: the clusters are then shown from their pods alone.
func readCozystack(ctx context.Context, c kubernetes.Interface, ns string) *source.Cozystack {
	cz := &source.Cozystack{}
	rc := c.Discovery().RESTClient()
	if rc == nil {
		cz.Err = errors.New("no client reads the operator's resources")
		return cz
	}
	raws := make([][]byte, len(source.CozystackResources))
	errs := make([]error, len(source.CozystackResources))
	var wg sync.WaitGroup
	for i, r := range source.CozystackResources {
		wg.Go(func() { raws[i], errs[i] = rc.Get().AbsPath(source.CozystackPath(ns, r)).DoRaw(ctx) })
	}
	wg.Wait()
	for i, r := range source.CozystackResources {
		resource := r + "." + source.CozystackGroup
		switch err := errs[i]; {
		case apierrors.IsNotFound(err):
			cz.Err = fmt.Errorf("the API server serves no %s: the operator's resources are not installed", resource)
		case err != nil:
			cz.Err = explainOperatorRead(err, resource, ns)
		default:
			cz.Err = source.DecodeCozystackList(r, raws[i], cz)
		}
		if cz.Err != nil {
			return cz
		}
	}
	return cz
}

// actionObjects are hactl's lock Leases and ledger ConfigMaps as read,
// with what could not be read: err for the whole read, unread by cluster
// ("namespace/name").
type actionObjects struct {
	leases  []coordinationv1.Lease
	ledgers []corev1.ConfigMap
	err     error
	unread  map[string]error
}

// put stores a into o.
func (a actionObjects) put(o *Objects) {
	o.Leases, o.Ledgers, o.ActionsErr, o.ActionsUnread = a.leases, a.ledgers, a.err, a.unread
}

// readActionObjects reads hactl's lock Leases and ledger ConfigMaps in
// namespace ns ("" for all), by their label, both at once. Where a list
// is forbidden (the actions' role grants get on the objects it names, not
// list), each cluster's objects are read by name (byName).
func readActionObjects(ctx context.Context, c kubernetes.Interface, ns string, sts []appsv1.StatefulSet, engines map[model.Engine]engine.Engine) actionObjects {
	lo := metav1.ListOptions{LabelSelector: LabelCluster}
	var out actionObjects
	var lerr, derr error
	var wg sync.WaitGroup
	wg.Go(func() {
		l, err := c.CoordinationV1().Leases(ns).List(ctx, lo)
		if err == nil {
			out.leases = l.Items
		}
		lerr = err
	})
	wg.Go(func() {
		l, err := c.CoreV1().ConfigMaps(ns).List(ctx, lo)
		if err == nil {
			out.ledgers = l.Items
		}
		derr = err
	})
	wg.Wait()
	switch {
	case lerr != nil && !apierrors.IsForbidden(lerr):
		out.err = explainAPIError(lerr, "list", "leases.coordination.k8s.io", ns)
		return out
	case derr != nil && !apierrors.IsForbidden(derr):
		out.err = explainAPIError(derr, "list", "configmaps", ns)
		return out
	case lerr == nil && derr == nil:
		return out
	}
	// One of them may not be listed: read both by name, cluster by
	// cluster (the names do not depend on any label).
	return readActionObjectsByName(ctx, c, sts, engines)
}

// byNameParallel bounds the GETs readActionObjectsByName has in flight.
const byNameParallel = 8

// readActionObjectsByName reads, for each HA cluster of sts (found by
// engines' decoders, or each of sts without engines), its lock Lease and
// its ledger ConfigMap by name (readLocksByName).
func readActionObjectsByName(ctx context.Context, c kubernetes.Interface, sts []appsv1.StatefulSet, engines map[model.Engine]engine.Engine) actionObjects {
	dec := engine.Decoders(engines)
	var clusters [][2]string
	for i := range sts {
		s := &sts[i]
		if _, ok := DetectEngine(s, dec); !ok && engines != nil {
			continue
		}
		name := s.Name
		if source.IsPGOInstance(s) {
			// An instance's: the cluster is its PostgresCluster.
			name = source.PGOClusterName(s)
		}
		if k := [2]string{s.Namespace, name}; !slices.Contains(clusters, k) {
			clusters = append(clusters, k)
		}
	}
	return readLocksByName(ctx, c, clusters)
}

// readLocksByName reads the lock Lease and the ledger ConfigMap
// (hactl-NAME) of each of clusters (namespace, name) by name, a few at
// once. One
// missing is none; one that cannot be read leaves that cluster's lock
// and ledger unknown (unread), not the others'. A cluster is read by its
// name whatever layout it has (its StatefulSet may be named otherwise,
// or it may have none).
func readLocksByName(ctx context.Context, c kubernetes.Interface, clusters [][2]string) actionObjects {
	var out actionObjects
	var mu sync.Mutex
	sem := make(chan struct{}, byNameParallel)
	var wg sync.WaitGroup
	for _, nc := range clusters {
		ns, cluster := nc[0], nc[1]
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			name := LockName(cluster)
			l, lerr := c.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
			cm, derr := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			mu.Lock()
			defer mu.Unlock()
			var err error
			switch {
			case lerr != nil && !apierrors.IsNotFound(lerr):
				err = fmt.Errorf("get leases.coordination.k8s.io %s: %w", name, lerr)
			case derr != nil && !apierrors.IsNotFound(derr):
				err = fmt.Errorf("get configmaps %s: %w", name, derr)
			}
			if err != nil {
				if out.unread == nil {
					out.unread = map[string]error{}
				}
				out.unread[ns+"/"+cluster] = fmt.Errorf("reading hactl's lock and ledger in namespace %s: %w", ns, err)
				return
			}
			if lerr == nil {
				out.leases = append(out.leases, *l)
			}
			if derr == nil {
				out.ledgers = append(out.ledgers, *cm)
			}
		})
	}
	wg.Wait()
	return out
}

// CacheSource reads from informer caches (a Watcher's): no API call per
// read once the caches have synced. It does not read hactl's own lock
// Leases and ledger ConfigMaps (Leases, Ledgers stay empty): the
// Watcher's reads add them from their own watches.
type CacheSource struct {
	Factory informers.SharedInformerFactory
	// Engines are the engines whose keepers say which clusters need
	// ConfigMaps (engine.Keeper).
	Engines map[model.Engine]engine.Engine
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
	if needConfigMaps(o.StatefulSets, partsOf(s.Engines)) {
		if !f.Core().V1().ConfigMaps().Informer().HasSynced() {
			o.ConfigMapsErr = errors.New("the ConfigMaps watch has not synced yet")
			return o, nil
		}
		cms, _ := f.Core().V1().ConfigMaps().Lister().ConfigMaps(ns).List(all)
		o.ConfigMaps, o.ConfigMapsRead = values(cms), true
		// Endpoints are not watched: the Watcher's reads add them
		// (watchSource); a cache read alone has none.
		o.EndpointsErr = errors.New("Endpoints are not watched")
	}
	return o, nil
}
