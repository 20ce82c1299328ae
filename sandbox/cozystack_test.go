package sandbox

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// cozystackScenarios are the cozystack etcd-operator's scenarios, which
// TestSandbox starts beside the demo set.
var cozystackScenarios = []string{"cozystack", "cozystack-split", "cozystack-cr-stale", "cozystack-member-stale"}

// tlsStatus asks one member, dialled alone over TLS, for its status.
func tlsStatus(ctx context.Context, url string, tc *tls.Config) (*clientv3.StatusResponse, error) {
	return memberStatus(ctx, url, clientv3.Config{TLS: tc})
}

// memberStatus asks one member, dialled alone at url with cfg's
// credentials, for its status.
func memberStatus(ctx context.Context, url string, cfg clientv3.Config) (*clientv3.StatusResponse, error) {
	cfg.Endpoints, cfg.DialTimeout, cfg.Logger = []string{url}, 2*time.Second, zap.NewNop()
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return c.Status(ctx, url)
}

// cozystackMember is one member of a cozystack cluster as the test sees
// it: its EtcdMember, its pod and what the member answers.
type cozystackMember struct {
	cr   *unstructured.Unstructured
	pod  *corev1.Pod
	st   *clientv3.StatusResponse
	err  error
	seed bool
}

func (m cozystackMember) flag(name string) string {
	for _, a := range m.pod.Spec.Containers[0].Command {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// cozystackOperator checks, in TestSandbox's sandbox, that the cozystack
// etcd-operator's scenarios are laid out as the operator lays them out,
// with nothing of hactl's on them, and that their real state is what
// each claims, asked independently with the operator-client Secret's
// certificate: one cluster ID equal to EtcdCluster.status.clusterID
// (cozystack), the seed in a cluster of its own (cozystack-split), one
// member answering (cozystack-cr-stale), an EtcdMember recording an ID
// its member does not answer with (cozystack-member-stale); and that
// `kubectl port-forward` reaches a member's TLS client port.
func cozystackOperator(t *testing.T, sb *Sandbox) {
	kc := kube(t, sb)
	cfg, err := sb.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := sb.State.Namespace

	load := func(t *testing.T, name string) (*unstructured.Unstructured, []cozystackMember) {
		t.Helper()
		cl, err := dyn.Resource(scenario.EtcdClusterGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tc, err := scenario.CozystackClientTLS(ctx, kc, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		sel := scenario.CozystackClusterLabel + "=" + name
		crs, err := dyn.Resource(scenario.EtcdMemberGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		if len(crs.Items) != 3 {
			t.Fatalf("%d EtcdMembers of %s", len(crs.Items), name)
		}
		var out []cozystackMember
		for i := range crs.Items {
			cr := &crs.Items[i]
			if !scenario.IsCozystackMemberName(name, cr.GetName()) {
				t.Errorf("EtcdMember %s is not named <cluster>-<generated>", cr.GetName())
			}
			if ctl := metav1.GetControllerOf(cr); ctl == nil || ctl.Kind != "EtcdCluster" || ctl.UID != cl.GetUID() {
				t.Errorf("EtcdMember %s's controller: %+v", cr.GetName(), ctl)
			}
			pod, err := kc.CoreV1().Pods(ns).Get(ctx, cr.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if ctl := metav1.GetControllerOf(pod); ctl == nil || ctl.Kind != "EtcdMember" || ctl.UID != cr.GetUID() {
				t.Errorf("pod %s's controller: %+v", pod.Name, ctl)
			}
			m, err := sb.Member(ctx, ns+"/"+pod.Name)
			if err != nil {
				t.Fatal(err)
			}
			// The runner, not kwok, owns the pod's status.
			if pod.Status.PodIP != m.PodIP {
				t.Errorf("pod %s reports IP %s, the runner gave it %s", pod.Name, pod.Status.PodIP, m.PodIP)
			}
			seed, _, _ := unstructured.NestedBool(cr.Object, "spec", "bootstrap")
			cm := cozystackMember{cr: cr, pod: pod, seed: seed}
			cm.st, cm.err = tlsStatus(ctx, "https://"+net.JoinHostPort(m.Address, "2379"), tc)
			out = append(out, cm)
		}
		slices.SortFunc(out, func(a, b cozystackMember) int {
			if a.seed != b.seed {
				if a.seed {
					return -1
				}
				return 1
			}
			return a.cr.GetCreationTimestamp().Compare(b.cr.GetCreationTimestamp().Time)
		})
		if !out[0].seed || out[1].seed || out[2].seed {
			t.Fatalf("want exactly one seed EtcdMember (spec.bootstrap) in %s", name)
		}
		return cl, out
	}
	clusterID := func(cl *unstructured.Unstructured) string {
		id, _, _ := unstructured.NestedString(cl.Object, "status", "clusterID")
		return id
	}
	hexID := func(id uint64) string { return fmt.Sprintf("%016x", id) }
	memberID := func(m cozystackMember) string {
		id, _, _ := unstructured.NestedString(m.cr.Object, "status", "memberID")
		return id
	}

	t.Run("nothing of hactl's on the operator's objects", func(t *testing.T) {
		for _, name := range cozystackScenarios {
			sel := metav1.ListOptions{LabelSelector: scenario.CozystackClusterLabel + "=" + name}
			cl, err := dyn.Resource(scenario.EtcdClusterGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			hactlFree(t, "EtcdCluster", cl.GetName(), cl.GetLabels(), cl.GetAnnotations())
			crs, err := dyn.Resource(scenario.EtcdMemberGVR).Namespace(ns).List(ctx, sel)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range crs.Items {
				hactlFree(t, "EtcdMember", o.GetName(), o.GetLabels(), o.GetAnnotations())
			}
			selectedHactlFree(ctx, t, kc, ns, name, sel, 3, 3, 2)
			pdbs, err := kc.PolicyV1().PodDisruptionBudgets(ns).List(ctx, sel)
			if err != nil || len(pdbs.Items) != 1 {
				t.Fatalf("PDBs of %s: %d, %v", name, len(pdbs.Items), err)
			}
			hactlFree(t, "PodDisruptionBudget", pdbs.Items[0].Name, pdbs.Items[0].Labels, pdbs.Items[0].Annotations)
			for _, s := range []string{scenario.CozystackServerSecret(name), scenario.CozystackOperatorClientSecret(name)} {
				sec, err := kc.CoreV1().Secrets(ns).Get(ctx, s, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if sec.Type != corev1.SecretTypeTLS || len(sec.Data["ca.crt"]) == 0 {
					t.Errorf("Secret %s: type %s, keys %d", s, sec.Type, len(sec.Data))
				}
				hactlFree(t, "Secret", sec.Name, sec.Labels, sec.Annotations)
			}
		}
	})

	t.Run("cozystack: one cluster, the CR's ID, the seed still new", func(t *testing.T) {
		cl, ms := load(t, "cozystack")
		for _, m := range ms {
			if m.err != nil {
				t.Fatalf("%s: %v", m.pod.Name, m.err)
			}
			if got := hexID(m.st.Header.ClusterId); got != clusterID(cl) {
				t.Errorf("%s answers for cluster %s, the EtcdCluster says %s", m.pod.Name, got, clusterID(cl))
			}
			if got := hexID(m.st.Header.MemberId); got != memberID(m) {
				t.Errorf("%s answers as member %s, its EtcdMember says %s", m.pod.Name, got, memberID(m))
			}
		}
		if got := ms[0].flag("initial-cluster-state"); got != "new" {
			t.Errorf("the seed's pod has --initial-cluster-state=%s", got)
		}
		if got, want := ms[0].flag("initial-cluster"), ms[0].pod.Name+"=http://"+scenario.CozystackMemberHost(ms[0].pod.Name, "cozystack", ns)+":2380"; got != want {
			t.Errorf("the seed's --initial-cluster=%s, want %s", got, want)
		}
		if got := ms[2].flag("initial-cluster-state"); got != "existing" || strings.Count(ms[2].flag("initial-cluster"), "=http://") != 3 {
			t.Errorf("the last member's flags %v", ms[2].pod.Spec.Containers[0].Command)
		}
		ep := portForward(t, sb, ns, ms[1].pod.Name, 2379)
		tc, err := scenario.CozystackClientTLS(ctx, kc, ns, "cozystack")
		if err != nil {
			t.Fatal(err)
		}
		st, err := tlsStatus(ctx, "https://"+ep, tc)
		if err != nil {
			t.Fatalf("TLS through the port-forward: %v", err)
		}
		if st.Header.MemberId != ms[1].st.Header.MemberId {
			t.Errorf("through the port-forward: member %x, want %x", st.Header.MemberId, ms[1].st.Header.MemberId)
		}
	})

	t.Run("cozystack-split: the seed answers another cluster ID", func(t *testing.T) {
		cl, ms := load(t, "cozystack-split")
		for _, m := range ms {
			if m.err != nil {
				t.Fatalf("%s: %v", m.pod.Name, m.err)
			}
		}
		if got := hexID(ms[0].st.Header.ClusterId); got == clusterID(cl) {
			t.Errorf("the seed answers for the EtcdCluster's cluster %s", got)
		}
		for _, m := range ms[1:] {
			if got := hexID(m.st.Header.ClusterId); got != clusterID(cl) {
				t.Errorf("%s answers for cluster %s, the EtcdCluster says %s", m.pod.Name, got, clusterID(cl))
			}
		}
		if got := ms[0].flag("initial-cluster-state"); got != "new" || !scenario.PodReady(ms[0].pod) {
			t.Errorf("the seed's pod: state %s, ready %v", got, scenario.PodReady(ms[0].pod))
		}
	})

	t.Run("cozystack-cr-stale: one member answers, the CR says Available", func(t *testing.T) {
		cl, ms := load(t, "cozystack-cr-stale")
		answering := 0
		for _, m := range ms {
			if m.err == nil {
				answering++
			}
		}
		if answering != 1 {
			t.Errorf("%d members answer, want 1", answering)
		}
		conds, _, _ := unstructured.NestedSlice(cl.Object, "status", "conditions")
		available := false
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Available" && m["status"] == "True" && m["reason"] == "QuorumHealthy" {
				available = true
			}
		}
		ready, _, _ := unstructured.NestedInt64(cl.Object, "status", "readyMembers")
		if !available || ready != 3 {
			t.Errorf("EtcdCluster status: available %v, readyMembers %d", available, ready)
		}
	})

	t.Run("cozystack-member-stale: an EtcdMember records another ID", func(t *testing.T) {
		cl, ms := load(t, "cozystack-member-stale")
		stale := 0
		for _, m := range ms {
			if m.err != nil {
				t.Fatalf("%s: %v", m.pod.Name, m.err)
			}
			if got := hexID(m.st.Header.ClusterId); got != clusterID(cl) {
				t.Errorf("%s answers for cluster %s, the EtcdCluster says %s", m.pod.Name, got, clusterID(cl))
			}
			if got := m.flag("initial-cluster-state"); got != "existing" {
				t.Errorf("%s's pod has --initial-cluster-state=%s", m.pod.Name, got)
			}
			if hexID(m.st.Header.MemberId) != memberID(m) {
				stale++
				if m.seed {
					t.Errorf("the seed's EtcdMember is the stale one")
				}
			}
		}
		if stale != 1 {
			t.Errorf("%d EtcdMembers record another member ID than their member's, want 1", stale)
		}
	})
}

// hactlFree reports every label or annotation of hactl's on the object
// kind name: the layouts are found without one.
func hactlFree(t *testing.T, kind, name string, labels, annotations map[string]string) {
	t.Helper()
	for _, m := range []map[string]string{labels, annotations} {
		for k := range m {
			if strings.HasPrefix(k, "hactl.dev/") || strings.Contains(k, ".hactl.dev/") {
				t.Errorf("%s %s carries %s", kind, name, k)
			}
		}
	}
}

// selectedHactlFree lists the pods, claims and Services sel selects in
// ns, wanting pods, pvcs and svcs of them, and reports any of hactl's
// labels or annotations on them (hactlFree).
func selectedHactlFree(ctx context.Context, t *testing.T, kc kubernetes.Interface, ns, name string, sel metav1.ListOptions, pods, pvcs, svcs int) {
	t.Helper()
	pl, err := kc.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil || len(pl.Items) != pods {
		t.Fatalf("pods of %s: %d, %v", name, len(pl.Items), err)
	}
	for _, o := range pl.Items {
		hactlFree(t, "Pod", o.Name, o.Labels, o.Annotations)
	}
	cl, err := kc.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel)
	if err != nil || len(cl.Items) != pvcs {
		t.Fatalf("PVCs of %s: %d, %v", name, len(cl.Items), err)
	}
	for _, o := range cl.Items {
		hactlFree(t, "PVC", o.Name, o.Labels, o.Annotations)
	}
	sl, err := kc.CoreV1().Services(ns).List(ctx, sel)
	if err != nil || len(sl.Items) != svcs {
		t.Fatalf("Services of %s: %d, %v", name, len(sl.Items), err)
	}
	for _, o := range sl.Items {
		hactlFree(t, "Service", o.Name, o.Labels, o.Annotations)
	}
}
