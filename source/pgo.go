package source

import (
	"cmp"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hactl-dev/hactl/model"
)

// Crunchy PGO v5 (CrunchyData/postgres-operator) lays a PostgresCluster
// out as one StatefulSet per instance (internal/controller/postgrescluster
// instance.go), each named <cluster>-<set>-<4 random characters> with
// replicas 1 (0 while the cluster starts up or is shut down), serviceName
// <cluster>-pods, and the instance's data on the claim <instance>-pgdata,
// which the operator creates itself (internal/naming/names.go). Each
// instance's Patroni serves its REST API over HTTPS with the certificate
// in the Secret <instance>-certs (internal/patroni/certificates.go).
const (
	// LabelPGOCluster names the PostgresCluster on every object of it.
	LabelPGOCluster = "postgres-operator.crunchydata.com/cluster"
	// LabelPGOInstance names the instance (its StatefulSet) on it and
	// its pod.
	LabelPGOInstance = "postgres-operator.crunchydata.com/instance"
	// PGOAPIVersion is the PostgresCluster's API group and version.
	PGOAPIVersion = "postgres-operator.crunchydata.com/v1beta1"
	// PGOLayout names the layout.
	PGOLayout = "Crunchy PGO instances"
	// PGOCertsKeyCA and PGOCertsKeyCombined are the keys of an
	// instance's <instance>-certs Secret holding the CA that verifies
	// every instance's REST API (patroni.ca-roots) and the instance's
	// own certificate and key in one PEM file (patroni.crt-combined).
	PGOCertsKeyCA       = "patroni.ca-roots"
	PGOCertsKeyCombined = "patroni.crt-combined"
)

// PGOCertsSecret is the Secret holding instance's certificates.
func PGOCertsSecret(instance string) string { return instance + "-certs" }

// PGODataClaim is the claim holding instance's data directory.
func PGODataClaim(instance string) string { return instance + "-pgdata" }

// IsPGOInstance reports whether sts is one instance of a Crunchy PGO
// PostgresCluster: one member of a cluster (PGOClusters), never a
// cluster of its own.
func IsPGOInstance(sts *appsv1.StatefulSet) bool {
	if _, ok := sts.Labels[LabelPGOInstance]; ok {
		return true
	}
	c := metav1.GetControllerOfNoCopy(sts)
	return c != nil && c.Kind == "PostgresCluster"
}

// PGOClusterName is the PostgresCluster sts is an instance of.
func PGOClusterName(sts *appsv1.StatefulSet) string {
	if c := sts.Labels[LabelPGOCluster]; c != "" {
		return c
	}
	if c := metav1.GetControllerOfNoCopy(sts); c != nil {
		return c.Name
	}
	return sts.Name
}

// PGOClusters is Crunchy PGO's layout: the instance StatefulSets of one
// PostgresCluster are one cluster, whose members are the instances' pods
// <instance>-0 (Patroni's member names) in the order the instances were
// created. The cluster answers to the PostgresCluster (Kind
// PostgresCluster, named as it), whose labels and annotations it reads
// from its instances (PGO copies spec.metadata onto each, so hactl's
// annotations are set there). Its REST API is dialled with the CA and
// client certificate of the first instance's <instance>-certs: every
// instance's certificate is signed by the cluster's root CA, which each
// instance's Patroni trusts for clients too, as patronictl inside the
// pod uses it.
type PGOClusters struct{}

// Workloads implements Layout.
func (PGOClusters) Workloads(o Objects, detect Detect) []Workload {
	groups := map[[2]string][]*appsv1.StatefulSet{}
	for i := range o.StatefulSets {
		sts := &o.StatefulSets[i]
		// An instance's, not another StatefulSet its PostgresCluster
		// controls (pgBackRest's repo host, pgAdmin).
		if _, ok := sts.Labels[LabelPGOInstance]; ok && IsPGOInstance(sts) {
			k := [2]string{sts.Namespace, PGOClusterName(sts)}
			groups[k] = append(groups[k], sts)
		}
	}
	var out []Workload
	for k, sets := range groups {
		slices.SortFunc(sets, func(a, b *appsv1.StatefulSet) int {
			return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
		})
		t := PodTemplate(sets[0])
		// The PostgresCluster's, as every instance is, whatever the
		// first one's owner reference says.
		t.Owner = "PostgresCluster/" + k[1]
		eng, ok := detect(sets[0].Labels, t)
		if !ok {
			continue
		}
		out = append(out, pgoWorkload(k[0], k[1], sets, eng, t))
	}
	return out
}

