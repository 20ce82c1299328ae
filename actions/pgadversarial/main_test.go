package pgadversarial

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hactl-dev/hactl/internal/e2esuite"
)

const (
	namespace = "hactl-pgadv"
	cluster   = "pg-healthy"
)

var (
	// s is the one sandbox of the package.
	s *e2esuite.Suite
	// auditLog is the API server's audit log (auditPolicy).
	auditLog string
)

// TestMain starts one sandbox with the pg-healthy cluster and the API
// server writing an audit log of every write in the namespace.
func TestMain(m *testing.M) {
	e2esuite.Main(m, &s, func() (e2esuite.Options, func(), error) {
		dir, err := os.MkdirTemp("", "hactl-pgadversarial-")
		if err != nil {
			return e2esuite.Options{}, nil, err
		}
		cleanup := func() { os.RemoveAll(dir) }
		policy := filepath.Join(dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
			return e2esuite.Options{}, cleanup, err
		}
		auditLog = filepath.Join(dir, "audit.log")
		return e2esuite.Options{Namespace: namespace, Scenarios: []string{cluster},
			APIServerArgs: []string{"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog,
				"--audit-log-format=json", "--audit-log-mode=blocking", "--audit-log-maxsize=0"}}, cleanup, nil
	})
}
