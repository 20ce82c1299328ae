package bench

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hactl-dev/hactl/cli"
	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/internal/testenv"
)

// BenchmarkFleetStatus: `status --all-contexts` over 10 contexts against
// the slowest of the same contexts read alone, each its own run of the
// command in process (`--no-probe -o json`: API reads and verdicts). The
// contexts are one real API server behind 10 kubeconfig contexts, each
// with its own namespace of 5 clusters × 3 members, so each context's
// requests go to the server on connections of their own (through a proxy
// each in the rtt=50ms run; on loopback client-go may share one). Goal:
// ≤ 1.3×,
// where the contexts are remote and their round trips dominate: the
// rtt=50ms run puts each context behind a latency proxy of its own (25 ms
// each way, as a server in another region); on loopback the work of 10
// contexts' clusters on the machine's cores dominates, so the run also
// says the ratio against reading them one by one.
func BenchmarkFleetStatus(b *testing.B) {
	testenv.SkipShort(b)
	b.Run("loopback", func(b *testing.B) { fleetStatus(b, 0) })
	b.Run("rtt=50ms", func(b *testing.B) { fleetStatus(b, 25*time.Millisecond) })
}

func fleetStatus(b *testing.B, delay time.Duration) {
	const contexts = 10
	cfg, err := clientcmd.LoadFromFile(cp.AdminKubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	server := cfg.Clusters[cur.Cluster]
	cfg.Contexts = map[string]*clientcmdapi.Context{}
	for i := range contexts {
		name := fmt.Sprintf("c%02d", i)
		cluster := cur.Cluster
		if delay > 0 {
			u, err := url.Parse(server.Server)
			if err != nil {
				b.Fatal(err)
			}
			p, err := e2esuite.NewLatencyProxy(u.Host, delay)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(p.Close)
			u.Host = p.Addr()
			c := server.DeepCopy()
			c.Server, cluster = u.String(), name
			cfg.Clusters[name] = c
		}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: cur.AuthInfo, Namespace: populate(b, 5)}
	}
	cfg.CurrentContext = "c00"
	path := filepath.Join(b.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		b.Fatal(err)
	}
	run := func(args ...string) time.Duration {
		var out, errOut bytes.Buffer
		start := time.Now()
		code := cli.Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
			append([]string{"status", "--kubeconfig", path, "--no-probe", "-o", "json"}, args...))
		took := time.Since(start)
		if code != cli.ExitNotFailoverReady || strings.Count(out.String(), `"kind": "ClusterStatus"`) == 0 {
			b.Fatalf("%v: exit %d\n%s", args, code, errOut.String())
		}
		return took
	}
	var fleet, slowest, sequential time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fleet += run("--all-contexts")
		worst := time.Duration(0)
		for c := range contexts {
			took := run("--context", fmt.Sprintf("c%02d", c))
			worst, sequential = max(worst, took), sequential+took
		}
		slowest += worst
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(fleet.Milliseconds())/n, "fleet-ms/op")
	b.ReportMetric(float64(slowest.Milliseconds())/n, "slowest-context-ms/op")
	b.ReportMetric(float64(fleet)/float64(slowest), "wall-ratio")
	// The same contexts read one after the other, as a loop over
	// `--context` would.
	b.ReportMetric(float64(fleet)/float64(sequential), "wall-ratio-vs-sequential")
}

// envFleetCSV names the file BenchmarkFleetCurve writes its points to
// (one "contexts,metric,value" line each; each run of the benchmark
// replaces the last one's).
const envFleetCSV = "HACTL_BENCH_FLEET_CSV"