func pgoWorkload(ns, name string, sets []*appsv1.StatefulSet, eng model.Engine, t model.PodTemplate) Workload {
	first := sets[0]
	// The labels every instance's pods share (the cluster, the instance
	// set where there is one, Patroni's scope), and the instances' own
	// labels and annotations (the PostgresCluster's spec.metadata) but
	// the instance's name.
	podLabels := labels.Set{}
	for k, v := range first.Spec.Template.Labels {
		podLabels[k] = v
	}
	owner := &metav1.ObjectMeta{
		Namespace: ns, Name: name, CreationTimestamp: first.CreationTimestamp,
		Labels: labels.Merge(first.Labels, labels.Set{LabelPGOCluster: name}), Annotations: first.Annotations,
	}
	delete(owner.Labels, LabelPGOInstance)
	if c := metav1.GetControllerOfNoCopy(first); c != nil && c.Kind == "PostgresCluster" && c.Name == name {
		owner.UID = c.UID
	}
	replicas, ready := 0, 0
	templates := map[string]model.PodTemplate{}
	type instance struct {
		sts  *appsv1.StatefulSet
		name string
	}
	var members []instance
	for _, s := range sets {
		for k, v := range podLabels {
			if s.Spec.Template.Labels[k] != v {
				delete(podLabels, k)
			}
		}
		want := 1
		if s.Spec.Replicas != nil {
			want = int(*s.Spec.Replicas)
		}
		m := s.Name + "-0"
		if want < 1 && s.Status.Replicas == 0 {
			// Shut down by PGO (startup or shutdown): no member now.
			continue
		}
		replicas++
		ready += int(min(s.Status.ReadyReplicas, 1))
		members = append(members, instance{s, m})
		pt := PodTemplate(s)
		pt.Owner = t.Owner
		templates[m] = pt
	}
	w := Workload{
		Kind: "PostgresCluster", APIVersion: PGOAPIVersion, Owner: owner, Engine: eng, Template: t, PodLabels: podLabels,
		Service: first.Spec.ServiceName, Replicas: replicas, Ready: ready, Layout: PGOLayout,
		Templates: templates,
		List: func(ix *Index, at time.Time) []model.Member {
			ms := make([]model.Member, 0, len(members))
			for i, in := range members {
				m := model.Member{Name: in.name, Ordinal: i, PVC: ix.PVC(ns, PGODataClaim(in.sts.Name), at)}
				if p := instancePod(ix, in.sts, in.name); p != nil {
					m.Pod = DecodePod(p, at)
				}
				ms = append(ms, m)
			}
			return ms
		},
	}
	certs := PGOCertsSecret(first.Name)
	w.TLSSecret, w.TLSCASecret, w.TLSSecretFrom = certs, certs, "Crunchy PGO's Secret "+certs
	w.TLSCAKey, w.TLSCertKey, w.TLSKeyKey = PGOCertsKeyCA, PGOCertsKeyCombined, PGOCertsKeyCombined
	return w
}

// instancePod is the pod name of instance sts, when sts owns it (or no
// one does and it carries sts's selector's labels).
func instancePod(ix *Index, sts *appsv1.StatefulSet, name string) *corev1.Pod {
	sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil || sts.Spec.Selector == nil {
		sel = labels.SelectorFromSet(sts.Spec.Template.Labels)
	}
	for _, p := range slices.Concat(ix.owned[sts.Namespace+"/"+string(sts.UID)], ix.orphans[sts.Namespace]) {
		if p.Name == name && sel.Matches(labels.Set(p.Labels)) && OwnedBy(p, string(sts.UID)) {
			return p
		}
	}
	return nil
}
