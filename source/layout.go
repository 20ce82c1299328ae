package source

import (
	"slices"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hactl-dev/hactl/model"
)

// Objects are what one read holds that layouts look at.
type Objects struct {
	StatefulSets []appsv1.StatefulSet
	Pods         []corev1.Pod
	PVCs         []corev1.PersistentVolumeClaim
	// Cozystack are the cozystack etcd-operator's resources, nil when
	// they were not read (no pod of theirs).
	Cozystack *Cozystack
	// Druid are etcd-druid's Etcds and Leases, nil when they were not
	// read (no StatefulSet of an Etcd).
	Druid *Druid
	// Zalando are Zalando's postgresqls, nil when they were not read (no
	// StatefulSet laid out by its operator).
	Zalando *Zalando
	// CNPG are CloudNativePG's Clusters, nil when they were not read (no
	// instance's pod).
	CNPG *CNPG
}

// Index groups a read's pods and claims once, so that listing the members
// of many clusters stays linear in the number of objects.
type Index struct {
	// owned are the pods by namespace and their controller's UID
	// ("ns/uid"); orphans the pods of each namespace that have no
	// controller (a cluster takes them by name and labels, see OwnedBy).
	owned   map[string][]*corev1.Pod
	orphans map[string][]*corev1.Pod
	pvcs    map[string]*corev1.PersistentVolumeClaim // ns/name
}

// NewIndex indexes o's pods and claims.
func NewIndex(o Objects) *Index {
	ix := &Index{owned: map[string][]*corev1.Pod{}, orphans: map[string][]*corev1.Pod{}, pvcs: map[string]*corev1.PersistentVolumeClaim{}}
	for i := range o.Pods {
		p := &o.Pods[i]
		if c := metav1.GetControllerOfNoCopy(p); c != nil {
			k := p.Namespace + "/" + string(c.UID)
			ix.owned[k] = append(ix.owned[k], p)
		} else {
			ix.orphans[p.Namespace] = append(ix.orphans[p.Namespace], p)
		}
	}
	for i := range o.PVCs {
		p := &o.PVCs[i]
		ix.pvcs[p.Namespace+"/"+p.Name] = p
	}
	return ix
}

// PVC is claim ns/name as PVCFacts observed at at, nil when it does not
// exist.
func (ix *Index) PVC(ns, name string, at time.Time) *model.PVCFacts {
	c, ok := ix.pvcs[ns+"/"+name]
	if !ok {
		return nil
	}
	return &model.PVCFacts{Name: c.Name, UID: string(c.UID), ResourceVersion: c.ResourceVersion, Phase: string(c.Status.Phase), ObservedAt: at}
}

// Detect says which engine runs a workload whose owner is labelled l and
// whose members' pod template is t; ok is false when it is no HA cluster.
// status hands it in (the hactl.dev/engine label, else the engines'
// decoders).
type Detect func(l map[string]string, t model.PodTemplate) (eng model.Engine, ok bool)

// A Layout is one way HA clusters lay their members out in the API
// server.
type Layout interface {
	// Workloads are the clusters laid out this way among o, each with
	// its engine (by detect).
	Workloads(o Objects, detect Detect) []Workload
}

// Default are the layouts read when none are named: StatefulSets,
// etcd-druid's, kubeadm's static pods, the cozystack etcd-operator's
// members, Crunchy PGO's instances and CloudNativePG's.
func Default() []Layout {
	return []Layout{StatefulSets{}, DruidClusters{}, StaticPods{}, CozystackClusters{}, PGOClusters{}, CNPGClusters{}}
}

// Workload is one HA cluster as its layout found it.
type Workload struct {
	// Kind and Owner are the object the members answer to (a
	// StatefulSet): its namespace and name name the cluster, `status -l`
	// selects on its labels, and hactl's annotations are read from it
	// (docs/contract.md).
	Kind  string
	Owner *metav1.ObjectMeta
	// APIVersion is Kind's API group and version ("apps/v1"), "" when
	// the members answer to no object (static pods).
	APIVersion string
	// Engine runs the members; Template is their pod template as the
	// engines' decoders read it.
	Engine   model.Engine
	Template model.PodTemplate
	// PodLabels are the labels every member's pod carries: disruption
	// budgets and client Services are matched against them.
	PodLabels labels.Set
	// Service is the governing (headless) Service, never a client one;
	// "" when there is none.
	Service string
	// Replicas is how many members the owner wants, Ready how many of
	// its pods are ready as it counts them.
	Replicas, Ready int
	// List lists the members with their pods and volumes, from ix.
	List func(ix *Index, at time.Time) []model.Member
	// Layout names the layout ("StatefulSet", "kubeadm static pods").
	Layout string
	// ManagedBy, when set, creates and deletes the members' pods in
	// hactl's stead (model.ClusterFacts.ManagedBy).
	ManagedBy *model.Manager
	// ServerName is the name the members' serving certificates carry
	// for a port-forwarded client, "" for the pods' DNS names.
	ServerName string
	// Templates are each member's own pod template, by member name,
	// where each member's pod is templated on its own (an operator's);
	// nil where Template holds for every member.
	Templates map[string]model.PodTemplate
	// TLSSecret, TLSCASecret, their keys and TLSSecretFrom are the
	// client TLS Secrets the layout's own objects name
	// (model.ClusterFacts); "" where hactl's annotation names them.
	TLSSecret, TLSCASecret, TLSSecretFrom string
	TLSCAKey, TLSCertKey, TLSKeyKey       string
	// Operator is the operator's word on the cluster, nil without an
	// operator.
	Operator *model.OperatorFacts
}

