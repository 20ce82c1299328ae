package bench

import (
	"bytes"
	"fmt"
	"net/url"
	"path/filepath"
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
// requests go to the server on their own connections. Goal: ≤ 1.3×,
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
