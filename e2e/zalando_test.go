package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/scenario"
	"github.com/hactl-dev/hactl/status"
)

// Zalando's postgres-operator's clusters, laid out as the operator
// creates them (a postgresql, its StatefulSet running Spilo's entrypoint
// with the operator's variables, no hactl label anywhere), real Patroni
// and PostgreSQL members, through the real kubectl: found, read on the
// DCS the template names, with the postgresql's word beside the verdict.
func TestZalandoThroughKubectl(t *testing.T) {
	skipShort(t)
	ctx := context.Background()
	noLabels := func(t *testing.T, ns, name string) {
		t.Helper()
		sts, err := s.KC.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		noHactlKeys(t, "the StatefulSet", sts.Labels, sts.Annotations, sts.Spec.Template.Labels, sts.Spec.Template.Annotations)
	}

	t.Run("on ConfigMaps, upgraded from Endpoints: healthy, the old leader record ignored", func(t *testing.T) {
		name, ns := cluster(t, "zalando")
		noLabels(t, ns, name)
		// Healthy but for the operator's budget, which covers the
		// primary alone (exit 3); the Endpoints the earlier mode left
		// name another leader, which is not read.
		cs := statusUntil(t, ns, name, func(cs status.ClusterStatus) error {
			if got := codesOf(cs); len(got) != 1 || got[0] != string(model.ReasonPDBAllowsQuorumLoss) {
				return fmt.Errorf("reasons %v, want the budget's alone", got)
			}
			return nil
		})
		_, errOut, code := kubectl(t, "hactl", "status", name, "-n", ns, "-o", "json")
		if code != 3 {
			t.Errorf("exit %d, want 3 (control-ready, not failover-ready)\n%s", code, errOut)
		}
		p := cs.Patroni
		if cs.Engine != "patroni" || p == nil || p.DCS != model.DCSConfigMaps || p.RoleLabel != "spilo-role" || p.Scope != name {
			t.Fatalf("engine %q, Patroni facts %+v", cs.Engine, p)
		}
		if !strings.Contains(p.Orphaned, "Endpoints "+name+" ") || !strings.Contains(p.Orphaned, name+"-2") || p.LockHolder == name+"-2" {
			t.Errorf("the upgrade's Endpoints %s (naming %s-2) were not reported as orphaned beside the lock of %s: %q", name, name, p.LockHolder, p.Orphaned)
		}
		if op := cs.Operator; op == nil || op.Kind != "postgresql" || op.Status != "Running" || op.Err != "" {
			t.Errorf("the postgresql's word: %+v", cs.Operator)
		}
		primaries := 0
		for _, m := range cs.Members {
			if m.Role == "primary" {
				primaries++
				if m.Name != p.LockHolder {
					t.Errorf("primary %s, the ConfigMap lock names %s", m.Name, p.LockHolder)
				}
			}
		}
		if primaries != 1 {
			t.Errorf("%d primaries: %+v", primaries, cs.Members)
		}
		if strings.Contains(errOut, "deprecated") {
			t.Errorf("the API server's deprecation warning reached the user:\n%s", errOut)
		}
		table, errOut, _ := kubectl(t, "hactl", "status", name, "-n", ns, "--color", "never")
		for _, want := range []string{"Patroni's DCS on ConfigMaps, by Spilo's KUBERNETES_USE_CONFIGMAPS; leader lock ConfigMap " + name + "-leader",
			"Endpoints " + name + " holds a leader record (" + name + "-2", "postgresql " + name + " says: Running"} {
			if !strings.Contains(table, want) {
				t.Errorf("table lacks %q:\n%s%s", want, table, errOut)
			}
		}
	})

	t.Run("on Endpoints, the primary's Patroni frozen: the stale leader record, and the postgresql still Running", func(t *testing.T) {
		name, ns := cluster(t, "zalando-endpoints-lock-stale")
		noLabels(t, ns, name)
		cs := statusUntil(t, ns, name, func(cs status.ClusterStatus) error {
			found := map[string]string{}
			for _, r := range cs.Verdict.Reasons {
				found[r.Code] = r.Detail
			}
			if d, ok := found[string(model.ReasonLeaderLockStale)]; !ok || !strings.Contains(d, "Endpoints "+name+" ") {
				return fmt.Errorf("leader_lock_stale %q, want one naming the Endpoints %s", d, name)
			}
			if d, ok := found[string(model.ReasonCRStatusStale)]; !ok || !strings.Contains(d, "postgresql "+name+" says Running") {
				return fmt.Errorf("cr_status_stale %q, want the postgresql's Running", d)
			}
			return nil
		})
		if p := cs.Patroni; p == nil || p.DCS != model.DCSEndpoints || p.Orphaned != "" {
			t.Errorf("Patroni facts %+v, want the DCS on Endpoints", p)
		}
		if cs.Verdict.ControlReady {
			t.Error("control-ready with a stale leader lock")
		}
	})

	t.Run("a lagging replica", func(t *testing.T) {
		name, ns := cluster(t, "zalando-replica-lagging")
		noLabels(t, ns, name)
		cs := statusUntil(t, ns, name, func(cs status.ClusterStatus) error {
			n := 0
			for _, r := range cs.Verdict.Reasons {
				if r.Code == string(model.ReasonReplicaLagging) {
					n++
				}
			}
			if n != 1 {
				return fmt.Errorf("%d lagging replicas, want 1: %v", n, codesOf(cs))
			}
			return nil
		})
		if cs.Patroni == nil || cs.Patroni.DCS != model.DCSConfigMaps {
			t.Errorf("Patroni facts %+v", cs.Patroni)
		}
	})
}

