package etcd_test

// Tier-3 tests: real etcd member processes (sandbox/etcdcluster), reached
// through a direct TCP DialFunc that stands in for the port-forward.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/internal/testbins"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
)

const (
	testNamespace = "hactl-test"
	// podPort is the port the targets name, as in a pod; the test dialer
	// checks the engine passes it through and maps each pod to its
	// member's real loopback address.
	podPort = 2379
)

// startCluster starts a real cluster that is stopped (and resumed first,
// if paused) when the test ends.
func startCluster(t *testing.T, o etcdcluster.Options) *etcdcluster.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("tier-3 test (real etcd processes) skipped with -short")
	}
	bin, err := testbins.Dir()
	if err != nil {
		t.Fatalf("test binaries: %v", err)
	}
	o.BinDir = bin
	o.Dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := etcdcluster.Start(ctx, o)
	if err != nil {
		t.Fatalf("starting etcd cluster: %v", err)
	}
	t.Cleanup(func() {
		for _, m := range c.Members {
			_ = m.Resume() // a paused member would only die after the stop grace
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stopping etcd cluster: %v", err)
		}
		if pids := c.Pids(); len(pids) > 0 {
			t.Errorf("etcd processes left behind: %v", pids)
		}
	})
	return c
}

// tcpDialer dials each pod's member directly, by name.
type tcpDialer struct {
	t     *testing.T
	mu    sync.Mutex
	addrs map[string]string // pod -> host:port
	dials map[string]int    // pod -> connections opened
}

func newTCPDialer(t *testing.T, c *etcdcluster.Cluster) *tcpDialer {
	d := &tcpDialer{t: t, addrs: map[string]string{}, dials: map[string]int{}}
	d.sync(c)
	return d
}

// sync learns members added since (learners).
func (d *tcpDialer) sync(c *etcdcluster.Cluster) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range c.Members {
		u, err := url.Parse(m.ClientURL)
		if err != nil {
			d.t.Fatalf("client URL %q: %v", m.ClientURL, err)
		}
		d.addrs[m.Name] = u.Host
	}
}

func (d *tcpDialer) Dial(ctx context.Context, namespace, pod string, port int) (net.Conn, error) {
	if namespace != testNamespace || port != podPort {
		return nil, fmt.Errorf("unexpected dial to %s/%s:%d", namespace, pod, port)
	}
	d.mu.Lock()
	addr, ok := d.addrs[pod]
	d.dials[pod]++
	d.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no pod %s/%s", namespace, pod)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", addr)
}

func targets(c *etcdcluster.Cluster) []engine.Target {
	var ts []engine.Target
	for _, m := range c.Members {
		ts = append(ts, engine.Target{Member: m.Name, Namespace: testNamespace, Pod: m.Name, Port: podPort})
	}
	return ts
}

func probe(t *testing.T, d *tcpDialer, ts []engine.Target, timeout time.Duration) ([]model.EngineFacts, time.Duration) {
	t.Helper()
	start := time.Now()
	facts := etcd.New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: timeout, Dial: d.Dial})
	took := time.Since(start)
	if len(facts) != len(ts) {
		t.Fatalf("Probe returned %d facts for %d targets", len(facts), len(ts))
	}
	return facts, took
}

