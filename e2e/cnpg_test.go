package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/source"
	"github.com/hactl-dev/hactl/status"
)

// cnpgPrimary is the Cluster's status.currentPrimary, read from the API
// server (not from hactl), after checking that no pod of the Cluster
// carries a hactl key.
func cnpgPrimary(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	raw, err := s.KC.Discovery().RESTClient().Get().AbsPath(source.CNPGPath(ns) + "/" + name).DoRaw(ctx)
	if err != nil {
		t.Fatalf("Cluster %s: %v", name, err)
	}
	var cl source.CNPGCluster
	if err := json.Unmarshal(raw, &cl); err != nil {
		t.Fatal(err)
	}
	pods, err := s.KC.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: source.LabelCNPGCluster + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		noHactlKeys(t, "pod "+p.Name, p.Labels, p.Annotations)
	}
	return cl.Status.CurrentPrimary
}

// CloudNativePG's clusters, laid out as its operator creates them (a
// Cluster controlling one pod per instance, no StatefulSet, no hactl
// label anywhere), real PostgreSQL instances behind a stand-in for the
// instance manager's status endpoint, through the real kubectl: each
// instance read through the API server's pod proxy, the Cluster's word
// beside the verdict, and the two field reports caught.
func TestCNPGThroughKubectl(t *testing.T) {
	skipShort(t)
	t.Run("healthy: one primary, the one the Cluster records", func(t *testing.T) {
		name, ns := cluster(t, "cnpg")
		want := cnpgPrimary(t, ns, name)
		cs := statusUntil(t, ns, name, func(cs status.ClusterStatus) error {
			if got := codesOf(cs); len(got) != 0 {
				return fmt.Errorf("reasons %v, want none", got)
			}
			return nil
		})
		if cs.Engine != "cnpg" {
			t.Fatalf("engine %q", cs.Engine)
		}
		var names, primaries []string
		for _, m := range cs.Members {
			names = append(names, m.Name)
			if m.Role == "primary" {
				primaries = append(primaries, m.Name)
			}
		}
		if !slices.Equal(names, []string{name + "-1", name + "-2", name + "-3"}) || !slices.Equal(primaries, []string{want}) {
			t.Errorf("members %v, primaries %v; the Cluster records %s", names, primaries, want)
		}
		table, errOut, code := kubectl(t, "hactl", "status", name, "-n", ns, "--color", "never")
		if code != 0 || !strings.Contains(table, "Cluster "+name+" says: Cluster in healthy state, primary "+want) {
			t.Errorf("status: exit %d\n%s%s", code, table, errOut)
		}
		out, errOut, _ := kubectl(t, "hactl", "explain", name, name+"-2", "-n", ns, "--intent", "switchover")
		if !strings.Contains(out+errOut, "kubectl cnpg promote "+name+" "+name+"-2 -n "+ns) {
			t.Errorf("explain --intent switchover does not name CloudNativePG's way:\n%s%s", out, errOut)
		}
	})

	t.Run("cloudnative-pg#5150: the Cluster healthy, no PostgreSQL running", func(t *testing.T) {
		name, ns := cluster(t, "cnpg-down")
		cnpgPrimary(t, ns, name)
		cs := statusUntil(t, ns, name, func(cs status.ClusterStatus) error {
			found := map[string]string{}
			for _, r := range cs.Verdict.Reasons {
				found[r.Code] = r.Detail
			}
			if d, ok := found[string(model.ReasonCRStatusStale)]; !ok || !strings.Contains(d, "Cluster in healthy state") {
				return fmt.Errorf("cr_status_stale %q: %v", d, codesOf(cs))
			}
			if _, ok := found[string(model.ReasonPrimaryMissing)]; !ok {
				return fmt.Errorf("no primary_missing: %v", codesOf(cs))
			}
			return nil
		})
		if cs.Verdict.ControlReady {
			t.Error("control-ready with no PostgreSQL running")
		}
	})

	t.Run("cloudnative-pg#11110: the switchover target has not replayed its WAL", func(t *testing.T) {
		name, ns := cluster(t, "cnpg-replica-lagging")
		cnpgPrimary(t, ns, name)
		statusUntil(t, ns, name, func(cs status.ClusterStatus) error {
			for _, r := range cs.Verdict.Reasons {
				if r.Code == string(model.ReasonSwitchoverTargetLagging) && strings.Contains(r.Detail, "CloudNativePG would promote "+r.Member) {
					return nil
				}
			}
			return fmt.Errorf("no switchover_target_lagging: %v", codesOf(cs))
		})
	})
}
