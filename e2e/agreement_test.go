package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/status"
)

// agreementScenarios are the scenarios the http engine, through the
// mappings docs/examples ships, must judge as the native engines do:
// healthy, lagging, paused, split, crash-looping and frozen, of both
// engines. (The others turn on what a status document does not hold: a
// pod template's flags, the DCS's sync key, a primary's replication
// list.)
var agreementScenarios = map[string]string{
	"healthy":            "etcd",
	"crashloop":          "etcd",
	"seed-rebootstrap":   "etcd",
	"lagging-learner":    "etcd",
	"pg-healthy":         "patroni",
	"pg-paused":          "patroni",
	"pg-replica-lagging": "patroni",
	"pg-split-primary":   "patroni",
	"pg-lock-stale":      "patroni",
}

// TestHTTPEngineAgreesWithTheNativeEngines reads each scenario's real
// members through the native engine, then relabels the StatefulSet
// hactl.dev/engine=http with the shipped mapping (etcd's JSON gateway,
// Patroni's GET /patroni) and reads them again, all through the real
// kubectl: the verdicts, the leader, each member's role, phase and lag
// (known or unknown alike) must agree. The label is put back after each
// round, so every native read sees the cluster as it is.
func TestHTTPEngineAgreesWithTheNativeEngines(t *testing.T) {
	skipShort(t)
	seen := 0
	for _, c := range s.SB.State.Clusters {
		native, ok := agreementScenarios[c.Scenario]
		if !ok {
			continue
		}
		seen++
		t.Run(c.Scenario, func(t *testing.T) {
			cm, relabel := s.AsHTTP(t, c.Namespace, c.Name, native)
			ctx := context.Background()
			restore := func() { relabel(false) }

			var nat, doc status.ClusterStatus
			read := func(into *status.ClusterStatus) error {
				out, errOut, _ := kubectl(t, "hactl", "status", c.Name, "-n", c.Namespace, "-o", "json", "--probe-timeout", "3s")
				if err := json.Unmarshal([]byte(out), into); err != nil {
					return fmt.Errorf("not a ClusterStatus: %v\n%s", err, errOut)
				}
				return nil
			}
			err := poll.Wait(2*time.Minute, func() error {
				nat, doc = status.ClusterStatus{}, status.ClusterStatus{}
				if err := read(&nat); err != nil {
					return err
				}
				// The mapping's lag threshold is the native one's, in the
				// same unit (a Patroni cluster's maximum_lag_on_failover).
				if nat.Patroni != nil && nat.Patroni.MaximumLagOnFailover > 0 && cm.Data["lagThreshold"] != strconv.FormatInt(nat.Patroni.MaximumLagOnFailover, 10) {
					cm.Data["lagThreshold"] = strconv.FormatInt(nat.Patroni.MaximumLagOnFailover, 10)
					if _, err := s.KC.CoreV1().ConfigMaps(c.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
						return err
					}
				}
				relabel(true)
				defer restore()
				if err := read(&doc); err != nil {
					return err
				}
				if doc.Engine != "http" {
					return fmt.Errorf("the relabelled cluster was read as %q", doc.Engine)
				}
				return disagree(nat, doc, native)
			}, poll.Every(2*time.Second))
			if err != nil {
				t.Fatalf("%v\nnative reasons %v\nhttp reasons %v", err, nat.Verdict.Reasons, doc.Verdict.Reasons)
			}
			t.Logf("both: control %v, failover %v, leader %q; native %v; http %v", doc.Verdict.ControlReady, doc.Verdict.FailoverReady,
				doc.Leader, codesOf(nat), codesOf(doc))
		})
	}
	if seen != len(agreementScenarios) {
		t.Errorf("%d of the %d agreement scenarios are in this sandbox", seen, len(agreementScenarios))
	}
}

// disagree says where the two readings differ (nil when they agree).
func disagree(nat, doc status.ClusterStatus, native string) error {
	if nat.Verdict.ControlReady != doc.Verdict.ControlReady || nat.Verdict.FailoverReady != doc.Verdict.FailoverReady {
		return fmt.Errorf("verdicts differ: native control %v failover %v; http control %v failover %v",
			nat.Verdict.ControlReady, nat.Verdict.FailoverReady, doc.Verdict.ControlReady, doc.Verdict.FailoverReady)
	}
	if len(nat.Members) != len(doc.Members) {
		return fmt.Errorf("%d members native, %d http", len(nat.Members), len(doc.Members))
	}
	slack := int64(10) // raft entries written between the two reads
	if native == "patroni" {
		slack = 64 << 10 // bytes of WAL
	}
	for i, n := range nat.Members {
		d := doc.Members[i]
		answered := n.Reachable != nil && *n.Reachable
		if (d.Reachable != nil && *d.Reachable) != answered {
			return fmt.Errorf("%s: native reachable %v, http %v (%s)", n.Name, answered, d.Reachable != nil && *d.Reachable, d.ProbeError)
		}
		if leads(n.Role) != leads(d.Role) {
			return fmt.Errorf("%s: native role %s, http %s", n.Name, n.Role, d.Role)
		}
		if answered && n.Name == nat.Leader && doc.Leader != nat.Leader {
			return fmt.Errorf("leaders differ: native %q, http %q", nat.Leader, doc.Leader)
		}
		if n.Phase != d.Phase {
			return fmt.Errorf("%s: native phase %s, http %s", n.Name, n.Phase, d.Phase)
		}
		switch {
		case (n.Lag == nil) != (d.Lag == nil):
			return fmt.Errorf("%s: native lag %s, http lag %s (one unknown)", n.Name, lagText(n.Lag), lagText(d.Lag))
		case n.Lag != nil && (*n.Lag-*d.Lag > slack || *d.Lag-*n.Lag > slack):
			return fmt.Errorf("%s: native lag %d, http lag %d", n.Name, *n.Lag, *d.Lag)
		}
	}
	return nil
}

func leads(role string) bool { return role == "leader" || role == "primary" || role == "master" }

func lagText(l *int64) string {
	if l == nil {
		return "unknown"
	}
	return strconv.FormatInt(*l, 10)
}
