package kwok

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const podStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
`

func TestSkipLabelPrependsOnce(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(p, []byte(podStage), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := readObjects(p)
	if err != nil || len(objs) != 1 {
		t.Fatalf("readObjects: %v, %d", err, len(objs))
	}
	st := objs[0]
	for range 2 {
		if err := SkipLabel(st, "hactl.dev/engine"); err != nil {
			t.Fatal(err)
		}
	}
	exprs, _, _ := unstructured.NestedSlice(st.Object, "spec", "selector", "matchExpressions")
	if len(exprs) != 2 {
		t.Fatalf("want 2 expressions, got %v", exprs)
	}
	first := exprs[0].(map[string]any)
	if first["key"] != `.metadata.labels["hactl.dev/engine"]` || first["operator"] != "DoesNotExist" {
		t.Fatalf("first expression %v", first)
	}
}

func TestSkipLabelLeavesNodeStages(t *testing.T) {
	st := &unstructured.Unstructured{Object: map[string]any{
		"kind": "Stage",
		"spec": map[string]any{"resourceRef": map[string]any{"kind": "Node"}},
	}}
	if err := SkipLabel(st, "x"); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedSlice(st.Object, "spec", "selector", "matchExpressions"); found {
		t.Fatal("node stage was changed")
	}
}

// TestLoadManifestsFromBinDir reads the manifests testbins installed, when
// HACTL_TESTBINS_DIR names them (the e2e tests cover them otherwise).
func TestLoadManifestsFromBinDir(t *testing.T) {
	bin := os.Getenv("HACTL_TESTBINS_DIR")
	if bin == "" {
		t.Skip("HACTL_TESTBINS_DIR not set")
	}
	m, err := LoadManifests(bin, "hactl.dev/engine")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.CRDs) != len(EnabledCRDs) || len(m.Stages) != len(stageFiles) {
		t.Fatalf("%d CRDs, %d stages", len(m.CRDs), len(m.Stages))
	}
	pods := 0
	for _, st := range m.Stages {
		kind, _, _ := unstructured.NestedString(st.Object, "spec", "resourceRef", "kind")
		if kind != "Pod" {
			continue
		}
		pods++
		exprs, _, _ := unstructured.NestedSlice(st.Object, "spec", "selector", "matchExpressions")
		if exprs[0].(map[string]any)["operator"] != "DoesNotExist" {
			t.Errorf("%s does not skip engine pods first", st.GetName())
		}
	}
	if pods != 3 {
		t.Fatalf("%d pod stages", pods)
	}
}

func TestSkipAnnotationPrependsOnce(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(p, []byte(podStage), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := readObjects(p)
	if err != nil || len(objs) != 1 {
		t.Fatalf("readObjects: %v, %d", err, len(objs))
	}
	m := &Manifests{Stages: objs}
	for range 2 {
		if err := m.SkipAnnotation("kubernetes.io/config.mirror"); err != nil {
			t.Fatal(err)
		}
	}
	if err := SkipLabel(objs[0], "hactl.dev/engine"); err != nil {
		t.Fatal(err)
	}
	exprs, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "selector", "matchExpressions")
	if len(exprs) != 3 {
		t.Fatalf("want 3 expressions, got %v", exprs)
	}
	second := exprs[1].(map[string]any)
	if second["key"] != `.metadata.annotations["kubernetes.io/config.mirror"]` || second["operator"] != "DoesNotExist" {
		t.Fatalf("annotation expression %v", second)
	}
}

func TestSkipControllerQuery(t *testing.T) {
	st := &unstructured.Unstructured{Object: map[string]any{
		"kind": "Stage",
		"spec": map[string]any{"resourceRef": map[string]any{"kind": "Pod"}},
	}}
	for range 2 {
		if err := SkipController(st, "etcd-operator.cozystack.io", "EtcdMember"); err != nil {
			t.Fatal(err)
		}
	}
	exprs, _, _ := unstructured.NestedSlice(st.Object, "spec", "selector", "matchExpressions")
	if len(exprs) != 1 {
		t.Fatalf("want 1 expression, got %v", exprs)
	}
	want := `.metadata.ownerReferences[]? | select(.controller == true and .kind == "EtcdMember" and ((.apiVersion // "") | startswith("etcd-operator.cozystack.io/"))) | .name`
	if e := exprs[0].(map[string]any); e["key"] != want || e["operator"] != "DoesNotExist" {
		t.Fatalf("expression %v", e)
	}
}
