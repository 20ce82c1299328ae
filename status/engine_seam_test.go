package status

import (
	"bytes"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/verdict"
)

// toyStatus is an engine's part of status in a test: the seam is all
// decoding, the document and the table need.
type toyStatus struct{}

func (toyStatus) template(sts *appsv1.StatefulSet) model.TemplateFacts {
	return model.TemplateFacts{Container: "toy", ClientPort: 7777}
}
func (toyStatus) decode(_ *appsv1.StatefulSet, _ *index, obs *model.Observation) {
	obs.Cluster.Shape = model.ShapeOperatorOwned
}
func (toyStatus) configMaps() bool { return true }
func (toyStatus) member(ms *MemberStatus, e *model.EngineFacts) {
	ms.Role = "toy-" + e.MemberID
}
func (toyStatus) columns(TableOptions) []string { return []string{"TOY", "ROLE"} }
func (toyStatus) row(m MemberStatus, _ TableOptions) []string {
	return []string{"toy:" + m.Name, m.Role}
}

func toyStatefulSet(engine string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "kv", UID: "uid-kv", Labels: map[string]string{LabelEngine: engine}},
		Spec:       appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kv", Image: "example/kv:1"}}}}},
	}
}

// Decoding, the document and the table reach an engine through its part
// alone: a toy engine's template, shape, ConfigMaps need, member role and
// table, and no other engine's.
func TestToyEngineThroughTheStatusSeam(t *testing.T) {
	engineStatuses["toy"] = toyStatus{}
	defer delete(engineStatuses, "toy")
	sts := toyStatefulSet("toy")
	obs := decodeCluster(sts, newIndex(&Objects{StatefulSets: []appsv1.StatefulSet{*sts}}), goldenNow)
	if obs.Cluster.Template.ClientPort != 7777 || obs.Cluster.Shape != model.ShapeOperatorOwned || obs.Cluster.Patroni != nil {
		t.Errorf("toy decode: template %+v, shape %s, patroni %v", obs.Cluster.Template, obs.Cluster.Shape, obs.Cluster.Patroni)
	}
	if !needConfigMaps([]appsv1.StatefulSet{*sts}) || needConfigMaps([]appsv1.StatefulSet{*toyStatefulSet("etcd")}) {
		t.Error("ConfigMaps are needed for exactly the engines that say so")
	}
	obs.Members = []model.Member{{Name: "kv-0", Engine: &model.EngineFacts{Reachable: true, MemberID: "m0"}}}
	cs := ToAPI(Evaluate(obs, goldenNow, verdict.Options{}))
	if cs.Members[0].Role != "toy-m0" {
		t.Errorf("toy member role %q", cs.Members[0].Role)
	}
	var b bytes.Buffer
	if err := PrintTable(&b, []*ClusterStatus{cs}, TableOptions{Now: goldenNow}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "TOY") || !strings.Contains(out, "toy:kv-0") || strings.Contains(out, "MEMBER ID") {
		t.Errorf("toy table:\n%s", out)
	}
}

// A cluster of an engine with no part is printed with the columns every
// engine has, no other engine's.
func TestUnknownEngineTableIsPlain(t *testing.T) {
	sts := toyStatefulSet("redis")
	obs := decodeCluster(sts, newIndex(&Objects{StatefulSets: []appsv1.StatefulSet{*sts}}), goldenNow)
	if obs.Cluster.Template.Container != "kv" || obs.Cluster.Template.ClientPort != 0 {
		t.Errorf("plain template %+v, want the first container and no engine's port", obs.Cluster.Template)
	}
	var b bytes.Buffer
	if err := PrintTable(&b, []*ClusterStatus{ToAPI(Evaluate(obs, goldenNow, verdict.Options{}))}, TableOptions{Now: goldenNow}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "engine_unsupported") || strings.Contains(out, "MEMBER ID") || strings.Contains(out, "TL") {
		t.Errorf("unknown engine's table:\n%s", out)
	}
}

