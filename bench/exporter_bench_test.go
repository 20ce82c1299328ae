package bench

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/sandbox/runner"
)

// envExporterClusters overrides BenchmarkExporterScale's cluster count.
const envExporterClusters = "HACTL_BENCH_EXPORTER_CLUSTERS"

// BenchmarkExporterScale: the built `kubectl-hactl agent exporter`
// watching the cost curve's 1000 clusters × 3 members (API objects for
// all of them; every member's probe a real connection and RPCs to one of
// 3 real etcd members, reached at the pods' IPs through a SOCKS5 pod
// network, as from inside a cluster), against `status --no-probe -o json`
// of the same namespace (the built binary):
//
//   - scrape-ms: one GET /metrics (the Prometheus text format), mean of
//     50, and scrape-cpu-ms, the exporter's CPU time (utime+stime from
//     /proc) per scrape;
//   - round-ms: one observation round with every member probed (the
//     exporter's own hactl_exporter_round_duration_seconds);
//   - rss-MiB and peak-MiB of the exporter after its first round and the
//     scrapes, and status-json-ms / status-json-peak-MiB of the command;
//   - scrape-vs-status-json: the ratio of a scrape's wall time to the
//     command's.
func BenchmarkExporterScale(b *testing.B) {
	testenv.SkipShort(b)
	clusters := 1000
	if v := os.Getenv(envExporterClusters); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a cluster count", envExporterClusters, v)
		}
		clusters = n
	}
	bin := releaseBuild(b)
	addrs := poolAddrs(b, 3)
	ns := populate(b, clusters)
	// The fixtures' pod IPs are 10.244.0.<ordinal+10>: each ordinal's
	// probes go to one of the pool's members.
	podnet, err := runner.StartPodNetwork("127.0.0.1:0", func(ip string, _ int) (string, bool) {
		var last int
		if _, err := fmt.Sscanf(ip, "10.244.0.%d", &last); err != nil {
			return "", false
		}
		return addrs[last%len(addrs)], true
	}, func(string, ...any) {})
	if err != nil {
		b.Fatal(err)
	}
	defer podnet.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--kubeconfig", cp.AdminKubeconfig, "agent", "exporter", "-n", ns,
		"--listen-address", listen, "--probe-interval", "1h", "--probe-timeout", "30s")
	cmd.Env = append(childEnv(b), "ALL_PROXY="+podnet.URL())
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	base := "http://" + listen
	get := func(path string) (int, []byte, error) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, body, err
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		code, _, err := get("/readyz")
		if err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the exporter was not ready within 10 minutes: %d %v\n%s", code, err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, text, err := get("/metrics")
	if err != nil {
		b.Fatal(err)
	}
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		b.Fatalf("the exposition does not parse: %v", err)
	}
	reachable := 0
	for _, m := range mfs["hactl_member_reachable"].GetMetric() {
		if m.GetGauge().GetValue() == 1 {
			reachable++
		}
	}
	if reachable != 3*clusters {
		b.Fatalf("%d members answered their probe, want %d\n%s", reachable, 3*clusters, logs.String())
	}
	round := mfs["hactl_exporter_round_duration_seconds"].GetMetric()[0].GetGauge().GetValue()

	const scrapes = 50
	var scrapeWall, statusWall time.Duration
	var scrapeCPU time.Duration
	var statusPeak int64
	for i := 0; i < b.N; i++ {
		cpu0 := procCPU(b, cmd.Process.Pid)
		start := time.Now()
		for range scrapes {
			if code, _, err := get("/metrics"); err != nil || code != http.StatusOK {
				b.Fatalf("scrape: %d %v", code, err)
			}
		}
		scrapeWall += time.Since(start)
		scrapeCPU += procCPU(b, cmd.Process.Pid) - cpu0

		st := exec.Command(bin, "--kubeconfig", cp.AdminKubeconfig, "-n", ns, "status", "--no-probe", "-o", "json")
		st.Env = childEnv(b)
		r, err := measure(st)
		if err != nil || (r.code != 0 && r.code != 3 && r.code != 4) {
			b.Fatalf("status -o json: exit %d, %v\n%s", r.code, err, r.err.String())
		}
		statusWall += r.wall
		statusPeak = max(statusPeak, r.maxRSS)
	}
	n := float64(b.N)
	scrapeMs := float64(scrapeWall.Microseconds()) / n / scrapes / 1000
	statusMs := float64(statusWall.Microseconds()) / n / 1000
	b.ReportMetric(scrapeMs, "scrape-ms")
	b.ReportMetric(float64(scrapeCPU.Microseconds())/n/scrapes/1000, "scrape-cpu-ms")
	b.ReportMetric(round*1000, "round-ms")
	b.ReportMetric(float64(procKiB(b, cmd.Process.Pid, "VmRSS:"))/1024, "rss-MiB")
	b.ReportMetric(float64(vmHWM(b, cmd.Process.Pid))/1024, "peak-MiB")
	b.ReportMetric(float64(len(text))/1024, "exposition-KiB")
	b.ReportMetric(statusMs, "status-json-ms")
	b.ReportMetric(float64(statusPeak)/1024, "status-json-peak-MiB")
	b.ReportMetric(scrapeMs/statusMs, "scrape-vs-status-json")
}

// procCPU is a process's CPU time so far (utime + stime of
// /proc/PID/stat, in clock ticks of 10 ms).
func procCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command, which is in parentheses.
	i := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[i+1:]))
	// utime and stime are fields 14 and 15 of stat; f[0] is field 3.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, data)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}
