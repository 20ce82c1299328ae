package etcdgen_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/etcdgen"
	"github.com/hactl-dev/hactl/artifact/etcdgen/etcdrestore"
	"github.com/hactl-dev/hactl/artifact/storetest"
	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/testbins"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
)

var s3srv *storetest.Server

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testing.Short() {
		return m.Run()
	}
	bin, err := testbins.Dir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "hactl-etcdgen-s3-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	s3srv, err = storetest.Start(ctx, bin, dir)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	_ = s3srv.Stop()
	return code
}

// newStore opens a store on a new bucket of the S3 server, closed when
// the test ends.
func newStore(ctx context.Context, t *testing.T) *artifact.Store {
	t.Helper()
	bucket, err := s3srv.CreateBucket(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	store, err := artifact.OpenStore(ctx, s3srv.URL(bucket, "etcd"), artifact.Options{Credentials: s3srv.Credentials()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// tcpDial stands in for the port-forward: pod name -> member address.
func tcpDial(c *etcdcluster.Cluster) engine.DialFunc {
	addrs := map[string]string{}
	for _, m := range c.Members {
		u, _ := url.Parse(m.ClientURL)
		addrs[m.Name] = u.Host
	}
	return func(ctx context.Context, ns, pod string, port int) (net.Conn, error) {
		a, ok := addrs[pod]
		if !ok || port != 2379 {
			return nil, fmt.Errorf("no pod %s/%s:%d", ns, pod, port)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", a)
	}
}

const keys = 10_000

func key(i int) string   { return fmt.Sprintf("/seed/key-%05d", i) }
func value(i int) string { return fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", i%50)) }

// fill writes the keys in transactions of 100 puts.
func fill(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := 0; i < keys; i += 100 {
		var ops []clientv3.Op
		for j := i; j < i+100; j++ {
			ops = append(ops, clientv3.OpPut(key(j), value(j)))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatalf("writing keys: %v", err)
		}
	}
}

// assertExactKeys checks, on one member alone (serializable), that the
// keyspace is exactly the filled keys.
func assertExactKeys(t *testing.T, m *etcdcluster.Member) {
	t.Helper()
	cli, err := m.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithSerializable())
	if err != nil {
		t.Fatalf("%s: reading every key: %v", m.Name, err)
	}
	if len(resp.Kvs) != keys {
		t.Fatalf("%s serves %d keys, want exactly %d", m.Name, len(resp.Kvs), keys)
	}
	for i, kv := range resp.Kvs {
		if string(kv.Key) != key(i) || string(kv.Value) != value(i) {
			t.Fatalf("%s: key %d is %q=%q, want %q=%q", m.Name, i, kv.Key, kv.Value, key(i), value(i))
		}
	}
}

func TestCaptureAndRestoreIntoNewCluster(t *testing.T) {
	testenv.SkipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	src := testenv.EtcdCluster(t, etcdcluster.Options{Members: 3})
	cli, err := src.Members[0].Client()
	if err != nil {
		t.Fatal(err)
	}
	fill(t, cli)
	cli.Close()

	store := newStore(ctx, t)

	// Capture from a follower, through the member's own client.
	member := src.Members[1]
	c, err := etcdengine.Open(ctx, engine.Target{Namespace: "db", Pod: member.Name, Port: 2379}, engine.ProbeOptions{Dial: tcpDial(src)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	up, err := store.Begin(ctx, "g-10k", artifact.UploadOptions{Source: artifact.Source{Namespace: "db", Cluster: "src", Member: member.Name}})
	if err != nil {
		t.Fatal(err)
	}
	var streamed int64
	id, err := etcdgen.Capture(ctx, c, up, func(n int64) { streamed = n })
	if err != nil {
		t.Fatal(err)
	}
	res, err := up.Publish(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	st, err := member.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id.ClusterID != etcdengine.FormatID(st.Header.ClusterId) || id.SourceMemberID != etcdengine.FormatID(st.Header.MemberId) || id.Revision < int64(keys/100) {
		t.Fatalf("identity %+v does not match the source member (%x/%x)", id, st.Header.ClusterId, st.Header.MemberId)
	}
	if streamed != res.Manifest.TotalSize || streamed == 0 {
		t.Fatalf("progress saw %d bytes, manifest says %d", streamed, res.Manifest.TotalSize)
	}
	t.Logf("generation %s: %d bytes, revision %d, term %d", id.Generation, res.Manifest.TotalSize, id.Revision, id.RaftTerm)
	if _, err := store.Verify(ctx, "g-10k", artifact.Expect{ClusterID: id.ClusterID}, nil); err != nil {
		t.Fatal(err)
	}

	// The target: another cluster, lost; every member restored from the
	// generation (etcd's quorum-loss recovery).
	dst := testenv.EtcdCluster(t, etcdcluster.Options{Members: 3})
	for _, m := range dst.Members {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range dst.Members {
		r := etcdrestore.Restorer{Name: m.Name, InitialCluster: dst.InitialCluster(), PeerURLs: []string{m.PeerURL}, InitialClusterToken: dst.Token + "-restored"}
		out, err := artifact.Restore(ctx, store, "g-10k", artifact.RestoreOptions{
			DataDir: m.DataDir, Materializer: r, Replace: true,
			Expect: artifact.Expect{ClusterID: id.ClusterID},
		})
		if err != nil {
			t.Fatalf("restoring %s: %v", m.Name, err)
		}
		if out.Previous == "" {
			t.Fatalf("%s: the old data dir was not kept", m.Name)
		}
	}
	for _, m := range dst.Members {
		if err := m.Restart(ctx, etcdcluster.MemberArgs{NoWait: true}); err != nil {
			t.Fatal(err)
		}
	}
	var clusterIDs []uint64
	for _, m := range dst.Members {
		if err := m.WaitServing(ctx); err != nil {
			t.Fatal(err)
		}
		assertExactKeys(t, m)
		st, err := m.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		clusterIDs = append(clusterIDs, st.Header.ClusterId)
	}
	if clusterIDs[0] != clusterIDs[1] || clusterIDs[1] != clusterIDs[2] {
		t.Fatalf("restored members disagree on the cluster ID: %x", clusterIDs)
	}
	if etcdengine.FormatID(clusterIDs[0]) == id.ClusterID {
		t.Fatalf("the restored cluster kept the source's cluster ID %s; etcd's restore makes a new one", id.ClusterID)
	}
	// The restored cluster takes writes (it has quorum).
	cli2, err := dst.Members[2].Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli2.Close()
	if _, err := cli2.Put(ctx, "/after-restore", "ok"); err != nil {
		t.Fatalf("the restored cluster does not take writes: %v", err)
	}
}

func TestRestorerRefusesBadFlagsBeforeTouching(t *testing.T) {
	for name, r := range map[string]etcdrestore.Restorer{
		"no name":      {InitialCluster: "a=http://x:2380", PeerURLs: []string{"http://x:2380"}},
		"not in":       {Name: "b", InitialCluster: "a=http://x:2380", PeerURLs: []string{"http://x:2380"}},
		"url differs":  {Name: "a", InitialCluster: "a=http://x:2380", PeerURLs: []string{"http://y:2380"}},
		"bump alone":   {Name: "a", InitialCluster: "a=http://x:2380", PeerURLs: []string{"http://x:2380"}, RevisionBump: 10},
		"malformed ic": {Name: "a", InitialCluster: "a", PeerURLs: []string{"http://x:2380"}},
		"no peer urls": {Name: "a", InitialCluster: "a=http://x:2380"},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := etcdrestore.Restorer{Name: "a", InitialCluster: "a=http://x:2380,b=http://y:2380", PeerURLs: []string{"http://x:2380"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	// A non-etcd generation is refused by Materialize.
	m := &artifact.Manifest{Identity: artifact.Identity{Engine: "patroni"}}
	dir := t.TempDir()
	if err := ok.Materialize(context.Background(), m, dir, filepath.Join(dir, "out")); err == nil {
		t.Fatal("materialized a patroni generation as etcd")
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("refused materialize created the output")
	}
}

// A seed whose caller no longer knows it holds its lock publishes nothing:
// BeforePublish fails right before the manifest, the upload is aborted and
// the store lists no generation.
func TestSeedBeforePublishStopsThePublication(t *testing.T) {
	testenv.SkipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := testenv.EtcdCluster(t, etcdcluster.Options{Members: 1})
	store := newStore(ctx, t)
	lost := errors.New("lock lost")
	asked := 0
	_, err := etcdgen.Seed(ctx, etcdgen.SeedRequest{
		Store: store, Generation: "g-lost",
		Source: engine.Target{Namespace: "db", Pod: src.Members[0].Name, Port: 2379}, Probe: engine.ProbeOptions{Dial: tcpDial(src)},
		Info:          artifact.Source{Namespace: "db", Cluster: "src", Member: src.Members[0].Name},
		BeforePublish: func() error { asked++; return lost },
	})
	if !errors.Is(err, lost) || asked != 1 {
		t.Fatalf("seed: %v (BeforePublish asked %d times), want the lock error", err, asked)
	}
	entries, err := store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Published() {
			t.Fatalf("generation %s was published although BeforePublish failed", e.Generation)
		}
	}
	if _, err := store.ReadManifest(ctx, "g-lost"); err == nil {
		t.Fatal("g-lost has a manifest")
	}
}
