package e2e

import (
	"testing"

	"github.com/hactl-dev/hactl/internal/e2esuite"
)

const (
	namespace      = "hactl-e2e"
	staticCluster  = "healthy"
	selfRegCluster = "healthy-self-registering"
)

// s is the one sandbox the package's tests share.
var s *e2esuite.Suite

// TestMain builds kubectl-hactl and starts one sandbox with a
// static-existing and a self-registering cluster (e2esuite.Main).
func TestMain(m *testing.M) {
	e2esuite.Main(m, &s, func() (e2esuite.Options, func(), error) {
		return e2esuite.Options{Namespace: namespace, Scenarios: []string{staticCluster, selfRegCluster}}, nil, nil
	})
}

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() || s == nil {
		t.Skip("end-to-end test (the sandbox) skipped with -short")
	}
}
