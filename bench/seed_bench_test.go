package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/storetest"
	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/sandbox"
	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// envSeedMiB sizes the database BenchmarkSeedCapture fills (MiB of
// values; default 1024). HACTL_BENCH_SEED_MIB=64 makes a quick run.
const envSeedMiB = "HACTL_BENCH_SEED_MIB"

const (
	seedCluster = "seedbench"
	seedPrefix  = "etcd-bench"
	// seedValue is the size of each value written: large values, as the
	// database a seed is worth taking of holds.
	seedValue = 1 << 20
)

func seedMiB(b *testing.B) int {
	b.Helper()
	s := os.Getenv(envSeedMiB)
	if s == "" {
		return 1024
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number of MiB", envSeedMiB, s)
	}
	return n
}

// BenchmarkSeedCapture: `kubectl-hactl seed` (the real built binary, as a
// user runs it) of a ~1 GiB etcd database into an S3 store (versitygw),
// by both routes, against `etcdctl snapshot save` of the same member to a
// local file, the real etcdctl, side by side in the same run. The cluster
// is a 3-member static-existing StatefulSet in the sandbox (real control
// plane, scheduler and controllers, kwok nodes whose kubelet API serves
// port-forwards, the sandbox's runner running the members and hactl's
// capture pods as real processes). The default route (--capture pod; auto
// picks it here) runs the capture in a pod scheduled on the member's node
// (hactl-capture, the agent image's capture binary, from the same release
// build): the snapshot goes from the member
// to the store directly and hactl only reads the pod's receipt. The
// fallback (--capture port-forward) streams it through the API server's
// port-forward to hactl. etcdctl dials the member's client URL directly,
// as an operator on the node would; a second baseline runs the same
// etcdctl through `kubectl port-forward` to the same pod, to tell the
// transport's cost from hactl's own.
//
// Reported: throughput of each (snapshot MiB over the whole command's
// wall time), the wall-ratio of hactl's default route against etcdctl
// (>1: hactl is slower; the throughput ratio is its inverse) and of the
// port-forward route, the CPU time and the peak RSS (VmHWM, sampled: see
// peakRSS and followProcess) of each process (for the pod route, hactl's
// and the capture pod's agent's: rss-ratio is the agent's against
// etcdctl's), and each route's capture and upload alone (the `took` of its
// publish receipt). The S3 objects of each generation are deleted after it
// is measured. The set-up (sandbox, store, cluster, fill;
// $HACTL_BENCH_SEED_MIB MiB of values) runs once; the measurement is the
// sub-benchmark named after the size.
func BenchmarkSeedCapture(b *testing.B) {
	testenv.SkipShort(b)
	mib := seedMiB(b)
	s := setupSeed(b, mib)
	sb, ns, bins, members := s.sb, s.ns, s.bins, s.members

	b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
		env := childEnv(b)
		snapDir := b.TempDir()
		var podWall, hactlWall, ctlWall, pfWall, podTook, captureTook, podCPU, agentCPU, hactlCPU, ctlCPU, pfCPU time.Duration
		var podRSS, agentRSS, hactlRSS, ctlRSS, pfRSS, snapBytes, ctlBytes int64
		for i := 0; i < b.N; i++ {
			// In a capture pod (the default, auto): hactl waits, the agent
			// on the member's node streams.
			gen := fmt.Sprintf("bench-pod-%d-%d", time.Now().UnixNano(), i)
			agent := followProcess("--generation=" + gen) // the capture pod's hactl-capture
			hp, rp := s.seed(b, env, gen, "pod")
			aRSS, aCPU := agent()
			if aRSS == 0 {
				b.Fatalf("the capture pod's agent process for %s was never seen", gen)
			}

			// Through a port-forward: hactl streams and uploads itself.
			gen = fmt.Sprintf("bench-pf-%d-%d", time.Now().UnixNano(), i)
			h, rc := s.seed(b, env, gen, "port-forward")

			src, ok := members[rc.source]
			if !ok || rp.source != rc.source {
				b.Fatalf("seed captured from %q and %q, want the same member of %s", rp.source, rc.source, seedCluster)
			}
			file := filepath.Join(snapDir, "snapshot.db")
			c, err := measure(etcdctl(bins, env, src.ClientURL, file))
			if err != nil || c.code != 0 {
				b.Fatalf("etcdctl snapshot save: exit %d, %v\n%s\n%s", c.code, err, c.out.String(), c.err.String())
			}
			fi, err := os.Stat(file)
			if err != nil {
				b.Fatal(err)
			}
			ctlBytes = fi.Size()
			_ = os.Remove(file)

			p := etcdctlPortForward(b, bins, env, sb.Kubeconfig, ns, rc.source, file)
			_ = os.Remove(file)

			podWall += hp.wall
			hactlWall += h.wall
			ctlWall += c.wall
			pfWall += p.wall
			podTook += rp.took
			captureTook += rc.took
			podCPU, agentCPU, hactlCPU, ctlCPU, pfCPU = podCPU+hp.cpu, agentCPU+aCPU, hactlCPU+h.cpu, ctlCPU+c.cpu, pfCPU+p.cpu
			snapBytes = rc.size
			podRSS, agentRSS, hactlRSS, ctlRSS, pfRSS = max(podRSS, hp.maxRSS), max(agentRSS, aRSS), max(hactlRSS, h.maxRSS), max(ctlRSS, c.maxRSS), max(pfRSS, p.maxRSS)
			b.Logf("%.1f MiB from %s: hactl in a capture pod %s (capture+upload %s; hactl CPU %s, %d MiB peak; agent CPU %s, %d MiB peak), "+
				"hactl through a port-forward %s (capture+upload %s, CPU %s, %d MiB peak), etcdctl %s (CPU %s, %d MiB peak), etcdctl via kubectl port-forward %s (CPU %s)",
				float64(rc.size)/(1<<20), rc.source, hp.wall.Round(time.Millisecond), rp.took.Round(time.Millisecond), hp.cpu.Round(time.Millisecond), hp.maxRSS>>10,
				aCPU.Round(time.Millisecond), aRSS>>10, h.wall.Round(time.Millisecond), rc.took.Round(time.Millisecond), h.cpu.Round(time.Millisecond),
				h.maxRSS>>10, c.wall.Round(time.Millisecond), c.cpu.Round(time.Millisecond), c.maxRSS>>10, p.wall.Round(time.Millisecond), p.cpu.Round(time.Millisecond))
		}
		n := float64(b.N)
		mb := float64(snapBytes) / (1 << 20)
		b.ReportMetric(mb, "snapshot-MiB")
		b.ReportMetric(float64(ctlBytes)/(1<<20), "etcdctl-snapshot-MiB")
		b.ReportMetric(mb*n/podWall.Seconds(), "hactl-MiB/s")
		b.ReportMetric(mb*n/hactlWall.Seconds(), "hactl-pf-MiB/s")
		b.ReportMetric(mb*n/ctlWall.Seconds(), "etcdctl-MiB/s")
		b.ReportMetric(mb*n/pfWall.Seconds(), "etcdctl-pf-MiB/s")
		b.ReportMetric(podWall.Seconds()/n, "hactl-s/op")
		b.ReportMetric(podTook.Seconds()/n, "hactl-capture-s/op")
		b.ReportMetric(hactlWall.Seconds()/n, "hactl-pf-s/op")
		b.ReportMetric(captureTook.Seconds()/n, "hactl-pf-capture-s/op")
		b.ReportMetric(ctlWall.Seconds()/n, "etcdctl-s/op")
		b.ReportMetric(pfWall.Seconds()/n, "etcdctl-pf-s/op")
		b.ReportMetric(podCPU.Seconds()/n, "hactl-cpu-s/op")
		b.ReportMetric(agentCPU.Seconds()/n, "agent-cpu-s/op")
		b.ReportMetric(hactlCPU.Seconds()/n, "hactl-pf-cpu-s/op")
		b.ReportMetric(ctlCPU.Seconds()/n, "etcdctl-cpu-s/op")
		b.ReportMetric(pfCPU.Seconds()/n, "etcdctl-pf-cpu-s/op")
		// wall-ratio: hactl's default route (a capture pod) against
		// etcdctl dialling the member; >1: hactl is slower.
		b.ReportMetric(float64(podWall)/float64(ctlWall), "wall-ratio")
		b.ReportMetric(float64(hactlWall)/float64(ctlWall), "wall-ratio-pf")
		b.ReportMetric(float64(hactlWall)/float64(pfWall), "wall-ratio-pf-vs-etcdctl-pf")
		b.ReportMetric(float64(podRSS)/1024, "hactl-peak-MiB")
		b.ReportMetric(float64(agentRSS)/1024, "agent-peak-MiB")
		b.ReportMetric(float64(hactlRSS)/1024, "hactl-pf-peak-MiB")
		b.ReportMetric(float64(ctlRSS)/1024, "etcdctl-peak-MiB")
		b.ReportMetric(float64(pfRSS)/1024, "etcdctl-pf-peak-MiB")
		// rss-ratio: the process that streams the snapshot (the capture
		// pod's agent) against etcdctl.
		b.ReportMetric(float64(agentRSS)/float64(ctlRSS), "rss-ratio")
		b.ReportMetric(float64(hactlRSS)/float64(ctlRSS), "rss-ratio-pf")
	})
}

