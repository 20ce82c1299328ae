package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/internal/tmuxtest"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// envCurveCSV names the file BenchmarkCostCurve appends its points to (one
// "clusters,metric,value" line each), which hack/costplot draws.
const envCurveCSV = "HACTL_BENCH_CURVE_CSV"

// envCurveSizes overrides the cluster counts of the cost curve
// ("10,100"), for a quick run.
const envCurveSizes = "HACTL_BENCH_CURVE_SIZES"

// curveSizes are the cluster counts of the cost curve, ascending; each
// cluster has 3 members.
func curveSizes(b *testing.B) []int {
	v := os.Getenv(envCurveSizes)
	if v == "" {
		return []int{10, 100, 1000}
	}
	var sizes []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || (len(sizes) > 0 && n <= sizes[len(sizes)-1]) {
			b.Fatalf("%s=%q: want ascending cluster counts, e.g. 10,100", envCurveSizes, v)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// BenchmarkCostCurve: what hactl costs as the namespace grows, at 10, 100
// and 1000 clusters × 3 members (API objects for all of them: StatefulSet,
// pods, PVCs, PDB, Services, EndpointSlice per cluster), against `kubectl
// get` of the same objects:
//
//   - the built `kubectl-hactl status --no-probe` (table) and `status
//     --no-probe -o json`, and `kubectl get sts,pods,pvc` as a table and
//     as JSON: wall time, peak RSS (VmHWM, sampled), API calls;
//   - `status` with every member probed, in process (status.Observer, the
//     code the command runs), every pod's probe a real connection and
//     Status and MemberList RPCs to one of 3 real etcd members: this
//     machine cannot run 3000 members, and the bench control plane has no
//     kubelet to port-forward through, so the binary cannot probe here;
//   - the TUI (`kubectl-hactl tui --no-probe`, the built binary in tmux):
//     time from launch to the first screen listing the clusters, and its
//     peak RSS (VmHWM) at that moment.
//
// The commands' API calls are counted by the API server (its
// apiserver_request_total, read before and after each command: resource
// requests, less the server's own lease and Endpoints writes), so hactl
// and kubectl are counted the same way; the in-process status with probes
// counts its calls at its client.
func BenchmarkCostCurve(b *testing.B) {
	testenv.SkipShort(b)
	bin := releaseBuild(b)
	kubectl := filepath.Join(testenv.BinDir(b), "kubectl")
	dial := pool(b, 3)
	admin := testenv.Clientset(b, cp.Admin)
	home := b.TempDir() // kubectl's discovery cache, warmed once per size
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	created := 0
	ns := ""
	// Go runs each size's body more than once (N=1 first): the points of
	// its last run are the ones written.
	points := map[int][]string{}
	sizes := curveSizes(b)
	defer func() {
		for _, size := range sizes {
			appendCurve(b, points[size])
		}
	}()
	for _, size := range sizes {
		// One namespace grows from size to size.
		if ns == "" {
			ns = populate(b, size)
		} else {
			addClusters(b, admin, ns, created, size)
		}
		created = size
		b.Run(fmt.Sprintf("%dclusters", size), func(b *testing.B) {
			child := func(argv ...string) (wall time.Duration, rssKiB int64, calls float64) {
				before := settledRequests(b, admin)
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Env = env
				r, err := measure(cmd)
				// status exits 3 or 4 on a verdict that is not ready:
				// these clusters' members are not probed.
				if err != nil || (r.code != 0 && r.code != 3 && r.code != 4) {
					b.Fatalf("%s: exit %d, %v\n%s", strings.Join(argv, " "), r.code, err, r.err.String())
				}
				if !strings.Contains(r.out.String(), fmt.Sprintf("etcd-%03d", size-1)) {
					b.Fatalf("%s does not show etcd-%03d", strings.Join(argv, " "), size-1)
				}
				return r.wall, r.maxRSS, settledRequests(b, admin) - before
			}
			base := []string{"--kubeconfig", cp.AdminKubeconfig, "-n", ns}
			commands := []struct {
				name string
				argv []string
			}{
				{"status", append([]string{bin}, append(base, "status", "--no-probe")...)},
				{"status-json", append([]string{bin}, append(base, "status", "--no-probe", "-o", "json")...)},
				{"kubectl-get", append([]string{kubectl}, append(base, "get", "sts,pods,pvc")...)},
				{"kubectl-get-json", append([]string{kubectl}, append(base, "get", "sts,pods,pvc", "-o", "json")...)},
			}
			child(commands[2].argv...) // warms kubectl's discovery cache

			var calls atomic.Int64
			obs := &status.Observer{
				Source: status.APISource{Client: counting(cp.Admin, &calls)}, Dial: dial, ProbeTimeout: 10 * time.Second,
				Engines: map[model.Engine]engine.Engine{etcdengine.Name: etcdengine.New()},
			}
			wall := map[string]time.Duration{}
			rss := map[string]int64{}
			apiCalls := map[string]float64{}
			for i := 0; i < b.N; i++ {
				for _, c := range commands {
					w, r, n := child(c.argv...)
					wall[c.name] += w
					rss[c.name] = max(rss[c.name], r)
					apiCalls[c.name] += n
				}

				start := time.Now()
				rs, _, err := obs.Observe(context.Background(), ns, "")
				wall["status-probed"] += time.Since(start)
				if err != nil || len(rs) != size {
					b.Fatalf("status with probes: %v (%d clusters, want %d)", err, len(rs), size)
				}
				for _, r := range rs {
					for _, m := range r.Observation.Members {
						if m.Engine == nil || !m.Engine.Reachable {
							b.Fatalf("%s not probed: %+v", m.Name, m.Engine)
						}
					}
				}

				w, r := tuiFirstFrame(b, env, append([]string{bin}, append(base, "tui", "--no-probe")...), "etcd-000")
				wall["tui-first-frame"] += w
				rss["tui-first-frame"] = max(rss["tui-first-frame"], r)
			}
			apiCalls["status-probed"] = float64(calls.Load())

			n := float64(b.N)
			points[size] = nil
			report := func(v float64, metric string) {
				b.ReportMetric(v, metric)
				points[size] = append(points[size], fmt.Sprintf("%d,%s,%g", size, metric, v))
			}
			for _, k := range sortedKeys(wall) {
				report(float64(wall[k].Microseconds())/n/1000, k+"-ms")
			}
			for _, k := range sortedKeys(rss) {
				report(float64(rss[k])/1024, k+"-peak-MiB")
			}
			for _, k := range sortedKeys(apiCalls) {
				report(apiCalls[k]/n, k+"-api-calls")
			}
			report(float64(wall["status"])/float64(wall["kubectl-get"]), "status-vs-kubectl-get")
			report(float64(wall["status-json"])/float64(wall["kubectl-get-json"]), "json-vs-kubectl-get-json")
			report(float64(rss["status-json"])/float64(rss["kubectl-get-json"]), "json-rss-vs-kubectl")
		})
	}
}

// addClusters creates clusters etcd-<from> … etcd-<to-1> in ns.
func addClusters(b *testing.B, c kubernetes.Interface, ns string, from, to int) {
	for i := from; i < to; i++ {
		createCluster(b, c, ns, i)
	}
}

// tuiFirstFrame launches argv in tmux and returns the time until the
// screen shows want and the process's peak RSS (VmHWM, KiB) then; it
// quits the TUI.
func tuiFirstFrame(b *testing.B, env, argv []string, want string) (time.Duration, int64) {
	b.Helper()
	start := time.Now()
	s := tmuxtest.Start(b, 160, 50, env, argv...)
	deadline := start.Add(2 * time.Minute)
	for !strings.Contains(s.Screen(), want) {
		if time.Now().After(deadline) {
			b.Fatalf("the TUI did not show %s within 2 minutes:\n%s", want, s.Screen())
		}
		time.Sleep(10 * time.Millisecond) // the polling resolution, not a wait for a condition
	}
	took := time.Since(start)
	hwm := vmHWM(b, s.PID())
	s.Keys("q")
	if code := s.Exited(30 * time.Second); code != 0 {
		b.Fatalf("tui: exit %d after q", code)
	}
	return took, hwm
}

// vmHWM is a running process's peak resident set, KiB.
func vmHWM(b *testing.B, pid int) int64 { return procKiB(b, pid, "VmHWM:") }

// procKiB is the value of key ("VmRSS:") in a running process's
// /proc/PID/status, KiB.
func procKiB(b *testing.B, pid int, key string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	v, ok := statusKiB(data, key)
	if !ok {
		b.Fatalf("no %s in /proc/%d/status", key, pid)
	}
	return v
}

// settledRequests is the API server's count of resource requests served
// (apiRequests), read until two reads agree: the server counts a request
// once its handler has returned, which can be just after the client has
// the whole answer.
func settledRequests(b *testing.B, c kubernetes.Interface) float64 {
	last := apiRequests(b, c)
	for range 50 {
		n := apiRequests(b, c)
		if n == last {
			return n
		}
		last = n
	}
	b.Fatal("the API server's request count did not settle")
	return 0
}

// apiRequests is the API server's count of resource requests served
// (apiserver_request_total), less requests for leases and Endpoints (the
// API server's own renewals and reconciliation, not the measured
// command's; neither hactl nor kubectl get reads them here). Requests for no resource
// (discovery, and these reads of /metrics) are not counted: both hactl
// and kubectl, whose discovery cache is warm, send none.
func apiRequests(b *testing.B, c kubernetes.Interface) float64 {
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "apiserver_request_total{") || strings.Contains(l, `,resource="leases"`) || strings.Contains(l, `,resource="endpoints"`) || strings.Contains(l, `,resource="",`) {
			continue
		}
		v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
		if err != nil {
			b.Fatalf("metrics line %q: %v", l, err)
		}
		total += v
	}
	return total
}

// appendCurve appends points to the file $HACTL_BENCH_CURVE_CSV names, if
// it names one.
func appendCurve(b *testing.B, points []string) {
	path := os.Getenv(envCurveCSV)
	if path == "" || len(points) == 0 {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(points, "\n") + "\n"); err != nil {
		b.Fatal(err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
