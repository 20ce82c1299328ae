package bench

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/controlplane"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
	"github.com/hactl-dev/hactl/status"
)

var cp *controlplane.ControlPlane

// TestMain starts the control plane only when benchmarks run (`make
// bench`); `go test ./...` runs no benchmark and so starts nothing. The
// 1000-pod run needs more client Services than the default /24 holds.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	testenv.Main(m, controlplane.Options{APIServerArgs: []string{"--service-cluster-ip-range=10.0.0.0/20"}}, &cp)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func counting(cfg *rest.Config, n *atomic.Int64) kubernetes.Interface {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 1000, 1000
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			n.Add(1)
			return rt.RoundTrip(r)
		})
	})
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		panic(err)
	}
	return cs
}

// pool answers every pod's probe with one of a few real etcd members, so
// 150 member probes are 150 real connections and RPC sets.
func pool(b *testing.B, members int) engine.DialFunc {
	addrs := poolAddrs(b, members)
	return func(ctx context.Context, _, pod string, _ int) (net.Conn, error) {
		i := strings.LastIndex(pod, "-")
		n, _ := strconv.Atoi(pod[i+1:])
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addrs[n%len(addrs)])
	}
}

// poolAddrs starts a real etcd cluster of members and returns their
// client addresses (host:port).
func poolAddrs(b *testing.B, members int) []string {
	ec := testenv.EtcdCluster(b, etcdcluster.Options{Members: members})
	var addrs []string
	for _, m := range ec.Members {
		u, err := url.Parse(m.ClientURL)
		if err != nil {
			b.Fatal(err)
		}
		addrs = append(addrs, u.Host)
	}
	return addrs
}

// populate creates a namespace holding clusters etcd-000 … (3 members
// each, API objects only).
func populate(b *testing.B, clusters int) string {
	admin := testenv.Clientset(b, cp.Admin)
	ns := testenv.Namespace(b, cp)
	for i := 0; i < clusters; i++ {
		createCluster(b, admin, ns, i)
	}
	return ns
}

// createCluster creates cluster etcd-<i> (%03d) in ns.
func createCluster(b *testing.B, c kubernetes.Interface, ns string, i int) {
	fixtures.CreateCluster(b, c, ns, fixtures.DefaultSpec(fmt.Sprintf("etcd-%03d", i)))
}

// BenchmarkStatusVsBareList: `status` for 50 clusters × 3 members (API
// reads plus a real probe of every member) against the bare list of the
// same StatefulSets, pods and PVCs, and against its floor (floorStatus):
// a minimal hand-written status making the same list calls and one etcd
// Status RPC per member, all members in parallel, each over a connection
// dialled the same way.
func BenchmarkStatusVsBareList(b *testing.B) {
	testenv.SkipShort(b)
	ns := populate(b, 50)
	dial := pool(b, 3)
	ctx := context.Background()
	var hactlCalls, listCalls, floorCalls atomic.Int64
	hc := counting(cp.Admin, &hactlCalls)
	lc := counting(cp.Admin, &listCalls)
	fc := counting(cp.Admin, &floorCalls)
	obs := &status.Observer{
		Source: status.APISource{Client: hc}, Dial: dial, ProbeTimeout: 2 * time.Second,
		Engines: map[model.Engine]engine.Engine{etcdengine.Name: etcdengine.New()},
	}
	var hactlWall, listWall, floorWall time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		rs, _, err := obs.Observe(ctx, ns, "")
		if err != nil || len(rs) != 50 {
			b.Fatalf("status: %v (%d clusters)", err, len(rs))
		}
		hactlWall += time.Since(start)

		start = time.Now()
		if _, err := lc.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := lc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := lc.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{}); err != nil {
			b.Fatal(err)
		}
		listWall += time.Since(start)

		start = time.Now()
		if n := floorStatus(ctx, b, fc, ns, dial); n != 150 {
			b.Fatalf("floor probed %d members, want 150", n)
		}
		floorWall += time.Since(start)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(hactlWall.Milliseconds())/n, "hactl-ms/op")
	b.ReportMetric(float64(listWall.Milliseconds())/n, "list-ms/op")
	b.ReportMetric(float64(floorWall.Microseconds())/n/1000, "floor-ms/op")
	b.ReportMetric(float64(hactlWall)/float64(listWall), "wall-ratio")
	b.ReportMetric(float64(hactlWall)/float64(floorWall), "wall-ratio-vs-floor")
	b.ReportMetric(float64(hactlCalls.Load())/n, "hactl-api-calls/op")
	b.ReportMetric(float64(listCalls.Load())/n, "list-api-calls/op")
	b.ReportMetric(float64(floorCalls.Load())/n, "floor-api-calls/op")

	// The same baseline as a user types it: the real kubectl binary.
	kstart := time.Now()
	out, err := exec.Command(filepath.Join(testenv.BinDir(b), "kubectl"), "--kubeconfig", cp.AdminKubeconfig,
		"-n", ns, "get", "sts,pods,pvc", "-o", "json").CombinedOutput()
	if err != nil {
		b.Fatalf("kubectl get: %v\n%s", err, out)
	}
	b.ReportMetric(float64(hactlWall)/n/float64(time.Since(kstart)), "wall-ratio-vs-kubectl")
}

