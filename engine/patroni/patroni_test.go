package patroni_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
)

// testAuth is the REST API's basic authentication in the shared cluster.
var testAuth = patroni.BasicAuth{Username: "hactl", Password: "s3cret-rest-pass"}

// bringUp bounds a cold three-member start (initdb, two base backups) on
// a busy two-core machine.
const bringUp = 150 * time.Second

func probe(c *pgCluster, ts []engine.Target, timeout time.Duration) []model.EngineFacts {
	return patroni.New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: timeout, Dial: c.Dial})
}

// probeEach probes every member on its own, one Probe call each.
func probeEach(c *pgCluster) map[string]model.EngineFacts {
	out := map[string]model.EngineFacts{}
	for _, tg := range c.Targets() {
		out[tg.Member] = probe(c, []engine.Target{tg}, 2*time.Second)[0]
	}
	return out
}

// shape is what a probe says about the cluster's roles.
type shape struct {
	primary  string
	replicas []string
	byName   map[string]model.EngineFacts
}

// healthy reports why a probe does not show one running writable primary
// with WAL position, every other member a running replica with received
// and replayed positions streaming from it, one system ID, and every
// member's view naming the primary as leader.
func healthy(facts map[string]model.EngineFacts) (shape, error) {
	s := shape{byName: facts}
	ids := map[string]bool{}
	for name, f := range facts {
		if !f.Reachable || f.Patroni == nil {
			return s, fmt.Errorf("%s unreachable: %s", name, f.Err)
		}
		p := f.Patroni
		if p.State != "running" {
			return s, fmt.Errorf("%s is %s/%s", name, p.Role, p.State)
		}
		ids[f.ClusterID] = true
		switch {
		case p.Writable() && p.WALLocation != nil:
			if s.primary != "" {
				return s, fmt.Errorf("two primaries: %s and %s", s.primary, name)
			}
			s.primary = name
		case p.Role == "replica" && p.ReceivedLocation != nil && p.ReplayedLocation != nil:
			s.replicas = append(s.replicas, name)
		default:
			return s, fmt.Errorf("%s: role %s, wal %v, received %v, replayed %v", name, p.Role, p.WALLocation, p.ReceivedLocation, p.ReplayedLocation)
		}
	}
	if s.primary == "" {
		return s, errors.New("no writable primary")
	}
	if len(ids) != 1 || ids[""] {
		return s, fmt.Errorf("system IDs %v, want one", ids)
	}
	for _, r := range s.replicas {
		if _, ok := facts[s.primary].Patroni.Streaming(r); !ok {
			return s, fmt.Errorf("%s is not streaming from %s: %+v", r, s.primary, facts[s.primary].Patroni.Replication)
		}
	}
	for name, f := range facts {
		if f.LeaderID != s.primary {
			return s, fmt.Errorf("%s's view names leader %q, want %s (view error %q)", name, f.LeaderID, s.primary, f.Patroni.ViewErr)
		}
	}
	return s, nil
}

func byName(ts []engine.Target, facts []model.EngineFacts) map[string]model.EngineFacts {
	m := map[string]model.EngineFacts{}
	for i, f := range facts {
		m[ts[i].Member] = f
	}
	return m
}

// waitHealthy polls until the whole cluster is healthy and returns its
// shape.
func waitHealthy(t *testing.T, c *pgCluster, timeout time.Duration) shape {
	t.Helper()
	var s shape
	ts := c.Targets()
	poll.Until(t, timeout, "a healthy cluster (one primary, every replica streaming)", func() error {
		var err error
		s, err = healthy(byName(ts, probe(c, ts, 2*time.Second)))
		return err
	}, poll.Every(500*time.Millisecond))
	return s
}

