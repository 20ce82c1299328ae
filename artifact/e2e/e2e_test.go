package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/storetest"
	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/sandbox"
)

// TestMain serves the sandbox's supervisor when asked to: each test starts
// its own sandbox (e2esuite.StartTest) with this test binary as the
// supervisor.
func TestMain(m *testing.M) { e2esuite.MainWithoutSuite(m) }

const (
	namespace = "e2e-seed"
	cluster   = "healthy"
)

// env is a running sandbox with the plugin built and the cluster's store
// configured.
type env struct {
	t     *testing.T
	suite *e2esuite.Suite
	sb    *sandbox.Sandbox
	cs    kubernetes.Interface
	s3    sandbox.S3
	home  string

	mu      sync.Mutex
	outputs bytes.Buffer
}

func (e *env) record(s ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, x := range s {
		e.outputs.WriteString(x + "\n")
	}
}

// kubectl runs `kubectl ARGS` with the plugin on PATH and no store
// credentials in its environment (they come from the Secret).
func (e *env) kubectl(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, e.suite.Kubectl, args...)
	cmd.Env = []string{"PATH=" + e.suite.Bin + ":" + filepath.Dir(e.suite.Kubectl) + ":/usr/bin:/bin", "KUBECONFIG=" + e.sb.Kubeconfig, "HOME=" + e.home}
	return cmd
}

func (e *env) run(args ...string) (string, string, int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := e.kubectl(ctx, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("kubectl %v: %v", args, err)
	}
	e.record(out.String(), errOut.String())
	return out.String(), errOut.String(), code
}

