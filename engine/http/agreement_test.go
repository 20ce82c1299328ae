package http_test

// Tier-3 agreement: real etcd members read natively (engine/etcd, gRPC)
// and through the http engine with the shipped etcd mapping (its JSON
// gateway), judged in the same round; roles, lags, phases and verdicts
// must agree, healthy and with a member frozen or stopped.

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/etcd"
	httpengine "github.com/hactl-dev/hactl/engine/http"
	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/internal/testbins"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
	"github.com/hactl-dev/hactl/verdict"
)

const ns = "hactl-test"

// side is one engine's reading of the cluster.
type side struct {
	obs model.Observation
	v   model.Verdict
	a   model.Analysis
}

// read probes every member with eng and judges the result.
func read(t *testing.T, c *etcdcluster.Cluster, eng engine.Engine, config map[string]string, dial engine.DialFunc) side {
	t.Helper()
	now := time.Now()
	obs := model.Observation{At: now, EngineProbed: true,
		Cluster: model.ClusterFacts{Namespace: ns, Name: "etcd", Engine: eng.Name(), Replicas: len(c.Members),
			CreatedAt: now.Add(-time.Hour), EngineConfig: config, Shape: model.ShapeStaticExisting},
		PDB:             &model.PDBFacts{Name: "etcd", MaxUnavailable: 1, MinAvailable: -1},
		ClientEndpoints: &model.EndpointFacts{Service: "etcd", Ready: len(c.Members)},
	}
	var ts []engine.Target
	for i, m := range c.Members {
		obs.Members = append(obs.Members, model.Member{Name: m.Name, Ordinal: i,
			Pod: &model.PodFacts{Name: m.Name, Node: fmt.Sprintf("node-%d", i), Running: true, Started: true, Ready: true, Phase: "Running"}})
		ts = append(ts, engine.Target{Member: m.Name, Namespace: ns, Pod: m.Name, Port: 2379, Config: config})
	}
	facts := eng.Probe(context.Background(), ts, engine.ProbeOptions{Timeout: 2 * time.Second, Dial: dial})
	for i := range facts {
		obs.Members[i].Engine = &facts[i]
	}
	o := model.VerdictOptions{Rules: engine.VerdictRules(map[model.Engine]engine.Engine{eng.Name(): eng})}
	d, v, a := verdict.EvaluateAll(obs, time.Now(), o)
	return side{d, v, a}
}

// disagreement says where the two readings differ, "" when they agree.
func disagreement(native, doc side) string {
	if native.v.ControlReady != doc.v.ControlReady || native.v.FailoverReady != doc.v.FailoverReady {
		return fmt.Sprintf("verdicts differ: native control %v failover %v %v; http control %v failover %v %v",
			native.v.ControlReady, native.v.FailoverReady, native.v.Reasons, doc.v.ControlReady, doc.v.FailoverReady, doc.v.Reasons)
	}
	if native.a.LeaderMember != doc.a.LeaderMember {
		return fmt.Sprintf("leaders differ: native %q, http %q", native.a.LeaderMember, doc.a.LeaderMember)
	}
	for i, n := range native.obs.Members {
		d := doc.obs.Members[i]
		if n.Engine.Role() != d.Engine.Role() || n.Phase != d.Phase {
			return fmt.Sprintf("%s: native %s/%s, http %s/%s", n.Name, n.Engine.Role(), n.Phase, d.Engine.Role(), d.Phase)
		}
		switch {
		case (n.Lag == nil) != (d.Lag == nil):
			return fmt.Sprintf("%s: native lag %v, http lag %v (one unknown)", n.Name, n.Lag, d.Lag)
		case n.Lag != nil && absDiff(*n.Lag, *d.Lag) > 10:
			return fmt.Sprintf("%s: native lag %d, http lag %d", n.Name, *n.Lag, *d.Lag)
		}
	}
	return ""
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

// agree polls until both engines read the cluster alike (they read it a
// moment apart, so a leader election may fall between them).
func agree(t *testing.T, c *etcdcluster.Cluster, dial engine.DialFunc, what string, check func(native side) error) side {
	t.Helper()
	mapping := fixtures.HTTPMapping(t, "etcd")
	var native, doc side
	err := poll.Wait(30*time.Second, func() error {
		native = read(t, c, etcd.New(), nil, dial)
		doc = read(t, c, httpengine.New(), mapping, dial)
		if d := disagreement(native, doc); d != "" {
			return fmt.Errorf("%s", d)
		}
		return check(native)
	}, poll.Every(500*time.Millisecond))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Logf("%s: both say control %v, failover %v, leader %q; http reasons %v", what, doc.v.ControlReady, doc.v.FailoverReady, doc.a.LeaderMember, doc.v.Reasons)
	return doc
}

func TestAgreesWithTheEtcdEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("tier-3 test (real etcd processes) skipped with -short")
	}
	bin, err := testbins.Dir()
	if err != nil {
		t.Fatalf("test binaries: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := etcdcluster.Start(ctx, etcdcluster.Options{BinDir: bin, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(func() {
		for _, m := range c.Members {
			_ = m.Resume()
		}
		_ = c.Stop()
	})
	addrs := map[string]string{}
	for _, m := range c.Members {
		u, err := url.Parse(m.ClientURL)
		if err != nil {
			t.Fatal(err)
		}
		addrs[m.Name] = u.Host
	}
	dial := func(ctx context.Context, namespace, pod string, port int) (net.Conn, error) {
		if namespace != ns || port != 2379 || addrs[pod] == "" {
			return nil, fmt.Errorf("unexpected dial to %s/%s:%d", namespace, pod, port)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addrs[pod])
	}

	doc := agree(t, c, dial, "healthy", func(n side) error {
		if !n.v.FailoverReady {
			return fmt.Errorf("not failover-ready yet: %v", n.v.Reasons)
		}
		return nil
	})
	if doc.a.Frontier == nil {
		t.Fatalf("no frontier read through the gateway")
	}
	for _, m := range doc.obs.Members {
		if m.Engine.Document == nil || m.Engine.Document.Applied == nil || m.Engine.MemberID == "" || m.Engine.ClusterID == "" {
			t.Fatalf("%s: the gateway's document was not mapped: %+v", m.Name, m.Engine)
		}
	}
	leader := doc.a.LeaderMember

	// A follower frozen: it accepts connections and never answers.
	var follower *etcdcluster.Member
	for _, m := range c.Members {
		if m.Name != leader {
			follower = m
			break
		}
	}
	if err := follower.Pause(); err != nil {
		t.Fatal(err)
	}
	agree(t, c, dial, "follower frozen", func(n side) error {
		for _, m := range n.obs.Members {
			if m.Name == follower.Name && m.Engine.Reachable {
				return fmt.Errorf("%s still answers", m.Name)
			}
		}
		return nil
	})
	if err := follower.Resume(); err != nil {
		t.Fatal(err)
	}

	// The leader stopped: the others elect a new one.
	if err := c.Member(leader).Stop(); err != nil {
		t.Fatal(err)
	}
	agree(t, c, dial, "leader stopped", func(n side) error {
		if n.a.LeaderMember == "" || n.a.LeaderMember == leader {
			return fmt.Errorf("no new leader yet (%q)", n.a.LeaderMember)
		}
		return nil
	})
}
