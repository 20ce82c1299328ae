package artifact_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The artifact package is storage and verification only: it must not
// reach Kubernetes, the CLI, an engine or the engines' client libraries
// (those belong to its subpackages and callers).
func TestArtifactImportsNoFrameworksOrEngines(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/hactl-dev/hactl/artifact").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps returned %d packages: the check would see nothing", len(deps))
	}
	for _, d := range deps {
		if d == "k8s.io/apimachinery/pkg/util/duration" {
			// kubectl's age formatting (internal/format): a pure function
			// of a time.Duration, no API machinery.
			continue
		}
		for _, bad := range []string{"k8s.io/", "github.com/spf13/cobra", "go.etcd.io/", "github.com/hactl-dev/hactl/engine", "github.com/hactl-dev/hactl/status", "github.com/hactl-dev/hactl/actions", "github.com/hactl-dev/hactl/cli"} {
			if strings.HasPrefix(d, bad) {
				t.Errorf("artifact depends on %s", d)
			}
		}
	}
}