// TestCluster runs against one shared three-member cluster; subtests that
// change it come last, in order. pg-2 is tagged nofailover, so it never
// leads.
func TestCluster(t *testing.T) {
	auth := struct{ Username, Password string }{testAuth.Username, testAuth.Password}
	start := time.Now()
	c := startCluster(t, clusterOptions{
		Auth: &auth,
		Tags: map[string]map[string]any{"pg-2": {"nofailover": true}},
	})
	s := waitHealthy(t, c, bringUp)
	t.Logf("cluster %s healthy after %s: primary %s, replicas %v", c.Scope, time.Since(start).Round(100*time.Millisecond), s.primary, s.replicas)

	t.Run("healthy", func(t *testing.T) { testHealthy(t, c, s) })
	t.Run("frozen member costs one timeout", func(t *testing.T) { testFrozen(t, c, s) })
	t.Run("dial failures are connect failures", func(t *testing.T) { testDialFailures(t, c) })
	t.Run("TLS against plaintext is a credentials failure", func(t *testing.T) { testTLSMismatch(t, c) })
	t.Run("member operations do not apply", func(t *testing.T) { testMemberOps(t, c) })
	t.Run("switchover refusals change nothing", func(t *testing.T) { testSwitchoverRefused(t, c, s) })
	if t.Failed() {
		return
	}
	var next string
	t.Run("switchover moves the primary", func(t *testing.T) { next = testSwitchover(t, c, s) })
	if next == "" {
		return
	}
	t.Run("reinitialize the leader is refused", func(t *testing.T) { testReinitializeLeader(t, c, next) })
	t.Run("reinitialize a replica", func(t *testing.T) { testReinitializeReplica(t, c, next) })
}

func testHealthy(t *testing.T, c *pgCluster, s shape) {
	ts := c.Targets()
	before := time.Now()
	facts := byName(ts, probe(c, ts, 2*time.Second))
	if _, err := healthy(facts); err != nil {
		t.Fatalf("cluster no longer healthy: %v", err)
	}
	for _, tg := range ts {
		f := facts[tg.Member]
		p := f.Patroni
		t.Logf("%s: role=%s state=%s tl=%d wal=%s rcv=%s rpl=%s repl=%+v sysid=%s leader=%s version=%s patroni=%s scope=%s dcs=%s nofailover=%v took=%s",
			tg.Member, p.Role, p.State, p.Timeline, ptr(p.WALLocation), ptr(p.ReceivedLocation), ptr(p.ReplayedLocation),
			p.Replication, p.SystemID, f.LeaderID, f.Version, p.PatroniVersion, p.Scope, p.DCSLastSeen.Format(time.RFC3339), p.NoFailover, f.Took)
		if f.Err != "" || f.Failure != model.ProbeFailureNone || p.ViewErr != "" {
			t.Errorf("%s: err=%q failure=%q viewErr=%q", tg.Member, f.Err, f.Failure, p.ViewErr)
		}
		if f.MemberID != tg.Member || p.Name != tg.Member {
			t.Errorf("%s: MemberID %q, Name %q", tg.Member, f.MemberID, p.Name)
		}
		if f.ClusterID == "" || f.ClusterID != p.SystemID {
			t.Errorf("%s: ClusterID %q, SystemID %q", tg.Member, f.ClusterID, p.SystemID)
		}
		if p.ViewLeader != s.primary || f.LeaderID != s.primary {
			t.Errorf("%s: view leader %q / LeaderID %q, want %s", tg.Member, p.ViewLeader, f.LeaderID, s.primary)
		}
		if !strings.HasPrefix(f.Version, "15.") || p.ServerVersion/10000 != 15 {
			t.Errorf("%s: version %q / %d, want 15.x", tg.Member, f.Version, p.ServerVersion)
		}
		if p.PatroniVersion == "" || p.Scope != c.Scope {
			t.Errorf("%s: patroni version %q scope %q, want scope %s", tg.Member, p.PatroniVersion, p.Scope, c.Scope)
		}
		if p.Timeline < 1 {
			t.Errorf("%s: timeline %d", tg.Member, p.Timeline)
		}
		if d := p.DCSLastSeen.Sub(before); p.DCSLastSeen.IsZero() || d < -time.Minute || d > time.Minute {
			t.Errorf("%s: dcs_last_seen %s, probe at %s", tg.Member, p.DCSLastSeen, before)
		}
		if p.NoFailover != (tg.Member == "pg-2") {
			t.Errorf("%s: NoFailover %v", tg.Member, p.NoFailover)
		}
		if p.Paused || p.ClusterUnlocked || p.PendingRestart || p.SyncStandby || p.ReplayPaused {
			t.Errorf("%s: paused=%v unlocked=%v pendingRestart=%v sync=%v replayPaused=%v", tg.Member, p.Paused, p.ClusterUnlocked, p.PendingRestart, p.SyncStandby, p.ReplayPaused)
		}
		if f.ProbedAt.Before(before) || f.Took <= 0 || f.Took > 2*time.Second {
			t.Errorf("%s: ProbedAt %s Took %s", tg.Member, f.ProbedAt, f.Took)
		}
		if f.Role() == model.RoleLeader != (tg.Member == s.primary) {
			t.Errorf("%s: model role %s", tg.Member, f.Role())
		}
	}
	prim := facts[s.primary].Patroni
	if prim.Role != "master" && prim.Role != "primary" {
		t.Errorf("primary role %q", prim.Role)
	}
	if prim.ReceivedLocation != nil || prim.ReplayedLocation != nil || len(prim.Replication) != 2 {
		t.Errorf("primary: received %v replayed %v replication %+v", prim.ReceivedLocation, prim.ReplayedLocation, prim.Replication)
	}
	for _, r := range s.replicas {
		p := facts[r].Patroni
		if p.WALLocation != nil || len(p.Replication) != 0 {
			t.Errorf("%s: replica with WAL location %v or replication %+v", r, p.WALLocation, p.Replication)
		}
		if row, _ := prim.Streaming(r); row.SyncState != "async" {
			t.Errorf("%s: sync state %q, want async", r, row.SyncState)
		}
		if *p.ReplayedLocation > *prim.WALLocation+16<<20 {
			t.Errorf("%s replayed %d, far beyond the primary's %d", r, *p.ReplayedLocation, *prim.WALLocation)
		}
	}
}

