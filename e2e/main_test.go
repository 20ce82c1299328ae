package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// s is the sandbox every test in this package shares: every scenario,
// its supervisor the built hactl-sandbox command.
var s *e2esuite.Suite

// TestMain builds kubectl-hactl and hactl-sandbox and starts one sandbox
// with every scenario (e2esuite.Main).
func TestMain(m *testing.M) {
	e2esuite.Main(m, &s, func() (e2esuite.Options, func(), error) {
		// Every scenario at once but those in e2eLeftOut (32 clusters,
		// 45 of the members real PostgreSQL, under Patroni or a
		// stand-in for CloudNativePG's instance manager) while CI runs
		// other packages beside it: on two cores the bring-up alone has
		// taken over four minutes, the builds before it two more.
		var names []string
		for _, n := range scenario.Names() {
			if !slices.Contains(e2eLeftOut, n) {
				names = append(names, n)
			}
		}
		return e2esuite.Options{Scenarios: names, SandboxBinary: true, Timeout: 12 * time.Minute}, nil, nil
	})
}

// e2eLeftOut are scenarios the shared sandbox does without: their
// verdict is another scenario's on another layout (zalando-replica-lagging
// and pgo-replica-lagging are pg-replica-lagging laid out by Zalando's
// operator and Crunchy PGO), and every PostgreSQL cluster costs the
// loaded CI machine three more members.
var e2eLeftOut = []string{"zalando-replica-lagging", "pgo-replica-lagging"}

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() || s == nil {
		t.Skip("end-to-end: needs the sandbox; skipped under -short")
	}
}

// kubectl runs the real kubectl against the sandbox with the plugin dir
// first on PATH, and returns stdout, stderr and the exit code.
func kubectl(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	r := s.Run(t, 2*time.Minute, args...)
	return r.Stdout, r.Stderr, r.Code
}
