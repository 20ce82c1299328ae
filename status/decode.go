package status

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/source"
)

// Label and annotation names of the cluster contract (docs/contract.md).
const (
	LabelEngine         = "hactl.dev/engine"
	AnnotationTLSSecret = "hactl.dev/client-tls-secret"
	// AnnotationRESTAuthSecret names a Secret (keys username and
	// password, as kubernetes.io/basic-auth) whose credentials hactl's
	// actions send to the members' REST API.
	AnnotationRESTAuthSecret = "hactl.dev/rest-auth-secret"
	// AnnotationEngineConfig names a ConfigMap in the StatefulSet's
	// namespace whose data are the engine's own settings for the cluster
	// (model.ClusterFacts.EngineConfig): the http engine's mapping.
	AnnotationEngineConfig = "hactl.dev/engine-config"
)

// maxEvents bounds the events kept per cluster.
const maxEvents = 10

// index groups namespace objects once so decoding many clusters stays
// linear in the number of objects.
type index struct {
	// src indexes the pods and claims the layouts list members from;
	// podByName is every pod, by ns/name.
	src       *source.Index
	podByName map[string]*corev1.Pod
	pdbs      map[string][]selectingPDB
	svcs      map[string][]selectingService
	slices    map[string][]*discoveryv1.EndpointSlice // ns/service
	// configMaps are read only when a cluster needs them (see
	// needConfigMaps).
	configMaps map[string]*corev1.ConfigMap // ns/name
	// configMapsErr says why they were not read.
	configMapsErr error
	// endpoints are the v1 Endpoints, read with the ConfigMaps, and
	// endpointsErr why they were not.
	endpoints    map[string]*corev1.Endpoints //nolint:staticcheck // see Objects.Endpoints
	endpointsErr error
	events       map[string][]*corev1.Event // ns/kind/name
	// leases and ledgers are hactl's lock Leases and ledger ConfigMaps,
	// by ns/name.
	leases  map[string]*coordinationv1.Lease
	ledgers map[string]*corev1.ConfigMap
}

// selectingPDB is a PodDisruptionBudget with its selector, converted once
// per read (the conversion validates every label with regular
// expressions, and each cluster is matched against every PDB); sel is nil
// when the selector is missing, invalid or empty: such a PDB is not taken
// as any cluster's.
type selectingPDB struct {
	pdb *policyv1.PodDisruptionBudget
	sel labels.Selector
}

// selectingService is a Service with its selector, converted once per
// read (see selectingPDB).
type selectingService struct {
	svc *corev1.Service
	sel labels.Selector
}

func newIndex(o *Objects) *index {
	ix := &index{
		src: source.NewIndex(source.Objects{StatefulSets: o.StatefulSets, Pods: o.Pods, PVCs: o.PVCs, Cozystack: o.Cozystack, Druid: o.Druid, Zalando: o.Zalando, CNPG: o.CNPG}), podByName: map[string]*corev1.Pod{},
		pdbs: map[string][]selectingPDB{}, svcs: map[string][]selectingService{},
		slices: map[string][]*discoveryv1.EndpointSlice{}, events: map[string][]*corev1.Event{},
		configMaps: map[string]*corev1.ConfigMap{}, configMapsErr: configMapsErr(o),
		endpoints: map[string]*corev1.Endpoints{}, endpointsErr: endpointsErr(o), //nolint:staticcheck // see Objects.Endpoints
		leases: map[string]*coordinationv1.Lease{}, ledgers: map[string]*corev1.ConfigMap{},
	}
	for i := range o.Leases {
		l := &o.Leases[i]
		ix.leases[l.Namespace+"/"+l.Name] = l
	}
	for i := range o.Ledgers {
		c := &o.Ledgers[i]
		ix.ledgers[c.Namespace+"/"+c.Name] = c
	}
	for i := range o.ConfigMaps {
		c := &o.ConfigMaps[i]
		ix.configMaps[c.Namespace+"/"+c.Name] = c
	}
	for i := range o.Endpoints {
		e := &o.Endpoints[i]
		ix.endpoints[e.Namespace+"/"+e.Name] = e
	}
	for i := range o.Pods {
		p := &o.Pods[i]
		ix.podByName[p.Namespace+"/"+p.Name] = p
	}
	for i := range o.PDBs {
		p := &o.PDBs[i]
		sp := selectingPDB{pdb: p}
		if sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector); err == nil && !sel.Empty() {
			sp.sel = sel
		}
		ix.pdbs[p.Namespace] = append(ix.pdbs[p.Namespace], sp)
	}
	for i := range o.Services {
		s := &o.Services[i]
		ix.svcs[s.Namespace] = append(ix.svcs[s.Namespace], selectingService{svc: s, sel: labels.SelectorFromSet(s.Spec.Selector)})
	}
	for i := range o.EndpointSlices {
		s := &o.EndpointSlices[i]
		svc := s.Labels[discoveryv1.LabelServiceName]
		ix.slices[s.Namespace+"/"+svc] = append(ix.slices[s.Namespace+"/"+svc], s)
	}
	for i := range o.Events {
		e := &o.Events[i]
		k := e.Namespace + "/" + e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name
		ix.events[k] = append(ix.events[k], e)
	}
	return ix
}

