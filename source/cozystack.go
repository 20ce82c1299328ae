package source

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hactl-dev/hactl/model"
)

// What the cozystack etcd-operator (v1alpha2, v0.5 on) writes
// (cozystack/etcd-operator api/v1alpha2, controllers/helpers.go,
// controllers/etcdmember_controller.go).
const (
	CozystackGroup   = "etcd-operator.cozystack.io"
	CozystackVersion = "v1alpha2"
	// LabelCozystackCluster names a member's EtcdCluster on its pod,
	// claim, Services and budget; LabelCozystackRole=voter marks a
	// voter's pod (the budget selects on it).
	LabelCozystackCluster = CozystackGroup + "/cluster"
	LabelCozystackRole    = CozystackGroup + "/role"
	CozystackRoleVoter    = "voter"
	// CozystackLayout names the layout in ClusterFacts.Layout.
	CozystackLayout = "cozystack etcd-operator"
)

// CozystackSelector selects every pod of a cozystack etcd cluster.
const CozystackSelector = LabelCozystackCluster

// CozystackResources are the operator's resources a read lists, as
// /apis/<group>/<version>/namespaces/<ns>/<resource> names them.
var CozystackResources = []string{"etcdclusters", "etcdmembers"}

// CozystackPath is the API path of resource (one of CozystackResources)
// in namespace ns ("" for every namespace).
func CozystackPath(ns, resource string) string {
	if ns == "" {
		return "/apis/" + CozystackGroup + "/" + CozystackVersion + "/" + resource
	}
	return "/apis/" + CozystackGroup + "/" + CozystackVersion + "/namespaces/" + ns + "/" + resource
}

// EtcdCluster is the part of a cozystack EtcdCluster hactl reads.
type EtcdCluster struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Replicas *int32 `json:"replicas,omitempty"`
		TLS      *struct {
			Client *struct {
				ServerSecretRef         *corev1.LocalObjectReference `json:"serverSecretRef,omitempty"`
				OperatorClientSecretRef *corev1.LocalObjectReference `json:"operatorClientSecretRef,omitempty"`
				CertManager             *struct {
					OperatorClientIssuerRef *json.RawMessage `json:"operatorClientIssuerRef,omitempty"`
				} `json:"certManager,omitempty"`
			} `json:"client,omitempty"`
		} `json:"tls,omitempty"`
	} `json:"spec"`
	Status struct {
		ReadyMembers int32              `json:"readyMembers,omitempty"`
		ClusterID    string             `json:"clusterID,omitempty"`
		Conditions   []metav1.Condition `json:"conditions,omitempty"`
	} `json:"status"`
}

// EtcdMember is the part of a cozystack EtcdMember hactl reads.
type EtcdMember struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ClusterName string `json:"clusterName"`
		Bootstrap   bool   `json:"bootstrap,omitempty"`
	} `json:"spec"`
	Status struct {
		MemberID string `json:"memberID,omitempty"`
		PodName  string `json:"podName,omitempty"`
		PodUID   string `json:"podUID,omitempty"`
		IsVoter  bool   `json:"isVoter,omitempty"`
	} `json:"status"`
}

// Cozystack are the operator's resources one read holds. Err says why
// they could not be read (no such resource: the operator is not
// installed; forbidden); the clusters are then found from their pods
// alone, and nothing is held against the operator's word.
type Cozystack struct {
	Clusters []EtcdCluster
	Members  []EtcdMember
	Err      error
}

// DecodeCozystackList decodes a list of resource (EtcdClusters or
// EtcdMembers) as the API server returns it into c.
func DecodeCozystackList(resource string, raw []byte, c *Cozystack) error {
	switch resource {
	case "etcdclusters":
		var l struct {
			Items []EtcdCluster `json:"items"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("decoding %s: %w", resource, err)
		}
		c.Clusters = l.Items
	case "etcdmembers":
		var l struct {
			Items []EtcdMember `json:"items"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("decoding %s: %w", resource, err)
		}
		c.Members = l.Items
	default:
		return fmt.Errorf("unknown resource %s", resource)
	}
	return nil
}

// HasCozystackPods reports whether pods hold a cozystack member's pod.
func HasCozystackPods(pods []corev1.Pod) bool {
	for i := range pods {
		if isCozystackPod(&pods[i]) {
			return true
		}
	}
	return false
}

// isCozystackPod: p names its cluster with the operator's label and is
// controlled by an EtcdMember of the operator's group.
func isCozystackPod(p *corev1.Pod) bool {
	if p.Labels[LabelCozystackCluster] == "" {
		return false
	}
	c := metav1.GetControllerOfNoCopy(p)
	return c != nil && c.Kind == "EtcdMember" && c.APIVersion == CozystackGroup+"/"+CozystackVersion
}