// floorStatus is the least a status can do: the list calls status makes
// (StatefulSets first, then pods, PVCs, PDBs, Services, EndpointSlices,
// Events and hactl's own lock Leases and ledger ConfigMaps, by their
// label, all at once, as status lists them), then one etcd Status RPC per
// member pod, all in parallel, each over a client dialled through dial and
// closed after its answer. It returns how many members answered.
func floorStatus(ctx context.Context, b *testing.B, c kubernetes.Interface, ns string, dial engine.DialFunc) int {
	lo := metav1.ListOptions{}
	if _, err := c.AppsV1().StatefulSets(ns).List(ctx, lo); err != nil {
		b.Fatal(err)
	}
	var pods *corev1.PodList
	lists := []func() error{
		func() (err error) { pods, err = c.CoreV1().Pods(ns).List(ctx, lo); return err },
		func() error { _, err := c.CoreV1().PersistentVolumeClaims(ns).List(ctx, lo); return err },
		func() error { _, err := c.PolicyV1().PodDisruptionBudgets(ns).List(ctx, lo); return err },
		func() error { _, err := c.CoreV1().Services(ns).List(ctx, lo); return err },
		func() error { _, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, lo); return err },
		func() error { _, err := c.CoreV1().Events(ns).List(ctx, lo); return err },
		func() error {
			_, err := c.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{LabelSelector: "hactl.dev/cluster"})
			return err
		},
		func() error {
			_, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "hactl.dev/cluster"})
			return err
		},
	}
	errs := make([]error, len(lists))
	var lwg sync.WaitGroup
	for i, list := range lists {
		lwg.Go(func() { errs[i] = list() })
	}
	lwg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	var answered atomic.Int64
	var wg sync.WaitGroup
	for _, p := range pods.Items {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			cli, err := bareClient(dial, ns, p.Name, 2*time.Second)
			if err != nil {
				return
			}
			defer cli.Close()
			mc := pb.NewMaintenanceClient(cli.ActiveConnection())
			if _, err := mc.Status(pctx, &pb.StatusRequest{}, grpc.WaitForReady(true)); err == nil {
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	return int(answered.Load())
}

// bareClient is a plain etcd client of pod's member, dialled through dial:
// the baselines' client, nothing of hactl's around it.
func bareClient(dial engine.DialFunc, ns, pod string, timeout time.Duration) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints: []string{"http://member"}, DialTimeout: timeout, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return dial(ctx, ns, pod, 2379)
		})},
	})
}

// BenchmarkProbeFanOut: probing 150 members against probing one (ideal
// ratio ≈ 1: probes run in parallel). On loopback a probe costs CPU, not
// latency, so the "rtt50ms" variant adds a 50 ms connection set-up delay,
// as a port-forward through a remote API server has; there the ratio shows
// the parallelism.
func BenchmarkProbeFanOut(b *testing.B) {
	testenv.SkipShort(b)
	direct := pool(b, 3)
	b.Run("loopback", func(b *testing.B) { fanOut(b, direct) })
	b.Run("rtt50ms", func(b *testing.B) {
		fanOut(b, func(ctx context.Context, ns, pod string, port int) (net.Conn, error) {
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return direct(ctx, ns, pod, port)
		})
	})
}

func fanOut(b *testing.B, dial engine.DialFunc) {
	eng := etcdengine.New()
	targets := func(n int) []engine.Target {
		var ts []engine.Target
		for i := 0; i < n; i++ {
			ts = append(ts, engine.Target{Member: fmt.Sprintf("m-%d", i), Namespace: "bench", Pod: fmt.Sprintf("m-%d", i), Port: 2379})
		}
		return ts
	}
	many, one := targets(150), targets(1)
	opts := engine.ProbeOptions{Timeout: 5 * time.Second, Dial: dial}
	var manyWall, oneWall time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		for _, f := range eng.Probe(context.Background(), many, opts) {
			if !f.Reachable {
				b.Fatalf("probe failed: %s", f.Err)
			}
		}
		manyWall += time.Since(start)
		start = time.Now()
		eng.Probe(context.Background(), one, opts)
		oneWall += time.Since(start)
	}
	b.ReportMetric(float64(manyWall.Milliseconds())/float64(b.N), "150-ms/op")
	b.ReportMetric(float64(oneWall.Milliseconds())/float64(b.N), "1-ms/op")
	b.ReportMetric(float64(manyWall)/float64(oneWall), "wall-ratio")
}

// BenchmarkStatusPeakRSS: peak RSS of the built kubectl-hactl running
// status over 1000 pods (334 clusters × 3), against kubectl listing the
// same objects.
func BenchmarkStatusPeakRSS(b *testing.B) {
	testenv.SkipShort(b)
	ns := populate(b, 334)
	bin := releaseBuild(b)
	peak := func(name string, args ...string) int64 {
		r, err := measure(exec.Command(name, args...))
		if err != nil || r.code == 1 {
			b.Fatalf("%s: exit %d, %v\n%s", name, r.code, err, r.err.String())
		}
		return r.maxRSS
	}
	var hRSS, kRSS int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h := peak(bin, "--kubeconfig", cp.AdminKubeconfig, "-n", ns, "status", "--no-probe", "-o", "json")
		k := peak(filepath.Join(testenv.BinDir(b), "kubectl"), "--kubeconfig", cp.AdminKubeconfig, "-n", ns, "get", "sts,pods,pvc", "-o", "json")
		hRSS, kRSS = max(hRSS, h), max(kRSS, k)
	}
	b.ReportMetric(float64(hRSS)/1024, "hactl-peak-MiB")
	b.ReportMetric(float64(kRSS)/1024, "kubectl-peak-MiB")
	b.ReportMetric(float64(hRSS)/float64(kRSS), "rss-ratio")
}
