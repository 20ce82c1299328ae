package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"k8s.io/client-go/informers"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// BenchmarkWatchRefresh: one steady-state refresh of `status --watch` (and
// the TUI) over 50 clusters × 3 members: the watch caches read, every
// member probed, the verdicts evaluated. With kept connections
// (engine.Conns, as the watcher now keeps them) and without (every
// refresh dials again, as before), against the floor: one bare probe
// round over open connections — 150 etcd clients connected beforehand,
// one Status RPC each over its connection, all in parallel.
func BenchmarkWatchRefresh(b *testing.B) {
	testenv.SkipShort(b)
	ns := populate(b, 50)
	dial := pool(b, 3)
	ctx := context.Background()
	admin := testenv.Clientset(b, cp.Admin)
	f := informers.NewSharedInformerFactoryWithOptions(admin, 0, informers.WithNamespace(ns))
	src := status.NewCacheSource(f)
	stop := make(chan struct{})
	defer close(stop)
	f.Start(stop)
	f.WaitForCacheSync(stop)

	conns := engine.NewConns()
	defer conns.Close()
	observer := func(c *engine.Conns) *status.Observer {
		return &status.Observer{Source: src, Dial: dial, ProbeTimeout: 2 * time.Second, Conns: c,
			Engines: map[model.Engine]engine.Engine{etcdengine.Name: etcdengine.New()}}
	}
	kept, fresh := observer(conns), observer(nil)
	refresh := func(o *status.Observer) time.Duration {
		start := time.Now()
		rs, _, err := o.Observe(ctx, ns, "")
		took := time.Since(start)
		if err != nil || len(rs) != 50 {
			b.Fatalf("refresh: %v (%d clusters)", err, len(rs))
		}
		for _, r := range rs {
			for _, m := range r.Observation.Members {
				if m.Engine == nil || !m.Engine.Reachable {
					b.Fatalf("%s not probed: %+v", m.Name, m.Engine)
				}
			}
		}
		return took
	}
	refresh(kept) // the first round dials

	// The floor: 150 clients, connected before timing, one Status each.
	var clients []pb.MaintenanceClient
	for _, r := range mustObserve(b, fresh, ns) {
		for _, m := range r.Observation.Members {
			pod := m.Pod.Name
			c, err := bareClient(dial, ns, pod, 5*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			mc := pb.NewMaintenanceClient(c.ActiveConnection())
			if _, err := mc.Status(ctx, &pb.StatusRequest{}, grpc.WaitForReady(true)); err != nil {
				b.Fatal(err)
			}
			clients = append(clients, mc)
		}
	}
	bare := func() time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, len(clients))
		for i, c := range clients {
			wg.Go(func() {
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				_, errs[i] = c.Status(cctx, &pb.StatusRequest{})
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}

	// The cache read alone (no probes): what a refresh adds to the
	// probe round besides the probes' own machinery.
	noProbe := &status.Observer{Source: src, Engines: map[model.Engine]engine.Engine{etcdengine.Name: etcdengine.New()}}
	var cacheWall time.Duration
	var keptWall, freshWall, bareWall time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Rounds of a few milliseconds vary with the garbage collector
		// and the scheduler: each op takes refreshRounds of each,
		// interleaved, and the redialling rounds after them (their
		// closed connections would slow whatever follows).
		for r := 0; r < refreshRounds; r++ {
			keptWall += refresh(kept)
			bareWall += bare()
			st := time.Now()
			mustObserve(b, noProbe, ns)
			cacheWall += time.Since(st)
		}
		freshWall += refresh(fresh)
	}
	b.StopTimer()
	if conns.Len() != 150 {
		b.Fatalf("%d connections kept, want 150", conns.Len())
	}
	n := float64(b.N * refreshRounds)
	b.ReportMetric(float64(cacheWall.Microseconds())/n/1000, "cache-ms/op")
	b.ReportMetric(float64(keptWall.Microseconds())/n/1000, "kept-ms/op")
	b.ReportMetric(float64(freshWall.Microseconds())/float64(b.N)/1000, "redial-ms/op")
	b.ReportMetric(float64(bareWall.Microseconds())/n/1000, "bare-ms/op")
	b.ReportMetric(float64(keptWall)/float64(bareWall), "kept-vs-bare")
	b.ReportMetric(float64(freshWall)/float64(b.N)/(float64(bareWall)/n), "redial-vs-bare")
}

// refreshRounds is how many kept and bare rounds one op of
// BenchmarkWatchRefresh times, so that `make bench`'s -benchtime 3x
// averages thirty.
const refreshRounds = 10

func mustObserve(b *testing.B, o *status.Observer, ns string) []status.Result {
	rs, _, err := o.Observe(context.Background(), ns, "")
	if err != nil {
		b.Fatal(err)
	}
	return rs
}
