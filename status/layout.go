package status

import (
	"slices"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// A layout is one way HA clusters lay their members out in the API
// server: the member source. It finds its clusters among a read's
// objects and lists each one's members with their pods and volumes; the
// engine then probes them. Everything else status decodes (the budget,
// Services, the engine's settings and what it keeps, Events, hactl's
// actions) works from the workload a layout yields, whatever the layout.
//
// A StatefulSet's ordinals (statefulSets) are the layout of the clusters
// hactl reads today; a pod per custom resource (an operator's members)
// and the kubelet's static pods are layouts of the same kind.
type layout interface {
	// workloads are the clusters laid out this way among objs, each with
	// its engine: named by the hactl.dev/engine label, else found by the
	// decoder of dec that recognises its pod template.
	workloads(objs *Objects, dec map[model.Engine]engine.Decoder) []workload
}

// defaultLayouts are the layouts an Observer reads when it is handed
// none.
var defaultLayouts = []layout{statefulSets{}}

// workload is one HA cluster as its layout found it.
type workload struct {
	// kind and owner are the object the members answer to (a
	// StatefulSet): its namespace and name name the cluster, `status -l`
	// selects on its labels, and the contract's annotations are read
	// from it (docs/contract.md).
	kind  string
	owner *metav1.ObjectMeta
	// engine runs the members; template is their pod template as the
	// engines' decoders read it.
	engine   model.Engine
	template model.PodTemplate
	// podLabels are the labels every member's pod carries: disruption
	// budgets and client Services are matched against them.
	podLabels labels.Set
	// service is the governing (headless) Service, never a client one;
	// "" when there is none.
	service string
	// replicas is how many members the owner wants, ready how many of its
	// pods are ready as it counts them, revision its current template's
	// revision ("" when it has none).
	replicas, ready int
	// members lists the members with their pods and volumes, from ix.
	members func(ix *index, at time.Time) []model.Member
}

// sortWorkloads orders ws by namespace, then name.
func sortWorkloads(ws []workload) {
	sort.Slice(ws, func(i, j int) bool {
		if ws[i].owner.Namespace != ws[j].owner.Namespace {
			return ws[i].owner.Namespace < ws[j].owner.Namespace
		}
		return ws[i].owner.Name < ws[j].owner.Name
	})
}

// statefulSets is the layout whose members are a StatefulSet's ordinals:
// pod <sts>-<n> and claim <template>-<sts>-<n> for every ordinal it
// wants, then each extra pod it still owns.
type statefulSets struct{}

func (statefulSets) workloads(objs *Objects, dec map[model.Engine]engine.Decoder) []workload {
	var out []workload
	for i := range objs.StatefulSets {
		if w, ok := statefulSetWorkload(&objs.StatefulSets[i], dec); ok {
			out = append(out, w)
		}
	}
	return out
}

// statefulSetWorkload is sts as a workload, ok false when it is no HA
// cluster (no engine label, and no decoder of dec recognises it).
func statefulSetWorkload(sts *appsv1.StatefulSet, dec map[model.Engine]engine.Decoder) (workload, bool) {
	t := podTemplate(sts)
	eng, ok := detect(sts.Labels, t, dec)
	if !ok {
		return workload{}, false
	}
	return stsWorkload(sts, eng, t), true
}

// stsWorkload is sts as a workload of engine eng, with pod template t.
func stsWorkload(sts *appsv1.StatefulSet, eng model.Engine, t model.PodTemplate) workload {
	replicas := 1
	if sts.Spec.Replicas != nil {
		replicas = int(*sts.Spec.Replicas)
	}
	return workload{
		kind: "StatefulSet", owner: &sts.ObjectMeta, engine: eng, template: t,
		podLabels: labels.Set(sts.Spec.Template.Labels), service: sts.Spec.ServiceName,
		replicas: replicas, ready: int(sts.Status.ReadyReplicas),
		members: func(ix *index, at time.Time) []model.Member { return decodeMembers(sts, ix, replicas, at) },
	}
}

// decodeMembers lists the members: every ordinal the StatefulSet wants,
// then each extra pod it owns, with the pod and the data volume claim
// when they exist.
func decodeMembers(sts *appsv1.StatefulSet, ix *index, replicas int, at time.Time) []model.Member {
	sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil || sts.Spec.Selector == nil {
		sel = labels.SelectorFromSet(sts.Spec.Template.Labels)
	}
	byOrdinal := map[int]*corev1.Pod{}
	var ordinals []int // every wanted ordinal, then each extra pod's
	for n := 0; n < min(replicas, maxOrdinal); n++ {
		ordinals = append(ordinals, n)
	}
	var extra []int
	// The pods it controls and those no one controls (ownedBy), not every
	// pod of the namespace: a read of many clusters stays linear.
	for _, p := range slices.Concat(ix.owned[sts.Namespace+"/"+string(sts.UID)], ix.orphans[sts.Namespace]) {
		n, ok := memberOrdinal(sts.Name, p.Name)
		if !ok || !sel.Matches(labels.Set(p.Labels)) || !ownedBy(p, string(sts.UID)) {
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
			m.Pod = decodePod(p, at)
		}
		if claim != "" {
			m.PVC = decodePVC(ix, sts.Namespace, claim+"-"+m.Name, at)
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

// decodePVC is claim ns/name as PVCFacts, nil when it does not exist.
func decodePVC(ix *index, ns, name string, at time.Time) *model.PVCFacts {
	c, ok := ix.pvcs[ns+"/"+name]
	if !ok {
		return nil
	}
	return &model.PVCFacts{Name: c.Name, UID: string(c.UID), ResourceVersion: c.ResourceVersion, Phase: string(c.Status.Phase), ObservedAt: at}
}
