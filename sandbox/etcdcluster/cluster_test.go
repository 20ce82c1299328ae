package etcdcluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
)

func ctx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return c
}

func TestMembersReportOwnIDsAndOneClusterID(t *testing.T) {
	begin := time.Now()
	c := testenv.EtcdCluster(t, etcdcluster.Options{})
	t.Logf("3-member cluster healthy after %s", time.Since(begin))

	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	list, err := cli.MemberList(ctx(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Members) != 3 {
		t.Fatalf("MemberList has %d members, want 3: %v", len(list.Members), list.Members)
	}
	idByPeer := map[string]uint64{}
	for _, m := range list.Members {
		if len(m.PeerURLs) != 1 {
			t.Fatalf("member %s has peer URLs %v", m.Name, m.PeerURLs)
		}
		idByPeer[m.PeerURLs[0]] = m.ID
	}

	seen := map[uint64]string{}
	var clusterID uint64
	for i, m := range c.Members {
		// One client per member: the answer comes from that member alone.
		mc, err := m.Client()
		if err != nil {
			t.Fatal(err)
		}
		st, err := mc.Status(ctx(t, 5*time.Second), m.ClientURL)
		mc.Close()
		if err != nil {
			t.Fatalf("status of %s: %v", m.Name, err)
		}
		id := st.Header.MemberId
		if prev, dup := seen[id]; dup {
			t.Fatalf("%s and %s both report member ID %x", prev, m.Name, id)
		}
		seen[id] = m.Name
		if want := idByPeer[m.PeerURL]; id != want {
			t.Errorf("%s reports member ID %x, member list says %x for %s", m.Name, id, want, m.PeerURL)
		}
		if i == 0 {
			clusterID = st.Header.ClusterId
		} else if st.Header.ClusterId != clusterID {
			t.Errorf("%s reports cluster ID %x, %s reported %x", m.Name, st.Header.ClusterId, c.Members[0].Name, clusterID)
		}
		if st.Leader == 0 {
			t.Errorf("%s knows no leader", m.Name)
		}
	}
	if clusterID == 0 {
		t.Fatal("cluster ID is 0")
	}
}

func TestPausedMemberTimesOutThenAnswersAfterResume(t *testing.T) {
	c := testenv.EtcdCluster(t, etcdcluster.Options{})
	m := c.Members[1]
	cli, err := m.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Status(ctx(t, 5*time.Second), m.ClientURL); err != nil {
		t.Fatalf("status before pause: %v", err)
	}

	if err := m.Pause(); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(t.Context(), time.Second)
	begin := time.Now()
	_, err = cli.Status(sctx, m.ClientURL)
	cancel()
	took := time.Since(begin)
	if err == nil {
		t.Fatal("a paused member answered Status")
	}
	if !errors.Is(err, context.DeadlineExceeded) && status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("status of a paused member failed with %v, want a deadline error", err)
	}
	// A guard against hangs, not a timing assertion: the deadline must be
	// what ended the call.
	if took > 10*time.Second {
		t.Fatalf("status of a paused member took %s despite a 1s deadline", took)
	}
	t.Logf("paused member: %v after %s", err, took)

	// The other members, each dialled alone, still answer.
	for _, o := range c.Members {
		if o == m {
			continue
		}
		if _, err := o.Status(ctx(t, 5*time.Second)); err != nil {
			t.Errorf("status of %s while %s is paused: %v", o.Name, m.Name, err)
		}
	}

	if err := m.Resume(); err != nil {
		t.Fatal(err)
	}
	begin = time.Now()
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		sctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := cli.Status(sctx, m.ClientURL)
		return err == nil, nil
	})
	t.Logf("resumed member answered after %s", time.Since(begin))
}

