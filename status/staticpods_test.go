package status

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/source"
)

// credsByPod answers as raftByPod does and records what each probe was
// handed: its credentials and the server name it checks.
type credsByPod struct {
	raftByPod
	mu    sync.Mutex
	creds []*engine.Credentials
	names []string
}

func (e *credsByPod) Probe(ctx context.Context, ts []engine.Target, o engine.ProbeOptions) []model.EngineFacts {
	e.mu.Lock()
	for _, t := range ts {
		e.creds = append(e.creds, o.Credentials)
		e.names = append(e.names, t.ServerName)
	}
	e.mu.Unlock()
	return e.raftByPod.Probe(ctx, ts, o)
}

// kubeadmEtcd is kube-system's three mirror pods of kubeadm's etcd, its
// command as kubeadm renders it (client certificates asked of clients).
func kubeadmEtcd() *Objects {
	var objs Objects
	for _, node := range []string{"cp-1", "cp-2", "cp-3"} {
		objs.Pods = append(objs.Pods, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-" + node, UID: types.UID("uid-" + node),
				Labels:      map[string]string{"component": "etcd", "tier": "control-plane"},
				Annotations: map[string]string{source.AnnotationMirror: "hash", source.AnnotationAdvertiseClientURLs: "https://10.0.0.1:2379"}},
			Spec: corev1.PodSpec{NodeName: node, HostNetwork: true, Containers: []corev1.Container{{Name: "etcd", Image: "registry.k8s.io/etcd:3.6.4-0",
				Command: []string{"etcd", "--client-cert-auth=true", "--data-dir=/var/lib/etcd", "--name=" + node, "--listen-client-urls=https://127.0.0.1:2379"}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "etcd", Ready: true, Started: ptr.To(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
		})
	}
	return &objs
}

// kubeadm's etcd is one cluster of the default layouts, its members
// asked with the client certificate of local files against the name
// kubeadm's serving certificates carry; without files they are not asked
// and say what to pass; no disruption budget is asked of mirror pods.
func TestKubeadmEtcdIsProbedWithLocalFiles(t *testing.T) {
	files := &engine.Credentials{CertPEM: []byte("c"), KeyPEM: []byte("k"), CAPEM: []byte("ca")}
	eng := &credsByPod{raftByPod: raftByPod{leader: "etcd-cp-2", names: []string{"etcd-cp-1", "etcd-cp-2", "etcd-cp-3"}}}
	o := &Observer{Source: staticSource{kubeadmEtcd()}, Engines: map[model.Engine]engine.Engine{etcdengine.Name: eng},
		Dial:      func(context.Context, string, string, int) (net.Conn, error) { return nil, errors.New("not dialled") },
		Now:       func() time.Time { return goldenNow },
		MemberTLS: files}
	res, _, err := o.Observe(context.Background(), "kube-system", "etcd")
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	c := r.Observation.Cluster
	if c.Layout != source.StaticPodsLayout || c.ManagedBy == nil || !c.Template.ClientCertAuth {
		t.Fatalf("layout %q, managed by %+v, client cert auth %v", c.Layout, c.ManagedBy, c.Template.ClientCertAuth)
	}
	if len(eng.creds) != 3 {
		t.Fatalf("%d probes, want one per member", len(eng.creds))
	}
	for i := range eng.creds {
		if eng.creds[i] != files || eng.names[i] != "localhost" {
			t.Errorf("probe %d: credentials %p (files %p), server name %q: want the files, localhost", i, eng.creds[i], files, eng.names[i])
		}
	}
	if !r.Verdict.FailoverReady || r.Analysis.LeaderMember != "etcd-cp-2" {
		t.Errorf("failover-ready %v, leader %q, reasons %v: a healthy kubeadm etcd, no budget asked of mirror pods", r.Verdict.FailoverReady, r.Analysis.LeaderMember, r.Verdict.Reasons)
	}
	if api := ToAPI(r); api.Layout != source.StaticPodsLayout || !strings.Contains(api.ManagedBy, "kubelet") {
		t.Errorf("document layout %q, managedBy %q", api.Layout, api.ManagedBy)
	}

	// A StatefulSet's members that ask for certificates are asked with
	// its Secret or none, never with the files meant for static pods.
	objs := kubeadmEtcd()
	lbl := map[string]string{"app": "kv"}
	objs.StatefulSets = []appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Name: "kv", Namespace: "kube-system", UID: "sts", Labels: map[string]string{LabelEngine: "etcd"}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "registry.k8s.io/etcd:3.6.16-0", Command: []string{"etcd", "--client-cert-auth"}}}}}}}}
	objs.Pods = append(objs.Pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kv-0", UID: "kv-0", Labels: lbl,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "kv", UID: "sts", Controller: ptr.To(true)}}},
		Spec:   corev1.PodSpec{NodeName: "cp-1", Containers: []corev1.Container{{Name: "etcd"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	eng.creds = nil
	o.Source = staticSource{objs}
	if _, _, err := o.Observe(context.Background(), "kube-system", "kv"); err != nil {
		t.Fatal(err)
	}
	if len(eng.creds) != 1 || eng.creds[0] != nil {
		t.Errorf("a StatefulSet's member asked with %v, want no credentials (it names no Secret)", eng.creds)
	}
	o.Source = staticSource{kubeadmEtcd()}

	o.MemberTLS, eng.creds = nil, nil
	res, warn, err := o.Observe(context.Background(), "kube-system", "etcd")
	if err != nil {
		t.Fatal(err)
	}
	if len(eng.creds) != 0 {
		t.Errorf("%d members asked without a certificate, want none", len(eng.creds))
	}
	if len(warn) == 0 || !strings.Contains(strings.Join(warn, "\n"), "--etcd-cert") {
		t.Errorf("warnings %q, want what to pass", warn)
	}
	for _, m := range res[0].Observation.Members {
		if m.Engine == nil || m.Engine.Failure != model.ProbeFailureCredentials || !strings.Contains(m.Engine.Err, "--etcd-cacert") {
			t.Errorf("member %s: %+v, want not asked for want of credentials, naming the flags", m.Name, m.Engine)
		}
	}
	if res[0].Verdict.FailoverReady {
		t.Error("failover-ready with no member asked")
	}
}
