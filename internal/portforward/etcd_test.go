package portforward

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/internal/testbins"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
)

// Real etcd members behind the stand-in port-forward endpoint: gRPC over
// HTTP/2 over the pipe over SPDY (over WebSocket) works, and a paused
// member costs one probe timeout, not more.
func TestProbeEtcdThroughPortForward(t *testing.T) {
	if testing.Short() {
		t.Skip("tier-3 test (real etcd processes) skipped with -short")
	}
	bin, err := testbins.Dir()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := etcdcluster.Start(ctx, etcdcluster.Options{BinDir: bin, Dir: t.TempDir(), Members: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, m := range c.Members {
			_ = m.Resume()
		}
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	addrs := map[string]string{}
	var targets []engine.Target
	for _, m := range c.Members {
		u, err := url.Parse(m.ClientURL)
		if err != nil {
			t.Fatal(err)
		}
		addrs[m.Name] = u.Host
		targets = append(targets, engine.Target{Member: m.Name, Namespace: "ns1", Pod: m.Name, Port: 2379})
	}
	s := &pfServer{allowWS: true, resolve: func(ns, pod string, port int) (string, error) {
		if a, ok := addrs[pod]; ok && ns == "ns1" && port == 2379 {
			return a, nil
		}
		return "", fmt.Errorf("no such pod port %s/%s:%d", ns, pod, port)
	}}
	cfg := newServer(t, s)

	for _, tr := range []Transport{TransportWebSocket, TransportSPDY} {
		t.Run(tr.String(), func(t *testing.T) {
			dial, err := NewDialerWithOptions(cfg, Options{Transport: tr})
			if err != nil {
				t.Fatal(err)
			}
			o := engine.ProbeOptions{Timeout: time.Second, Dial: dial}
			poll.Until(t, 10*time.Second, "every member to answer through the tunnel", func() error {
				for i, f := range etcd.New().Probe(ctx, targets, o) {
					if !f.Reachable || len(f.Peers) != 3 || f.LeaderID == "" {
						return fmt.Errorf("%s: reachable=%v peers=%d leader=%q err=%q", targets[i].Member, f.Reachable, len(f.Peers), f.LeaderID, f.Err)
					}
				}
				return nil
			})

			if err := c.Members[2].Pause(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Members[2].Resume() }()
			start := time.Now()
			facts := etcd.New().Probe(ctx, targets, o)
			took := time.Since(start)
			t.Logf("probe through %s port-forward, %s paused, Timeout 1s: %s", tr, targets[2].Member, took)
			for i, f := range facts {
				t.Logf("%s: reachable=%v failure=%q err=%q", targets[i].Member, f.Reachable, f.Failure, f.Err)
			}
			if took > 10*time.Second {
				t.Fatalf("probe hung: %s", took)
			}
			if !facts[0].Reachable || !facts[1].Reachable {
				t.Errorf("running members unreachable")
			}
			if facts[2].Reachable || facts[2].Failure != model.ProbeFailureTimeout {
				t.Errorf("paused member: reachable=%v failure=%q", facts[2].Reachable, facts[2].Failure)
			}
			if err := c.Members[2].Resume(); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, 10*time.Second, "port-forwarded connections to be closed", func() error {
				if n := s.openConns(); n != 0 {
					return fmt.Errorf("%d still open", n)
				}
				return nil
			})
		})
	}

	// A pod port that forwards nowhere: the error-stream message reaches
	// the probe's error text.
	dial, _ := NewDialer(cfg)
	f := etcd.New().Probe(ctx, []engine.Target{{Member: "etcd-9", Namespace: "ns1", Pod: "etcd-9", Port: 2379}}, engine.ProbeOptions{Timeout: time.Second, Dial: dial})[0]
	t.Logf("unknown pod: failure=%q err=%q", f.Failure, f.Err)
	if f.Reachable || f.Failure != model.ProbeFailureConnect || !strings.Contains(f.Err, "no such pod port") {
		t.Errorf("a pod with no forward: reachable=%v failure=%q err=%q, want a connect failure with the forwarding error", f.Reachable, f.Failure, f.Err)
	}
}
