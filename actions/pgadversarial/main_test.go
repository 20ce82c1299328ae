package pgadversarial

import (
	"testing"

	"github.com/hactl-dev/hactl/internal/e2esuite"
)

const (
	namespace = "hactl-pgadv"
	cluster   = "pg-healthy"
)

// s is the one sandbox of the package.
var s *e2esuite.Suite

// TestMain starts one sandbox with the pg-healthy cluster and the API
// server writing an audit log of every write in the namespace
// (auditPolicy).
func TestMain(m *testing.M) {
	e2esuite.Main(m, &s, func() (e2esuite.Options, func(), error) {
		return e2esuite.Options{Namespace: namespace, Scenarios: []string{cluster}, AuditPolicy: auditPolicy}, nil, nil
	})
}
