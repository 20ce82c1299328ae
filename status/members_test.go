package status

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
)

// memberDialer maps pod <sts>-<n> to the n-th real etcd member, standing in
// for the port-forward the product uses (the sandbox's end-to-end tests
// exercise that one).
type memberDialer struct {
	mu      sync.Mutex
	members []*etcdcluster.Member
}

func (d *memberDialer) set(ms []*etcdcluster.Member) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.members = append([]*etcdcluster.Member(nil), ms...)
}

func (d *memberDialer) dial(ctx context.Context, _, pod string, _ int) (net.Conn, error) {
	i := strings.LastIndex(pod, "-")
	n, err := strconv.Atoi(pod[i+1:])
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	if n >= len(d.members) {
		d.mu.Unlock()
		return nil, fmt.Errorf("no member for pod %s", pod)
	}
	u, err := url.Parse(d.members[n].ClientURL)
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", u.Host)
}

// realMembers sets up a fixture cluster on the API server whose pods are
// answered by a real etcd cluster.
func realMembers(t *testing.T, name string, replicas int, o etcdcluster.Options) (*etcdcluster.Cluster, *memberDialer, func(timeout time.Duration) (Result, time.Duration)) {
	t.Helper()
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	spec := fixtures.DefaultSpec(name)
	spec.Replicas = replicas
	fixtures.CreateCluster(t, admin, ns, spec)
	ec := testenv.EtcdCluster(t, o)
	d := &memberDialer{}
	d.set(ec.Members)
	probe := func(timeout time.Duration) (Result, time.Duration) {
		t.Helper()
		obs := &Observer{
			Source:       APISource{Client: admin},
			Engines:      map[model.Engine]engine.Engine{etcdengine.Name: etcdengine.New()},
			Dial:         d.dial,
			ProbeTimeout: timeout,
		}
		start := time.Now()
		rs, _, err := obs.Observe(context.Background(), ns, name)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("observe: %v", err)
		}
		return rs[0], took
	}
	return ec, d, probe
}

func hasCode(r Result, code model.ReasonCode, member string) bool {
	for _, x := range r.Verdict.Reasons {
		if x.Code == code && (member == "" || x.Member == member) {
			return true
		}
	}
	return false
}

func TestRealMembers(t *testing.T) {
	testenv.SkipShort(t)
	ec, _, probe := realMembers(t, "etcd-real", 3, etcdcluster.Options{})

	t.Run("healthy cluster is failover-ready", func(t *testing.T) {
		var r Result
		testenv.Poll(t, 30*time.Second, func() (bool, error) {
			r, _ = probe(2 * time.Second)
			return r.Verdict.FailoverReady, nil
		})
		ids := map[string]bool{}
		for _, m := range r.Observation.Members {
			if m.Engine == nil || !m.Engine.Reachable || m.Lag == nil || m.Engine.Version == "" {
				t.Fatalf("member %s not fully probed: %+v", m.Name, m.Engine)
			}
			ids[m.Engine.MemberID] = true
		}
		if len(ids) != 3 {
			t.Errorf("member IDs %v, want 3 distinct", ids)
		}
		if r.Analysis.LeaderMember == "" || r.Analysis.ClusterID == "" {
			t.Errorf("analysis lacks leader or cluster ID: %+v", r.Analysis)
		}
	})

	t.Run("paused member is unreachable within the probe timeout", func(t *testing.T) {
		m := ec.Members[2]
		if err := m.Pause(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = m.Resume() }()
		r, took := probe(time.Second)
		t.Logf("status with one paused member took %s (probe timeout 1s)", took)
		if !hasCode(r, model.ReasonMemberUnreachable, "etcd-real-2") {
			t.Errorf("no member_unreachable for the paused member: %+v", r.Verdict.Reasons)
		}
		if !r.Verdict.ControlReady || r.Verdict.FailoverReady {
			t.Errorf("want control-ready, not failover-ready: %+v", r.Verdict)
		}
		if took > 10*time.Second {
			t.Errorf("status hung for %s with a paused member", took)
		}
	})
}