func open(t *testing.T, d *tcpDialer, tg engine.Target) *etcd.Client {
	t.Helper()
	c, err := etcd.Open(context.Background(), tg, engine.ProbeOptions{Timeout: 2 * time.Second, Dial: d.Dial})
	if err != nil {
		t.Fatalf("Open(%s): %v", tg.Member, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// healthy reports why a fully healthy cluster's probe does not look so.
func healthy(facts []model.EngineFacts, voters int) error {
	leaders := 0
	for _, f := range facts {
		if !f.Reachable {
			return fmt.Errorf("a member is unreachable: %s", f.Err)
		}
		if f.LeaderID == "" {
			return fmt.Errorf("member %s knows no leader", f.MemberID)
		}
		if f.Role() == model.RoleLeader {
			leaders++
		}
		if len(f.Peers) != voters {
			return fmt.Errorf("member %s lists %d peers, want %d", f.MemberID, len(f.Peers), voters)
		}
	}
	if leaders != 1 {
		return fmt.Errorf("%d members say they lead", leaders)
	}
	return nil
}

func TestProbeHealthyCluster(t *testing.T) {
	c := startCluster(t, etcdcluster.Options{Members: 3})
	d := newTCPDialer(t, c)
	ts := targets(c)

	var facts []model.EngineFacts
	poll.Until(t, 10*time.Second, "a settled healthy cluster", func() error {
		facts, _ = probe(t, d, ts, 2*time.Second)
		return healthy(facts, 3)
	})

	memberIDs := map[string]bool{}
	clusterIDs := map[string]bool{}
	versions := map[string]bool{}
	leaders := 0
	for i, f := range facts {
		t.Logf("%s: member=%s cluster=%s leader=%s term=%d index=%d applied=%d version=%s storage=%s db=%d/%d quota=%d took=%s",
			ts[i].Member, f.MemberID, f.ClusterID, f.LeaderID, f.RaftTerm, f.RaftIndex, f.RaftApplied,
			f.Version, f.StorageVersion, f.DBSizeInUse, f.DBSize, f.DBSizeQuota, f.Took)
		if !f.Reachable || f.Err != "" || f.Failure != model.ProbeFailureNone {
			t.Errorf("%s: Reachable=%v Err=%q Failure=%q", ts[i].Member, f.Reachable, f.Err, f.Failure)
		}
		memberIDs[f.MemberID] = true
		clusterIDs[f.ClusterID] = true
		versions[f.Version] = true
		if f.MemberID == f.LeaderID {
			leaders++
		}
		if len(f.Peers) != 3 {
			t.Errorf("%s: %d peers, want 3", ts[i].Member, len(f.Peers))
		}
		if f.RaftIndex == 0 || f.RaftApplied == 0 || f.RaftTerm == 0 {
			t.Errorf("%s: raft term/index/applied = %d/%d/%d, want non-zero", ts[i].Member, f.RaftTerm, f.RaftIndex, f.RaftApplied)
		}
		if f.IsLearner || len(f.Alarms) != 0 || len(f.Errors) != 0 || f.PeersErr != "" {
			t.Errorf("%s: learner=%v alarms=%v errors=%v peersErr=%q", ts[i].Member, f.IsLearner, f.Alarms, f.Errors, f.PeersErr)
		}
		if f.DBSize == 0 || f.DBSizeQuota == 0 {
			t.Errorf("%s: dbSize=%d quota=%d", ts[i].Member, f.DBSize, f.DBSizeQuota)
		}
		// The member list names this member, under this member's ID.
		var self *model.Peer
		for j := range f.Peers {
			if f.Peers[j].ID == f.MemberID {
				self = &f.Peers[j]
			}
		}
		if self == nil || self.Name != ts[i].Member || len(self.PeerURLs) == 0 || len(self.ClientURLs) == 0 {
			t.Errorf("%s: member list entry for itself = %+v", ts[i].Member, self)
		}
	}
	if len(memberIDs) != 3 {
		t.Errorf("member IDs %v: want 3 distinct", memberIDs)
	}
	if len(clusterIDs) != 1 {
		t.Errorf("cluster IDs %v: want exactly one", clusterIDs)
	}
	if leaders != 1 {
		t.Errorf("%d members have MemberID == LeaderID, want 1", leaders)
	}
	if len(versions) != 1 || versions[""] {
		t.Errorf("versions %v: want one, non-empty", versions)
	}
	for id := range memberIDs {
		if _, err := etcd.ParseID(id); err != nil || strings.ToLower(id) != id {
			t.Errorf("member ID %q is not lower-case hex as etcdctl prints it: %v", id, err)
		}
	}

	// Probing is read-only: on an idle cluster two probes in a row see
	// the same raft index (a probe that proposed anything, as the alarm
	// RPC does, would move it every time).
	prev := facts
	poll.Until(t, 10*time.Second, "two probes in a row to see the same raft index", func() error {
		cur, _ := probe(t, d, ts, 2*time.Second)
		defer func() { prev = cur }()
		for i := range cur {
			if cur[i].RaftIndex != prev[i].RaftIndex {
				return fmt.Errorf("%s: raft index %d -> %d", ts[i].Member, prev[i].RaftIndex, cur[i].RaftIndex)
			}
		}
		return nil
	})
}

func TestProbePausedMember(t *testing.T) {
	c := startCluster(t, etcdcluster.Options{Members: 3})
	d := newTCPDialer(t, c)
	ts := targets(c)

	// Connections opened before the pause must not make the probe wait
	// either, so warm up first.
	poll.Until(t, 10*time.Second, "a settled healthy cluster", func() error {
		facts, _ := probe(t, d, ts, 2*time.Second)
		return healthy(facts, 3)
	})

	const paused = 1
	if err := c.Members[paused].Pause(); err != nil {
		t.Fatal(err)
	}
	goroutinesBefore := runtime.NumGoroutine()

	facts, took := probe(t, d, ts, time.Second)
	t.Logf("probe of 3 members, %s paused, Timeout 1s: %s", ts[paused].Member, took)
	for i, f := range facts {
		t.Logf("%s: reachable=%v member=%s failure=%q err=%q took=%s", ts[i].Member, f.Reachable, f.MemberID, f.Failure, f.Err, f.Took)
	}
	if took > 10*time.Second {
		t.Fatalf("Probe hung: %s", took)
	}
	for i, f := range facts {
		if i == paused {
			if f.Reachable {
				t.Errorf("paused %s reported reachable", ts[i].Member)
			}
			if f.Failure != model.ProbeFailureTimeout {
				t.Errorf("paused %s: Failure=%q, want %q", ts[i].Member, f.Failure, model.ProbeFailureTimeout)
			}
			if !strings.Contains(f.Err, ts[i].Member) || !strings.Contains(f.Err, "deadline exceeded") {
				t.Errorf("paused %s: Err=%q should say deadline exceeded and name the member", ts[i].Member, f.Err)
			}
			continue
		}
		if !f.Reachable {
			t.Errorf("%s: unreachable while only %s is paused: %s", ts[i].Member, ts[paused].Member, f.Err)
		}
	}

	// Probe closes every client before it returns: the goroutines it
	// started wind down (polling, since gRPC finishes closing
	// asynchronously).
	poll.Until(t, 5*time.Second, "probe goroutines to end", func() error {
		if n := runtime.NumGoroutine(); n > goroutinesBefore+2 {
			return fmt.Errorf("%d goroutines, %d before the probe", n, goroutinesBefore)
		}
		return nil
	})

	// Resumed, the member answers again.
	if err := c.Members[paused].Resume(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the resumed member to answer", func() error {
		facts, _ := probe(t, d, ts, time.Second)
		return healthy(facts, 3)
	})
}

// Seed 000: a member whose data dir comes back empty and that restarts
// with --initial-cluster-state=new and an --initial-cluster naming only
// itself forms a one-member cluster of its own and reports healthy. Only
// asking each member on its own shows it.
func TestProbeRebootstrappedMember(t *testing.T) {
	c := startCluster(t, etcdcluster.Options{Members: 3})
	d := newTCPDialer(t, c)
	ts := targets(c)

	var before []model.EngineFacts
	poll.Until(t, 10*time.Second, "a settled healthy cluster", func() error {
		before, _ = probe(t, d, ts, 2*time.Second)
		return healthy(before, 3)
	})

	seed := c.Members[0]
	if err := seed.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := seed.Wipe(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := seed.Restart(ctx, etcdcluster.MemberArgs{InitialClusterState: "new", InitialCluster: seed.Self()}); err != nil {
		t.Fatal(err)
	}

	// What a readiness probe sees: /health says all is well.
	resp, err := http.Get(seed.ClientURL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/health of the re-bootstrapped member: %s, want 200", resp.Status)
	}

	facts, _ := probe(t, d, ts, 2*time.Second)
	for i, f := range facts {
		t.Logf("%s: reachable=%v member=%s cluster=%s leader=%s peers=%d err=%q", ts[i].Member, f.Reachable, f.MemberID, f.ClusterID, f.LeaderID, len(f.Peers), f.Err)
	}
	s := facts[0]
	if !s.Reachable {
		t.Fatalf("re-bootstrapped member unreachable: %s", s.Err)
	}
	for i := 1; i < 3; i++ {
		if !facts[i].Reachable {
			t.Fatalf("%s unreachable: %s", ts[i].Member, facts[i].Err)
		}
		if s.ClusterID == facts[i].ClusterID {
			t.Errorf("re-bootstrapped member reports cluster %s, the same as %s", s.ClusterID, ts[i].Member)
		}
		if facts[i].ClusterID != before[i].ClusterID {
			t.Errorf("%s changed cluster: %s -> %s", ts[i].Member, before[i].ClusterID, facts[i].ClusterID)
		}
		if len(facts[i].Peers) != 3 {
			t.Errorf("%s lists %d peers, want still 3", ts[i].Member, len(facts[i].Peers))
		}
	}
	if len(s.Peers) != 1 {
		t.Errorf("re-bootstrapped member lists %d peers, want 1 (itself)", len(s.Peers))
	}
	if s.LeaderID != s.MemberID {
		t.Errorf("re-bootstrapped member: leader %s, want itself (%s)", s.LeaderID, s.MemberID)
	}
	// The collision that silences etcd's own guard: same member ID as
	// before the wipe.
	if s.MemberID != before[0].MemberID {
		t.Logf("note: member ID changed on re-bootstrap: %s -> %s", before[0].MemberID, s.MemberID)
	}
}

func TestProbeNoSpaceAlarm(t *testing.T) {
	const quota = 1 << 20 // 1 MiB; etcd enforces no minimum
	c := startCluster(t, etcdcluster.Options{Members: 3, QuotaBackendBytes: quota})
	d := newTCPDialer(t, c)
	ts := targets(c)
	cli := open(t, d, ts[0])

	value := strings.Repeat("x", 64<<10)
	var putErr error
	for i := 0; i < 200 && putErr == nil; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, putErr = cli.Put(ctx, fmt.Sprintf("/fill/%03d", i), value)
		cancel()
	}
	if !errors.Is(putErr, etcd.ErrNoSpace) {
		t.Fatalf("filling a %d-byte quota: last error %v, want ErrNoSpace", quota, putErr)
	}
	t.Logf("put failed as expected: %v", putErr)

	poll.Until(t, 10*time.Second, "every member to report NOSPACE", func() error {
		facts, _ := probe(t, d, ts, 2*time.Second)
		for i, f := range facts {
			if !f.Reachable {
				return fmt.Errorf("%s: %s", ts[i].Member, f.Err)
			}
			found := false
			for _, a := range f.Alarms {
				if a.Type == "NOSPACE" && a.MemberID != "" {
					found = true
				}
			}
			if !found {
				return fmt.Errorf("%s: alarms %v", ts[i].Member, f.Alarms)
			}
			if f.DBSizeQuota != quota {
				return fmt.Errorf("%s: quota %d, want %d", ts[i].Member, f.DBSizeQuota, quota)
			}
		}
		t.Logf("alarms as %s sees them: %+v; status errors: %q", ts[0].Member, facts[0].Alarms, facts[0].Errors)
		// The cluster's own answer agrees with what Status listed.
		listed, err := cli.AlarmList(context.Background())
		if err != nil {
			return err
		}
		if fmt.Sprint(listed) != fmt.Sprint(facts[0].Alarms) {
			return fmt.Errorf("AlarmList %v, Status lists %v", listed, facts[0].Alarms)
		}
		return nil
	})
}

func TestProbeLearnerAndMemberOps(t *testing.T) {
	c := startCluster(t, etcdcluster.Options{Members: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// etcd refuses membership changes until every member has been
	// connected for a while ("unhealthy cluster"): retry until it agrees.
	var learner *etcdcluster.Member
	poll.Until(t, 20*time.Second, "the cluster to accept a learner", func() error {
		var err error
		learner, err = c.AddLearner(ctx, "etcd-3")
		return err
	})
	d := newTCPDialer(t, c)
	ts := targets(c)
	if len(ts) != 4 || ts[3].Member != learner.Name {
		t.Fatalf("targets %+v", ts)
	}

	facts, _ := probe(t, d, ts, 2*time.Second)
	lf := facts[3]
	if !lf.Reachable || !lf.IsLearner || lf.Role() != model.RoleLearner {
		t.Fatalf("learner: reachable=%v isLearner=%v role=%s err=%q", lf.Reachable, lf.IsLearner, lf.Role(), lf.Err)
	}
	if lf.PeersErr == "" || lf.Peers != nil {
		t.Errorf("learner: peers %v, peersErr %q: a learner serves no member list, so peers must be unknown", lf.Peers, lf.PeersErr)
	}
	for i := range 3 {
		f := facts[i]
		if !f.Reachable || f.IsLearner || len(f.Peers) != 4 {
			t.Fatalf("%s: reachable=%v learner=%v peers=%d err=%q", ts[i].Member, f.Reachable, f.IsLearner, len(f.Peers), f.Err)
		}
		n := 0
		for _, p := range f.Peers {
			if p.IsLearner {
				n++
				if p.ID != lf.MemberID {
					t.Errorf("%s lists learner %s, the learner says it is %s", ts[i].Member, p.ID, lf.MemberID)
				}
			}
		}
		if n != 1 {
			t.Errorf("%s lists %d learners, want 1", ts[i].Member, n)
		}
	}

	// The member operations the actions use, lightly.
	var leader, follower engine.Target
	var leaderID, followerID string
	for i := range 3 {
		if facts[i].Role() == model.RoleLeader {
			leader, leaderID = ts[i], facts[i].MemberID
		} else {
			follower, followerID = ts[i], facts[i].MemberID
		}
	}
	lc := open(t, d, leader)
	fc := open(t, d, follower)
	t.Logf("leader %s (%s), follower %s (%s)", leader.Member, leaderID, follower.Member, followerID)

	// A sentinel written through one member is served by the others once
	// applied, read from each member's own store.
	if _, err := fc.Put(ctx, "/hactl/sentinel", "s1"); err != nil {
		t.Fatal(err)
	}
	lrn := open(t, d, ts[3])
	poll.Until(t, 10*time.Second, "the learner to serve the sentinel", func() error {
		v, ok, err := lrn.Get(ctx, "/hactl/sentinel")
		if err != nil || !ok || v != "s1" {
			return fmt.Errorf("value %q found %v err %v", v, ok, err)
		}
		return nil
	})
	if _, ok, err := lc.Get(ctx, "/hactl/absent"); err != nil || ok {
		t.Errorf("Get(absent) = found %v, err %v", ok, err)
	}

	poll.Until(t, 20*time.Second, "the learner to be promoted", func() error {
		_, err := lc.MemberPromote(ctx, lf.MemberID)
		if errors.Is(err, etcd.ErrLearnerNotInSync) {
			return err
		}
		if err != nil {
			t.Fatalf("promote: %v", err)
		}
		return nil
	})
	if _, err := lc.MemberPromote(ctx, lf.MemberID); !errors.Is(err, etcd.ErrNotLearner) {
		t.Errorf("promoting a voter: %v, want ErrNotLearner", err)
	}

	if err := fc.MoveLeader(ctx, followerID); !errors.Is(err, etcd.ErrNotLeader) {
		t.Errorf("MoveLeader on a follower: %v, want ErrNotLeader", err)
	}
	// Ask whoever leads now (an election may have moved it since the
	// probe) to hand over to the chosen follower; each try is bounded.
	poll.Until(t, 30*time.Second, "leadership to move to "+follower.Member, func() error {
		if f := fc.Facts(ctx); f.Role() == model.RoleLeader {
			return nil
		}
		for _, tg := range ts[:4] {
			cur := open(t, d, tg)
			if f := cur.Facts(ctx); f.Role() != model.RoleLeader {
				continue
			}
			mctx, mcancel := context.WithTimeout(ctx, 5*time.Second)
			defer mcancel()
			t.Logf("moving leadership from %s to %s (%s)", tg.Member, follower.Member, followerID)
			return cur.MoveLeader(mctx, followerID)
		}
		return errors.New("no member leads")
	})

	var snap bytes.Buffer
	info, err := fc.Snapshot(ctx, &snap)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size == 0 || int64(snap.Len()) != info.Size || info.ClusterID != lf.ClusterID || info.MemberID != followerID || info.Revision == 0 || info.RaftApplied == 0 || info.StorageVersion == "" {
		t.Errorf("snapshot info %+v (buffer %d bytes), want cluster %s member %s", info, snap.Len(), lf.ClusterID, followerID)
	}

	// Remove the old leader, then add a learner in its stead (never
	// started: the list just shows it).
	peers, err := fc.MemberRemove(ctx, leaderID)
	if err != nil {
		t.Fatal(err)
	}
	if len(peers) != 3 {
		t.Errorf("after remove: %d members, want 3", len(peers))
	}
	if _, err := fc.MemberRemove(ctx, leaderID); !errors.Is(err, etcd.ErrMemberNotFound) {
		t.Errorf("removing twice: %v, want ErrMemberNotFound", err)
	}
	// Right after a membership change etcd refuses another one until
	// every voter has been connected for a while: retry on ErrUnhealthy.
	var added model.Peer
	poll.Until(t, 20*time.Second, "the cluster to accept a learner", func() error {
		var err error
		added, peers, err = fc.MemberAddAsLearner(ctx, "http://127.0.0.1:1")
		if err != nil && !errors.Is(err, etcd.ErrUnhealthy) {
			t.Fatal(err)
		}
		return err
	})
	if !added.IsLearner || added.ID == "" || len(peers) != 4 {
		t.Errorf("added %+v, %d members", added, len(peers))
	}
}

// dialed returns how many connections were opened to each pod.
func (d *tcpDialer) dialed() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.dials)
}

// TestProbeKeepsConnections: with engine.Conns, rounds after the first
// reuse each member's connection (counted at the dialer); a paused member
// still times out within the probe timeout and loses its client, and once
// resumed it is dialled afresh; Close closes every kept client.
func TestProbeKeepsConnections(t *testing.T) {
	c, d, ts, conns, round := keptRounds(t)
	poll.Until(t, 10*time.Second, "a settled healthy cluster", func() error { return healthy(round(2*time.Second), 3) })
	before := d.dialed()
	for i := 0; i < 5; i++ {
		if err := healthy(round(2*time.Second), 3); err != nil {
			t.Fatalf("round %d over kept connections: %v", i, err)
		}
	}
	if after := d.dialed(); !maps.Equal(before, after) {
		t.Fatalf("five rounds over kept connections dialled again: %v, then %v", before, after)
	}
	if conns.Len() != 3 {
		t.Fatalf("%d clients kept, want 3", conns.Len())
	}

	const paused = 1
	if err := c.Members[paused].Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	facts := round(time.Second)
	took := time.Since(start)
	if facts[paused].Reachable || facts[paused].Failure != model.ProbeFailureTimeout {
		t.Fatalf("paused %s over its kept connection: reachable %v, failure %q", ts[paused].Member, facts[paused].Reachable, facts[paused].Failure)
	}
	if took > 3*time.Second {
		t.Fatalf("a round with a paused member took %s (timeout 1s)", took)
	}
	if conns.Len() != 2 {
		t.Fatalf("%d clients kept after the paused member's timeout, want 2", conns.Len())
	}
	if err := c.Members[paused].Resume(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the resumed member to answer", func() error { return healthy(round(time.Second), 3) })
	if n, was := d.dialed()[ts[paused].Pod], before[ts[paused].Pod]; n <= was {
		t.Fatalf("the resumed member was not dialled afresh (%d dials, %d before)", n, was)
	}

	// A recreated pod (new UID) never gets the old pod's connection.
	ts[0].UID = "uid-recreated"
	dials := d.dialed()[ts[0].Pod]
	if err := healthy(round(2*time.Second), 3); err != nil {
		t.Fatal(err)
	}
	if d.dialed()[ts[0].Pod] == dials {
		t.Fatal("a new pod UID reused the old connection")
	}
	conns.Close()
	if conns.Len() != 0 {
		t.Fatalf("%d clients after Close", conns.Len())
	}
}

// TestKeptProbeAsksTheMemberListOnlyWhenTheLogMoved: over kept
// connections, rounds of an idle cluster ask each member Status only and
// report the member list they read before (counted by the members
// themselves: their gRPC metrics); once the membership changes (a learner
// added, an entry applied everywhere), the next round asks again and lists
// the new member.
func TestKeptProbeAsksTheMemberListOnlyWhenTheLogMoved(t *testing.T) {
	c, d, ts, _, probe := keptRounds(t)
	round := func() []model.EngineFacts { return probe(2 * time.Second) }
	poll.Until(t, 10*time.Second, "a settled healthy cluster", func() error { return healthy(round(), 3) })
	// Settled: the rounds above read every member's list at its current
	// state; the next ones must not ask again.
	if err := healthy(round(), 3); err != nil {
		t.Fatal(err)
	}
	before := memberListCalls(t, c)
	for i := 0; i < 3; i++ {
		if err := healthy(round(), 3); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	if after := memberListCalls(t, c); after != before {
		t.Fatalf("rounds of an idle cluster asked MemberList %d times, want none", after-before)
	}

	fc := open(t, d, ts[0])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	poll.Until(t, 20*time.Second, "the cluster to accept a learner", func() error {
		_, _, err := fc.MemberAddAsLearner(ctx, "http://127.0.0.1:1")
		if err != nil && !errors.Is(err, etcd.ErrUnhealthy) {
			t.Fatal(err)
		}
		return err
	})
	poll.Until(t, 10*time.Second, "every member to list the learner", func() error { return healthy(round(), 4) })
	if memberListCalls(t, c) <= before {
		t.Fatal("the membership changed and no member was asked its list again")
	}
}

// memberListCalls sums the MemberList calls the members have answered,
// from their own metrics.
func memberListCalls(t *testing.T, c *etcdcluster.Cluster) int {
	t.Helper()
	total := 0
	for _, m := range c.Members {
		resp, err := http.Get(m.ClientURL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for l := range strings.Lines(string(body)) {
			if strings.HasPrefix(l, "grpc_server_handled_total{") && strings.Contains(l, `grpc_method="MemberList"`) {
				var n float64
				if _, err := fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &n); err != nil {
					t.Fatalf("metrics line %q: %v", l, err)
				}
				total += int(n)
			}
		}
	}
	return total
}

// keptRounds starts a 3-member cluster whose targets carry pod UIDs, and
// returns a probe round over connections kept in conns (closed when the
// test ends), with the given timeout.
func keptRounds(t *testing.T) (*etcdcluster.Cluster, *tcpDialer, []engine.Target, *engine.Conns, func(time.Duration) []model.EngineFacts) {
	t.Helper()
	c := startCluster(t, etcdcluster.Options{Members: 3})
	d := newTCPDialer(t, c)
	ts := targets(c)
	for i := range ts {
		ts[i].UID = "uid-" + ts[i].Pod
	}
	conns := engine.NewConns()
	t.Cleanup(conns.Close)
	round := func(timeout time.Duration) []model.EngineFacts {
		return etcd.New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: timeout, Dial: d.Dial, Conns: conns})
	}
	return c, d, ts, conns, round
}