func (e *env) setStore(u string) {
	e.t.Helper()
	ctx := context.Background()
	sts, err := e.cs.AppsV1().StatefulSets(namespace).Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if sts.Annotations == nil {
		sts.Annotations = map[string]string{}
	}
	sts.Annotations[artifact.AnnotationStore] = u
	sts.Annotations[artifact.AnnotationStoreSecret] = "seed-store"
	if _, err := e.cs.AppsV1().StatefulSets(namespace).Update(ctx, sts, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) storeURL(endpoint string) string {
	return "s3://" + e.s3.Bucket + "/" + namespace + "/" + cluster + "?endpoint=" + endpoint + "&use_path_style=true&region=" + e.s3.Region
}

func (e *env) store() *artifact.Store {
	e.t.Helper()
	s, err := artifact.OpenStore(context.Background(), e.storeURL(e.s3.Endpoint),
		artifact.Options{Credentials: &artifact.Credentials{AccessKeyID: e.s3.AccessKey, SecretAccessKey: e.s3.SecretKey}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = s.Close() })
	return s
}

// seedUntilUploading starts `kubectl hactl seed` of generation g (with
// extra flags) and returns once its upload is under way through th: the
// command, its combined output, and the result of its Wait.
func (e *env) seedUntilUploading(ctx context.Context, th *storetest.Throttle, g string, extra ...string) (*exec.Cmd, *bytes.Buffer, <-chan error) {
	e.t.Helper()
	cmd := e.kubectl(ctx, append([]string{"hactl", "seed", cluster, "-n", namespace, "--generation", g, "--yes"}, extra...)...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-th.Started():
	case err := <-exited:
		e.t.Fatalf("seed ended before its upload was under way (%v):\n%s", err, out.String())
	case <-ctx.Done():
		e.t.Fatalf("the upload never started:\n%s", out.String())
	}
	return cmd, out, exited
}

// start starts the test's sandbox (e2esuite.StartTest) and creates the
// store's Secret, holding the two credential keys alone.
func start(t *testing.T) *env {
	t.Helper()
	suite := e2esuite.StartTest(t, e2esuite.Options{Namespace: namespace, Scenarios: []string{cluster}, Timeout: 5 * time.Minute})
	e := &env{t: t, suite: suite, sb: suite.SB, cs: suite.KC, home: t.TempDir()}
	var err error
	if e.s3, err = e.sb.S3(); err != nil {
		t.Fatal(err)
	}
	_, err = e.cs.CoreV1().Secrets(namespace).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "seed-store"},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": e.s3.AccessKey, "AWS_SECRET_ACCESS_KEY": e.s3.SecretKey},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// fill writes n keys through member 0's client address.
func (e *env) fill(n int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := e.sb.Member(ctx, namespace+"/"+cluster+"-0")
	if err != nil {
		e.t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, Logger: zap.NewNop(), DialTimeout: 5 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	defer cli.Close()
	for i := 0; i < n; i += 100 {
		var ops []clientv3.Op
		for j := i; j < min(i+100, n); j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/e2e/key-%05d", j), fmt.Sprintf("value-%d-%s", j, strings.Repeat("e", j%64))))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			e.t.Fatal(err)
		}
	}
}

type seedReceipt struct {
	Result   string             `json:"result"`
	Phase    string             `json:"phase"`
	EntryID  string             `json:"entryID"`
	Source   string             `json:"source"`
	Manifest *artifact.Manifest `json:"manifest"`
	Receipts []struct {
		Phase, Step, Outcome string
	} `json:"receipts"`
}

// TestSeedThroughKubectlAndPortForward: `kubectl hactl seed` (the built
// binary, run by the real kubectl) captures a cluster holding 10k keys
// through a real port-forward; killed mid-upload it leaves nothing
// published and, run again, publishes the generation once; the generation
// verifies and lists; no credential appears in any output.
func TestSeedThroughKubectlAndPortForward(t *testing.T) {
	e := start(t)
	e.fill(10_000)
	th := storetest.NewThrottle()
	e.setStore(e.storeURL(th.Proxy(t, e.s3.Endpoint)))

	// Killed mid-upload.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd, out, exited := e.seedUntilUploading(ctx, th, "e2e-1", "--capture", "port-forward")
	// kubectl execs the plugin in its own process: this kills the plugin.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	e.record(out.String())
	s := e.store()
	bg := context.Background()
	if _, err := s.ReadManifest(bg, "e2e-1"); !errors.Is(err, artifact.ErrNoManifest) {
		t.Fatalf("after the kill: %v, want no manifest\n%s", err, out.String())
	}

	// Run again at full speed: published once.
	th.Slow.Store(false)
	stdout, stderr, code := e.run("hactl", "seed", cluster, "-n", namespace, "--generation", "e2e-1", "--yes", "-o", "json", "--capture", "port-forward")
	if code != 0 {
		t.Fatalf("seed again: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var rc seedReceipt
	if err := json.Unmarshal([]byte(stdout), &rc); err != nil || rc.Result != "done" || rc.Phase != "published" || rc.Manifest == nil {
		t.Fatalf("seed receipt: %v\n%s", err, stdout)
	}
	t.Logf("published %s from %s: %d bytes, revision %d", rc.Manifest.Identity.Generation, rc.Source, rc.Manifest.TotalSize, rc.Manifest.Identity.Revision)
	entries, err := s.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	published := 0
	for _, en := range entries {
		if en.Published() {
			published++
		}
	}
	if published != 1 {
		t.Fatalf("%d published generations, want 1", published)
	}
	// Once more: a no-op.
	stdout, stderr, code = e.run("hactl", "seed", cluster, "-n", namespace, "--generation", "e2e-1", "--yes")
	if code != 0 || !strings.Contains(stdout, "already published") {
		t.Fatalf("seed a third time: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = e.run("hactl", "generations", "verify", cluster, "e2e-1", "-n", namespace, "--expect-cluster-id", rc.Manifest.Identity.ClusterID)
	if code != 0 || !strings.Contains(stdout, "verified") {
		t.Fatalf("verify: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = e.run("hactl", "generations", "list", cluster, "-n", namespace, "-o", "wide")
	if code != 0 || !strings.Contains(stdout, "e2e-1") || !strings.Contains(stdout, "published") {
		t.Fatalf("list: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = e.run("get", "events", "-n", namespace, "--field-selector", "reason=SeedPublished", "-o", "name")
	if code != 0 || strings.TrimSpace(stdout) == "" {
		t.Fatalf("no SeedPublished event: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// Everything hactl left in the cluster, and every output: no credential.
	for _, what := range [][]string{{"get", "configmap", "hactl-" + cluster, "-o", "yaml"}, {"get", "events", "-o", "yaml"}, {"get", "lease", "-o", "yaml"}} {
		_, _, _ = e.run(append(what, "-n", namespace)...)
	}
	b, _ := yaml.Marshal(rc)
	e.record(string(b))
	e.mu.Lock()
	all := e.outputs.String()
	e.mu.Unlock()
	if len(all) < 2000 {
		t.Fatalf("only %d bytes of output collected", len(all))
	}
	for _, secret := range []string{e.s3.AccessKey, e.s3.SecretKey} {
		if strings.Contains(all, secret) {
			t.Error("a store credential appears in the output")
		}
	}
}
