package source

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hactl-dev/hactl/model"
)

// CloudNativePG (cloudnative-pg/cloudnative-pg) runs each instance of a
// Cluster as a pod <cluster>-<serial> the Cluster controls, with no
// StatefulSet (pkg/specs/pods.go), its data on the claim named as the
// pod (pkg/specs/pvcs.go), and records the primary in its status
// (currentPrimary, and targetPrimary while it switches).
const (
	CNPGGroup   = "postgresql.cnpg.io"
	CNPGVersion = "v1"
	// LabelCNPGCluster names the Cluster on its pods; CNPGSelector
	// selects them.
	LabelCNPGCluster = "cnpg.io/cluster"
	CNPGSelector     = LabelCNPGCluster
	// LabelCNPGPodRole is instance on an instance's pod (poolers' and
	// jobs' pods carry other values).
	LabelCNPGPodRole = "cnpg.io/podRole"
	// CNPGLayout names the layout.
	CNPGLayout = "CloudNativePG instances"
	// CNPGHealthy is the phase of a Cluster its operator found healthy.
	CNPGHealthy = "Cluster in healthy state"
)

// CNPGPath is the API path of ns's Clusters (every namespace's when ns
// is "").
func CNPGPath(ns string) string {
	if ns == "" {
		return "/apis/" + CNPGGroup + "/" + CNPGVersion + "/clusters"
	}
	return "/apis/" + CNPGGroup + "/" + CNPGVersion + "/namespaces/" + ns + "/clusters"
}

// CNPGCluster is the part of a CloudNativePG Cluster hactl reads
// (api/v1/cluster_types.go).
type CNPGCluster struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Instances int `json:"instances"`
	} `json:"spec"`
	Status struct {
		Instances      int                `json:"instances,omitempty"`
		ReadyInstances int                `json:"readyInstances,omitempty"`
		CurrentPrimary string             `json:"currentPrimary,omitempty"`
		TargetPrimary  string             `json:"targetPrimary,omitempty"`
		Phase          string             `json:"phase,omitempty"`
		PhaseReason    string             `json:"phaseReason,omitempty"`
		InstanceNames  []string           `json:"instanceNames,omitempty"`
		Conditions     []metav1.Condition `json:"conditions,omitempty"`
	} `json:"status"`
}

// CNPG are CloudNativePG's Clusters as read, nil in Objects when they
// were not (no instance's pod).
type CNPG struct {
	Clusters []CNPGCluster
	Err      error
}