// BenchmarkFleetCurve: what `kubectl-hactl status --all-contexts
// --no-probe -o json` (the release build, as users run it) costs as the
// contexts grow: 1, 2, 5, 10 and 20 contexts, each behind a latency proxy
// of its own (25 ms each way, a server in another region) with its own
// namespace of 5 clusters × 3 members. At each count: the command's wall
// time and peak RSS, the slowest of the same contexts read alone and the
// ratio of the two (goal ≤ 1.3×), and the ratio against the median
// context alone. Both sides start a process (as users run it), which
// brings the ratios nearer 1 than BenchmarkFleetStatus's in-process
// ones.
func BenchmarkFleetCurve(b *testing.B) {
	testenv.SkipShort(b)
	bin := releaseBuild(b)
	counts := []int{1, 2, 5, 10, 20}
	cfg, err := clientcmd.LoadFromFile(cp.AdminKubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	server := cfg.Clusters[cur.Cluster]
	u, err := url.Parse(server.Server)
	if err != nil {
		b.Fatal(err)
	}
	contexts := map[string]*clientcmdapi.Context{}
	for i := range counts[len(counts)-1] {
		name := fmt.Sprintf("c%02d", i)
		p, err := e2esuite.NewLatencyProxy(u.Host, 25*time.Millisecond)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.Close)
		c, pu := server.DeepCopy(), *u
		pu.Host = p.Addr()
		c.Server = pu.String()
		cfg.Clusters[name] = c
		contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: cur.AuthInfo, Namespace: populate(b, 5)}
	}
	status := func(path string, args ...string) *run {
		cmd := exec.Command(bin, append([]string{"status", "--kubeconfig", path, "--no-probe", "-o", "json"}, args...)...)
		cmd.Env = childEnv(b)
		r, err := measure(cmd)
		if err != nil || r.code != cli.ExitNotFailoverReady || !strings.Contains(r.out.String(), `"kind": "ClusterStatus"`) {
			b.Fatalf("status %v: %v, exit %d\n%s", args, err, r.code, r.err.String())
		}
		return r
	}
	type point struct {
		fleet, slowest, median time.Duration
		rss                    int64
	}
	sums := make([]point, len(counts))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, n := range counts {
			cfg.Contexts = map[string]*clientcmdapi.Context{}
			for c := range n {
				name := fmt.Sprintf("c%02d", c)
				cfg.Contexts[name] = contexts[name]
			}
			cfg.CurrentContext = "c00"
			path := filepath.Join(b.TempDir(), "kubeconfig")
			if err := clientcmd.WriteToFile(*cfg, path); err != nil {
				b.Fatal(err)
			}
			fleet := status(path, "--all-contexts")
			var alone []time.Duration
			for c := range n {
				alone = append(alone, status(path, "--context", fmt.Sprintf("c%02d", c)).wall)
			}
			slices.Sort(alone)
			sums[k].fleet += fleet.wall
			sums[k].slowest += alone[n-1]
			sums[k].median += alone[n/2]
			sums[k].rss += fleet.maxRSS
		}
	}
	b.StopTimer()
	// Each count's mean over the runs.
	var points []string
	for k, n := range counts {
		runs := float64(b.N)
		ms := float64(sums[k].fleet.Microseconds()) / 1000 / runs
		slowest := float64(sums[k].slowest.Microseconds()) / 1000 / runs
		mib := float64(sums[k].rss) / 1024 / runs
		ratio := float64(sums[k].fleet) / float64(sums[k].slowest)
		// The slowest of n identical contexts grows with n by chance
		// alone; the median context is the steadier baseline.
		vsMedian := float64(sums[k].fleet) / float64(sums[k].median)
		b.ReportMetric(ms, fmt.Sprintf("ctx%02d-ms", n))
		b.ReportMetric(mib, fmt.Sprintf("ctx%02d-peak-MiB", n))
		b.ReportMetric(ratio, fmt.Sprintf("ctx%02d-wall-ratio", n))
		b.ReportMetric(vsMedian, fmt.Sprintf("ctx%02d-wall-ratio-vs-median", n))
		points = append(points, fmt.Sprintf("%d,fleet-ms,%.1f", n, ms), fmt.Sprintf("%d,fleet-peak-MiB,%.1f", n, mib),
			fmt.Sprintf("%d,slowest-context-ms,%.1f", n, slowest), fmt.Sprintf("%d,wall-ratio,%.2f", n, ratio),
			fmt.Sprintf("%d,wall-ratio-vs-median,%.2f", n, vsMedian))
	}
	if path := os.Getenv(envFleetCSV); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range points {
			fmt.Fprintln(f, p)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
