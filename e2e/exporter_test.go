package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/sandbox"
	"github.com/hactl-dev/hactl/sandbox/fault"
	"github.com/hactl-dev/hactl/sandbox/runner"
)

// TestExporterUnderPrometheus installs the exporter exactly as
// docs/exporter.yaml ships it (through the real kubectl; the sandbox's
// runner runs its pod, with hactl's binary, when the pod template carries
// runner.RunLabel), has a real Prometheus scrape it, and reads the
// verdicts back from Prometheus' HTTP API: a healthy etcd and Patroni
// cluster at 1, a broken scenario at 0, and the healthy etcd cluster at 0
// while one of its members is paused (SIGSTOP), back at 1 once it
// resumed. Both expositions (the exporter's and status -o openmetrics)
// pass promtool check metrics.
func TestExporterUnderPrometheus(t *testing.T) {
	skipShort(t)
	bin := testenv.BinDir(t)
	ctx := context.Background()

	if out, errOut, code := kubectl(t, "apply", "-f", "../docs/exporter.yaml"); code != 0 {
		t.Fatalf("kubectl apply -f docs/exporter.yaml: %d\n%s%s", code, out, errOut)
	}
	t.Cleanup(func() {
		// The ClusterRole and its binding, and the namespace with the
		// pod: the runner stops the process on the delete.
		kubectl(t, "delete", "-f", "../docs/exporter.yaml", "--wait=true", "--timeout=60s")
	})
	patch := fmt.Sprintf(`[{"op":"add","path":"/spec/template/metadata/labels/%s","value":"true"}]`, strings.ReplaceAll(runner.RunLabel, "/", "~1"))
	if out, errOut, code := kubectl(t, "-n", "hactl-system", "patch", "deployment", "hactl-exporter", "--type=json", "-p", patch); code != 0 {
		t.Fatalf("labelling the exporter's pods for the sandbox's runner: %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := kubectl(t, "-n", "hactl-system", "rollout", "status", "deployment/hactl-exporter", "--timeout=2m"); code != 0 {
		t.Fatalf("the exporter did not become ready: %d\n%s%s\n%s", code, out, errOut, s.SB.Dir)
	}
	target := exporterAddress(t, ctx)

	// promtool reads Prometheus' text format: what a scraper that does
	// not ask for OpenMetrics gets.
	text := httpGet(t, "http://"+target+"/metrics")
	promtool(t, bin, text, "the exporter's /metrics")
	om, _, _ := kubectl(t, "hactl", "status", "-A", "-o", "openmetrics")
	for what, exposition := range map[string]string{"the exporter's /metrics": text, "status -A -o openmetrics": om} {
		// promtool passes an empty input: check there is something.
		if !strings.Contains(exposition, "hactl_cluster_failover_ready{") {
			t.Errorf("%s holds no hactl_cluster_failover_ready:\n%s", what, exposition)
		}
	}
	promtool(t, bin, om, "status -A -o openmetrics")

	prom := startPrometheus(t, bin, target)
	healthy, pg, broken := clusterOf(t, "healthy"), clusterOf(t, "pg-healthy"), brokenCluster(t)
	want := func(c sandbox.ClusterInfo, v float64) func() error {
		return func() error {
			got, err := prom.gauge(fmt.Sprintf(`hactl_cluster_failover_ready{namespace=%q,cluster=%q}`, c.Namespace, c.Name))
			if err == nil && got != v {
				err = fmt.Errorf("%s/%s: %v, want %v", c.Namespace, c.Name, got, v)
			}
			return err
		}
	}
	poll.Until(t, 2*time.Minute, "Prometheus to hold the exporter's verdicts", func() error {
		for _, check := range []func() error{want(healthy, 1), want(pg, 1), want(broken, 0)} {
			if err := check(); err != nil {
				return err
			}
		}
		return nil
	}, poll.Every(time.Second))

	member := healthy.Namespace + "/" + healthy.Name + "-1"
	if err := s.SB.Break(ctx, member, fault.Pause); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := s.SB.Break(ctx, member, fault.Resume); err != nil {
				t.Errorf("resuming %s: %v", member, err)
			}
		}
	}
	t.Cleanup(func() { resume(); s.WaitFailoverReady(t, healthy.Name) })
	poll.Until(t, 2*time.Minute, "Prometheus to see "+healthy.Name+" not failover-ready while "+member+" is paused", want(healthy, 0), poll.Every(time.Second))
	if got, err := prom.gauge(fmt.Sprintf(`count(hactl_reason{namespace=%q,cluster=%q,member=%q})`, healthy.Namespace, healthy.Name, healthy.Name+"-1")); err != nil || got < 1 {
		t.Errorf("no hactl_reason naming the paused member: %v %v", got, err)
	}
	resume()
	poll.Until(t, 2*time.Minute, "Prometheus to see "+healthy.Name+" failover-ready again", want(healthy, 1), poll.Every(time.Second))
}