// DecodeCNPGClusters decodes a list of Clusters.
func DecodeCNPGClusters(raw []byte) ([]CNPGCluster, error) {
	var l struct {
		Items []CNPGCluster `json:"items"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("decoding clusters.%s: %w", CNPGGroup, err)
	}
	return l.Items, nil
}

// isCNPGInstance reports whether p is an instance's pod: labelled with
// its Cluster and controlled by it (not a pooler's or a job's).
func isCNPGInstance(p *corev1.Pod) bool {
	if p.Labels[LabelCNPGCluster] == "" {
		return false
	}
	if r, ok := p.Labels[LabelCNPGPodRole]; ok && r != "instance" {
		return false
	}
	c := metav1.GetControllerOfNoCopy(p)
	return c != nil && c.Kind == "Cluster" && strings.HasPrefix(c.APIVersion, CNPGGroup+"/")
}

// HasCNPGPods reports whether any of pods is a CloudNativePG instance's.
func HasCNPGPods(pods []corev1.Pod) bool {
	return slices.ContainsFunc(pods, func(p corev1.Pod) bool { return isCNPGInstance(&p) })
}

// CNPGClusters is CloudNativePG's layout: a Cluster's instance pods are
// one cluster named as the Cluster, its members the instances the
// Cluster lists (status.instanceNames) and the pods it controls, by
// serial; the Cluster's word is model.OperatorFacts.
type CNPGClusters struct{}

// Workloads implements Layout.
func (CNPGClusters) Workloads(o Objects, detect Detect) []Workload {
	groups := map[[2]string][]*corev1.Pod{}
	for i := range o.Pods {
		if p := &o.Pods[i]; isCNPGInstance(p) {
			k := [2]string{p.Namespace, p.Labels[LabelCNPGCluster]}
			groups[k] = append(groups[k], p)
		}
	}
	var out []Workload
	for k, pods := range groups {
		slices.SortFunc(pods, func(a, b *corev1.Pod) int { return cmpSerial(a.Name, b.Name) })
		t := podTemplate(pods[0])
		t.Owner = "Cluster/" + k[1]
		eng, ok := detect(map[string]string{}, t)
		if !ok {
			continue
		}
		out = append(out, cnpgWorkload(k[0], k[1], pods, o.CNPG, eng, t))
	}
	return out
}

// cmpSerial orders instance names by their serial (<cluster>-<n>), then
// by name.
func cmpSerial(a, b string) int {
	serial := func(s string) int {
		i := strings.LastIndexByte(s, '-')
		n, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return -1
		}
		return n
	}
	return cmp.Or(cmp.Compare(serial(a), serial(b)), cmp.Compare(a, b))
}

func cnpgWorkload(ns, name string, pods []*corev1.Pod, cn *CNPG, eng model.Engine, t model.PodTemplate) Workload {
	var cl *CNPGCluster
	if cn != nil && cn.Err == nil {
		for i := range cn.Clusters {
			if c := &cn.Clusters[i]; c.Namespace == ns && c.Name == name {
				cl = c
			}
		}
	}
	owner := &metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels.Set{LabelCNPGCluster: name}, CreationTimestamp: pods[0].CreationTimestamp}
	if c := metav1.GetControllerOfNoCopy(pods[0]); c != nil {
		owner.UID = c.UID
	}
	if cl != nil {
		om := *cl.ObjectMeta.DeepCopy()
		om.Labels = labels.Merge(om.Labels, labels.Set{LabelCNPGCluster: name})
		owner = &om
	}
	byName := map[string]*corev1.Pod{}
	var names []string
	ready := 0
	for _, p := range pods {
		byName[p.Name] = p
		names = append(names, p.Name)
		if DecodePod(p, time.Time{}).Ready {
			ready++
		}
	}
	replicas := len(pods)
	if cl != nil {
		for _, n := range cl.Status.InstanceNames {
			if _, ok := byName[n]; !ok && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		if cl.Spec.Instances > 0 {
			replicas = cl.Spec.Instances
		}
	}
	slices.SortFunc(names, cmpSerial)
	templates := map[string]model.PodTemplate{}
	for n, p := range byName {
		pt := podTemplate(p)
		pt.Owner = t.Owner
		templates[n] = pt
	}
	return Workload{
		Kind: "Cluster", APIVersion: CNPGGroup + "/" + CNPGVersion, Owner: owner, Engine: eng, Template: t,
		PodLabels: labels.Set{LabelCNPGCluster: name, LabelCNPGPodRole: "instance"},
		Replicas:  replicas, Ready: ready, Layout: CNPGLayout, Templates: templates,
		Operator: cnpgFacts(name, cl, cn),
		List: func(ix *Index, at time.Time) []model.Member {
			ms := make([]model.Member, len(names))
			for i, n := range names {
				ms[i] = model.Member{Name: n, Ordinal: i, PVC: ix.PVC(ns, n, at)}
				if p, ok := byName[n]; ok {
					ms[i].Pod = DecodePod(p, at)
				}
			}
			return ms
		},
	}
}

// cnpgFacts are the Cluster's word: its phase, its Ready condition, the
// instances it counts ready and its current and target primary.
func cnpgFacts(name string, cl *CNPGCluster, cn *CNPG) *model.OperatorFacts {
	f := &model.OperatorFacts{Kind: "Cluster", Name: name, AvailableType: "Ready"}
	switch {
	case cn == nil:
		f.Err = "the operator's resources were not read"
		return f
	case cn.Err != nil:
		f.Err = cn.Err.Error()
		return f
	case cl == nil:
		f.Err = fmt.Sprintf("no Cluster %s: its pods name it, but it does not exist (deleted, or the pods are orphans)", name)
		return f
	}
	s := cl.Status
	f.Status, f.ReadyMembers, f.Primary, f.TargetPrimary = printable(s.Phase), s.ReadyInstances, printable(s.CurrentPrimary), printable(s.TargetPrimary)
	if c := meta(s.Conditions, "Ready"); c != nil {
		ok := c.Status == metav1.ConditionTrue
		f.Available, f.AvailableReason, f.AvailableDetail = &ok, printable(c.Reason), printable(c.Message)
	}
	f.Deleting = cl.DeletionTimestamp != nil
	return f
}
