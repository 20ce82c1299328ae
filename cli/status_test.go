package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/hactl-dev/hactl/actions"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/controlplane"
	"github.com/hactl-dev/hactl/status"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { testenv.Main(m, controlplane.Options{}, &cp) }

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := Run(streams, append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...))
	return out.String(), errOut.String(), code
}

func TestStatusCommand(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-ok"))
	broken := fixtures.DefaultSpec("etcd-noep")
	broken.Ready = 0
	fixtures.CreateCluster(t, admin, ns, broken)

	t.Run("control-ready but unprobed exits 3", func(t *testing.T) {
		out, errOut, code := run(t, "-n", ns, "status", "etcd-ok", "--no-probe")
		if code != ExitNotFailoverReady {
			t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errOut)
		}
		if !strings.Contains(out, "etcd-ok") || !strings.Contains(out, "lag_unknown") {
			t.Errorf("table lacks the cluster or lag_unknown:\n%s", out)
		}
	})
	t.Run("not control-ready exits 4", func(t *testing.T) {
		_, _, code := run(t, "-n", ns, "status", "etcd-noep", "--no-probe")
		if code != ExitNotControlReady {
			t.Fatalf("exit %d, want 4", code)
		}
	})
	t.Run("the worst cluster decides", func(t *testing.T) {
		_, _, code := run(t, "-n", ns, "status", "--no-probe")
		if code != ExitNotControlReady {
			t.Fatalf("exit %d, want 4", code)
		}
	})
	t.Run("unknown cluster exits 1 and lists what exists", func(t *testing.T) {
		_, errOut, code := run(t, "-n", ns, "status", "nope", "--no-probe")
		if code != ExitError || !strings.Contains(errOut, "etcd-ok") || !strings.Contains(errOut, "etcd-noep") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("json schema", func(t *testing.T) {
		out, _, _ := run(t, "-n", ns, "status", "etcd-ok", "--no-probe", "-o", "json")
		var cs status.ClusterStatus
		if err := json.Unmarshal([]byte(out), &cs); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if cs.APIVersion != "hactl.dev/v1alpha1" || cs.Kind != "ClusterStatus" || cs.Metadata.Name != "etcd-ok" || len(cs.Members) != 3 {
			t.Errorf("unexpected document: %+v", cs)
		}
		out, _, _ = run(t, "-n", ns, "status", "--no-probe", "-o", "yaml")
		if !strings.Contains(out, "kind: ClusterStatusList") {
			t.Errorf("yaml list:\n%s", out)
		}
	})
	t.Run("jsonpath", func(t *testing.T) {
		out, errOut, _ := run(t, "-n", ns, "status", "etcd-noep", "--no-probe", "-o", "jsonpath={.verdict.controlReady} {.verdict.reasons[0].code}")
		if out != "false client_endpoints_missing" {
			t.Errorf("jsonpath = %q (%s)", out, errOut)
		}
		out, errOut, code := run(t, "-n", ns, "status", "etcd-noep", "--no-probe", "-o", "jsonpath-as-json={.verdict.controlReady}")
		if code == ExitUsage || !strings.Contains(out, "false") {
			t.Errorf("jsonpath-as-json: exit %d out %q (%s)", code, out, errOut)
		}
	})
	// Go templates print what kubectl's Go template printer prints on the
	// same document (internal/gotemplate, without text/template's binary
	// cost: docs/size.md).
	t.Run("go-template", func(t *testing.T) {
		doc, errOut, _ := run(t, "-n", ns, "status", "--no-probe", "-o", "json")
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON([]byte(doc)); err != nil {
			t.Fatalf("not JSON: %v\n%s%s", err, doc, errOut)
		}
		tmplFile := filepath.Join(t.TempDir(), "t.tmpl")
		for _, tmpl := range []string{
			`{{range .items}}{{.metadata.name}} ready={{.readyMembers}} control={{.verdict.controlReady}}{{"\n"}}{{end}}`,
			`{{range .items}}{{range .verdict.reasons}}{{.code}}{{if .member}}/{{.member}}{{end}} {{end}}{{end}}`,
			`{{range $i, $c := .items}}{{if $i}},{{end}}{{$c.metadata.name}}:{{len $c.members}}:{{index $c.members 0 "name"}}{{end}} {{.kind}} {{.nope}}`,
			`{{with index .items 0}}{{printf "%s/%s %v" .metadata.namespace .metadata.name .verdict.failoverReady}}{{end}}`,
		} {
			ref, err := printers.NewGoTemplatePrinter([]byte(tmpl))
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := ref.PrintObj(obj, &want); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(want.String(), "<no value>") != strings.Contains(tmpl, ".nope") {
				t.Fatalf("the reference printed %q", want.String())
			}
			out, errOut, code := run(t, "-n", ns, "status", "--no-probe", "-o", "go-template="+tmpl)
			if out != want.String() || code == ExitUsage || code == ExitError {
				t.Errorf("-o go-template=%s: exit %d, printed %q (%s); kubectl's printer prints %q", tmpl, code, out, errOut, want.String())
			}
			if err := os.WriteFile(tmplFile, []byte(tmpl), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, errOut, _ := run(t, "-n", ns, "status", "--no-probe", "-o", "go-template-file="+tmplFile); out != want.String() {
				t.Errorf("-o go-template-file: printed %q (%s), want %q", out, errOut, want.String())
			}
			if out, errOut, _ := run(t, "-n", ns, "status", "--no-probe", "-o", "go-template", "--template", tmpl); out != want.String() {
				t.Errorf("-o go-template --template: printed %q (%s), want %q", out, errOut, want.String())
			}
		}
		// --template alone is a Go template, as in kubectl.
		if out, errOut, _ := run(t, "-n", ns, "status", "etcd-ok", "--no-probe", "--template", "{{.metadata.name}}"); out != "etcd-ok" {
			t.Errorf("--template alone: %q (%s)", out, errOut)
		}
		// One cluster by name is a ClusterStatus, not a list.
		if out, errOut, _ := run(t, "-n", ns, "status", "etcd-ok", "--no-probe", "-o", "template={{.kind}} {{.metadata.name}}"); out != "ClusterStatus etcd-ok" {
			t.Errorf("template=: %q (%s)", out, errOut)
		}
		// A missing key is an error when asked, and prints nothing.
		out, errOut, code := run(t, "-n", ns, "status", "etcd-ok", "--no-probe", "--allow-missing-template-keys=false", "-o", "go-template=before {{.nope}}")
		if code != ExitError || out != "" || !strings.Contains(errOut, `map has no entry for key "nope"`) {
			t.Errorf("missing key: exit %d out %q err %q", code, out, errOut)
		}
		// Bad templates are usage errors, before anything is read.
		for o, want := range map[string]string{
			"go-template={{.kind":               "the template does not parse",
			"go-template":                       "-o go-template needs a template",
			"go-template-file=/nonexistent.tpl": "reading the template file",
			"bogus":                             "allowed formats are",
		} {
			out, errOut, code := run(t, "-n", ns, "status", "--no-probe", "-o", o)
			if code != ExitUsage || out != "" || !strings.Contains(errOut, want) {
				t.Errorf("-o %s: exit %d out %q err %q; want exit %d saying %q", o, code, out, errOut, ExitUsage, want)
			}
		}
	})
	t.Run("no clusters", func(t *testing.T) {
		empty := testenv.Namespace(t, cp)
		out, errOut, code := run(t, "-n", empty, "status", "--no-probe")
		if code != ExitOK || out != "" || !strings.Contains(errOut, "No HA clusters found") {
			t.Fatalf("exit %d out %q err %q", code, out, errOut)
		}
	})
	t.Run("color never and always", func(t *testing.T) {
		out, _, _ := run(t, "-n", ns, "status", "etcd-ok", "--no-probe", "--color", "never")
		if strings.Contains(out, "\x1b[") {
			t.Error("--color never printed escapes")
		}
		out, _, _ = run(t, "-n", ns, "status", "etcd-ok", "--no-probe", "--color", "always")
		if !strings.Contains(out, "\x1b[") {
			t.Error("--color always printed no escapes")
		}
	})
}

// startWatch runs `status --watch --no-probe -o json` in namespace ns as
// the user of kubeconfig, in the background until the test ends (then it
// must stop within 30s); done receives its exit code.
func startWatch(t *testing.T, kubeconfig, ns string, out, errOut io.Writer) (done <-chan int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan int, 1)
	go func() {
		streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
		ch <- RunContext(ctx, streams, []string{"--kubeconfig", kubeconfig, "-n", ns, "status", "--watch", "--no-probe", "-o", "json"})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Error("watch did not stop after cancel")
		}
	})
	return ch
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}