// exporterAddress is host:port of the exporter's pod in the sandbox.
func exporterAddress(t *testing.T, ctx context.Context) string {
	t.Helper()
	var addr string
	poll.Until(t, time.Minute, "the exporter's pod to run", func() error {
		ms, err := s.SB.Members(ctx)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.Namespace == "hactl-system" && strings.HasPrefix(m.Name, "hactl-exporter-") && len(m.Pids) > 0 {
				addr = net.JoinHostPort(m.Address, "9808")
				return nil
			}
		}
		return fmt.Errorf("no running hactl-exporter pod among %d", len(ms))
	}, poll.Every(time.Second))
	return addr
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	var body string
	poll.Until(t, time.Minute, u, func() error {
		resp, err := http.Get(u)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s", resp.Status, b)
		}
		body = string(b)
		return err
	}, poll.Every(500*time.Millisecond))
	return body
}

// promtool runs promtool check metrics on exposition.
func promtool(t *testing.T, bin, exposition, what string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "promtool"), "check", "metrics")
	cmd.Stdin = strings.NewReader(exposition)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics refuses %s: %v\n%s", what, err, out)
	}
}

func clusterOf(t *testing.T, scenario string) sandbox.ClusterInfo {
	t.Helper()
	for _, c := range s.SB.State.Clusters {
		if c.Scenario == scenario {
			return c
		}
	}
	t.Fatalf("the sandbox has no %s scenario", scenario)
	return sandbox.ClusterInfo{}
}

// brokenCluster is a scenario whose verdict is not failover-ready: a
// paused Patroni replica when the sandbox has one.
func brokenCluster(t *testing.T) sandbox.ClusterInfo {
	t.Helper()
	var broken []sandbox.ClusterInfo
	for _, c := range s.SB.State.Clusters {
		if wantExit(c.Reasons) != 0 {
			if c.Scenario == "pg-paused" {
				return c
			}
			broken = append(broken, c)
		}
	}
	if len(broken) == 0 {
		t.Fatal("the sandbox has no scenario that is not failover-ready")
	}
	return broken[0]
}

// prometheus is a running Prometheus server.
type prometheus struct{ api string }

// startPrometheus runs the pinned Prometheus, scraping target every
// second, until the test ends.
func startPrometheus(t *testing.T, bin, target string) prometheus {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: hactl
    static_configs:
      - targets: [%q]
`, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "prometheus"),
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("prometheus log:\n%s", b)
		}
	})
	p := prometheus{api: "http://" + addr}
	poll.Until(t, time.Minute, "Prometheus to be ready", func() error {
		resp, err := http.Get(p.api + "/-/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	}, poll.Every(200*time.Millisecond))
	return p
}

// gauge is the value of the one series the instant query q returns.
func (p prometheus) gauge(q string) (float64, error) {
	resp, err := http.Get(p.api + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var doc struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return 0, err
	}
	if doc.Status != "success" {
		return 0, fmt.Errorf("query %s: %s", q, doc.Error)
	}
	if len(doc.Data.Result) != 1 {
		return 0, fmt.Errorf("query %s: %d series, want 1", q, len(doc.Data.Result))
	}
	v, _ := doc.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(v, 64)
}
