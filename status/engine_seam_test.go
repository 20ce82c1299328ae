package status

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
)

// toyDecoder is the toy engine's decoder: it recognises its image.
type toyDecoder struct{}

func (toyDecoder) Recognises(t model.PodTemplate) bool {
	return len(t.Containers) > 0 && model.ImageBase(t.Containers[0].Image) == "kv"
}
func (toyDecoder) Template(model.PodTemplate) model.TemplateFacts {
	return model.TemplateFacts{Container: "toy", ClientPort: 7777}
}
func (toyDecoder) ActionTemplate(_ model.PodTemplate, t *model.TemplateFacts) { t.DataDir = "/toy" }

// withToy are the shipped engines' decoders and the toy's.
func withToy() map[model.Engine]engine.Decoder {
	d := maps.Clone(decoders)
	d["toy"] = toyDecoder{}
	return d
}

// toyKeeper is the toy engine's keeper: its clusters are operator-owned
// and need ConfigMaps read.
type toyKeeper struct{}

func (toyKeeper) Keep(_ model.PodTemplate, _ model.APIObjects, c *model.ClusterFacts) model.Kept {
	c.Shape = model.ShapeOperatorOwned
	return model.Kept{}
}

// toyParts are the shipped engines' parts and the toy's.
func toyParts() engineParts {
	k := maps.Clone(parts.keepers)
	k["toy"] = toyKeeper{}
	return engineParts{decoders: withToy(), keepers: k}
}

// toyView is the toy engine's view: its roles, its lag unit and its
// table columns (a view's other parts are the live view's).
type toyView struct{ model.EngineView }

