package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/hactl-dev/hactl/"

// forbidden lists import-path prefixes a pure package must not reach,
// directly or transitively.
var forbidden = []string{
	"k8s.io/",
	"github.com/spf13/cobra",
	"charm.land/",
	"github.com/charmbracelet/",
	"go.etcd.io/",
	"google.golang.org/grpc",
}

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", module+pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

func TestPurePackagesImportNoFrameworks(t *testing.T) {
	for _, pkg := range []string{"model", "classify", "verdict", "engine"} {
		t.Run(pkg, func(t *testing.T) {
			for _, d := range deps(t, pkg) {
				for _, f := range forbidden {
					if strings.HasPrefix(d, f) {
						t.Errorf("%s depends on %s (forbidden prefix %s)", pkg, d, f)
					}
				}
			}
		})
	}
}

func TestModelIsStdlibOnly(t *testing.T) {
	for _, d := range deps(t, "model") {
		if strings.Contains(d, ".") && d != module+"model" {
			t.Errorf("model depends on non-stdlib package %s", d)
		}
	}
}

// TestClassifyAndVerdictDependOnlyOnModel keeps the pure packages pure:
// verdict may use model only; classify may use model and verdict (its
// quorum arithmetic and derived phases), nothing else of hactl's.
func TestClassifyAndVerdictDependOnlyOnModel(t *testing.T) {
	allowed := map[string][]string{
		"verdict":  {"model"},
		"classify": {"model", "verdict"},
	}
	for pkg, ok := range allowed {
		for _, d := range deps(t, pkg) {
			if !strings.HasPrefix(d, module) || d == module+pkg {
				continue
			}
			permitted := false
			for _, a := range ok {
				permitted = permitted || d == module+a
			}
			if !permitted {
				t.Errorf("%s depends on %s; it may depend only on %v", pkg, d, ok)
			}
		}
	}
}

// TestForbiddenListBites proves the check can fail: status does reach
// client-go, so the same scan must flag it.
func TestForbiddenListBites(t *testing.T) {
	hit := false
	for _, d := range deps(t, "status") {
		if strings.HasPrefix(d, "k8s.io/client-go") {
			hit = true
		}
	}
	if !hit {
		t.Fatal("status should depend on client-go; the dependency scan is not seeing dependencies")
	}
}