func ptr(p *int64) string {
	if p == nil {
		return "nil"
	}
	return strconv.FormatInt(*p, 10)
}

// testFrozen stops a replica's Patroni (its REST API accepts TCP and never
// answers): the probe reports it as a timeout after about one Timeout and
// the others as answering.
func testFrozen(t *testing.T, c *pgCluster, s shape) {
	frozen := c.Member(t, s.replicas[0])
	if err := frozen.Freeze(); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			if err := frozen.Thaw(); err != nil {
				t.Errorf("thawing %s: %v", frozen.Name, err)
			}
		}
	}
	defer thaw()

	const timeout = time.Second
	ts := c.Targets()
	start := time.Now()
	facts := byName(ts, probe(c, ts, timeout))
	took := time.Since(start)
	thaw()
	t.Logf("probe with %s frozen took %s", frozen.Name, took)
	if took > 3*timeout {
		t.Errorf("probe took %s, want about one timeout (%s)", took, timeout)
	}
	for name, f := range facts {
		t.Logf("%s: reachable=%v failure=%q err=%q took=%s", name, f.Reachable, f.Failure, f.Err, f.Took)
		if name == frozen.Name {
			if f.Reachable || f.Failure != model.ProbeFailureTimeout || f.Patroni != nil || !strings.Contains(f.Err, name) {
				t.Errorf("frozen %s: reachable=%v failure=%q patroni=%v err=%q", name, f.Reachable, f.Failure, f.Patroni, f.Err)
			}
			if !strings.Contains(f.Err, "connected, no reply") {
				t.Errorf("frozen %s: %q should say it connected and got no reply", name, f.Err)
			}
			continue
		}
		if !f.Reachable {
			t.Errorf("%s unreachable while %s was frozen: %s", name, frozen.Name, f.Err)
		}
	}
	// Once thawed it answers again.
	poll.Until(t, 30*time.Second, frozen.Name+" answering after SIGCONT", func() error {
		f := probe(c, []engine.Target{target(frozen.Name)}, 2*time.Second)[0]
		if !f.Reachable {
			return errors.New(f.Err)
		}
		return nil
	}, poll.Every(200*time.Millisecond))
}

// testDialFailures: a pod the dialer cannot reach, and a port where
// nothing listens (connection refused), are connect failures.
func testDialFailures(t *testing.T, c *pgCluster) {
	refused := func(ctx context.Context, ns, pod string, port int) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", net.JoinHostPort(c.Members[0].Addr, "1"))
	}
	cases := []struct {
		name string
		dial engine.DialFunc
		pod  string
		want string
	}{
		{"unknown pod", c.Dial, "pg-9", "no pod"},
		{"connection refused", refused, "pg-0", "connection refused"},
		{"forward error", func(context.Context, string, string, int) (net.Conn, error) {
			return nil, fmt.Errorf("port-forward: %w: nothing listens on 8008", engine.ErrForward)
		}, "pg-0", "forwarding to the pod failed"},
	}
	for _, tc := range cases {
		f := patroni.New().Probe(context.Background(), []engine.Target{target(tc.pod)}, engine.ProbeOptions{Timeout: time.Second, Dial: tc.dial})[0]
		t.Logf("%s: failure=%q err=%q", tc.name, f.Failure, f.Err)
		if f.Reachable || f.Failure != model.ProbeFailureConnect || !strings.Contains(f.Err, tc.want) || !strings.Contains(f.Err, tc.pod) {
			t.Errorf("%s: reachable=%v failure=%q err=%q, want connect naming %q", tc.name, f.Reachable, f.Failure, f.Err, tc.want)
		}
	}
}

