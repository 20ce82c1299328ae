package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/internal/testenv"
)

// exporterRules are the rules of the ClusterRole docs/exporter.yaml ships.
func exporterRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile("../docs/exporter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---") {
		var cr rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &cr); err != nil {
			t.Fatalf("docs/exporter.yaml: %v", err)
		}
		if cr.Kind == "ClusterRole" && cr.Name == "hactl-exporter" {
			return cr.Rules
		}
	}
	t.Fatal("docs/exporter.yaml has no ClusterRole hactl-exporter")
	return nil
}

// requests records every request the exporter's client tries, and fails
// the test on any that is not a GET.
type requests struct {
	t    *testing.T
	next http.RoundTripper
	mu   sync.Mutex
	gets int
}

func (r *requests) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	if req.Method == http.MethodGet {
		r.gets++
	} else {
		r.t.Errorf("the exporter tried %s %s", req.Method, req.URL.Path)
	}
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

func (r *requests) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets
}

// TestAgentExporterReadsOnly runs `agent exporter` against a real API
// server as a user holding exactly the ClusterRole docs/exporter.yaml
// ships: it becomes ready without a refusal, exports the cluster, follows
// a pod that turns not ready from its watches, answers scrapes without a
// request to the API server, and never tries a request that is not a GET
// (seen below its own read-only guard).
func TestAgentExporterReadsOnly(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-x"))
	_, cfg := testenv.RestrictedUser(t, cp, "", exporterRules(t))

	var logs syncBuffer
	o := &AgentExporterOptions{
		ProbeInterval: time.Hour, ProbeTimeout: 300 * time.Millisecond, CertWarn: time.Hour,
		IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &logs},
	}
	seen := &requests{t: t}
	o.wrapTransport = func(rt http.RoundTripper) http.RoundTripper { seen.next = rt; return seen }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.serve(ctx, cfg, ln) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the exporter did not stop within 30s of its context's end")
		}
	}()

	get := func(path string) (int, string, error) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	poll.Until(t, time.Minute, "/readyz", func() error {
		code, body, err := get("/readyz")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("%d %s", code, body)
		}
		return err
	}, poll.Every(100*time.Millisecond))
	series := func(text, family string, match map[string]string) bool {
		var p expfmt.TextParser
		mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			t.Fatalf("the exposition does not parse: %v", err)
		}
	next:
		for _, m := range mfs[family].GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if have[k] != v {
					continue next
				}
			}
			return true
		}
		return false
	}
	_, text, err := get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if !series(text, "hactl_cluster_details", map[string]string{"namespace": ns, "cluster": "etcd-x", "engine": "etcd"}) {
		t.Fatalf("no hactl_cluster_details of %s/etcd-x:\n%s", ns, text)
	}

	before := seen.count()
	for range 20 {
		if _, _, err := get("/metrics"); err != nil {
			t.Fatal(err)
		}
	}
	if n := seen.count() - before; n != 0 {
		t.Errorf("20 scrapes sent %d requests to the API server, want none", n)
	}

	fixtures.MarkNotReady(t, admin, ns, "etcd-x-1")
	poll.Until(t, time.Minute, "pod_not_ready of etcd-x-1 on /metrics (from the watches: the interval is an hour)", func() error {
		_, text, err := get("/metrics")
		if err == nil && !series(text, "hactl_reason", map[string]string{"cluster": "etcd-x", "code": "pod_not_ready", "member": "etcd-x-1"}) {
			err = fmt.Errorf("not yet")
		}
		return err
	}, poll.Every(200*time.Millisecond))
	if l := strings.Join(logs.lines(), "\n"); strings.Contains(l, "forbidden") {
		t.Errorf("the shipped ClusterRole is not enough:\n%s", l)
	}
}

// TestShippedAlertRulesLoad: the alert rules docs ship load in the
// pinned Prometheus (promtool check rules): every expression parses and
// every template renders.
func TestShippedAlertRulesLoad(t *testing.T) {
	testenv.SkipShort(t)
	out, err := exec.Command(filepath.Join(testenv.BinDir(t), "promtool"), "check", "rules", "../docs/examples/hactl-alerts.yaml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules docs/examples/hactl-alerts.yaml: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("promtool says:\n%s", out)
	}
}
