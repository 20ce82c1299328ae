package archtest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/hactl-dev/hactl"

// allowed maps every product package to the hactl packages it may import
// directly: the arrows of docs/architecture.md. A package missing here
// fails the test, so a new package is placed in the picture on purpose.
var allowed = map[string][]string{
	"model":                        {},
	"verdict":                      {"model"},
	"classify":                     {"model", "verdict"},
	"engine":                       {"model"},
	"engine/etcd":                  {"engine", "model", "internal/format"},
	"engine/patroni":               {"engine", "model", "internal/format"},
	"engine/cnpg":                  {"engine", "model", "internal/format"},
	"engine/http":                  {"engine", "model"},
	"artifact":                     {"model", "internal/format", "artifact/gcs"},
	"artifact/gcs":                 {},
	"artifact/seeding":             {"artifact", "engine", "model"},
	"artifact/etcdgen":             {"artifact", "artifact/seeding", "engine", "engine/etcd", "model"},
	"artifact/etcdgen/etcdrestore": {"artifact", "artifact/etcdgen", "model"},
	"source":                       {"model"},
	"status":                       {"model", "verdict", "engine", "source", "internal/format"},
	"engine/registry":              {"engine", "engine/etcd", "engine/http", "engine/patroni", "engine/cnpg", "artifact/etcdgen", "artifact/seeding", "model"},
	"actions":                      {"model", "classify", "status", "engine", "artifact", "artifact/seeding", "internal/buildinfo", "internal/format"},
	"tui":                          {"model", "status", "actions", "tui/internal/common", "tui/internal/feed", "tui/internal/remedy", "tui/components/table", "tui/components/clusters", "tui/components/members", "tui/components/readiness", "tui/components/timeline", "tui/components/seed", "tui/components/help", "tui/components/dialog"},
	"tui/internal/remedy":          {"model"},
	"tui/internal/common":          {"model", "status", "internal/format"},
	"tui/internal/feed":            {"status", "tui/internal/common"},
	"tui/components/table":         {"tui/internal/common"},
	"tui/components/clusters":      {"status", "tui/components/table", "tui/internal/common"},
	"tui/components/members":       {"model", "status", "internal/format", "tui/components/table", "tui/internal/common", "tui/internal/remedy"},
	"tui/components/readiness":     {"model", "status", "verdict", "tui/components/table", "tui/internal/common"},
	"tui/components/timeline":      {"status", "internal/format", "tui/components/table", "tui/internal/common"},
	"tui/components/seed":          {"model", "status", "internal/format", "tui/components/table", "tui/internal/common"},
	"tui/components/help":          {"tui/internal/common"},
	"tui/components/picker":        {"model", "internal/format", "tui/components/table", "tui/internal/common"},
	"tui/components/dialog":        {"model", "classify", "tui/components/picker", "tui/internal/common"},
	"exporter":                     {"status"},
	"agent":                        {"artifact", "artifact/etcdgen", "artifact/seeding", "engine", "internal/buildinfo", "internal/format"},
	"agent/restore":                {"artifact", "artifact/etcdgen/etcdrestore", "model"},
	"cli": {"model", "verdict", "classify", "status", "actions", "engine", "engine/registry", "artifact", "tui", "agent", "agent/restore", "internal/gotemplate", "internal/kubeflags", "internal/redact",
		"internal/buildinfo", "internal/format", "internal/portforward", "internal/poddial", "exporter"},
	"cmd/kubectl-hactl":    {"cli"},
	"cmd/hactl-capture":    {"agent"},
	"internal/portforward": {"engine"},
	"internal/poddial":     {},
	"internal/format":      {"model"},
	"internal/gotemplate":  {},
	"internal/kubeflags":   {},
	"internal/redact":      {},
	"internal/buildinfo":   {},
	"internal/image":       {},
	"hack/image":           {"internal/image"},
}