// testTLSMismatch: TLS credentials against a plaintext REST API fail the
// handshake, which is a credentials failure.
func testTLSMismatch(t *testing.T, c *pgCluster) {
	p := newPKI(t, nil)
	cr := &engine.Credentials{CAPEM: p.caPEM, CertPEM: p.clientCertPEM, KeyPEM: p.clientKeyPEM}
	f := patroni.New().Probe(context.Background(), []engine.Target{target("pg-0")}, engine.ProbeOptions{Timeout: time.Second, Dial: c.Dial, Credentials: cr})[0]
	t.Logf("failure=%q err=%q", f.Failure, f.Err)
	if f.Reachable || f.Failure != model.ProbeFailureCredentials {
		t.Errorf("reachable=%v failure=%q err=%q, want a credentials failure", f.Reachable, f.Failure, f.Err)
	}
}

func testMemberOps(t *testing.T, c *pgCluster) {
	ops := patroni.New().Members(engine.ProbeOptions{Dial: c.Dial})
	ctx := context.Background()
	_, addErr := ops.AddLearner(ctx, target("pg-0"), []string{"http://x"})
	for name, err := range map[string]error{
		"RemoveMember":   ops.RemoveMember(ctx, target("pg-0"), "pg-1"),
		"AddLearner":     addErr,
		"PromoteLearner": ops.PromoteLearner(ctx, target("pg-0"), "pg-1"),
		"MoveLeader":     ops.MoveLeader(ctx, target("pg-0"), "pg-1"),
	} {
		if !errors.Is(err, patroni.ErrNotApplicable) || errors.Is(err, engine.ErrOutcomeUnknown) ||
			errors.Is(err, engine.ErrAlready) || errors.Is(err, engine.ErrNotYet) || !strings.Contains(err.Error(), "Patroni") {
			t.Errorf("%s: %v, want ErrNotApplicable only", name, err)
		}
	}
}

// testSwitchoverRefused: a wrong leader name, a nofailover candidate and a
// missing password are refused and change nothing.
func testSwitchoverRefused(t *testing.T, c *pgCluster, s shape) {
	ctx := context.Background()
	o := engine.ProbeOptions{Dial: c.Dial}
	replica := s.replicas[0]
	if replica == "pg-2" {
		replica = s.replicas[1]
	}
	cases := []struct {
		name           string
		via            string
		leader, target string
		opts           []patroni.ActionOption
		want           error
		text           string
	}{
		{"wrong leader", replica, replica, s.primary, []patroni.ActionOption{patroni.WithBasicAuth(testAuth)}, patroni.ErrPrecondition, "leader name does not match"},
		{"nofailover candidate", s.primary, s.primary, "pg-2", []patroni.ActionOption{patroni.WithBasicAuth(testAuth)}, patroni.ErrPrecondition, "no good candidates"},
		{"no password", s.primary, s.primary, replica, nil, patroni.ErrUnauthorized, "401"},
		{"wrong password", s.primary, s.primary, replica, []patroni.ActionOption{patroni.WithBasicAuth(patroni.BasicAuth{Username: "hactl", Password: "nope"})}, patroni.ErrUnauthorized, "401"},
	}
	for _, tc := range cases {
		err := patroni.Switchover(ctx, target(tc.via), o, tc.leader, tc.target, tc.opts...)
		t.Logf("%s: %v", tc.name, err)
		var se *patroni.StatusError
		if !errors.Is(err, tc.want) || !errors.As(err, &se) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: %v, want %v saying %q", tc.name, err, tc.want, tc.text)
		}
		if errors.Is(err, engine.ErrOutcomeUnknown) || strings.Contains(err.Error(), testAuth.Password) {
			t.Errorf("%s: %v: outcome unknown or a password in the error", tc.name, err)
		}
	}
	// Nothing changed: each member, probed on its own, names the same
	// primary, which still is the only writable one.
	after, err := healthy(probeEach(c))
	if err != nil {
		t.Fatalf("after refused switchovers: %v", err)
	}
	if after.primary != s.primary {
		t.Fatalf("primary moved from %s to %s after refused switchovers", s.primary, after.primary)
	}
}

