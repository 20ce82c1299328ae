package runner

import (
	"testing"

	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// The Patroni template names the runner's kubeconfig context.
func TestScenarioKubeContext(t *testing.T) {
	if scenario.KubeContext != KubeContext {
		t.Fatalf("scenario.KubeContext %q, runner.KubeContext %q", scenario.KubeContext, KubeContext)
	}
}

func TestPostgresProcessMatchers(t *testing.T) {
	for _, c := range []struct {
		cmdline                   string
		startup, recv, postmaster bool
	}{
		{"postgres: pg: startup recovering 000000010000000000000003", true, false, false},
		{"postgres: startup recovering 000000010000000000000003", true, false, false},
		{"postgres: pg: walreceiver streaming 0/3000148", false, true, false},
		{"postgres: pg: startup-ish", false, false, false},
		{"/usr/lib/postgresql/15/bin/postgres -D /data/pgroot/data --config-file=/data/pgroot/data/postgresql.conf", false, false, true},
		{"postgres: pg: checkpointer ", false, false, false},
		{"/usr/bin/python3 /usr/bin/patroni /etc/patroni/patroni.yml", false, false, false},
	} {
		if got := postgresTitle("startup")(c.cmdline); got != c.startup {
			t.Errorf("startup(%q) = %v", c.cmdline, got)
		}
		if got := postgresTitle("walreceiver")(c.cmdline); got != c.recv {
			t.Errorf("walreceiver(%q) = %v", c.cmdline, got)
		}
		if got := isPostmaster(c.cmdline); got != c.postmaster {
			t.Errorf("isPostmaster(%q) = %v", c.cmdline, got)
		}
	}
}