// seedSetup is a sandbox holding cluster seedCluster, filled, whose
// StatefulSet names a real S3 store.
type seedSetup struct {
	sb      *sandbox.Sandbox
	ns      string
	bins    string
	hactl   string
	store   *storetest.Server
	bucket  string
	members map[string]sandbox.Member
}

// setupSeed starts the sandbox and the store, forms seedCluster and
// fills it with mib MiB of values. Everything is stopped in b's cleanups.
func setupSeed(b *testing.B, mib int) *seedSetup {
	b.Helper()
	s := &seedSetup{bins: testenv.BinDir(b), hactl: releaseBuild(b)}
	// The capture pods run the same release build.
	s.sb = e2esuite.StartTest(b, e2esuite.Options{Scenarios: []string{"healthy"}, SandboxBinary: true, Timeout: 5 * time.Minute, Agent: s.hactl}).SB
	s.ns = s.sb.State.Namespace
	cfg, err := s.sb.RESTConfig()
	if err != nil {
		b.Fatal(err)
	}
	kube := testenv.Clientset(b, cfg)
	ctx := context.Background()

	// The store: a real versitygw, its credentials in a Secret the
	// StatefulSet's annotations name.
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	s.store, err = storetest.Start(sctx, s.bins, b.TempDir())
	scancel()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.store.Stop() })
	if s.bucket, err = s.store.CreateBucket(ctx, ""); err != nil {
		b.Fatal(err)
	}
	if _, err := kube.CoreV1().Secrets(s.ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "seed-bench-store"},
		Data: map[string][]byte{artifact.SecretKeyAccessKeyID: []byte(s.store.AccessKey),
			artifact.SecretKeySecretAccessKey: []byte(s.store.SecretKey)},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}

	// The cluster, with a quota above the data and room for 1 MiB values.
	quota := int64(mib)<<21 + 512<<20
	formed := time.Now()
	formCluster(b, kube, scenario.Params{
		Name: seedCluster, Namespace: s.ns, Replicas: 3, AntiAffinity: "required", PDB: true,
		QuotaBackendBytes: quota, ExtraArgs: []string{"--max-request-bytes=" + strconv.Itoa(4*seedValue)},
	}, map[string]string{
		artifact.AnnotationStore:       s.store.URL(s.bucket, seedPrefix),
		artifact.AnnotationStoreSecret: "seed-bench-store",
	})
	b.Logf("cluster %s formed in %s", seedCluster, time.Since(formed).Round(time.Second))
	s.members = clusterMembers(b, s.sb, s.ns, seedCluster)
	filled := time.Now()
	fillValues(b, s.members, mib)
	b.Logf("wrote %d MiB in %d values in %s", mib, mib*(1<<20)/seedValue, time.Since(filled).Round(time.Second))
	return s
}

