package kwok

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Group is kwok's API group; Version its API version.
const (
	Group   = "kwok.x-k8s.io"
	Version = "v1alpha1"
)

// Resources of kwok's API the sandbox writes.
var (
	StageGVR       = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "stages"}
	PortForwardGVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "portforwards"}
	LogsGVR        = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "logs"}
	CRDGVR         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// EnabledCRDs are the kwok CRDs the controller is started with.
var EnabledCRDs = []string{"Stage", "PortForward", "ClusterPortForward", "Logs", "ClusterLogs"}

// stageFiles are the Stages the sandbox uses, relative to the stage dir:
// nodes become Ready at once and keep a Lease, ordinary pods become Ready
// at once, finish if owned by a Job, and go when deleted.
var stageFiles = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"pod/fast/pod-ready.yaml",
	"pod/fast/pod-complete.yaml",
	"pod/fast/pod-delete.yaml",
}

// Manifests are kwok's CRDs and the sandbox's Stages.
type Manifests struct {
	CRDs   []*unstructured.Unstructured
	Stages []*unstructured.Unstructured
}

// LoadManifests reads kwok's CRDs for EnabledCRDs and the sandbox's Stages
// from binDir/kwok-manifests, with every pod Stage made to skip pods that
// carry any of skipLabels.
func LoadManifests(binDir string, skipLabels ...string) (*Manifests, error) {
	root := filepath.Join(binDir, "kwok-manifests")
	m := &Manifests{}
	want := map[string]bool{}
	for _, k := range EnabledCRDs {
		want[k] = true
	}
	files, err := filepath.Glob(filepath.Join(root, "crd", "bases", "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			if o.GetKind() == "CustomResourceDefinition" && want[kind] {
				m.CRDs = append(m.CRDs, o)
				delete(want, kind)
			}
		}
	}
	if len(want) > 0 {
		return nil, fmt.Errorf("kwok CRDs not found under %s: %v", root, keys(want))
	}
	for _, f := range stageFiles {
		objs, err := readObjects(filepath.Join(root, "stage", f))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if o.GetKind() != "Stage" {
				continue
			}
			for _, l := range skipLabels {
				if err := SkipLabel(o, l); err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
			}
			m.Stages = append(m.Stages, o)
		}
	}
	return m, nil
}

// SkipLabel makes a pod Stage ignore pods that carry label: it prepends
// `{key: '.metadata.labels["<label>"]', operator: DoesNotExist}` to the
// Stage's selector (first, so the cheapest test rejects such pods).
// Stages of other kinds are left alone.
func SkipLabel(stage *unstructured.Unstructured, label string) error {
	return skip(stage, fmt.Sprintf(`.metadata.labels[%q]`, label))
}

// SkipAnnotation makes a pod Stage ignore pods that carry annotation, as
// SkipLabel does for a label: the sandbox's kwok never plays the kubelet
// for mirror pods (kubernetes.io/config.mirror), whose static pods the
// runner runs.
func SkipAnnotation(stage *unstructured.Unstructured, annotation string) error {
	return skip(stage, fmt.Sprintf(`.metadata.annotations[%q]`, annotation))
}

// SkipAnnotation applies SkipAnnotation to every Stage of m.
func (m *Manifests) SkipAnnotation(annotation string) error {
	for _, st := range m.Stages {
		if err := SkipAnnotation(st, annotation); err != nil {
			return fmt.Errorf("stage %s: %w", st.GetName(), err)
		}
	}
	return nil
}

// SkipController makes a pod Stage ignore pods whose controller owner
// reference is of kind in API group (any version), as SkipLabel does for
// a label: the sandbox's kwok never plays the kubelet for the cozystack
// etcd-operator's member pods (controlled by an EtcdMember), which carry
// no label of the sandbox's and which the runner runs.
func SkipController(stage *unstructured.Unstructured, group, kind string) error {
	return skip(stage, ControllerQuery(group, kind))
}

// ControllerQuery is the jq query (a Stage selector's key) yielding the
// name of a pod's controller owner of kind in API group: DoesNotExist
// selects the pods with no such controller.
func ControllerQuery(group, kind string) string {
	return fmt.Sprintf(`.metadata.ownerReferences[]? | select(.controller == true and .kind == %q and ((.apiVersion // "") | startswith(%q))) | .name`,
		kind, group+"/")
}

// SkipController applies SkipController to every Stage of m.
func (m *Manifests) SkipController(group, kind string) error {
	for _, st := range m.Stages {
		if err := SkipController(st, group, kind); err != nil {
			return fmt.Errorf("stage %s: %w", st.GetName(), err)
		}
	}
	return nil
}

// SkipQuery makes a pod Stage ignore pods for which the jq query key
// yields anything, as SkipLabel does for a label: the sandbox's kwok
// never plays the kubelet for Bitnami-style etcd members, which carry no
// label of the sandbox's and which the runner runs.
func SkipQuery(stage *unstructured.Unstructured, key string) error {
	return skip(stage, key)
}

// SkipQuery applies SkipQuery to every Stage of m.
func (m *Manifests) SkipQuery(key string) error {
	for _, st := range m.Stages {
		if err := SkipQuery(st, key); err != nil {
			return fmt.Errorf("stage %s: %w", st.GetName(), err)
		}
	}
	return nil
}

// skip prepends `{key: <key>, operator: DoesNotExist}` to a pod Stage's
// selector, once.
func skip(stage *unstructured.Unstructured, key string) error {
	kind, _, _ := unstructured.NestedString(stage.Object, "spec", "resourceRef", "kind")
	if kind != "Pod" {
		return nil
	}
	exprs, _, err := unstructured.NestedSlice(stage.Object, "spec", "selector", "matchExpressions")
	if err != nil {
		return err
	}
	for _, e := range exprs {
		if m, ok := e.(map[string]any); ok && m["key"] == key {
			return nil
		}
	}
	expr := map[string]any{"key": key, "operator": "DoesNotExist"}
	return unstructured.SetNestedSlice(stage.Object, append([]any{expr}, exprs...), "spec", "selector", "matchExpressions")
}

func readObjects(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(b, []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	return out, nil
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