// TestSeedRebootstrap reproduces seed 000: the seed member's data dir is
// wiped and it restarts with --initial-cluster-state=new naming only
// itself. Its own health is fine; status must still refuse it.
func TestSeedRebootstrap(t *testing.T) {
	testenv.SkipShort(t)
	ec, _, probe := realMembers(t, "etcd-seed", 3, etcdcluster.Options{})
	seed := ec.Members[0]
	if err := seed.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := seed.Wipe(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := seed.Restart(ctx, etcdcluster.MemberArgs{InitialClusterState: "new", InitialCluster: seed.Self()}); err != nil {
		t.Fatalf("restart seed as its own cluster: %v", err)
	}
	// The seed is healthy on its own: it answers as a one-member cluster.
	st, err := seed.Status(ctx)
	if err != nil {
		t.Fatalf("the re-bootstrapped seed should answer on its own: %v", err)
	}
	t.Logf("seed answers on its own: leader %x, member %x", st.Leader, st.Header.MemberId)

	r, _ := probe(2 * time.Second)
	if !hasCode(r, model.ReasonClusterIDSplit, "etcd-seed-0") {
		t.Errorf("no cluster_id_split for the seed: %+v", r.Verdict.Reasons)
	}
	if r.Verdict.ControlReady {
		t.Error("control_ready with a member answering for another cluster")
	}
	for _, m := range r.Observation.Members {
		if m.Name == "etcd-seed-0" && m.Phase != model.PhaseDiverged {
			t.Errorf("seed phase = %s, want diverged", m.Phase)
		}
	}
}

func TestLearnerAndUnknownLag(t *testing.T) {
	testenv.SkipShort(t)
	ec, d, probe := realMembers(t, "etcd-l", 4, etcdcluster.Options{Members: 3})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := ec.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for i := 0; i < 200; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("/k/%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ec.AddLearner(ctx, "etcd-3"); err != nil {
		t.Fatal(err)
	}
	d.set(ec.Members)

	r, _ := probe(2 * time.Second)
	if !hasCode(r, model.ReasonLearnerPending, "etcd-l-3") {
		t.Fatalf("no learner_pending for the learner: %+v", r.Verdict.Reasons)
	}
	learner := r.Observation.Members[3]
	if learner.Engine == nil || !learner.Engine.IsLearner || learner.Lag == nil {
		t.Fatalf("learner facts: %+v lag %v", learner.Engine, learner.Lag)
	}
	if learner.Engine.Role() != model.RoleLearner || learner.Phase != model.PhaseJoining {
		t.Errorf("learner role %s phase %s", learner.Engine.Role(), learner.Phase)
	}
	t.Logf("learner lag %d", *learner.Lag)

	// With the leader paused there is no leader frontier: lag is unknown,
	// never reported as caught up.
	var leader *etcdcluster.Member
	for i, m := range r.Observation.Members[:3] {
		if m.Engine.Role() == model.RoleLeader {
			leader = ec.Members[i]
		}
	}
	if leader == nil {
		t.Fatal("no leader among the voters")
	}
	if err := leader.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = leader.Resume() }()
	r, _ = probe(time.Second)
	for _, m := range r.Observation.Members {
		if m.Lag != nil {
			t.Errorf("%s: lag %d reported without a reachable leader", m.Name, *m.Lag)
		}
	}
	if !hasCode(r, model.ReasonLagUnknown, "") && !hasCode(r, model.ReasonLeaderMissing, "") {
		t.Errorf("neither lag_unknown nor leader_missing: %+v", r.Verdict.Reasons)
	}
}

func TestNoSpaceAlarm(t *testing.T) {
	testenv.SkipShort(t)
	ec, _, probe := realMembers(t, "etcd-q", 3, etcdcluster.Options{QuotaBackendBytes: 1 << 20})
	cli, err := ec.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	val := strings.Repeat("x", 64<<10)
	for i := 0; ; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("/fill/%d", i), val); err != nil {
			if !strings.Contains(err.Error(), "space exceeded") {
				t.Fatalf("put %d: %v", i, err)
			}
			break
		}
		if i > 1000 {
			t.Fatal("quota never reached")
		}
	}
	var r Result
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		r, _ = probe(2 * time.Second)
		return hasCode(r, model.ReasonAlarmNoSpace, ""), nil
	})
	if r.Verdict.ControlReady {
		t.Error("control_ready with a NOSPACE alarm")
	}
}