// Members lists w's members with their pods and volumes, from ix.
func (w Workload) Members(ix *Index, at time.Time) []model.Member { return w.List(ix, at) }

// Sort orders ws by namespace, then name.
func Sort(ws []Workload) {
	sort.Slice(ws, func(i, j int) bool {
		if ws[i].Owner.Namespace != ws[j].Owner.Namespace {
			return ws[i].Owner.Namespace < ws[j].Owner.Namespace
		}
		return ws[i].Owner.Name < ws[j].Owner.Name
	})
}

// StatefulSets is the layout whose members are a StatefulSet's ordinals:
// pod <sts>-<n> and claim <template>-<sts>-<n> for every ordinal it
// wants, then each extra pod it still owns. An etcd-druid Etcd's
// StatefulSet is DruidClusters'.
type StatefulSets struct{}

// Workloads implements Layout.
func (StatefulSets) Workloads(o Objects, detect Detect) []Workload {
	var out []Workload
	for i := range o.StatefulSets {
		sts := &o.StatefulSets[i]
		if IsDruidStatefulSet(sts) || IsPGOInstance(sts) {
			continue
		}
		t := PodTemplate(sts)
		if eng, ok := detect(sts.Labels, t); ok {
			w := StatefulSetWorkload(sts, eng, t)
			bitnamiTLS(sts, &w)
			if IsZalandoStatefulSet(sts) {
				w.Operator = zalandoOperator(o.Zalando, sts)
			}
			out = append(out, w)
		}
	}
	return out
}

// StatefulSetWorkload is sts as a workload of engine eng, with pod
// template t.
func StatefulSetWorkload(sts *appsv1.StatefulSet, eng model.Engine, t model.PodTemplate) Workload {
	replicas := 1
	if sts.Spec.Replicas != nil {
		replicas = int(*sts.Spec.Replicas)
	}
	return Workload{
		Kind: "StatefulSet", APIVersion: "apps/v1", Owner: &sts.ObjectMeta, Engine: eng, Template: t,
		PodLabels: labels.Set(sts.Spec.Template.Labels), Service: sts.Spec.ServiceName,
		Replicas: replicas, Ready: int(sts.Status.ReadyReplicas), Layout: "StatefulSet",
		List: func(ix *Index, at time.Time) []model.Member { return statefulSetMembers(sts, ix, replicas, at) },
	}
}

// statefulSetMembers lists the members: every ordinal the StatefulSet
// wants, then each extra pod it owns, with the pod and the data volume
// claim when they exist.
func statefulSetMembers(sts *appsv1.StatefulSet, ix *Index, replicas int, at time.Time) []model.Member {
	sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil || sts.Spec.Selector == nil {
		sel = labels.SelectorFromSet(sts.Spec.Template.Labels)
	}
	byOrdinal := map[int]*corev1.Pod{}
	var ordinals []int // every wanted ordinal, then each extra pod's
	for n := 0; n < min(replicas, MaxOrdinal); n++ {
		ordinals = append(ordinals, n)
	}
	var extra []int
	// The pods it controls and those no one controls (OwnedBy), not every
	// pod of the namespace: a read of many clusters stays linear.
	for _, p := range slices.Concat(ix.owned[sts.Namespace+"/"+string(sts.UID)], ix.orphans[sts.Namespace]) {
		n, ok := MemberOrdinal(sts.Name, p.Name)
		if !ok || !sel.Matches(labels.Set(p.Labels)) || !OwnedBy(p, string(sts.UID)) {
			continue
		}
		byOrdinal[n] = p
		if n >= replicas {
			extra = append(extra, n)
		}
	}
	sort.Ints(extra)
	ordinals = append(ordinals, extra...)
	claim := dataClaim(sts)
	var members []model.Member
	for _, n := range ordinals {
		m := model.Member{Name: sts.Name + "-" + strconv.Itoa(n), Ordinal: n}
		if p, ok := byOrdinal[n]; ok {
			m.Pod = DecodePod(p, at)
		}
		if claim != "" {
			m.PVC = ix.PVC(sts.Namespace, claim+"-"+m.Name, at)
		}
		members = append(members, m)
	}
	return members
}

// dataClaim is the claim template holding a StatefulSet's data: the one
// called data, else its first ("" when it has none).
func dataClaim(sts *appsv1.StatefulSet) string {
	claim := ""
	for i, t := range sts.Spec.VolumeClaimTemplates {
		if i == 0 || t.Name == "data" {
			claim = t.Name
		}
		if t.Name == "data" {
			break
		}
	}
	return claim
}