func TestWipedMemberRestartedAloneFormsAnotherCluster(t *testing.T) {
	c := testenv.EtcdCluster(t, etcdcluster.Options{})
	m := c.Members[2]
	before, err := c.Members[0].Status(ctx(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Wipe(); err == nil {
		t.Fatal("Wipe of a running member succeeded")
	}
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := m.Wipe(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.DataDir); !os.IsNotExist(err) {
		t.Fatalf("data dir still there after Wipe: %v", err)
	}
	// The re-bootstrap hazard: an empty data dir and --initial-cluster-state
	// new with only itself in --initial-cluster.
	if err := m.Restart(ctx(t, 30*time.Second), etcdcluster.MemberArgs{
		InitialClusterState: "new",
		InitialCluster:      m.Self(),
	}); err != nil {
		t.Fatal(err)
	}
	after, err := m.Status(ctx(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if after.Header.ClusterId == before.Header.ClusterId {
		t.Fatalf("re-bootstrapped member still reports cluster ID %x", after.Header.ClusterId)
	}
	if after.Leader != after.Header.MemberId {
		t.Fatalf("re-bootstrapped member's leader is %x, not itself (%x)", after.Leader, after.Header.MemberId)
	}
}

func TestAddLearner(t *testing.T) {
	c := testenv.EtcdCluster(t, etcdcluster.Options{})
	l, err := c.AddLearner(ctx(t, 30*time.Second), "etcd-3")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Members) != 4 || c.Member("etcd-3") != l {
		t.Fatalf("cluster members after AddLearner: %d", len(c.Members))
	}
	st, err := l.Status(ctx(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !st.IsLearner {
		t.Fatal("the added member does not report itself as a learner")
	}
	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx(t, 5*time.Second), "k", "v"); err != nil {
		t.Fatal(err)
	}
	// Promotion succeeds once the learner has caught up.
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		_, err := cli.MemberPromote(ctx(t, 5*time.Second), st.Header.MemberId)
		return err == nil, nil
	})
	list, err := cli.MemberList(ctx(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Members {
		if m.IsLearner {
			t.Fatalf("member %s is still a learner after promotion", m.Name)
		}
	}
	if len(list.Members) != 4 {
		t.Fatalf("%d members after promotion, want 4", len(list.Members))
	}
}

func TestStopLeavesNoProcess(t *testing.T) {
	testenv.SkipShort(t)
	dir := t.TempDir()
	c, err := etcdcluster.Start(ctx(t, 2*time.Minute), etcdcluster.Options{BinDir: testenv.BinDir(t), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pids := c.Pids()
	if len(pids) != 3 {
		_ = c.Stop()
		t.Fatalf("%d pids for 3 members", len(pids))
	}
	if left := testenv.LeftoverProcesses(dir); len(left) != 3 {
		_ = c.Stop()
		t.Fatalf("processes under %s before Stop: %v, want the 3 members %v", dir, left, pids)
	}
	// A paused member must not keep Stop waiting or survive it.
	if err := c.Members[0].Pause(); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Stop took %s", time.Since(begin))
	for _, pid := range pids {
		if testenv.Alive(pid) {
			t.Errorf("member pid %d alive after Stop", pid)
		}
	}
	if left := testenv.LeftoverProcesses(dir); len(left) > 0 {
		t.Errorf("processes left after Stop: %v", left)
	}
	if got, _ := filepath.Glob(filepath.Join(dir, "pids", "*")); len(got) > 0 {
		t.Errorf("pid files left after Stop: %v", got)
	}
}

func TestKillRecordedCleansUpWithoutTheCluster(t *testing.T) {
	testenv.SkipShort(t)
	dir := t.TempDir()
	c, err := etcdcluster.Start(ctx(t, 2*time.Minute), etcdcluster.Options{BinDir: testenv.BinDir(t), Dir: dir, Members: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	pids := c.Pids()
	// As after a crash of the process that started them: only the pid
	// files are left to go by.
	if err := etcdcluster.KillRecorded(dir); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if testenv.Alive(pid) {
			t.Errorf("pid %d alive after KillRecorded", pid)
		}
	}
	if left := testenv.LeftoverProcesses(dir); len(left) > 0 {
		t.Errorf("processes left after KillRecorded: %v", left)
	}
}

func TestStartFailureCarriesTheLogTail(t *testing.T) {
	testenv.SkipShort(t)
	dir := t.TempDir()
	_, err := etcdcluster.Start(ctx(t, time.Minute), etcdcluster.Options{
		BinDir: testenv.BinDir(t), Dir: dir, ExtraArgs: []string{"--no-such-flag-for-this-test"},
	})
	if err == nil {
		t.Fatal("Start succeeded with an unknown etcd flag")
	}
	for _, want := range []string{"etcd-0", "no-such-flag-for-this-test", filepath.Join(dir, "logs", "etcd-0.log")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error does not mention %q:\n%v", want, err)
		}
	}
	if left := testenv.LeftoverProcesses(dir); len(left) > 0 {
		t.Errorf("processes left after a failed Start: %v", left)
	}
}