// statusUntil is `kubectl hactl status NAME -o json` once check accepts
// it; polled.
func statusUntil(t *testing.T, ns, name string, check func(status.ClusterStatus) error) status.ClusterStatus {
	t.Helper()
	var cs status.ClusterStatus
	var out, errOut string
	err := poll.Wait(2*time.Minute, func() error {
		var code int
		out, errOut, code = kubectl(t, "hactl", "status", name, "-n", ns, "-o", "json")
		cs = status.ClusterStatus{}
		if err := json.Unmarshal([]byte(out), &cs); err != nil {
			return fmt.Errorf("not a ClusterStatus (exit %d): %v", code, err)
		}
		return check(cs)
	}, poll.Every(2*time.Second))
	if err != nil {
		t.Fatalf("%s/%s: %v\n%s%s", ns, name, err, out, errOut)
	}
	return cs
}

// TestZalandoSwitchoverThroughKubectl: `kubectl hactl switchover` of a
// Zalando cluster whose DCS is on Endpoints, found without any hactl
// label, through Patroni's REST API as the operator itself switches
// over (checked by switchoverChecked).
func TestZalandoSwitchoverThroughKubectl(t *testing.T) {
	skipShort(t)
	name, ns := cluster(t, "zalando-endpoints")
	switchoverChecked(t, switchCase{ns: ns, name: name, roleLabel: "spilo-role", leaderEndpoints: name, podSelector: "cluster-name=" + name,
		claims: []string{scenario.ZalandoDataVolume + "-" + name + "-0", scenario.ZalandoDataVolume + "-" + name + "-1", scenario.ZalandoDataVolume + "-" + name + "-2"}, reasons: []string{string(model.ReasonPDBAllowsQuorumLoss)}})
}

// switchCase is a Patroni cluster on Endpoints whose switchover
// switchoverChecked checks: its pods (podSelector), the label Patroni
// writes their roles in, the Endpoints of its leader record, its claims,
// and the reasons it has when healthy.
type switchCase struct {
	ns, name, roleLabel, leaderEndpoints, podSelector string
	claims, reasons                                   []string
}