// external limits what a package may import from outside the module and
// the standard library: import-path prefixes. Packages not named here are
// not limited.
var external = map[string][]string{
	// The agent image builder: the standard library and go-containerregistry.
	"internal/image": {"github.com/google/go-containerregistry/"},
}

// testSupport are packages only tests import; no product package may.
var testSupport = []string{
	"internal/testenv", "internal/testbins", "internal/ocitest", "internal/fixtures", "internal/e2esuite", "internal/poll", "internal/tmuxtest",
	"artifact/storetest", "internal/archtest", "sandbox", "tui/internal/tuitest",
}

// notProduct are the packages outside the product's picture: the
// sandbox (anything goes), test support, test-only packages and
// benchmarks.
func notProduct(p string) bool {
	for _, s := range testSupport {
		if p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	for _, s := range []string{"cmd/hactl-sandbox", "bench", "krew", "e2e"} {
		if p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	// End-to-end test packages: …/e2e, actions/pge2e (Patroni's), and the
	// adversarial runs (etcd's and Patroni's).
	return strings.HasSuffix(p, "e2e") || strings.HasSuffix(p, "/adversarial") || strings.HasSuffix(p, "/pgadversarial")
}

// frameworks are import-path prefixes the pure packages (model, verdict,
// classify, engine) must not reach, directly or transitively.
var frameworks = []string{
	"k8s.io/", "github.com/spf13/cobra", "charm.land/", "github.com/charmbracelet/", "go.etcd.io/", "google.golang.org/grpc",
}

// pureIO are standard packages that do I/O: the pure packages must not
// import them directly (their transitive use by the runtime is fine).
var pureIO = []string{"net/http", "os", "os/exec", "os/signal", "io/fs", "syscall"}

var pure = []string{"model", "verdict", "classify", "engine"}

// clientFree are the packages of the agent image's capture binary: they
// reach no Kubernetes client or API types, no CLI framework, no TUI and
// none of etcd's server packages (restores need them, captures do not),
// whose package initialisation alone would double the capture pod's
// memory.
var clientFree = []string{"agent", "cmd/hactl-capture"}

var clientFrameworks = []string{
	"go.etcd.io/etcd/server/", "go.etcd.io/etcd/etcdutl/",
	"k8s.io/client-go", "k8s.io/api/", "k8s.io/cli-runtime", "k8s.io/apimachinery/pkg/runtime", "k8s.io/apimachinery/pkg/apis",
	"github.com/spf13/cobra", "charm.land/", "github.com/charmbracelet/",
}

// binaries are the programs users install; none may depend on the
// packages in heavy (docs/size.md).
var binaries = []string{"cmd/kubectl-hactl", "cmd/hactl-capture"}

// heavy are packages whose mere presence in a binary keeps what the
// linker would otherwise drop: plugin (a dynamically linked binary, cgo
// on as go install builds it, then exports every symbol: 35 MB), and
// genericclioptions, which brings it (through cli-runtime's resource
// builder and kustomize) and cli-runtime's Go template printer
// (text/template's method lookup: 40 MB).
var heavy = []string{"plugin", "k8s.io/cli-runtime/pkg/genericclioptions"}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// list runs go list over the module, with an optional overlay (a JSON
// file replacing or adding source files, as go build -overlay takes).
func list(t *testing.T, overlay string) map[string]pkg {
	t.Helper()
	args := []string{"list", "-deps=false", "-json=ImportPath,Imports,Deps"}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	cmd := exec.Command("go", append(args, module+"/...")...)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, msg)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")] = p
	}
	return pkgs
}

func ours(imp string) (string, bool) {
	if imp == module || strings.HasPrefix(imp, module+"/") {
		return strings.TrimPrefix(strings.TrimPrefix(imp, module), "/"), true
	}
	return "", false
}

