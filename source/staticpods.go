package source

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hactl-dev/hactl/model"
)

// Labels and annotations kubeadm and the kubelet put on a control-plane
// static pod's mirror pod (kubernetes cmd/kubeadm/app/util/staticpod,
// pkg/kubelet/types).
const (
	LabelComponent   = "component"
	LabelTier        = "tier"
	TierControlPlane = "control-plane"
	// AnnotationMirror marks a mirror pod: the API server's copy of a
	// pod the kubelet runs from a file on its node.
	AnnotationMirror = "kubernetes.io/config.mirror"
	// AnnotationAdvertiseClientURLs is where kubeadm writes an etcd
	// member's client URL on its pod.
	AnnotationAdvertiseClientURLs = "kubeadm.kubernetes.io/etcd.advertise-client-urls"
)

// StaticPodSelector selects every control-plane static pod (a cheaper
// read than every pod, where no other layout needs them).
const StaticPodSelector = LabelTier + "=" + TierControlPlane

// HasStaticPods reports whether pods hold a control-plane mirror pod.
func HasStaticPods(pods []corev1.Pod) bool {
	for i := range pods {
		if isStaticPod(&pods[i]) {
			return true
		}
	}
	return false
}

// isStaticPod: p is a control-plane mirror pod with a component label,
// controlled by its Node (as the kubelet makes mirror pods) or by
// nothing: a pod of a StatefulSet or an operator is none, however it is
// labelled and annotated.
func isStaticPod(p *corev1.Pod) bool {
	_, mirror := p.Annotations[AnnotationMirror]
	if !mirror || p.Labels[LabelTier] != TierControlPlane || p.Labels[LabelComponent] == "" {
		return false
	}
	c := metav1.GetControllerOfNoCopy(p)
	return c == nil || (c.Kind == "Node" && c.APIVersion == "v1")
}

// StaticPodsLayout names the layout in ClusterFacts.Layout (kubeadm's;
// OtherStaticPodsLayout another installer's).
const (
	StaticPodsLayout      = "kubeadm static pods"
	OtherStaticPodsLayout = "static pods"
)

// StaticPods is kubeadm's layout of its control plane's own etcd (stacked
// etcd): a static pod per control-plane node, seen in the API server as
// mirror pods <component>-<node> labelled component=<component> and
// tier=control-plane. Each namespace's mirror pods of one component whose
// template an engine recognises are a cluster named by the component
// ("etcd" in kube-system). The kubelet owns them: hactl changes none of
// them (ManagedBy, with kubeadm's runbook).
type StaticPods struct{}

// Workloads implements Layout.
func (StaticPods) Workloads(o Objects, detect Detect) []Workload {
	groups := map[[2]string][]*corev1.Pod{}
	for i := range o.Pods {
		p := &o.Pods[i]
		if !isStaticPod(p) {
			continue
		}
		k := [2]string{p.Namespace, p.Labels[LabelComponent]}
		groups[k] = append(groups[k], p)
	}
	var out []Workload
	for k, pods := range groups {
		sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
		t := podTemplate(pods[0])
		t.Owner = model.OwnerKubelet
		eng, ok := detect(map[string]string{}, t)
		if !ok {
			continue
		}
		w := staticPodWorkload(k[0], k[1], pods, eng, t)
		if _, kubeadm := pods[0].Annotations[AnnotationAdvertiseClientURLs]; !kubeadm {
			// Static pods of another installer (RKE2, a hand-written
			// manifest): the kubelet's, but kubeadm's steps are not theirs.
			w.ManagedBy, w.Layout = KubeletStaticPods, OtherStaticPodsLayout
		}
		out = append(out, w)
	}
	return out
}

// staticPodWorkload is the mirror pods of component in ns as one cluster.
func staticPodWorkload(ns, component string, pods []*corev1.Pod, eng model.Engine, t model.PodTemplate) Workload {
	podLabels := labels.Set{LabelComponent: component, LabelTier: TierControlPlane}
	owner := &metav1.ObjectMeta{Namespace: ns, Name: component, Labels: podLabels, CreationTimestamp: pods[0].CreationTimestamp}
	ready := 0
	for _, p := range pods {
		if p.CreationTimestamp.Before(&owner.CreationTimestamp) {
			owner.CreationTimestamp = p.CreationTimestamp
		}
		if DecodePod(p, time.Time{}).Ready {
			ready++
		}
	}
	return Workload{
		Kind: "StaticPods", Owner: owner, Engine: eng, Template: t, PodLabels: podLabels,
		Replicas: len(pods), Ready: ready, Layout: StaticPodsLayout, ManagedBy: KubeadmEtcd,
		// kubeadm's serving certificates name the node, localhost and
		// the node's addresses, never the pod: a port-forward reaches
		// the member on the node's loopback.
		ServerName: "localhost",
		List: func(_ *Index, at time.Time) []model.Member {
			ms := make([]model.Member, len(pods))
			for i, p := range pods {
				ms[i] = model.Member{Name: p.Name, Ordinal: i, Pod: DecodePod(p, at)}
			}
			return ms
		},
	}
}

// podTemplate is p's spec as the engines' decoders read a template.
func podTemplate(p *corev1.Pod) model.PodTemplate {
	t := model.PodTemplate{Namespace: p.Namespace, Labels: p.Labels, Containers: make([]model.Container, len(p.Spec.Containers))}
	for i := range p.Spec.Containers {
		t.Containers[i] = Container(&p.Spec.Containers[i])
	}
	return t
}

// KubeletStaticPods is the kubelet running static pods another installer
// wrote: hactl changes none of them and knows no runbook of theirs.
var KubeletStaticPods = &model.Manager{Name: "the kubelet", Unevictable: true, NoService: true}

// KubeadmEtcd is the kubelet running kubeadm's etcd, with kubeadm's own
// way to rebuild a member of a stacked control plane (kubeadm's
// "Replacing a failed etcd member" and `kubeadm join phase
// control-plane-join etcd`).
var KubeadmEtcd = &model.Manager{
	Name:        "the kubelet",
	Unevictable: true,
	NoService:   true,
	Runbook: []string{
		"on a healthy control-plane node ({healthyNode}): etcdctl --endpoints=https://127.0.0.1:2379 --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt --key=/etc/kubernetes/pki/etcd/healthcheck-client.key member remove {memberID}",
		"on {node}: mv /etc/kubernetes/manifests/etcd.yaml /etc/kubernetes/etcd.yaml.removed (the kubelet stops {member})",
		"on {node}: mv {dataDir} {dataDir}.removed (keep it until the member is back)",
		"on {node}: kubeadm join phase control-plane-join etcd --config <this node's join configuration> (adds the member back, as a learner where kubeadm promotes it, and writes etcd.yaml again)",
		"kubectl hactl status {cluster} -n {namespace}: wait until {member} is a voter that has caught up",
	},
}