// switchoverChecked runs `kubectl hactl switchover --to <a replica>
// --yes` on c and checks it from the API server and the members, not
// from hactl: the replica named leads, as the Endpoints' leader record
// and the pods' role labels say, the old primary streams from it, a row
// written before is on every member (each read on its own PostgreSQL),
// and no pod or claim was deleted or recreated.
func switchoverChecked(t *testing.T, c switchCase) {
	t.Helper()
	ctx := context.Background()
	ns, name := c.ns, c.name
	roles := func(cs status.ClusterStatus) (prim string, replicas []string) {
		for _, m := range cs.Members {
			switch m.Role {
			case "primary":
				prim = m.Name
			case "replica":
				replicas = append(replicas, m.Name)
			}
		}
		return prim, replicas
	}
	healthy := func(cs status.ClusterStatus) error {
		if got := codesOf(cs); !slices.Equal(got, c.reasons) {
			return fmt.Errorf("reasons %v, want %v", got, c.reasons)
		}
		if p, rs := roles(cs); p == "" || len(rs) != 2 {
			return fmt.Errorf("primary %q, replicas %v", p, rs)
		}
		return nil
	}
	cs := statusUntil(t, ns, name, healthy)
	prim, replicas := roles(cs)
	to := replicas[0]
	row := s.WriteRow(t, ns, name, prim, "switchover")
	uids := map[string]string{}
	pods, err := s.KC.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: c.podSelector})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		uids["pod/"+p.Name] = string(p.UID)
	}
	for _, n := range c.claims {
		pvc, err := s.KC.CoreV1().PersistentVolumeClaims(ns).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids["pvc/"+n] = string(pvc.UID)
	}
	if len(uids) != 6 {
		t.Fatalf("the cluster's pods and claims: %v", uids)
	}

	// A probe that takes a loaded machine more than the default 2 s
	// would refuse the switchover under the lock (its candidate "did not
	// answer").
	out, errOut, code := kubectl(t, "hactl", "switchover", name, "--to", to, "-n", ns, "--yes", "--probe-timeout", "10s")
	if code != 0 {
		t.Fatalf("switchover to %s: exit %d\n%s%s", to, code, out, errOut)
	}
	// The API server's word, not hactl's: Patroni's leader record on the
	// Endpoints and the role labels it writes.
	poll.Until(t, 2*time.Minute, to+" holding the Endpoints' leader record and labelled master", func() error {
		ep, err := s.KC.CoreV1().Endpoints(ns).Get(ctx, c.leaderEndpoints, metav1.GetOptions{}) //nolint:staticcheck // Patroni's leader record
		if err != nil {
			return err
		}
		if l := ep.Annotations["leader"]; l != to {
			return fmt.Errorf("the Endpoints %s name %q", c.leaderEndpoints, l)
		}
		for _, m := range []string{to, prim} {
			p, err := s.KC.CoreV1().Pods(ns).Get(ctx, m, metav1.GetOptions{})
			if err != nil {
				return err
			}
			want := "replica"
			if m == to {
				want = "master"
			}
			if got := p.Labels[c.roleLabel]; got != want {
				return fmt.Errorf("%s labelled %s=%q, want %s", m, c.roleLabel, got, want)
			}
		}
		return nil
	}, poll.Every(time.Second))
	statusUntil(t, ns, name, func(cs status.ClusterStatus) error {
		if err := healthy(cs); err != nil {
			return err
		}
		if p, _ := roles(cs); p != to {
			return fmt.Errorf("primary %s, want %s", p, to)
		}
		return nil
	})
	s.AssertRowOn(t, ns, name, row, []string{prim, replicas[0], replicas[1]})
	pods, err = s.KC.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: c.podSelector})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if uids["pod/"+p.Name] != string(p.UID) {
			t.Errorf("pod %s was recreated by a switchover", p.Name)
		}
	}
	for k := range uids {
		if !strings.HasPrefix(k, "pvc/") {
			continue
		}
		pvc, err := s.KC.CoreV1().PersistentVolumeClaims(ns).Get(ctx, strings.TrimPrefix(k, "pvc/"), metav1.GetOptions{})
		if err != nil || string(pvc.UID) != uids[k] {
			t.Errorf("claim %s deleted or recreated by a switchover (%v)", k, err)
		}
	}
}