func (toyView) Role(m model.Member) string { return "toy-" + m.Engine.MemberID }
func (toyView) LagText(l *int64) string    { return "toy-lag" }
func (toyView) TableColumns() (narrow, wide []string) {
	return []string{"TOY", "ROLE"}, []string{"TOYWIDE"}
}
func (v toyView) TableCells(m model.Member) (narrow, wide []string) {
	return []string{"toy:" + m.Name, v.Role(m)}, []string{"wide:" + m.Name}
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
	sts := toyStatefulSet("toy")
	obs := decodeStatefulSet(sts, newIndex(&Objects{StatefulSets: []appsv1.StatefulSet{*sts}}), goldenNow, toyParts())
	if obs.Cluster.Template.ClientPort != 7777 || obs.Cluster.Shape != model.ShapeOperatorOwned || obs.Cluster.Patroni != nil {
		t.Errorf("toy decode: template %+v, shape %s, patroni %v", obs.Cluster.Template, obs.Cluster.Shape, obs.Cluster.Patroni)
	}
	if !needConfigMaps([]appsv1.StatefulSet{*sts}, toyParts()) || needConfigMaps([]appsv1.StatefulSet{*toyStatefulSet("etcd")}, toyParts()) {
		t.Error("ConfigMaps are needed for exactly the engines that say so")
	}
	obs.Members = []model.Member{{Name: "kv-0", Engine: &model.EngineFacts{Reachable: true, MemberID: "m0"}}}
	r := Evaluate(obs, goldenNow, judged(model.VerdictOptions{}))
	r.View = toyView{}
	cs := ToAPI(r)
	if cs.Members[0].Role != "toy-m0" {
		t.Errorf("toy member role %q", cs.Members[0].Role)
	}
	var b bytes.Buffer
	if err := PrintTable(&b, []*ClusterStatus{cs}, TableOptions{Now: goldenNow, Wide: true}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	head, row := strings.Join(strings.Fields(lines[1]), " "), strings.Join(strings.Fields(lines[2]), " ")
	if want := "ORD POD NODE TOY ROLE PHASE READY LAG VERSION RESTARTS AGE REASONS PVC TOYWIDE PROBE"; head != want {
		t.Errorf("toy table's columns\n%s\nwant\n%s", head, want)
	}
	if want := "0 - - toy:kv-0 toy-m0 absent false toy-lag - 0 - pod_missing - wide:kv-0 ok"; row != want {
		t.Errorf("toy table's row\n%s\nwant\n%s", row, want)
	}
}

// A cluster of an engine with no part is printed with the columns every
// engine has, no other engine's.
func TestUnknownEngineTableIsPlain(t *testing.T) {
	sts := toyStatefulSet("redis")
	obs := decodeStatefulSet(sts, newIndex(&Objects{StatefulSets: []appsv1.StatefulSet{*sts}}), goldenNow, parts)
	if obs.Cluster.Template.Container != "kv" || obs.Cluster.Template.ClientPort != 0 {
		t.Errorf("plain template %+v, want the first container and no engine's port", obs.Cluster.Template)
	}
	var b bytes.Buffer
	if err := PrintTable(&b, []*ClusterStatus{ToAPI(evaluated(obs, goldenNow))}, TableOptions{Now: goldenNow}); err != nil {
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
	if !needConfigMaps([]appsv1.StatefulSet{*sts}, engineParts{}) {
		t.Fatal("a StatefulSet naming its engine's ConfigMap needs ConfigMaps read")
	}
	cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "kv-mapping"}, Data: map[string]string{"port": "8080"}}
	obs := decodeStatefulSet(sts, newIndex(&Objects{StatefulSets: []appsv1.StatefulSet{*sts}, ConfigMaps: []corev1.ConfigMap{cm}}), goldenNow, parts)
	if obs.Cluster.EngineConfig["port"] != "8080" || obs.Cluster.EngineConfigErr != "" {
		t.Errorf("engine config %v, error %q", obs.Cluster.EngineConfig, obs.Cluster.EngineConfigErr)
	}
	missing := decodeStatefulSet(sts, newIndex(&Objects{StatefulSets: []appsv1.StatefulSet{*sts}, ConfigMapsRead: true}), goldenNow, parts)
	if missing.Cluster.EngineConfig != nil || !strings.Contains(missing.Cluster.EngineConfigErr, `ConfigMap "kv-mapping" named by annotation hactl.dev/engine-config does not exist`) {
		t.Errorf("missing ConfigMap: config %v, error %q", missing.Cluster.EngineConfig, missing.Cluster.EngineConfigErr)
	}
	obs.EngineProbed = true
	obs.Members = []model.Member{{Name: "kv-0", Engine: &model.EngineFacts{Reachable: true, MemberID: "m0", LeaderID: "m0", RaftTerm: 3, RaftIndex: 42, RaftApplied: 41}}}
	var b bytes.Buffer
	if err := PrintTable(&b, []*ClusterStatus{ToAPI(evaluated(obs, goldenNow))}, TableOptions{Now: goldenNow, Wide: true}); err != nil {
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
		svc("a-replicas", map[string]string{"app": "kv", "role": "replica"}), svc("kv", map[string]string{"app": "kv", "role": "leader"}),
		svc("kv-other", map[string]string{"app": "other", "role": "leader"}),
		svc("other", map[string]string{"app": "other"}),
		// Neither a Service per pod nor one across clusters is a client
		// Service.
		svc("kv-0-external", map[string]string{"app": "kv", "statefulset.kubernetes.io/pod-name": "kv-0"}),
		svc("leaders", map[string]string{"role": "leader"}),
	}}
	obs := decodeStatefulSet(sts, newIndex(objs), goldenNow, parts)
	if obs.ClientEndpoints == nil || obs.ClientEndpoints.Service != "kv" {
		t.Errorf("client endpoints %+v, want Service kv", obs.ClientEndpoints)
	}
	// A subset of the template's labels narrowed by a role (as Patroni's
	// primary Service selects cluster-name and role) counts too.
	sts.Spec.Template.Labels = map[string]string{"app": "kv", "cluster": "kv"}
	objs.StatefulSets = []appsv1.StatefulSet{*sts}
	obs = decodeStatefulSet(sts, newIndex(objs), goldenNow, parts)
	if obs.ClientEndpoints == nil || obs.ClientEndpoints.Service != "kv" {
		t.Errorf("client endpoints %+v, want Service kv (selecting a subset of the template's labels and a role)", obs.ClientEndpoints)
	}
	objs.Services = objs.Services[2:]
	if obs := decodeStatefulSet(sts, newIndex(objs), goldenNow, parts); obs.ClientEndpoints != nil {
		t.Errorf("client endpoints %+v from a Service per pod or across clusters", obs.ClientEndpoints)
	}
}

// judgedToy is an engine that keeps its verdict rules in its own package
// (as engine/http does): status hands them to the verdict and hands the
// cluster's settings to its probe.
type judgedToy struct{ configs chan map[string]string }

func (judgedToy) Name() model.Engine { return "toyjudged" }
func (e judgedToy) Probe(_ context.Context, ts []engine.Target, _ engine.ProbeOptions) []model.EngineFacts {
	out := make([]model.EngineFacts, len(ts))
	for i, t := range ts {
		e.configs <- t.Config
		out[i] = model.EngineFacts{Reachable: true, MemberID: t.Member}
	}
	return out
}
func (judgedToy) Members(engine.ProbeOptions) engine.MemberOps { return nil }
func (judgedToy) VerdictRules() model.VerdictRules             { return toyJudge{} }

type toyJudge struct{}

func (toyJudge) Judge(in model.JudgeInput) model.Judgement {
	n := len(in.Observation.Members)
	return model.Judgement{Phases: make([]model.Phase, n), Lags: make([]*int64, n), Formed: true,
		Reasons: []model.Reason{{Code: model.ReasonMemberNotReady, Member: in.Observation.Members[0].Name, Detail: "toy judged it"}}}
}
func (toyJudge) LagThreshold(t model.Thresholds, _ model.ClusterFacts) uint64 { return t.Lag }

