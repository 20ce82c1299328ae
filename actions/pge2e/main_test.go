package pge2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine/registry"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

const (
	namespace = "hactl-pge2e"
	cluster   = "pg-healthy"
)

// s is the one sandbox the package's tests share.
var s *e2esuite.Suite

func TestMain(m *testing.M) {
	e2esuite.Main(m, &s, func() (e2esuite.Options, func(), error) {
		return e2esuite.Options{Namespace: namespace, Scenarios: []string{cluster}}, nil, nil
	})
}

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() || s == nil {
		t.Skip("end-to-end test (the sandbox) skipped with -short")
	}
}

// loopDial reaches port on a member's own loopback address, looked up in
// the sandbox's member table on every dial (a replaced member's new pod
// may be another incarnation).
func loopDial(ctx context.Context, ns, pod string, port int) (net.Conn, error) {
	m, err := s.SB.Member(ctx, ns+"/"+pod)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrForward, err)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", net.JoinHostPort(m.Address, strconv.Itoa(port)))
}

func observer() *actions.Observer {
	return &actions.Observer{Engines: registry.Engines(), Client: s.KC, Dial: loopDial, ProbeTimeout: 3 * time.Second}
}

func executor() *actions.Executor {
	return &actions.Executor{Observer: observer(), PollInterval: time.Second, WaitTimeout: 3 * time.Minute}
}

// observe observes the cluster as status does, every member probed on
// its own.
func observe(t *testing.T) status.Result {
	t.Helper()
	res, _, err := observer().Observe(context.Background(), namespace, cluster)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// waitFailoverReady polls until status says failover-ready.
func waitFailoverReady(t *testing.T) status.Result {
	t.Helper()
	var res status.Result
	poll.Until(t, 3*time.Minute, cluster+" to be failover-ready", func() error {
		r, _, err := observer().Observe(context.Background(), namespace, cluster)
		if err != nil {
			return err
		}
		if !r.Verdict.FailoverReady {
			return fmt.Errorf("%+v", r.Verdict.Reasons)
		}
		res = r
		return nil
	}, poll.Every(time.Second))
	return res
}

// roles are the members as each answers for itself: the writable
// primaries and the replicas.
func roles(t *testing.T) (primaries, replicas []string) {
	t.Helper()
	for _, m := range observe(t).Observation.Members {
		e := m.Engine
		switch {
		case e == nil || !e.Reachable || e.Patroni == nil:
		case e.Patroni.Writable():
			primaries = append(primaries, m.Name)
		case e.Patroni.Role == "replica":
			replicas = append(replicas, m.Name)
		}
	}
	return primaries, replicas
}

// awaitRejoined polls until prim is the one primary and old answers as a
// replica: a switchover is done once the new primary holds the lock, and
// Patroni rejoins the old one by itself a few seconds later. It returns
// the roles last seen and whether they came to be.
func awaitRejoined(t *testing.T, prim, old string) ([]string, []string, bool) {
	t.Helper()
	var p, r []string
	err := poll.Wait(time.Minute, func() error {
		p, r = roles(t)
		if len(p) != 1 || p[0] != prim || !slices.Contains(r, old) {
			return fmt.Errorf("primaries %v, replicas %v", p, r)
		}
		return nil
	}, poll.Every(500*time.Millisecond))
	return p, r, err == nil
}

func primary(t *testing.T) (string, []string) {
	t.Helper()
	p, r := roles(t)
	if len(p) != 1 || len(r) != 2 {
		t.Fatalf("primaries %v, replicas %v: want one primary and two replicas", p, r)
	}
	return p[0], r
}

// writeRow inserts a fresh row through the primary and returns it.
func writeRow(t *testing.T, prim, what string) string {
	t.Helper()
	return s.WriteRow(t, namespace, cluster, prim, what)
}

// assertRowEverywhere polls each member on its own until it has row v.
func assertRowEverywhere(t *testing.T, v string) {
	t.Helper()
	var names []string
	for _, m := range observe(t).Observation.Members {
		names = append(names, m.Name)
	}
	s.AssertRowOn(t, namespace, cluster, v, names)
}

// decide classifies in for the cluster.
func decide(t *testing.T, x *actions.Executor, in model.Intent) model.Decision {
	t.Helper()
	d, _, _, err := x.Decide(context.Background(), namespace, cluster, in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// run decides in and executes it, returning the result, the error and
// how long the execution took.
func run(t *testing.T, in model.Intent) (model.Decision, actions.Result, error, time.Duration) {
	t.Helper()
	x := executor()
	d := decide(t, x, in)
	begin := time.Now()
	res, err := x.Execute(context.Background(), d, actions.ExecOptions{
		OnReceipt: func(r model.Receipt) { t.Logf("  [%s] %s %s: %s", r.Phase, r.Step, r.Outcome, r.Detail) },
		Warn:      func(w string) { t.Logf("warning: %s", w) },
	})
	return d, res, err, time.Since(begin)
}

func hasOutcome(res actions.Result, k model.StepKind, o model.Outcome) bool {
	for _, r := range res.Receipts {
		if r.Step == k && r.Outcome == o {
			return true
		}
	}
	return false
}

func podUID(t *testing.T, pod string) string {
	t.Helper()
	p, err := s.KC.CoreV1().Pods(namespace).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(p.UID)
}