// violations checks a package graph against the picture; each line is
// one arrow the picture does not allow.
func violations(pkgs map[string]pkg) []string {
	var out []string
	for name, p := range pkgs {
		if notProduct(name) {
			continue
		}
		ok, placed := allowed[name]
		if !placed {
			out = append(out, fmt.Sprintf("%s is not in the picture: add it to allowed (and to docs/architecture.md)", name))
			continue
		}
		for _, imp := range p.Imports {
			dep, own := ours(imp)
			if !own {
				continue
			}
			if notProduct(dep) {
				out = append(out, fmt.Sprintf("%s imports %s, which is test support", name, dep))
				continue
			}
			permitted := false
			for _, a := range ok {
				permitted = permitted || a == dep
			}
			if !permitted {
				out = append(out, fmt.Sprintf("%s imports %s; it may import only %v", name, dep, ok))
			}
		}
	}
	for name, prefixes := range external {
		for _, imp := range pkgs[name].Imports {
			if _, own := ours(imp); own || !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				continue
			}
			permitted := false
			for _, pre := range prefixes {
				permitted = permitted || strings.HasPrefix(imp, pre)
			}
			if !permitted {
				out = append(out, fmt.Sprintf("%s imports %s; outside the standard library it may import only %v", name, imp, prefixes))
			}
		}
	}
	for _, name := range pure {
		p := pkgs[name]
		for _, d := range p.Deps {
			for _, f := range frameworks {
				if strings.HasPrefix(d, f) {
					out = append(out, fmt.Sprintf("%s depends on %s (pure packages reach no framework: %s)", name, d, f))
				}
			}
		}
		for _, imp := range p.Imports {
			for _, io := range pureIO {
				if imp == io {
					out = append(out, fmt.Sprintf("%s imports %s (pure packages do no I/O)", name, imp))
				}
			}
		}
	}
	for _, name := range clientFree {
		for _, d := range pkgs[name].Deps {
			for _, f := range clientFrameworks {
				if strings.HasPrefix(d, f) {
					out = append(out, fmt.Sprintf("%s depends on %s (the capture binary reaches no Kubernetes client, CLI framework or TUI: %s)", name, d, f))
				}
			}
		}
	}
	for _, name := range binaries {
		for _, d := range pkgs[name].Deps {
			if slices.Contains(heavy, d) {
				out = append(out, fmt.Sprintf("%s depends on %s (it keeps what the linker would drop: docs/size.md)", name, d))
			}
		}
	}
	for _, d := range pkgs["model"].Deps {
		if strings.Contains(strings.SplitN(d, "/", 2)[0], ".") && d != module+"/model" {
			out = append(out, fmt.Sprintf("model depends on %s (model is standard library only)", d))
		}
	}
	sort.Strings(out)
	return out
}

// TestThePictureHolds checks every arrow between hactl's packages against
// docs/architecture.md, including the forbidden ones: tui never imports
// cli, status never imports actions, engine never imports actions, the
// pure packages reach no framework and do no I/O, no product package
// imports test support.
func TestThePictureHolds(t *testing.T) {
	for _, v := range violations(list(t, "")) {
		t.Error(v)
	}
}

// TestThePictureHasNoForbiddenArrow keeps the forbidden arrows out of the
// table itself.
func TestThePictureHasNoForbiddenArrow(t *testing.T) {
	forbidden := map[string][]string{
		"tui":      {"cli"},
		"status":   {"actions", "cli", "tui"},
		"engine":   {"actions", "status", "cli", "tui"},
		"classify": {"actions", "status", "engine", "artifact", "cli", "tui"},
		"verdict":  {"classify", "actions", "status", "engine"},
		"model":    {"verdict", "classify", "actions", "status", "engine", "artifact"},
		"artifact": {"actions", "status", "engine", "cli", "tui"},
		"actions":  {"cli", "tui"},
		"agent":    {"actions", "status", "cli", "tui"},
		// Sources sit below status and actions and never import them.
		"source": {"status", "actions", "verdict", "classify", "engine", "cli", "tui"},

		// The TUI's components, what they share and the feed that reads
		// for the root never import the root model that composes them.
		"tui/internal/common":      {"tui", "cli"},
		"tui/internal/feed":        {"tui", "cli"},
		"tui/components/table":     {"tui", "cli"},
		"tui/components/clusters":  {"tui", "cli"},
		"tui/components/members":   {"tui", "cli"},
		"tui/components/readiness": {"tui", "cli"},
		"tui/components/timeline":  {"tui", "cli"},
		"tui/components/seed":      {"tui", "cli"},
		"tui/components/help":      {"tui", "cli"},
		"tui/components/picker":    {"tui", "cli"},
		"tui/components/dialog":    {"tui", "cli"},
	}
	for from, tos := range forbidden {
		for _, to := range tos {
			for _, a := range allowed[from] {
				if a == to {
					t.Errorf("the table allows %s -> %s, an arrow the picture forbids", from, to)
				}
			}
		}
	}
}

