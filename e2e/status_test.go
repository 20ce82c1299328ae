package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// wantExit is the exit code a cluster with these reasons must give.
func wantExit(reasons []string) int {
	code := 0
	for _, r := range reasons {
		switch model.ReasonCode(r).Impact() {
		case model.ImpactControl:
			return 4
		case model.ImpactFailover:
			code = 3
		}
	}
	return code
}

func codesOf(cs status.ClusterStatus) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range cs.Verdict.Reasons {
		if !seen[r.Code] {
			seen[r.Code] = true
			out = append(out, r.Code)
		}
	}
	sort.Strings(out)
	return out
}

// TestStatusThroughKubectl runs `kubectl hactl status` (plugin discovery,
// port-forward probes) against every scenario and checks the verdict,
// reason codes and exit code the scenario is built to produce.
func TestStatusThroughKubectl(t *testing.T) {
	skipShort(t)
	for _, c := range s.SB.State.Clusters {
		t.Run(c.Scenario, func(t *testing.T) {
			var (
				cs   status.ClusterStatus
				code int
				last string
			)
			// The scenario may still be settling: poll.
			poll.Until(t, 2*time.Minute, "scenario "+c.Scenario+"'s reasons and exit code", func() error {
				out, errOut, exit := kubectl(t, append([]string{"hactl", "status", c.Name, "-n", c.Namespace, "-o", "json"}, c.ProbeArgs...)...)
				code, last = exit, out+errOut
				if err := json.Unmarshal([]byte(out), &cs); err != nil {
					t.Fatalf("not a ClusterStatus (exit %d): %v\n%s", exit, err, last)
				}
				// A reason outside the scenario's, such as a probe that
				// timed out on a loaded machine, must clear within the
				// poll: one that stays fails it.
				unexpected := ""
				for _, r := range codesOf(cs) {
					if !slices.Contains(c.Reasons, r) && !slices.Contains(c.MayAlso, r) {
						unexpected += fmt.Sprintf(" %s (%+v)", r, cs.Verdict.Reasons)
					}
				}
				if missing(c.Reasons, codesOf(cs)) == nil && exit == wantExit(c.Reasons) && unexpected == "" {
					return nil
				}
				return fmt.Errorf("reasons %v (exit %d), want %v (exit %d); may also %v; unexpected:%s\n%s",
					codesOf(cs), exit, c.Reasons, wantExit(c.Reasons), c.MayAlso, unexpected, last)
			}, poll.Every(time.Second))
			if !cs.EngineProbed {
				t.Fatal("members were not probed")
			}
			answered := 0
			for _, m := range cs.Members {
				if m.Reachable != nil && *m.Reachable && m.MemberID != "" {
					answered++
				}
			}
			if answered == 0 {
				t.Errorf("no member answered through port-forward: %+v", cs.Members)
			}
			// -o go-template through the real kubectl: kubectl's own
			// template language on the same document.
			want := c.Name + " " + fmt.Sprint(len(cs.Members)) + ":"
			for _, m := range cs.Members {
				want += " " + m.Name
			}
			out, errOut, _ := kubectl(t, "hactl", "status", c.Name, "-n", c.Namespace, "--no-probe",
				"-o", `go-template={{.metadata.name}} {{len .members}}:{{range .members}} {{.name}}{{end}}`)
			if out != want {
				t.Errorf("-o go-template printed %q (%s), want %q", out, errOut, want)
			}
			t.Logf("%s: exit %d, reasons %v, %d members answered through port-forward", c.Scenario, code, codesOf(cs), answered)
		})
	}
}

