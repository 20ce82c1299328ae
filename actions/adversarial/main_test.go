package adversarial

import (
	"testing"

	"github.com/hactl-dev/hactl/internal/e2esuite"
)

const (
	namespace = "hactl-adv"
	cluster   = "healthy"
)

// s is the one sandbox of the package.
var s *e2esuite.Suite

// TestMain starts one sandbox with one static cluster and the API server
// writing an audit log of every write in the namespace
// (e2esuite.AuditPolicy).
func TestMain(m *testing.M) {
	e2esuite.Main(m, &s, func() (e2esuite.Options, func(), error) {
		return e2esuite.Options{Namespace: namespace, Scenarios: []string{cluster}, AuditPolicy: e2esuite.AuditPolicy(namespace)}, nil, nil
	})
}