// CozystackOperator is the cozystack etcd-operator: it creates and
// deletes the members' pods and claims, and rebuilds a member when its
// EtcdMember is deleted (its documentation's "Broken member").
var CozystackOperator = &model.Manager{
	Name: "the cozystack etcd-operator",
	Runbook: []string{
		"kubectl get etcdmember.etcd-operator.cozystack.io {member} -n {namespace} -o jsonpath='{.status.memberID}': it must print {memberID16}, the ID the operator's finalizer removes",
		"kubectl delete etcdmember.etcd-operator.cozystack.io {member} -n {namespace} (its finalizer removes member {memberID} from the cluster; then its pod and claim data-{member} are collected)",
		"kubectl get etcdmember.etcd-operator.cozystack.io -n {namespace} -l etcd-operator.cozystack.io/cluster={cluster} -w: the operator adds a new member with a new name and empty storage, as a learner it promotes once caught up",
		"kubectl hactl status {cluster} -n {namespace}: wait until the new member is a voter that has caught up",
	},
}

// CozystackClusters is the cozystack etcd-operator's layout (v1alpha2):
// an EtcdCluster's members are EtcdMembers with random names
// (<cluster>-xxxxx), each with a pod of its name that it controls and a
// claim data-<member>; the pods are labelled with their cluster
// (LabelCozystackCluster). A cluster is found from its pods, so it shows
// with no access to the operator's resources; with it, the
// EtcdCluster's and EtcdMembers' word is read beside (Operator) and
// members without a pod are listed too. The operator owns the members:
// hactl changes none of them (ManagedBy, with the operator's way).
type CozystackClusters struct{}

// Workloads implements Layout.
func (CozystackClusters) Workloads(o Objects, detect Detect) []Workload {
	groups := map[[2]string][]*corev1.Pod{}
	for i := range o.Pods {
		p := &o.Pods[i]
		if isCozystackPod(p) {
			k := [2]string{p.Namespace, p.Labels[LabelCozystackCluster]}
			groups[k] = append(groups[k], p)
		}
	}
	var out []Workload
	for k, pods := range groups {
		slices.SortFunc(pods, func(a, b *corev1.Pod) int {
			return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
		})
		t := podTemplate(pods[0])
		t.Owner = "EtcdCluster/" + k[1]
		eng, ok := detect(map[string]string{}, t)
		if !ok {
			continue
		}
		out = append(out, cozystackWorkload(k[0], k[1], pods, o.Cozystack, eng, t))
	}
	return out
}

// cozystackWorkload is the members of EtcdCluster name in ns, from their
// pods and (when read) the operator's resources.
func cozystackWorkload(ns, name string, pods []*corev1.Pod, cz *Cozystack, eng model.Engine, t model.PodTemplate) Workload {
	var ec *EtcdCluster
	var ems []*EtcdMember
	if cz != nil && cz.Err == nil {
		for i := range cz.Clusters {
			if c := &cz.Clusters[i]; c.Namespace == ns && c.Name == name {
				ec = c
			}
		}
		for i := range cz.Members {
			if m := &cz.Members[i]; m.Namespace == ns && m.Spec.ClusterName == name {
				ems = append(ems, m)
			}
		}
	}
	podLabels := labels.Set{LabelCozystackCluster: name, LabelCozystackRole: CozystackRoleVoter}
	owner := &metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels.Set{LabelCozystackCluster: name}, CreationTimestamp: pods[0].CreationTimestamp}
	if ec != nil {
		// The EtcdCluster is the cluster's object; `status -l` matches
		// its labels and the label its members carry.
		om := *ec.ObjectMeta.DeepCopy()
		om.Labels = labels.Merge(om.Labels, labels.Set{LabelCozystackCluster: name})
		owner = &om
	}
	// The members: every EtcdMember in the order the operator made them
	// (the seed first), then each pod no EtcdMember read names.
	type entry struct {
		name    string
		created metav1.Time
	}
	seen := map[string]bool{}
	var names []entry
	for _, m := range ems {
		seen[m.Name] = true
		names = append(names, entry{m.Name, m.CreationTimestamp})
	}
	byName := map[string]*corev1.Pod{}
	ready := 0
	for _, p := range pods {
		byName[p.Name] = p
		if DecodePod(p, time.Time{}).Ready {
			ready++
		}
		if !seen[p.Name] {
			seen[p.Name] = true
			names = append(names, entry{p.Name, p.CreationTimestamp})
		}
	}
	slices.SortStableFunc(names, func(a, b entry) int {
		return cmp.Or(a.created.Compare(b.created.Time), cmp.Compare(a.name, b.name))
	})
	replicas := len(names)
	if ec != nil && ec.Spec.Replicas != nil {
		replicas = int(*ec.Spec.Replicas)
	}
	templates := map[string]model.PodTemplate{}
	for n, p := range byName {
		pt := podTemplate(p)
		pt.Owner = t.Owner
		templates[n] = pt
	}
	w := Workload{
		Kind: "EtcdCluster", APIVersion: CozystackGroup + "/" + CozystackVersion, Owner: owner, Engine: eng, Template: t, PodLabels: podLabels,
		Service: name, Replicas: replicas, Ready: ready, Layout: CozystackLayout, ManagedBy: CozystackOperator,
		Templates: templates,
		List: func(ix *Index, at time.Time) []model.Member {
			ms := make([]model.Member, len(names))
			for i, e := range names {
				ms[i] = model.Member{Name: e.name, Ordinal: i, PVC: ix.PVC(ns, "data-"+e.name, at)}
				if p, ok := byName[e.name]; ok {
					ms[i].Pod = DecodePod(p, at)
				}
			}
			return ms
		},
	}
	if ec != nil {
		w.TLSSecret, w.TLSCASecret, w.TLSSecretFrom = cozystackTLS(ec)
		if w.TLSSecret == "" && w.TLSCASecret == "" {
			w.TLSSecretFrom = ""
		}
	}
	w.Operator = cozystackFacts(name, ec, ems, cz)
	return w
}