// TestOpenMetricsThroughKubectl: `kubectl hactl status -A -o
// openmetrics` over every scenario is read by the Prometheus text parser
// (node_exporter's textfile collector's), and says for each cluster the
// failover readiness and the reason codes the scenario is built to give.
func TestOpenMetricsThroughKubectl(t *testing.T) {
	skipShort(t)
	poll.Until(t, 2*time.Minute, "every scenario's verdict as metrics", func() error {
		// Every member of every scenario at once: a probe timeout for a
		// loaded machine (the document's format is what is tested here).
		out, errOut, _ := kubectl(t, append([]string{"hactl", "status", "-A", "-o", "openmetrics", "--probe-timeout", "5s"}, allProbeArgs()...)...)
		var p expfmt.TextParser
		mfs, err := p.TextToMetricFamilies(strings.NewReader(out))
		if err != nil {
			t.Fatalf("the Prometheus text parser refuses it: %v\n%s\n%s", err, out, errOut)
		}
		series := func(family string, match map[string]string) (float64, bool) {
			mf := mfs[family]
			if mf == nil {
				return 0, false
			}
		next:
			for _, m := range mf.GetMetric() {
				have := map[string]string{}
				for _, l := range m.GetLabel() {
					have[l.GetName()] = l.GetValue()
				}
				for k, v := range match {
					if have[k] != v {
						continue next
					}
				}
				return m.GetGauge().GetValue(), true
			}
			return 0, false
		}
		for _, c := range s.SB.State.Clusters {
			id := map[string]string{"namespace": c.Namespace, "cluster": c.Name}
			want := 0.0
			if wantExit(c.Reasons) == 0 {
				want = 1
			}
			if v, ok := series("hactl_cluster_failover_ready", id); !ok || v != want {
				// Say why: the cluster's reason series.
				var why []string
				if mf := mfs["hactl_reason"]; mf != nil {
					for _, m := range mf.GetMetric() {
						have := map[string]string{}
						for _, l := range m.GetLabel() {
							have[l.GetName()] = l.GetValue()
						}
						if have["namespace"] == c.Namespace && have["cluster"] == c.Name {
							why = append(why, strings.TrimSpace(have["code"]+" "+have["member"]))
						}
					}
				}
				return fmt.Errorf("%s: hactl_cluster_failover_ready %v (found %v), want %v; reasons %v\n%s", c.Scenario, v, ok, want, why, errOut)
			}
			for _, code := range c.Reasons {
				if _, ok := series("hactl_reason", map[string]string{"namespace": c.Namespace, "cluster": c.Name, "code": code}); !ok {
					return fmt.Errorf("%s: no hactl_reason series with code %s", c.Scenario, code)
				}
			}
		}
		return nil
	}, poll.Every(2*time.Second))
}

// allProbeArgs are the flags every scenario's cluster needs asked at
// once (each applies only to the clusters it is for: kubeadm's
// certificate files to members that ask clients for one).
func allProbeArgs() []string {
	var out []string
	for _, c := range s.SB.State.Clusters {
		if len(c.ProbeArgs) > 0 && len(out) == 0 {
			out = c.ProbeArgs
		}
	}
	return out
}

func missing(want, got []string) []string {
	have := map[string]bool{}
	for _, g := range got {
		have[g] = true
	}
	var out []string
	for _, w := range want {
		if !have[w] {
			out = append(out, w)
		}
	}
	return out
}

// TestSeedRebootstrapIsCaught: the seed 000 case for real — the wiped seed
// forms its own one-member cluster and its pod is Ready, yet status refuses
// control readiness and exits non-zero.
func TestSeedRebootstrapIsCaught(t *testing.T) {
	skipShort(t)
	var name, ns string
	for _, c := range s.SB.State.Clusters {
		if c.Scenario == "seed-rebootstrap" {
			name, ns = c.Name, c.Namespace
		}
	}
	if name == "" {
		t.Skip("no seed-rebootstrap scenario in this sandbox")
	}
	var cs status.ClusterStatus
	var code int
	// Wait for the seed to show Ready and diverged; if it never does, the
	// checks below say what is wrong.
	_ = poll.Wait(2*time.Minute, func() error {
		out, _, exit := kubectl(t, "hactl", "status", name, "-n", ns, "-o", "json")
		code = exit
		if err := json.Unmarshal([]byte(out), &cs); err != nil {
			t.Fatal(err)
		}
		if seed := cs.Members[0]; !seed.Ready || seed.Phase != string(model.PhaseDiverged) {
			return fmt.Errorf("seed ready=%v phase %s", seed.Ready, seed.Phase)
		}
		return nil
	}, poll.Every(time.Second))
	seed := cs.Members[0]
	if !seed.Ready {
		t.Errorf("the re-bootstrapped seed's pod should be Ready (its /health is 200): %+v", seed)
	}
	if cs.Verdict.ControlReady || code != 4 {
		t.Errorf("control_ready=%v exit=%d, want false and 4", cs.Verdict.ControlReady, code)
	}
	if seed.ClusterID == "" || seed.ClusterID == cs.ClusterID {
		t.Errorf("seed cluster ID %q should differ from the cluster's %q", seed.ClusterID, cs.ClusterID)
	}
	if !strings.Contains(strings.Join(seed.Reasons, ","), "cluster_id_split") {
		t.Errorf("seed reasons %v lack cluster_id_split", seed.Reasons)
	}
}

// TestTableThroughKubectl checks the human table shows member identity
// read through port-forward.
func TestTableThroughKubectl(t *testing.T) {
	skipShort(t)
	c := s.SB.State.Clusters[0]
	// On a loaded machine the first probes after the sandbox came up may
	// time out (every member shows "unknown"): poll until a leader shows.
	// If none ever does, the checks below show the table.
	var out, errOut string
	_ = poll.Wait(2*time.Minute, func() error {
		out, errOut, _ = kubectl(t, "hactl", "status", "-n", c.Namespace, "--color", "never")
		if !strings.Contains(out, "leader") {
			return errors.New("no leader shown")
		}
		return nil
	}, poll.Every(2*time.Second))
	for _, want := range []string{"ORD", "MEMBER ID", c.Name, "leader"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s\n%s", want, out, errOut)
		}
	}
	t.Logf("%s", out)
}