// seed runs the built kubectl-hactl seed of generation gen with env and
// --capture capture, measured, then deletes what it stored.
func (s *seedSetup) seed(b *testing.B, env []string, gen, capture string) (*run, receipt) {
	b.Helper()
	cmd := exec.Command(s.hactl, "--kubeconfig", s.sb.Kubeconfig, "-n", s.ns, "seed", seedCluster,
		"--generation", gen, "--yes", "-o", "json", "--capture", capture)
	cmd.Env = env
	h, err := measure(cmd)
	if err != nil || h.code != 0 {
		b.Fatalf("kubectl-hactl seed: exit %d, %v\n%s\n%s", h.code, err, h.out.String(), h.err.String())
	}
	rc, err := parseReceipt(h.out.Bytes())
	if err != nil {
		b.Fatalf("seed receipt: %v\n%s", err, h.out.String())
	}
	deletePrefix(b, s.store, s.bucket, seedPrefix+"/"+gen+"/")
	return h, rc
}

// formCluster creates a static-existing cluster the documented way (as the
// sandbox's scenarios do): installed with --initial-cluster-state=new,
// every member ready, then the template switched to "existing" by a
// rolling update. annotations go on the StatefulSet.
func formCluster(b *testing.B, kube kubernetes.Interface, p scenario.Params, annotations map[string]string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p.State = "new"
	o, err := scenario.Render(scenario.StaticExisting, p)
	if err != nil {
		b.Fatal(err)
	}
	for _, svc := range o.Services {
		if _, err := kube.CoreV1().Services(p.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if o.PDB != nil {
		if _, err := kube.PolicyV1().PodDisruptionBudgets(p.Namespace).Create(ctx, o.PDB, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	sts := o.StatefulSet
	if sts.Annotations == nil {
		sts.Annotations = map[string]string{}
	}
	for k, v := range annotations {
		sts.Annotations[k] = v
	}
	sets := kube.AppsV1().StatefulSets(p.Namespace)
	if _, err := sets.Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := scenario.WaitRollout(ctx, kube, p.Namespace, p.Name); err != nil {
		b.Fatal(err)
	}
	p.State = "existing"
	if o, err = scenario.Render(scenario.StaticExisting, p); err != nil {
		b.Fatal(err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := sets.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Template = o.StatefulSet.Spec.Template
		_, err = sets.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := scenario.WaitRollout(ctx, kube, p.Namespace, p.Name); err != nil {
		b.Fatal(err)
	}
}

// clusterMembers returns the running members of cluster, by pod name.
func clusterMembers(b *testing.B, sb *sandbox.Sandbox, ns, cluster string) map[string]sandbox.Member {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all, err := sb.Members(ctx)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]sandbox.Member{}
	for _, m := range all {
		if m.Namespace == ns && strings.HasPrefix(m.Name, cluster+"-") {
			out[m.Name] = m
		}
	}
	if len(out) != 3 {
		b.Fatalf("%d running members of %s, want 3", len(out), cluster)
	}
	return out
}

// fillValues writes mib MiB of incompressible values (seedValue bytes
// each, pseudo-random) through the cluster, four writers at a time.
func fillValues(b *testing.B, members map[string]sandbox.Member, mib int) {
	b.Helper()
	var eps []string
	for _, m := range members {
		eps = append(eps, m.ClientURL)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		MaxCallSendMsgSize: 4 * seedValue})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	n := mib * (1 << 20) / seedValue
	work := make(chan int)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			val := make([]byte, seedValue)
			for i := range work {
				rng := rand.NewChaCha8([32]byte{byte(i), byte(i >> 8), byte(i >> 16)})
				_, _ = rng.Read(val)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, err := cli.Put(ctx, fmt.Sprintf("/bench/seed/%06d", i), string(val))
				cancel()
				if err != nil {
					errs <- fmt.Errorf("put %d: %w", i, err)
					return
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			b.Fatal(err)
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// receipt is what BenchmarkSeedCapture reads of `seed -o json`.
type receipt struct {
	source string
	size   int64
	// took is the capture and upload alone, as the publish receipt says.
	took time.Duration
}

var tookRE = regexp.MustCompile(`\(took ([^)]+)\)`)

func parseReceipt(out []byte) (receipt, error) {
	var doc struct {
		Result   string `json:"result"`
		Source   string `json:"source"`
		Manifest *struct {
			TotalSize int64 `json:"totalSize"`
		} `json:"manifest"`
		Receipts []struct {
			Step   string `json:"step"`
			Detail string `json:"detail"`
		} `json:"receipts"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return receipt{}, err
	}
	if doc.Result != "done" || doc.Manifest == nil || doc.Source == "" {
		return receipt{}, fmt.Errorf("result %q, source %q, manifest %v", doc.Result, doc.Source, doc.Manifest != nil)
	}
	r := receipt{source: doc.Source, size: doc.Manifest.TotalSize}
	for _, rc := range doc.Receipts {
		if m := tookRE.FindStringSubmatch(rc.Detail); m != nil && rc.Step == "publish" {
			d, err := time.ParseDuration(m[1])
			if err != nil {
				return r, fmt.Errorf("publish receipt %q: %w", rc.Detail, err)
			}
			r.took = d
		}
	}
	return r, nil
}

func etcdctl(bins string, env []string, endpoint, file string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(bins, "etcdctl"), "--endpoints", endpoint, "--dial-timeout", "10s", "snapshot", "save", file)
	cmd.Env = env
	return cmd
}

var forwardingRE = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 2379`)

// etcdctlPortForward runs `etcdctl snapshot save` of pod through a
// `kubectl port-forward` to it (the path hactl's own dialer takes: the API
// server's port-forward to the kubelet), stopping the port-forward after.
// The wall time and peak RSS are etcdctl's; the CPU time is etcdctl's and
// kubectl's together (hactl does both jobs in one process).
func etcdctlPortForward(b *testing.B, bins string, env []string, kubeconfig, ns, pod, file string) *run {
	b.Helper()
	pf := exec.Command(filepath.Join(bins, "kubectl"), "--kubeconfig", kubeconfig, "-n", ns, "port-forward", "pod/"+pod, ":2379")
	pf.Env = env
	stdout, err := pf.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	pf.Stderr = io.Discard
	if err := pf.Start(); err != nil {
		b.Fatal(err)
	}
	stop := func() {
		if pf.ProcessState == nil {
			_ = pf.Process.Kill()
			_ = pf.Wait()
		}
	}
	defer stop()
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := forwardingRE.FindStringSubmatch(sc.Text()); m != nil {
				port <- m[1]
			}
		}
		close(port)
	}()
	var p string
	select {
	case v, ok := <-port:
		if !ok {
			b.Fatal("kubectl port-forward exited before forwarding")
		}
		p = v
	case <-time.After(30 * time.Second):
		b.Fatal("kubectl port-forward did not start forwarding within 30s")
	}
	r, err := measure(etcdctl(bins, env, "http://127.0.0.1:"+p, file))
	if err != nil || r.code != 0 {
		b.Fatalf("etcdctl snapshot save through kubectl port-forward: exit %d, %v\n%s\n%s", r.code, err, r.out.String(), r.err.String())
	}
	// The pair's CPU: etcdctl's and the port-forward's.
	stop()
	if ru, ok := pf.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return r
}

// deletePrefix removes every object under prefix in bucket.
func deletePrefix(b *testing.B, store *storetest.Server, bucket, prefix string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := store.Client()
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		b.Fatal(err)
	}
	if len(out.Contents) == 0 {
		b.Fatalf("nothing stored under %s", prefix)
	}
	for _, o := range out.Contents {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key}); err != nil {
			b.Fatal(err)
		}
	}
}