// testSwitchover moves the primary to a replica and returns the new
// primary.
func testSwitchover(t *testing.T, c *pgCluster, s shape) string {
	candidate := s.replicas[0]
	if candidate == "pg-2" {
		candidate = s.replicas[1]
	}
	start := time.Now()
	err := patroni.Switchover(context.Background(), target(s.primary), engine.ProbeOptions{Dial: c.Dial}, s.primary, candidate, patroni.WithBasicAuth(testAuth))
	t.Logf("switchover %s -> %s answered after %s: %v", s.primary, candidate, time.Since(start).Round(10*time.Millisecond), err)
	if err != nil {
		t.Fatalf("switchover: %v", err)
	}
	poll.Until(t, 60*time.Second, candidate+" writable", func() error {
		f := probe(c, []engine.Target{target(candidate)}, 2*time.Second)[0]
		if !f.Patroni.Writable() || f.Patroni.State != "running" {
			return fmt.Errorf("%s: reachable=%v %+v", candidate, f.Reachable, f.Patroni)
		}
		return nil
	}, poll.Every(250*time.Millisecond))
	t.Logf("%s writable after %s", candidate, time.Since(start).Round(100*time.Millisecond))
	after := waitHealthy(t, c, 60*time.Second)
	t.Logf("cluster healthy again after %s: primary %s, replicas %v", time.Since(start).Round(100*time.Millisecond), after.primary, after.replicas)
	if after.primary != candidate {
		t.Fatalf("primary is %s, want %s", after.primary, candidate)
	}
	// A primary's timeline is read from PostgreSQL (a replica's may be a
	// cached value): the new primary's must be past the old one's.
	was := s.byName[s.primary].Patroni.Timeline
	if now := after.byName[candidate].Patroni.Timeline; now <= was {
		t.Errorf("new primary %s on timeline %d, the old one was on %d", candidate, now, was)
	}
	if old := after.byName[s.primary].Patroni; old.Writable() || old.Role != "replica" {
		t.Errorf("old primary %s: role %s", s.primary, old.Role)
	}
	return candidate
}

func testReinitializeLeader(t *testing.T, c *pgCluster, leader string) {
	err := patroni.Reinitialize(context.Background(), target(leader), engine.ProbeOptions{Dial: c.Dial}, patroni.WithBasicAuth(testAuth))
	t.Logf("reinitialize %s: %v", leader, err)
	if !errors.Is(err, patroni.ErrIsLeader) || errors.Is(err, engine.ErrOutcomeUnknown) {
		t.Fatalf("reinitialize the leader: %v, want ErrIsLeader", err)
	}
	f := probe(c, []engine.Target{target(leader)}, 2*time.Second)[0]
	if !f.Patroni.Writable() || f.Patroni.State != "running" {
		t.Errorf("%s after a refused reinitialize: %+v", leader, f.Patroni)
	}
}

// testReinitializeReplica reseeds a replica: Patroni answers at once, the
// member goes through its intermediate states and streams again.
func testReinitializeReplica(t *testing.T, c *pgCluster, leader string) {
	replica := "pg-2"
	before := probe(c, []engine.Target{target(replica)}, 2*time.Second)[0]
	start := time.Now()
	err := patroni.Reinitialize(context.Background(), target(replica), engine.ProbeOptions{Dial: c.Dial}, patroni.WithBasicAuth(testAuth))
	t.Logf("reinitialize %s answered after %s: %v", replica, time.Since(start).Round(time.Millisecond), err)
	if err != nil {
		t.Fatalf("reinitialize: %v", err)
	}
	if before.Patroni == nil || before.Patroni.Role != "replica" {
		t.Fatalf("%s before reinitialize: %+v", replica, before)
	}
	var states []string
	reseeding := false // seen in a state other than a running replica
	poll.Until(t, 90*time.Second, replica+" streaming again after its reinitialize", func() error {
		f := byName(c.Targets(), probe(c, c.Targets(), 2*time.Second))
		p := f[replica].Patroni
		if p == nil {
			return fmt.Errorf("%s: %s; states so far %v", replica, f[replica].Err, states)
		}
		st := p.Role + "/" + p.State
		if len(states) == 0 || states[len(states)-1] != st {
			states = append(states, st)
		}
		if st != "replica/running" {
			reseeding = true
			return fmt.Errorf("%s is %s", replica, st)
		}
		if _, ok := f[leader].Patroni.Streaming(replica); !ok || !reseeding || p.ReplayedLocation == nil {
			return fmt.Errorf("%s: streaming=%v, states so far %v", replica, ok, states)
		}
		return nil
	}, poll.Every(200*time.Millisecond))
	t.Logf("%s streaming again after %s; states seen %v", replica, time.Since(start).Round(100*time.Millisecond), states)
}