// decodeCluster builds the API-server part of one cluster's observation
// from the workload its layout found: its members, its template decoded
// by its engine's decoder, what the engine keeps in the API server by its
// keeper (among p), its budget, Services and Events.
func decodeCluster(w source.Workload, ix *index, at time.Time, p engineParts) model.Observation {
	tf := templateOf(p.decoders[w.Engine], w.Template)
	obs := model.Observation{
		At: at,
		Cluster: model.ClusterFacts{
			Namespace: w.Owner.Namespace, Name: w.Owner.Name, Engine: w.Engine,
			UID: string(w.Owner.UID), ResourceVersion: w.Owner.ResourceVersion, OwnerKind: w.Kind, OwnerAPIVersion: w.APIVersion,
			Replicas: w.Replicas, ReadyReplicas: w.Ready,
			CreatedAt: w.Owner.CreationTimestamp.Time, ServiceName: w.Service,
			Template: tf, Shape: tf.Shape(),
			TLSSecret: w.Owner.Annotations[AnnotationTLSSecret], RESTAuthSecret: w.Owner.Annotations[AnnotationRESTAuthSecret], ObservedAt: at,
			Layout: w.Layout, ManagedBy: w.ManagedBy, ServerName: w.ServerName, Operator: w.Operator,
		},
	}
	if (w.TLSSecret != "" || w.TLSCASecret != "") && obs.Cluster.TLSSecret == "" {
		// hactl's annotation, where set, wins over the layout's own.
		c := &obs.Cluster
		c.TLSSecret, c.TLSCASecret, c.TLSSecretFrom = w.TLSSecret, w.TLSCASecret, w.TLSSecretFrom
		c.TLSCAKey, c.TLSCertKey, c.TLSKeyKey = w.TLSCAKey, w.TLSCertKey, w.TLSKeyKey
	}
	if op := w.Operator; op != nil && op.ClusterID != "" {
		// The operator latched the cluster's ID once it formed: evidence
		// that it formed, as hactl's own ledger's record would be.
		obs.Cluster.KnownClusterID = op.ClusterID
	}
	obs.Members = w.Members(ix.src, at)
	for i := range obs.Members {
		if pt, ok := w.Templates[obs.Members[i].Name]; ok {
			mt := templateOf(p.decoders[w.Engine], pt)
			obs.Members[i].Template = &mt
		}
	}
	for _, p := range ix.pdbs[w.Owner.Namespace] {
		if p.sel == nil || !p.sel.Matches(w.PodLabels) {
			continue
		}
		obs.PDB = decodePDB(p.pdb, w.Replicas)
		break
	}
	obs.ClientEndpoints = clientEndpoints(w, ix)
	decodeEngineConfig(w.Owner, ix, &obs.Cluster)
	if k := p.keepers[w.Engine]; k != nil {
		kept := k.Keep(w.Template, namespaceObjects{ix: ix, ns: w.Owner.Namespace}, &obs.Cluster)
		roleLabels(&obs, ix, kept.RoleLabel)
		if kept.RoleLabel != "" {
			obs.ClientEndpoints = primaryEndpoints(w, ix, kept)
			if obs.PDB == nil {
				obs.PDB = rolePDB(w, ix, kept)
			}
		}
	}
	obs.Events = clusterEvents(w, ix, obs.Members)
	return obs
}

