package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/source"
	"github.com/hactl-dev/hactl/status"
)

// pgoInstances are the instance StatefulSets of PostgresCluster name,
// from the API server, each checked to carry no hactl key.
func pgoInstances(t *testing.T, ns, name string) []string {
	t.Helper()
	l, err := s.KC.AppsV1().StatefulSets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: source.LabelPGOCluster + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, sts := range l.Items {
		noHactlKeys(t, "StatefulSet "+sts.Name, sts.Labels, sts.Annotations, sts.Spec.Template.Labels, sts.Spec.Template.Annotations)
		out = append(out, sts.Name)
	}
	if len(out) != 3 {
		t.Fatalf("instances of %s: %v", name, out)
	}
	return out
}

// Crunchy PGO's clusters, laid out as its operator creates them (a
// StatefulSet per instance, Patroni's settings in a file, its REST API
// on HTTPS with client verification, no hactl label anywhere), real
// Patroni and PostgreSQL members, through the real kubectl: one cluster
// per PostgresCluster, read on Endpoints, probed with the instances'
// own certificates.
func TestPGOThroughKubectl(t *testing.T) {
	skipShort(t)
	t.Run("healthy: one cluster of the instances, probed over HTTPS", func(t *testing.T) {
		name, ns := cluster(t, "pgo")
		instances := pgoInstances(t, ns, name)
		// Healthy but for PGO's budget (minAvailable 1 of 3: a drain may
		// take the primary and the only other candidate): exit 3.
		cs := statusUntil(t, ns, name, func(cs status.ClusterStatus) error {
			if got := codesOf(cs); !slices.Equal(got, []string{string(model.ReasonPDBAllowsQuorumLoss)}) {
				return fmt.Errorf("reasons %v, want the budget's alone", got)
			}
			return nil
		})
		p := cs.Patroni
		if cs.Engine != "patroni" || p == nil || p.DCS != model.DCSEndpoints || p.Scope != name+"-ha" || p.RoleLabel != "postgres-operator.crunchydata.com/role" {
			t.Fatalf("engine %q, Patroni facts %+v", cs.Engine, p)
		}
		var members []string
		primaries := 0
		for _, m := range cs.Members {
			members = append(members, m.Name)
			if m.Role == "primary" {
				primaries++
				if m.Name != p.LockHolder {
					t.Errorf("primary %s, the Endpoints' lock names %s", m.Name, p.LockHolder)
				}
			}
		}
		slices.Sort(members)
		want := []string{instances[0] + "-0", instances[1] + "-0", instances[2] + "-0"}
		slices.Sort(want)
		if !slices.Equal(members, want) || primaries != 1 {
			t.Errorf("members %v (%d primaries), want the instances' pods %v and one primary", members, primaries, want)
		}
		table, errOut, code := kubectl(t, "hactl", "status", name, "-n", ns, "--color", "never")
		if code != 3 {
			t.Errorf("status: exit %d\n%s%s", code, table, errOut)
		}
		if !strings.Contains(table, "Patroni's DCS on Endpoints, by Crunchy PGO") || !strings.Contains(table, "leader lock Endpoints "+name+"-ha") {
			t.Errorf("the table does not say where the DCS is:\n%s", table)
		}
		if strings.Contains(errOut, "PGO") || strings.Contains(errOut, "deprecated") {
			t.Errorf("stderr: %s", errOut)
		}
		var replica string
		for _, m := range cs.Members {
			if m.Role == "replica" {
				replica = m.Name
			}
		}
		out, errOut, _ := kubectl(t, "hactl", "explain", name, replica, "-n", ns, "--intent", "replace")
		if !strings.Contains(out+errOut, string(model.CodeShapeOperatorOwned)) || !strings.Contains(out+errOut, "Crunchy PGO's PostgresCluster/"+name) {
			t.Errorf("explain --intent replace does not refuse naming PGO:\n%s%s", out, errOut)
		}
	})

	t.Run("switchover through Patroni's REST API with the instance's certificate", func(t *testing.T) {
		name, ns := cluster(t, "pgo")
		instances := pgoInstances(t, ns, name)
		var claims []string
		for _, in := range instances {
			claims = append(claims, source.PGODataClaim(in))
		}
		switchoverChecked(t, switchCase{ns: ns, name: name, roleLabel: "postgres-operator.crunchydata.com/role", leaderEndpoints: name + "-ha",
			podSelector: source.LabelPGOCluster + "=" + name, claims: claims, reasons: []string{string(model.ReasonPDBAllowsQuorumLoss)}})
	})

	t.Run("the primary's Patroni frozen: the stale leader record on Endpoints", func(t *testing.T) {
		name, ns := cluster(t, "pgo-lock-stale")
		pgoInstances(t, ns, name)
		cs := statusUntil(t, ns, name, func(cs status.ClusterStatus) error {
			for _, r := range cs.Verdict.Reasons {
				if r.Code == string(model.ReasonLeaderLockStale) && strings.Contains(r.Detail, "Endpoints "+name+"-ha ") {
					return nil
				}
			}
			return fmt.Errorf("no leader_lock_stale naming the Endpoints %s-ha: %v", name, codesOf(cs))
		})
		if cs.Verdict.ControlReady {
			t.Error("control-ready with a stale leader lock")
		}
	})
}