// TestWatchJSONLines: a change seen by the watch prints one more JSON
// document, each on its own line.
func TestWatchJSONLines(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-w"))

	out := &syncBuffer{}
	startWatch(t, cp.AdminKubeconfig, ns, out, io.Discard)
	testenv.Poll(t, 30*time.Second, func() (bool, error) { return out.lines()[0] != "", nil })

	fixtures.MarkNotReady(t, admin, ns, "etcd-w-1")
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		ls := out.lines()
		return len(ls) >= 2 && strings.Contains(ls[len(ls)-1], "pod_not_ready"), nil
	})
	for i, l := range out.lines() {
		var doc status.ClusterStatusList
		if err := json.Unmarshal([]byte(l), &doc); err != nil || doc.Kind != "ClusterStatusList" {
			t.Errorf("line %d is not one ClusterStatusList document: %v\n%s", i, err, l)
		}
	}
}

// TestStatusShowsActionPhase: an action recorded in the cluster's ledger
// shows in status with its phase, found with one labelled list.
func TestStatusShowsActionPhase(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-act"))
	l := &actions.Ledger{Client: admin, Namespace: ns, Cluster: "etcd-act"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now()
	if _, err := l.Begin(ctx, model.LedgerEntry{ID: "replace-1", Action: model.ActionReplace, Member: "etcd-act-1",
		Holder: "test", State: model.EntryInProgress, Phase: model.ActionPhaseCatchingUp, StartedAt: now, UpdatedAt: now}, nil, now); err != nil {
		t.Fatal(err)
	}
	out, errOut, _ := run(t, "-n", ns, "status", "etcd-act", "--no-probe", "-o", "json")
	var cs status.ClusterStatus
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if len(cs.Actions) != 1 || cs.Actions[0].Phase != "catching-up" || cs.Actions[0].Member != "etcd-act-1" {
		t.Fatalf("actions = %+v", cs.Actions)
	}
	out, _, _ = run(t, "-n", ns, "status", "etcd-act", "--no-probe")
	if !strings.Contains(out, "action replace etcd-act-1: in-progress, phase catching-up") {
		t.Errorf("table does not show the action:\n%s", out)
	}
}

// TestWatchWithoutEvents: `status --watch` for a user who may not list or
// watch events prints the clusters and follows their changes, and says
// once on stderr that events are not shown.
func TestWatchWithoutEvents(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-ev"))
	read := []string{"get", "list", "watch"}
	kubeconfig, _ := testenv.RestrictedUser(t, cp, ns, []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"pods", "persistentvolumeclaims", "services"}, Verbs: read},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: read},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
	})

	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := startWatch(t, kubeconfig, ns, out, errOut)
	// The sync timeout is 30s: the first document must come well before.
	testenv.Poll(t, 20*time.Second, func() (bool, error) {
		select {
		case code := <-done:
			return false, fmt.Errorf("watch exited with %d: %s", code, strings.Join(errOut.lines(), "\n"))
		default:
		}
		return strings.Contains(out.lines()[0], "etcd-ev"), nil
	})

	fixtures.MarkNotReady(t, admin, ns, "etcd-ev-1")
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		ls := out.lines()
		return len(ls) >= 2 && strings.Contains(ls[len(ls)-1], "pod_not_ready"), nil
	})
	if warn := strings.Join(errOut.lines(), "\n"); strings.Count(warn, "events not shown") != 1 || !strings.Contains(warn, "forbidden") {
		t.Errorf("stderr %q, want events not shown because forbidden, once", warn)
	}
}