// decodeEngineConfig reads the ConfigMap owner names with
// AnnotationEngineConfig into c, or says why it could not.
func decodeEngineConfig(owner *metav1.ObjectMeta, ix *index, c *model.ClusterFacts) {
	name := owner.Annotations[AnnotationEngineConfig]
	if name == "" {
		return
	}
	switch cm, ok := ix.configMaps[owner.Namespace+"/"+name]; {
	case ix.configMapsErr != nil:
		c.EngineConfigErr = fmt.Sprintf("ConfigMap %q (annotation %s) not read: %v", name, AnnotationEngineConfig, ix.configMapsErr)
	case !ok:
		c.EngineConfigErr = fmt.Sprintf("ConfigMap %q named by annotation %s does not exist in namespace %q", name, AnnotationEngineConfig, owner.Namespace)
	default:
		c.EngineConfig = maps.Clone(cm.Data)
		if c.EngineConfig == nil {
			c.EngineConfig = map[string]string{}
		}
	}
}

// clientEndpoints are the ready and total endpoints of the first
// non-headless Service that selects the cluster's pods (not the governing
// Service), nil when there is none.
//
// When no Service selects every pod of the template, a Service whose
// selector narrows the template's labels by labels the store itself sets
// on its pods (a role label, as a primary or leader Service selects) is
// the client Service: the one named like the StatefulSet, else the first
// by name. It is chosen by its selector, not by the pods it selects now
// (a leader Service with no endpoints is still the one that counts). The
// labels the StatefulSet controller sets on each pod (its name, index,
// revision) do not count: a Service per pod is no client Service.
func clientEndpoints(w source.Workload, ix *index) *model.EndpointFacts {
	podLabels, name := w.PodLabels, w.Owner.Name
	var some []*corev1.Service
	for _, s := range ix.svcs[w.Owner.Namespace] {
		svc := s.svc
		if svc.Spec.ClusterIP == corev1.ClusterIPNone || len(svc.Spec.Selector) == 0 || svc.Name == w.Service {
			continue
		}
		if s.sel.Matches(podLabels) {
			return serviceEndpoints(svc, ix)
		}
		if narrows(svc.Spec.Selector, podLabels) {
			some = append(some, svc)
		}
	}
	if len(some) == 0 {
		return nil
	}
	slices.SortFunc(some, func(a, b *corev1.Service) int {
		if (a.Name == name) != (b.Name == name) {
			if a.Name == name {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return serviceEndpoints(some[0], ix)
}

// podControllerLabels are the labels the StatefulSet controller sets on
// each pod.
var podControllerLabels = []string{"statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index", "controller-revision-hash"}

// narrows reports whether selector picks among the template's pods: it
// holds at least one template label, agrees with the template on every
// label they share, and adds only labels other than the controller's.
func narrows(selector map[string]string, template labels.Set) bool {
	shared := 0
	for k, v := range selector {
		tv, ok := template[k]
		switch {
		case ok && tv != v:
			return false
		case ok:
			shared++
		case slices.Contains(podControllerLabels, k):
			return false
		}
	}
	return shared > 0
}

// serviceEndpoints counts svc's endpoints and its ready ones, and names
// the pods behind the ready ones.
func serviceEndpoints(svc *corev1.Service, ix *index) *model.EndpointFacts {
	ef := &model.EndpointFacts{Service: svc.Name}
	for _, sl := range ix.slices[svc.Namespace+"/"+svc.Name] {
		for _, ep := range sl.Endpoints {
			ef.Total++
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				ef.Ready++
				if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
					ef.Pods = append(ef.Pods, ep.TargetRef.Name)
				}
			}
		}
	}
	return ef
}

// clusterEvents are the newest events (at most maxEvents) of the
// workload's owner, its members' pods and their claims.
func clusterEvents(w source.Workload, ix *index, members []model.Member) []model.EventFacts {
	ns := w.Owner.Namespace
	var evs []*corev1.Event
	evs = append(evs, ix.events[ns+"/"+w.Kind+"/"+w.Owner.Name]...)
	for _, m := range members {
		pod := m.Name
		if m.Pod != nil {
			pod = m.Pod.Name
		}
		evs = append(evs, ix.events[ns+"/Pod/"+pod]...)
		if m.PVC != nil {
			evs = append(evs, ix.events[ns+"/PersistentVolumeClaim/"+m.PVC.Name]...)
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return eventTime(evs[i]).After(eventTime(evs[j])) })
	var out []model.EventFacts
	for i, e := range evs {
		if i == maxEvents {
			break
		}
		out = append(out, eventFacts(e))
	}
	return out
}

// eventFacts is what status keeps of Event e.
func eventFacts(e *corev1.Event) model.EventFacts {
	return model.EventFacts{Type: e.Type, Reason: e.Reason, Object: e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name,
		Message: e.Message, Count: int(e.Count), Last: eventTime(e), Controller: e.ReportingController}
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func decodePDB(pdb *policyv1.PodDisruptionBudget, replicas int) *model.PDBFacts {
	f := &model.PDBFacts{Name: pdb.Name, MinAvailable: -1, MaxUnavailable: -1}
	resolve := func(v *intstr.IntOrString, roundUp bool) int {
		n, err := intstr.GetScaledValueFromIntOrPercent(v, replicas, roundUp)
		if err != nil {
			return -1
		}
		return n
	}
	if pdb.Spec.MinAvailable != nil {
		f.MinAvailable = resolve(pdb.Spec.MinAvailable, true)
	}
	if pdb.Spec.MaxUnavailable != nil {
		f.MaxUnavailable = resolve(pdb.Spec.MaxUnavailable, true)
	}
	return f
}

// configMapsErr says why o holds no ConfigMaps to read, nil when it does:
// the source's error, or that the source read none (a source handed no
// engines does not know who needs them). A keeper then reports its
// objects unknown, never absent.
func configMapsErr(o *Objects) error {
	if o.ConfigMapsErr != nil || o.ConfigMapsRead || len(o.ConfigMaps) > 0 {
		return o.ConfigMapsErr
	}
	return errors.New("ConfigMaps were not read with the other objects")
}

// endpointsErr says why o holds no Endpoints to read, nil when it does
// (they are read with the ConfigMaps).
func endpointsErr(o *Objects) error {
	if o.EndpointsErr != nil || o.EndpointsRead {
		return o.EndpointsErr
	}
	return errors.New("Endpoints were not read with the other objects")
}

// namespaceObjects are a namespace's objects as an engine's keeper reads
// them (model.APIObjects).
type namespaceObjects struct {
	ix *index
	ns string
}

func (o namespaceObjects) ConfigMap(name string) (map[string]string, bool) {
	cm, ok := o.ix.configMaps[o.ns+"/"+name]
	if !ok {
		return nil, false
	}
	return cm.Annotations, true
}

func (o namespaceObjects) Err() error { return o.ix.configMapsErr }

func (o namespaceObjects) Endpoints(name string) (map[string]string, bool) {
	e, ok := o.ix.endpoints[o.ns+"/"+name]
	if !ok {
		return nil, false
	}
	return e.Annotations, true
}

func (o namespaceObjects) EndpointsErr() error { return o.ix.endpointsErr }

// roleLabels fills each member pod's role, read from its label label.
func roleLabels(obs *model.Observation, ix *index, label string) {
	if label == "" {
		return
	}
	for i := range obs.Members {
		m := &obs.Members[i]
		if m.Pod == nil {
			continue
		}
		if p, ok := ix.podByName[obs.Cluster.Namespace+"/"+m.Pod.Name]; ok {
			m.Pod.RoleLabel = p.Labels[label]
		}
	}
}

// rolePDB is the disruption budget whose selector picks the cluster's
// pods only with one of the primary's roles (kept.PrimaryRoles under
// kept.RoleLabel), nil when there is none: it covers the primary alone
// (PDBFacts.Role).
func rolePDB(w source.Workload, ix *index, kept model.Kept) *model.PDBFacts {
	for _, role := range kept.PrimaryRoles {
		podLabels := maps.Clone(w.PodLabels)
		if podLabels == nil {
			podLabels = labels.Set{}
		}
		podLabels[kept.RoleLabel] = role
		for _, p := range ix.pdbs[w.Owner.Namespace] {
			if p.sel != nil && p.sel.Matches(podLabels) {
				f := decodePDB(p.pdb, w.Replicas)
				f.Role = role
				if r := replicaPDB(w, ix, kept.RoleLabel); r != nil {
					// The primary's budget and the replicas' (as
					// CloudNativePG makes them): together they bound the
					// cluster's disruptions, a replica at a time.
					return &model.PDBFacts{Name: p.pdb.Name + " and " + r.name, MinAvailable: -1, MaxUnavailable: r.allowed}
				}
				return f
			}
		}
	}
	return nil
}

// replicaPDB is the budget of the cluster's pods labelled role replica
// under roleLabel, with how many of the replicas (every member but the
// primary) it lets go at once; nil when there is none.
func replicaPDB(w source.Workload, ix *index, roleLabel string) *struct {
	name    string
	allowed int
} {
	podLabels := maps.Clone(w.PodLabels)
	if podLabels == nil {
		podLabels = labels.Set{}
	}
	podLabels[roleLabel] = "replica"
	for _, p := range ix.pdbs[w.Owner.Namespace] {
		if p.sel == nil || !p.sel.Matches(podLabels) {
			continue
		}
		n := max(w.Replicas-1, 0)
		f := decodePDB(p.pdb, n)
		allowed := n
		switch {
		case f.MaxUnavailable >= 0:
			allowed = f.MaxUnavailable
		case f.MinAvailable >= 0:
			allowed = max(n-f.MinAvailable, 0)
		}
		return &struct {
			name    string
			allowed int
		}{p.pdb.Name, allowed}
	}
	return nil
}

// primaryEndpoints finds the primary's Service: a Service whose selector
// picks the cluster's pods labelled with one of the primary's roles
// (kept.PrimaryRoles under kept.RoleLabel), else the Service
// kept.PrimaryService names if it has no selector (its endpoints are the
// engine's to write); its ready endpoints name the pods behind it.
func primaryEndpoints(w source.Workload, ix *index, kept model.Kept) *model.EndpointFacts {
	podLabels := maps.Clone(w.PodLabels)
	if podLabels == nil {
		podLabels = labels.Set{}
	}
	for _, s := range ix.svcs[w.Owner.Namespace] {
		svc := s.svc
		role := svc.Spec.Selector[kept.RoleLabel]
		if !slices.Contains(kept.PrimaryRoles, role) {
			continue
		}
		podLabels[kept.RoleLabel] = role
		if !s.sel.Matches(podLabels) {
			continue
		}
		return serviceEndpoints(svc, ix)
	}
	if kept.PrimaryService != "" {
		for _, s := range ix.svcs[w.Owner.Namespace] {
			if s.svc.Name == kept.PrimaryService && len(s.svc.Spec.Selector) == 0 {
				return serviceEndpoints(s.svc, ix)
			}
		}
	}
	return nil
}