// cozystackTLS are the Secrets the operator's own client dials the
// members with (its buildOperatorTLSConfig): the operator-client
// identity when client mTLS is on ("" when off), the CA from the server
// Secret.
func cozystackTLS(ec *EtcdCluster) (secret, ca, from string) {
	if ec.Spec.TLS == nil || ec.Spec.TLS.Client == nil {
		return "", "", ""
	}
	c := ec.Spec.TLS.Client
	server, client := "", ""
	switch {
	case c.ServerSecretRef != nil:
		server = c.ServerSecretRef.Name
	case c.CertManager != nil:
		server = ec.Name + "-server-tls"
	}
	switch {
	case c.OperatorClientSecretRef != nil:
		client = c.OperatorClientSecretRef.Name
	case c.CertManager != nil && c.CertManager.OperatorClientIssuerRef != nil:
		client = ec.Name + "-operator-client-tls"
	}
	// Without client mTLS the server Secret's ca.crt alone: its tls.key
	// is the members' own, never a client's.
	return client, server, "EtcdCluster " + ec.Name + " spec.tls.client"
}

// cozystackFacts are the operator's word on cluster name: what its
// EtcdCluster and EtcdMembers say, or why they could not be read.
func cozystackFacts(name string, ec *EtcdCluster, ems []*EtcdMember, cz *Cozystack) *model.OperatorFacts {
	f := &model.OperatorFacts{Kind: "EtcdCluster", Name: name, MemberKind: "EtcdMember"}
	switch {
	case cz == nil:
		f.Err = "the operator's resources were not read"
		return f
	case cz.Err != nil:
		f.Err = cz.Err.Error()
		return f
	case ec == nil:
		f.Err = fmt.Sprintf("no EtcdCluster %s: its pods name it, but it does not exist (deleted, or the pods are orphans)", name)
	}
	if ec != nil {
		f.ClusterID, f.ReadyMembers = hexID(ec.Status.ClusterID), int(ec.Status.ReadyMembers)
		if c := meta(ec.Status.Conditions, "Available"); c != nil {
			ok := c.Status == metav1.ConditionTrue
			f.Available, f.AvailableReason, f.AvailableDetail = &ok, printable(c.Reason), printable(c.Message)
		}
	}
	for _, m := range ems {
		f.Members = append(f.Members, model.OperatorMember{Name: m.Name, MemberID: hexID(m.Status.MemberID), Voter: m.Status.IsVoter, Seed: m.Spec.Bootstrap, PodUID: m.Status.PodUID})
	}
	return f
}

// meta is condition typ among cs, nil when absent.
func meta(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

// hexID is a hex ID as etcd's answers spell it (FormatID: no padding);
// the operator writes %016x. An ID that is no hex number is quoted (it
// can match no member, and its bytes reach no terminal raw).
func hexID(s string) string {
	if s == "" {
		return ""
	}
	x, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return strconv.Quote(s)
	}
	return strconv.FormatUint(x, 16)
}

// printable is s with every character that is not printable replaced
// (a resource's words reach terminals in reasons and explanations).
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, s)
}