// TestStatusOutputAsKubectlPrintsIt: -l selects clusters by their
// StatefulSet's labels, -o name, -o custom-columns(-file), --no-headers
// and --sort-by print as kubectl get does, on a real API server.
func TestStatusOutputAsKubectlPrintsIt(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	for _, name := range []string{"etcd-a", "etcd-b", "etcd-z"} {
		fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec(name))
	}
	// etcd-z has one member not ready: sorted by readyMembers it comes
	// first, against the order of names.
	fixtures.MarkNotReady(t, admin, ns, "etcd-z-0")
	patch := []byte(`{"metadata":{"labels":{"team":"blue"}}}`)
	for _, name := range []string{"etcd-a", "etcd-z"} {
		if _, err := admin.AppsV1().StatefulSets(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("-o name", func(t *testing.T) {
		out, errOut, _ := run(t, "-n", ns, "status", "--no-probe", "-o", "name")
		if want := "statefulset.apps/etcd-a\nstatefulset.apps/etcd-b\nstatefulset.apps/etcd-z\n"; out != want {
			t.Errorf("-o name printed %q, want %q (%s)", out, want, errOut)
		}
	})
	t.Run("-l selects by the StatefulSet's labels", func(t *testing.T) {
		out, errOut, _ := run(t, "-n", ns, "status", "--no-probe", "-o", "name", "-l", "team=blue")
		if want := "statefulset.apps/etcd-a\nstatefulset.apps/etcd-z\n"; out != want {
			t.Errorf("-l team=blue printed %q, want %q (%s)", out, want, errOut)
		}
		out, _, _ = run(t, "-n", ns, "status", "--no-probe", "-o", "name", "-l", "team!=blue")
		if want := "statefulset.apps/etcd-b\n"; out != want {
			t.Errorf("-l team!=blue printed %q, want %q", out, want)
		}
		_, errOut, code := run(t, "-n", ns, "status", "--no-probe", "-l", "team in (")
		if code != ExitUsage || !strings.Contains(errOut, "is not a label selector") {
			t.Errorf("a bad selector: exit %d, %q", code, errOut)
		}
	})
	t.Run("custom columns, sorted, without headers", func(t *testing.T) {
		out, errOut, _ := run(t, "-n", ns, "status", "--no-probe", "-o", "custom-columns=NAME:.metadata.name,READY:.readyMembers,NONE:.nothing", "--sort-by", "{.readyMembers}")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 4 || strings.Fields(lines[0])[0] != "NAME" {
			t.Fatalf("custom columns:\n%s\n%s", out, errOut)
		}
		var order []string
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			order = append(order, f[0])
			if f[2] != "<none>" {
				t.Errorf("a path that yields nothing printed %q, want <none>", f[2])
			}
		}
		if want := []string{"etcd-z", "etcd-a", "etcd-b"}; !slices.Equal(order, want) {
			t.Errorf("--sort-by {.readyMembers} ordered %v, want %v:\n%s", order, want, out)
		}
		out, _, _ = run(t, "-n", ns, "status", "--no-probe", "-o", "custom-columns=NAME:.metadata.name", "--no-headers", "--sort-by", ".metadata.name")
		if out != "etcd-a\netcd-b\netcd-z\n" {
			t.Errorf("--no-headers printed %q", out)
		}
		file := filepath.Join(t.TempDir(), "cols")
		if err := os.WriteFile(file, []byte("NAME   CONTROL\n.metadata.name {.verdict.controlReady}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, errOut, _ = run(t, "-n", ns, "status", "--no-probe", "-o", "custom-columns-file="+file, "-l", "team=blue")
		if !strings.Contains(out, "NAME") || !strings.Contains(out, "CONTROL") || !strings.Contains(out, "etcd-a") || strings.Contains(out, "etcd-b") {
			t.Errorf("custom-columns-file:\n%s\n%s", out, errOut)
		}
		for _, bad := range []string{"custom-columns=", "custom-columns=NAME", "custom-columns=NAME:{.a"} {
			_, errOut, code := run(t, "-n", ns, "status", "--no-probe", "-o", bad)
			if code != ExitUsage || !strings.Contains(errOut, "custom") {
				t.Errorf("-o %s: exit %d, %q", bad, code, errOut)
			}
		}
	})
	t.Run("paths as kubectl takes them, refused before anything is read when unreadable", func(t *testing.T) {
		for _, path := range []string{"metadata.name", "{metadata.name}", ".metadata.name", "{.metadata.name}"} {
			out, errOut, code := run(t, "-n", ns, "status", "--no-probe", "-o", "custom-columns=N:"+path, "--no-headers", "--sort-by", path)
			if code == ExitUsage || out != "etcd-a\netcd-b\netcd-z\n" {
				t.Errorf("path %s: exit %d, out %q, err %q", path, code, out, errOut)
			}
		}
		for _, args := range [][]string{
			{"-o", "custom-columns=N:.metadata.name[0]"},
			{"--sort-by", ".metadata.name[0]"},
			{"--sort-by", ".readyMember"},
			{"-o", "custom-columns"},
			{"etcd-a", "-l", "team=blue"},
		} {
			out, errOut, code := run(t, append([]string{"-n", ns, "status", "--no-probe"}, args...)...)
			if code != ExitUsage || out != "" {
				t.Errorf("%v: exit %d, out %q, err %q; want a usage error and nothing printed", args, code, out, errOut)
			}
		}
		empty := testenv.Namespace(t, cp)
		if out, _, _ := run(t, "-n", empty, "status", "--no-probe", "-o", "custom-columns=N:.metadata.name"); out != "" {
			t.Errorf("no clusters printed %q, want nothing on stdout", out)
		}
	})
	t.Run("the table without headers", func(t *testing.T) {
		out, _, _ := run(t, "-n", ns, "status", "etcd-a", "--no-probe", "--no-headers", "--color", "never")
		if strings.Contains(out, "ORD") || !strings.Contains(out, "etcd-a-0") {
			t.Errorf("--no-headers table:\n%s", out)
		}
	})
}

// TestWatchPrintsCustomColumnsHeaderOnce: as kubectl get -w, a watch
// with custom columns prints the header once, then the rows of each
// change, and nothing when what it prints did not change.
func TestWatchPrintsCustomColumnsHeaderOnce(t *testing.T) {
	var out bytes.Buffer
	o := NewStatusOptions(kubeflags.NewConfigFlags(false), genericiooptions.IOStreams{Out: &out, ErrOut: io.Discard})
	f := "custom-columns=NAME:.metadata.name,READY:.readyMembers"
	o.Output = f
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	round := func(ready int) status.Result {
		r := status.Result{Observation: model.Observation{Cluster: model.ClusterFacts{Namespace: "db", Name: "kv", Engine: etcdengine.Name}}}
		for i := 0; i < 3; i++ {
			r.Observation.Members = append(r.Observation.Members, model.Member{Name: fmt.Sprintf("kv-%d", i), Pod: &model.PodFacts{Ready: i < ready}})
		}
		return r
	}
	var last []byte
	for _, ready := range []int{3, 3, 2} {
		if _, err := o.redraw([]status.Result{round(ready)}, nil, &last); err != nil {
			t.Fatal(err)
		}
	}
	got := strings.Fields(out.String())
	if want := []string{"NAME", "READY", "kv", "3", "kv", "2"}; !slices.Equal(got, want) {
		t.Errorf("watch printed %q, want the header once and one row per change", out.String())
	}
}
