package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
)

// A member whose client port refuses hactl for want of credentials, with
// a plaintext metrics listener (kubeadm's --listen-metrics-urls): the
// probe stays a credentials failure, and carries what the listener says
// (the member's own ID and role, as the member itself answers an
// authenticated client), and the template decoder finds the listener's
// port among the flag's URLs.
func TestProbeMetricsFallback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsPort := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	c := startCluster(t, etcdcluster.Options{Members: 1, ExtraArgs: []string{fmt.Sprintf("--listen-metrics-urls=http://127.0.0.1:%d", metricsPort)}})
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Members[0].ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := cli.Status(ctx, c.Members[0].ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatUint(st.Header.MemberId, 16)
	// Auth on: a client without a password is refused, as one without a
	// certificate is by kubeadm's etcd.
	enableAuth(t, c)
	d := newTCPDialer(t, c)
	dial := func(ctx context.Context, ns, pod string, port int) (net.Conn, error) {
		if port == metricsPort {
			var nd net.Dialer
			return nd.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		}
		return d.Dial(ctx, ns, pod, port)
	}
	ts := targets(c)
	ts[0].MetricsPort = metricsPort
	f := etcd.New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: 3 * time.Second, Dial: dial})[0]
	if f.Reachable || f.Failure != model.ProbeFailureCredentials {
		t.Fatalf("reachable %v, failure %q: want a credentials failure", f.Reachable, f.Failure)
	}
	m := f.Metrics
	if m == nil || m.MemberID != id || !m.IsLeader || !m.HasLeader || m.IsLearner || m.Applied == 0 || m.Committed < m.Applied || m.Version == "" || m.Port != metricsPort {
		t.Fatalf("metrics %+v; the member is %s, the leader of a cluster of one", m, id)
	}
	if s := etcd.MetricsSummary(m); !strings.Contains(s, "member "+id+", the leader") || !strings.Contains(s, "cluster ID, member list, term and alarms stay unknown") {
		t.Errorf("summary %q", s)
	}
	// Not to be asked at all (no certificate was given): the client
	// port is left alone, the listener still read.
	d.mu.Lock()
	before := d.dials[ts[0].Pod]
	d.mu.Unlock()
	f = etcd.New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: 3 * time.Second, Dial: dial, Unasked: errors.New("no client certificate was given")})[0]
	d.mu.Lock()
	after := d.dials[ts[0].Pod]
	d.mu.Unlock()
	if f.Reachable || f.Failure != model.ProbeFailureCredentials || f.Err != "no client certificate was given" || f.Metrics == nil || f.Metrics.MemberID != id || after != before {
		t.Errorf("unasked: reachable %v, failure %q, err %q, metrics %+v, client port dialled %d times", f.Reachable, f.Failure, f.Err, f.Metrics, after-before)
	}
	// Without a listener, or with the client port answering, none.
	ts[0].MetricsPort = 0
	if f := etcd.New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: 3 * time.Second, Dial: dial})[0]; f.Metrics != nil {
		t.Errorf("metrics read with no listener named: %+v", f.Metrics)
	}
	ts[0].MetricsPort = metricsPort
	root := &engine.BasicAuth{Username: "root", Password: "s3cret"}
	if f := etcd.New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: 3 * time.Second, Dial: dial, Auth: root})[0]; !f.Reachable || f.Metrics != nil {
		t.Errorf("an answering member: reachable %v, metrics %+v", f.Reachable, f.Metrics)
	}

	for flags, want := range map[string]int{
		"--listen-metrics-urls=http://127.0.0.1:2381":                  2381,
		"--listen-metrics-urls https://0.0.0.0:2382,http://[::1]:2383": 2383,
		"--listen-metrics-urls=https://0.0.0.0:2382":                   0,
		"--listen-client-urls=http://127.0.0.1:2379":                   0,
	} {
		pt := model.PodTemplate{Containers: []model.Container{{Name: "etcd", Command: append([]string{"etcd"}, strings.Fields(flags)...)}}}
		if got := etcd.New().Template(pt).MetricsPort; got != want {
			t.Errorf("%s: metrics port %d, want %d", flags, got, want)
		}
	}
}
