package status

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/source"
)

// A restore's one-shot pods carry LabelRestoreOf (the cluster they
// restore) and LabelMember (the member); the annotations
// AnnotationGeneration and AnnotationActionID name the generation and the
// ledger entry (annotations: their values need not be valid label
// values).
const (
	LabelRestoreOf       = "hactl.dev/restore-of"
	LabelMember          = "hactl.dev/member"
	AnnotationGeneration = "hactl.dev/generation"
	AnnotationActionID   = "hactl.dev/action-id"
)

// DecodeActionFacts adds to obs what status does not decode for its own
// views and actions need, from sts and the objects the observation was
// built from: the template's --initial-cluster, --initial-cluster-token
// and data directory, the StatefulSet's update revision, fingerprint and
// pod management policy, the restore pods, each pod's revision and
// fingerprint and each volume's deletion mark and fingerprint. The
// template's part is the decoder's of the cluster's engine among dec.
func DecodeActionFacts(obs *model.Observation, sts *appsv1.StatefulSet, objs *Objects, dec map[model.Engine]engine.Decoder) {
	cl := &obs.Cluster
	cl.UpdateRevision = sts.Status.UpdateRevision
	cl.Fingerprint = StatefulSetFingerprint(sts)
	cl.PodManagementPolicy = string(sts.Spec.PodManagementPolicy)
	if cl.PodManagementPolicy == "" {
		cl.PodManagementPolicy = string(appsv1.OrderedReadyPodManagement)
	}
	if d := dec[cl.Engine]; d != nil {
		d.ActionTemplate(source.PodTemplate(sts), &cl.Template)
	}
	cl.RestorePods = restorePods(sts, objs.Pods)
	decodeMemberObjects(obs.Members, sts.Namespace, objs, obs.Cluster.SelfWritten)
}

// DecodeMemberObjects adds to obs, a cluster without a StatefulSet of
// its own (static pods, CloudNativePG's instances), what
// DecodeActionFacts adds of its members: their pods' and volumes'
// fingerprints, from objs.
func DecodeMemberObjects(obs *model.Observation, objs *Objects) {
	decodeMemberObjects(obs.Members, obs.Cluster.Namespace, objs, obs.Cluster.SelfWritten)
}

// decodeMemberObjects adds each member's pod revision and fingerprint and
// its volume's deletion mark and fingerprint, from the very objects
// (matched by UID) the members were decoded from. sw is what the
// engine's members rewrite on their own pods (nil for most engines): it
// stays out of the pods' fingerprints (see PodFingerprint).
func decodeMemberObjects(members []model.Member, namespace string, objs *Objects, sw *model.SelfWritten) {
	pods := map[string]*corev1.Pod{}
	for i := range objs.Pods {
		if p := &objs.Pods[i]; p.Namespace == namespace {
			pods[p.Name] = p
		}
	}
	pvcs := map[string]*corev1.PersistentVolumeClaim{}
	for i := range objs.PVCs {
		if p := &objs.PVCs[i]; p.Namespace == namespace {
			pvcs[p.Name] = p
		}
	}
	for i := range members {
		m := &members[i]
		if m.Pod != nil {
			if p, ok := pods[m.Pod.Name]; ok && string(p.UID) == m.Pod.UID {
				cp := *m.Pod
				cp.Revision = p.Labels[appsv1.ControllerRevisionHashLabelKey]
				cp.Fingerprint = PodFingerprint(p, sw)
				m.Pod = &cp
			}
		}
		if m.PVC != nil {
			if p, ok := pvcs[m.PVC.Name]; ok && string(p.UID) == m.PVC.UID {
				cp := *m.PVC
				cp.DeletionMarked = p.DeletionTimestamp != nil
				cp.Fingerprint = Fingerprint(&p.ObjectMeta, p.Spec)
				m.PVC = &cp
			}
		}
	}
}

// Fingerprint digests what a person or controller changes about an
// object (labels, annotations, owner references, finalizers, deletion
// mark, spec) and leaves out what the kubelet reports (status) and the
// bookkeeping that moves with every write (resourceVersion, managed
// fields).
func Fingerprint(meta *metav1.ObjectMeta, spec any) string {
	v := struct {
		Labels      map[string]string       `json:"l,omitempty"`
		Annotations map[string]string       `json:"a,omitempty"`
		Owners      []metav1.OwnerReference `json:"o,omitempty"`
		Finalizers  []string                `json:"f,omitempty"`
		Deleting    bool                    `json:"d,omitempty"`
		Spec        any                     `json:"s"`
	}{meta.Labels, meta.Annotations, meta.OwnerReferences, meta.Finalizers, meta.DeletionTimestamp != nil, spec}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// PodFingerprint is the fingerprint of a member's pod, leaving out
// exactly what the engine's members rewrite on their own pods (sw, from
// the engine's keeper: Patroni's role label and status annotation).
// Otherwise every fence on such a pod would read as changed by someone.
// Other engines' pods (sw nil) are fingerprinted whole.
func PodFingerprint(p *corev1.Pod, sw *model.SelfWritten) string {
	if sw == nil {
		return Fingerprint(&p.ObjectMeta, p.Spec)
	}
	meta := p.ObjectMeta
	for _, l := range sw.Labels {
		meta.Labels = without(meta.Labels, l)
	}
	for _, a := range sw.Annotations {
		meta.Annotations = without(meta.Annotations, a)
	}
	return Fingerprint(&meta, p.Spec)
}

// without is m without key (m itself when it has no such key).
func without(m map[string]string, key string) map[string]string {
	if _, ok := m[key]; !ok {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// StatefulSetFingerprint is the fingerprint of a StatefulSet's metadata and
// spec without spec.replicas: a restore scales the StatefulSet itself, and
// its own scaling must not read as an edit; whether someone else scaled
// it is judged from the replicas (see docs/actions.md, Fences).
func StatefulSetFingerprint(sts *appsv1.StatefulSet) string {
	spec := sts.Spec
	spec.Replicas = nil
	return Fingerprint(&sts.ObjectMeta, spec)
}

// restorePods decodes the restore pods of sts, sorted by name.
func restorePods(sts *appsv1.StatefulSet, pods []corev1.Pod) []model.RestorePodFacts {
	var out []model.RestorePodFacts
	for i := range pods {
		p := &pods[i]
		if p.Namespace != sts.Namespace || p.Labels[LabelRestoreOf] != sts.Name {
			continue
		}
		f := model.RestorePodFacts{
			Name: p.Name, UID: string(p.UID), ResourceVersion: p.ResourceVersion,
			Member: p.Labels[LabelMember], Generation: p.Annotations[AnnotationGeneration], Action: p.Annotations[AnnotationActionID],
			Phase: string(p.Status.Phase), DeletionMarked: p.DeletionTimestamp != nil,
			Fingerprint: Fingerprint(&p.ObjectMeta, p.Spec),
		}
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				f.Message = strings.TrimSpace(t.Message)
				if f.Message == "" {
					f.Message = fmt.Sprintf("exit code %d (%s)", t.ExitCode, t.Reason)
				}
			}
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