// An engine that keeps its part in its own package (the http engine)
// gets its settings from the ConfigMap the StatefulSet names, its members
// probed and printed with roles, identities and lags, and a named
// ConfigMap that is missing says so instead of leaving the engine without
// settings in silence.
func TestEngineConfigAndPositionsTable(t *testing.T) {
	sts := toyStatefulSet("http")
	sts.Annotations = map[string]string{AnnotationEngineConfig: "kv-mapping"}
	if !needConfigMaps([]appsv1.StatefulSet{*sts}) {
		t.Fatal("a StatefulSet naming its engine's ConfigMap needs ConfigMaps read")
	}
	cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "kv-mapping"}, Data: map[string]string{"port": "8080"}}
	obs := decodeCluster(sts, newIndex(&Objects{StatefulSets: []appsv1.StatefulSet{*sts}, ConfigMaps: []corev1.ConfigMap{cm}}), goldenNow)
	if obs.Cluster.EngineConfig["port"] != "8080" || obs.Cluster.EngineConfigErr != "" {
		t.Errorf("engine config %v, error %q", obs.Cluster.EngineConfig, obs.Cluster.EngineConfigErr)
	}
	missing := decodeCluster(sts, newIndex(&Objects{StatefulSets: []appsv1.StatefulSet{*sts}}), goldenNow)
	if missing.Cluster.EngineConfig != nil || !strings.Contains(missing.Cluster.EngineConfigErr, `ConfigMap "kv-mapping" named by annotation hactl.dev/engine-config does not exist`) {
		t.Errorf("missing ConfigMap: config %v, error %q", missing.Cluster.EngineConfig, missing.Cluster.EngineConfigErr)
	}
	obs.EngineProbed = true
	obs.Members = []model.Member{{Name: "kv-0", Engine: &model.EngineFacts{Reachable: true, MemberID: "m0", LeaderID: "m0", RaftTerm: 3, RaftIndex: 42, RaftApplied: 41}}}
	var b bytes.Buffer
	if err := PrintTable(&b, []*ClusterStatus{ToAPI(Evaluate(obs, goldenNow, verdict.Options{}))}, TableOptions{Now: goldenNow, Wide: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"ROLE", "MEMBER ID", "LAG", "FRONTIER", "APPLIED", "leader", "m0", "42", "41"} {
		if !strings.Contains(out, want) {
			t.Errorf("positions table lacks %q:\n%s", want, out)
		}
	}
}

// A client Service that selects the cluster's pods by a label beyond the
// template's (a store's leader Service: role=leader) is found for any
// engine, the one named like the StatefulSet first; without one the
// cluster has none.
func TestClientServiceSelectingByRole(t *testing.T) {
	sts := toyStatefulSet("http")
	sts.Spec.Template.Labels = map[string]string{"app": "kv"}
	yes := true
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "kv-0", Labels: map[string]string{"app": "kv", "role": "leader"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "kv", UID: sts.UID, Controller: &yes}}}}
	svc := func(name string, sel map[string]string) corev1.Service {
		return corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name}, Spec: corev1.ServiceSpec{Selector: sel, ClusterIP: "10.0.0.1"}}
	}
	objs := &Objects{StatefulSets: []appsv1.StatefulSet{*sts}, Pods: []corev1.Pod{pod}, Services: []corev1.Service{
		svc("a-replicas", map[string]string{"app": "kv", "role": "leader"}), svc("kv", map[string]string{"app": "kv", "role": "leader"}),
		svc("other", map[string]string{"app": "other"}),
	}}
	obs := decodeCluster(sts, newIndex(objs), goldenNow)
	if obs.ClientEndpoints == nil || obs.ClientEndpoints.Service != "kv" {
		t.Errorf("client endpoints %+v, want Service kv", obs.ClientEndpoints)
	}
	objs.Services = objs.Services[2:]
	if obs := decodeCluster(sts, newIndex(objs), goldenNow); obs.ClientEndpoints != nil {
		t.Errorf("client endpoints %+v from a Service selecting none of the pods", obs.ClientEndpoints)
	}
}