// TestAForbiddenImportFails is the test of the test: go list is given an
// overlay that adds a file to a real package with an import the picture
// forbids, and the same check must report it.
func TestAForbiddenImportFails(t *testing.T) {
	root := moduleRoot(t)
	cases := []struct {
		pkg, file, src, want string
	}{
		{"status", "zz_forbidden.go", "package status\n\nimport _ \"" + module + "/artifact\"\n", "status imports artifact"},
		{"engine", "zz_forbidden.go", "package engine\n\nimport _ \"" + module + "/artifact\"\n", "engine imports artifact"},
		{"classify", "zz_forbidden.go", "package classify\n\nimport _ \"net/http\"\n", "classify imports net/http"},
		{"verdict", "zz_forbidden.go", "package verdict\n\nimport _ \"k8s.io/apimachinery/pkg/types\"\n", "verdict depends on k8s.io/apimachinery/pkg/types"},
		{"status", "zz_forbidden.go", "package status\n\nimport _ \"" + module + "/internal/fixtures\"\n", "status imports internal/fixtures, which is test support"},
		{"internal/image", "zz_forbidden.go", "package image\n\nimport _ \"k8s.io/apimachinery/pkg/types\"\n", "internal/image imports k8s.io/apimachinery/pkg/types"},
		{"internal/image", "zz_forbidden.go", "package image\n\nimport _ \"" + module + "/internal/buildinfo\"\n", "internal/image imports internal/buildinfo"},
		{"agent", "zz_forbidden.go", "package agent\n\nimport _ \"k8s.io/client-go/kubernetes\"\n", "agent depends on k8s.io/client-go"},
		{"artifact/etcdgen", "zz_forbidden.go", "package etcdgen\n\nimport _ \"github.com/spf13/cobra\"\n", "cmd/hactl-capture depends on github.com/spf13/cobra"},
		{"cli", "zz_forbidden.go", "package cli\n\nimport _ \"k8s.io/cli-runtime/pkg/genericclioptions\"\n", "cmd/kubectl-hactl depends on k8s.io/cli-runtime/pkg/genericclioptions"},
		{"internal/format", "zz_forbidden.go", "package format\n\nimport _ \"plugin\"\n", "cmd/kubectl-hactl depends on plugin"},
	}
	for _, c := range cases {
		t.Run(c.pkg+"/"+c.want, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, c.file)
			if err := os.WriteFile(src, []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			ov, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, c.pkg, c.file): src}})
			overlay := filepath.Join(dir, "overlay.json")
			if err := os.WriteFile(overlay, ov, 0o644); err != nil {
				t.Fatal(err)
			}
			got := violations(list(t, overlay))
			for _, v := range got {
				if strings.HasPrefix(v, c.want) {
					return
				}
			}
			t.Fatalf("the check did not report %q; it reported %v", c.want, got)
		})
	}
	// And an unplaced package: the picture must name every package.
	pkgs := list(t, "")
	pkgs["newpkg"] = pkg{ImportPath: module + "/newpkg"}
	if v := violations(pkgs); len(v) == 0 || !strings.Contains(strings.Join(v, "\n"), "newpkg is not in the picture") {
		t.Fatalf("an unplaced package passed: %v", v)
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
