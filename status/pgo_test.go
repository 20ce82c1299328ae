package status

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
)

// pgoObjects writes what Crunchy PGO and its Patroni leave on the API
// server for PostgresCluster name with instances: a StatefulSet per
// instance (replicas 1, controlled by the PostgresCluster), its pod
// <instance>-0 labelled with the scope and, by Patroni, the role (the
// first instance is the primary), the leader record on the Endpoints
// <name>-ha (also the selector-less Service of that name, with its
// slice), and no hactl label anywhere.
func pgoObjects(t *testing.T, c kubernetes.Interface, ns, name string, instances []string, renew time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const prefix = "postgres-operator.crunchydata.com/"
	owner := metav1.OwnerReference{APIVersion: prefix + "v1beta1", Kind: "PostgresCluster", Name: name, UID: types.UID("pc-" + name), Controller: ptr.To(true)}
	for i, in := range instances {
		sel := map[string]string{prefix + "cluster": name, prefix + "instance-set": "instance1", prefix + "instance": in}
		tl := map[string]string{prefix + "data": "postgres", prefix + "patroni": name + "-ha"}
		for k, v := range sel {
			tl[k] = v
		}
		sts := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: in, Labels: map[string]string{prefix + "cluster": name, prefix + "instance": in}, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To(int32(1)), ServiceName: name + "-pods",
				Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: tl},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "database", Image: "registry.developers.crunchydata.com/crunchydata/crunchy-postgres:ubi9-15.12-2520",
						Command: []string{"sh", "-c", "--", `exec "$@"`, "--", "patroni", "/etc/patroni"},
						Env: []corev1.EnvVar{
							{Name: "PATRONI_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
							{Name: "PATRONI_KUBERNETES_POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
							{Name: "PATRONI_RESTAPI_LISTEN", Value: "*:8008"},
							{Name: "PATRONI_POSTGRESQL_DATA_DIR", Value: "/pgdata/pg15"},
						},
					}}},
				},
			},
		}
		sts, err := c.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pl := map[string]string{prefix + "role": "replica"}
		if i == 0 {
			pl[prefix+"role"] = "master"
		}
		for k, v := range tl {
			pl[k] = v
		}
		ref := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: in, UID: sts.UID, Controller: ptr.To(true)}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: in + "-0", Labels: pl, OwnerReferences: []metav1.OwnerReference{ref},
				Annotations: map[string]string{"status": `{"state":"running","role":"replica","version":"3.0.2"}`}},
			Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i), Containers: sts.Spec.Template.Spec.Containers},
		}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stamp := renew.UTC().Format("2006-01-02T15:04:05.000000+00:00")
	lbl := map[string]string{prefix + "cluster": name, prefix + "patroni": name + "-ha"}
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name + "-ha", Labels: lbl, //nolint:staticcheck // Patroni's objects
		Annotations: map[string]string{"leader": instances[0] + "-0", "renewTime": stamp, "acquireTime": stamp, "transitions": "0", "ttl": "30"}}}
	if _, err := c.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{}); err != nil { //nolint:staticcheck // Patroni's objects
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name + "-ha", Labels: lbl}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "postgres", Port: 5432}}}}
	if _, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-ha-x", Labels: map[string]string{discoveryv1.LabelServiceName: name + "-ha"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: instances[0] + "-0", Namespace: ns}}},
	}
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestPGOClusterIsOne: a Crunchy PGO PostgresCluster's instance
// StatefulSets, with no hactl label, are one cluster named as the
// PostgresCluster, its members the instances' pods with the roles
// Patroni labelled, its leader lock on the Endpoints <cluster>-ha,
// operator-owned, dialled with the first instance's certificates; and
// nothing is said of it on stderr.
func TestPGOClusterIsOne(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	instances := []string{"hippo-instance1-a9kq", "hippo-instance1-b2zx", "hippo-instance1-c7tw"}
	pgoObjects(t, admin, ns, "hippo", instances, time.Now().Add(-2*time.Second))

	o := &Observer{Source: APISource{Client: admin, Engines: registry.Engines()}, Engines: registry.Engines(), Secrets: SecretsFrom(admin), Verdict: judged(model.VerdictOptions{})}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, warns, err := o.Observe(ctx, ns, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warns {
		if strings.Contains(w, "hippo") {
			t.Errorf("warning: %s", w)
		}
	}
	if len(rs) != 1 {
		names := []string{}
		for _, r := range rs {
			names = append(names, r.Observation.Cluster.Name)
		}
		t.Fatalf("clusters %v, want hippo alone", names)
	}
	c := rs[0].Observation.Cluster
	if c.Name != "hippo" || c.Engine != "patroni" || c.UID != "pc-hippo" || c.Layout != "Crunchy PGO instances" || c.Shape != model.ShapeOperatorOwned ||
		c.Template.OperatorOwner != "PostgresCluster/hippo" || c.ServiceName != "hippo-pods" || c.Replicas != 3 {
		t.Errorf("cluster %s engine %s uid %s layout %q shape %s owner %q service %q replicas %d", c.Name, c.Engine, c.UID, c.Layout, c.Shape, c.Template.OperatorOwner, c.ServiceName, c.Replicas)
	}
	if c.TLSSecret != "hippo-instance1-a9kq-certs" || c.TLSCAKey != "patroni.ca-roots" || c.TLSCertKey != "patroni.crt-combined" {
		t.Errorf("TLS %q %q %q", c.TLSSecret, c.TLSCAKey, c.TLSCertKey)
	}
	p := c.Patroni
	if p == nil || p.Scope != "hippo-ha" || p.DCS != model.DCSEndpoints || !p.LockFound || p.LockHolder != instances[0]+"-0" {
		t.Fatalf("Patroni facts %+v", p)
	}
	var names, roles []string
	for _, m := range rs[0].Observation.Members {
		names = append(names, m.Name)
		if m.Pod != nil {
			roles = append(roles, m.Pod.RoleLabel)
		}
	}
	if !slices.Equal(names, []string{instances[0] + "-0", instances[1] + "-0", instances[2] + "-0"}) || !slices.Equal(roles, []string{"master", "replica", "replica"}) {
		t.Errorf("members %v, roles %v", names, roles)
	}
	if e := rs[0].Observation.ClientEndpoints; e == nil || e.Service != "hippo-ha" || !slices.Equal(e.Pods, []string{instances[0] + "-0"}) {
		t.Errorf("primary endpoints %+v", e)
	}
	// Asked by name, as the user knows it.
	if rs, _, err := o.Observe(ctx, ns, "hippo"); err != nil || len(rs) != 1 {
		t.Errorf("status hippo: %d clusters, %v", len(rs), err)
	}
}