// TestObserverHandsAJudgedEnginesRulesAndSettings: an Observer holding an
// engine with its own verdict rules judges that engine's clusters by them
// (not engine_unsupported), and each probe gets the cluster's settings
// from the ConfigMap its StatefulSet names.
func TestObserverHandsAJudgedEnginesRulesAndSettings(t *testing.T) {
	sts := toyStatefulSet("toyjudged")
	sts.Annotations = map[string]string{AnnotationEngineConfig: "kv-settings"}
	sts.Spec.Replicas = ptr.To(int32(1))
	sts.Spec.Template.Labels = map[string]string{"app": "kv"}
	sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kv"}}
	yes := true
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "kv-0", Labels: map[string]string{"app": "kv"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "kv", UID: sts.UID, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: "node-1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "kv-settings"}, Data: map[string]string{"port": "9000"}}
	eng := judgedToy{configs: make(chan map[string]string, 1)}
	o := &Observer{Source: staticSource{&Objects{StatefulSets: []appsv1.StatefulSet{*sts}, Pods: []corev1.Pod{pod}, ConfigMaps: []corev1.ConfigMap{cm}}},
		Engines: map[model.Engine]engine.Engine{"toyjudged": eng},
		Dial:    func(context.Context, string, string, int) (net.Conn, error) { return nil, errors.New("not dialled") }}
	if o.VerdictOptions().Rules["toyjudged"] == nil {
		t.Fatal("VerdictOptions does not hand the engine's rules")
	}
	res, _, err := o.Observe(context.Background(), "db", "kv")
	if err != nil || len(res) != 1 {
		t.Fatalf("observe: %v (%d results)", err, len(res))
	}
	var codes []model.ReasonCode
	for _, r := range res[0].Verdict.Reasons {
		codes = append(codes, r.Code)
	}
	if !slices.Contains(codes, model.ReasonMemberNotReady) || slices.Contains(codes, model.ReasonEngineUnsupported) {
		t.Errorf("reasons %v: not judged by the engine's own rules", codes)
	}
	select {
	case c := <-eng.configs:
		if c["port"] != "9000" {
			t.Errorf("the probe got settings %v, want the ConfigMap's", c)
		}
	default:
		t.Error("the member was not probed")
	}
}

// An engine's decoder finds its clusters without the hactl.dev/engine
// label, and what actions need of its template is its decoder's too; a
// StatefulSet no decoder recognises is no cluster.
func TestDecoderFindsItsClustersWithoutALabel(t *testing.T) {
	sts := toyStatefulSet("")
	delete(sts.Labels, LabelEngine)
	if e, ok := DetectEngine(sts, withToy()); !ok || e != "toy" {
		t.Fatalf("detected %q, %v; want the toy engine", e, ok)
	}
	if e, ok := DetectEngine(sts, decoders); ok {
		t.Errorf("detected %q without the toy's decoder", e)
	}
	sts.Labels = map[string]string{LabelEngine: "etcd"}
	if e, _ := DetectEngine(sts, withToy()); e != etcdengine.Name {
		t.Errorf("the label says etcd, detected %q", e)
	}
	sts.Labels = nil
	obs := decodeStatefulSet(sts, newIndex(&Objects{StatefulSets: []appsv1.StatefulSet{*sts}}), goldenNow, toyParts())
	DecodeActionFacts(&obs, sts, &Objects{StatefulSets: []appsv1.StatefulSet{*sts}}, withToy())
	if obs.Cluster.Engine != "toy" || obs.Cluster.Template.ClientPort != 7777 || obs.Cluster.Template.DataDir != "/toy" {
		t.Errorf("engine %q, template %+v", obs.Cluster.Engine, obs.Cluster.Template)
	}
}

// A keeper whose objects the read did not fetch (a source handed no
// engines, an observer handed Patroni) reports them unknown, not absent:
// no leader lock is never concluded from ConfigMaps nobody read.
func TestUnreadConfigMapsAreUnknownNotAbsent(t *testing.T) {
	sts := toyStatefulSet("patroni")
	for _, c := range []struct {
		objs   Objects
		unread bool
	}{
		{Objects{StatefulSets: []appsv1.StatefulSet{*sts}}, true},
		// The template names no DCS kind: with no ConfigMap record, the
		// lock may be on the Endpoints, which were not read.
		{Objects{StatefulSets: []appsv1.StatefulSet{*sts}, ConfigMapsRead: true}, true},
		{Objects{StatefulSets: []appsv1.StatefulSet{*sts}, ConfigMapsRead: true, EndpointsRead: true}, false},
	} {
		obs := decodeStatefulSet(sts, newIndex(&c.objs), goldenNow, parts)
		p := obs.Cluster.Patroni
		if p == nil || (p.ObjectsErr != "") != c.unread || p.LockFound {
			t.Errorf("read %v, %v: Patroni facts %+v", c.objs.ConfigMapsRead, c.objs.EndpointsRead, p)
		}
	}
}
