package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/storetest"
	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
	"github.com/hactl-dev/hactl/tui"
)

// Environment of the helper processes (this test binary re-executed).
const (
	envHelper     = "HACTL_TEST_HELPER"
	envKubeconfig = "HACTL_TEST_KUBECONFIG"
	envNamespace  = "HACTL_TEST_NAMESPACE"
	envAddrs      = "HACTL_TEST_ADDRS"
	envGenArg     = "HACTL_TEST_GENERATION"
)

// startS3 runs a versitygw for one test.
func startS3(t *testing.T) *storetest.Server {
	t.Helper()
	testenv.SkipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := storetest.Start(ctx, testenv.BinDir(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// seedEnv is a cliEnv (fixture StatefulSet, real etcd members) whose
// StatefulSet names a seed store on a real S3 server and a credentials
// Secret.
type seedEnv struct {
	*cliEnv
	s3     *storetest.Server
	bucket string
	url    string
	// outputs collects every output of the test, searched for the
	// credentials at the end.
	outputs bytes.Buffer
	mu      sync.Mutex
}

func newSeedEnv(t *testing.T) *seedEnv {
	t.Helper()
	e := &seedEnv{cliEnv: newCLIEnv(t), s3: startS3(t)}
	ctx := context.Background()
	var err error
	if e.bucket, err = e.s3.CreateBucket(ctx, ""); err != nil {
		t.Fatal(err)
	}
	e.setStore(e.s3.URL(e.bucket, "etcd"))
	_, err = e.cs.CoreV1().Secrets(e.ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "seed-store"},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": e.s3.AccessKey, "AWS_SECRET_ACCESS_KEY": e.s3.SecretKey},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// setStore points the StatefulSet's annotations at url.
func (e *seedEnv) setStore(url string) {
	e.t.Helper()
	ctx := context.Background()
	sts, err := e.cs.AppsV1().StatefulSets(e.ns).Get(ctx, "etcd", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if sts.Annotations == nil {
		sts.Annotations = map[string]string{}
	}
	sts.Annotations[artifact.AnnotationStore] = url
	sts.Annotations[artifact.AnnotationStoreSecret] = "seed-store"
	if _, err := e.cs.AppsV1().StatefulSets(e.ns).Update(ctx, sts, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.url = url
}

func (e *seedEnv) record(parts ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range parts {
		e.outputs.WriteString(p + "\n")
	}
}

// seedOptions returns seed options as Complete would fill them.
func (e *seedEnv) seedOptions(in io.Reader, tty bool, g string) (*SeedOptions, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	o := NewSeedOptions(nil, genericiooptions.IOStreams{In: in, Out: &out, ErrOut: &errOut})
	o.Cluster, o.Namespace, o.Generation = "etcd", e.ns, g
	o.client, o.dial, o.inIsTTY, o.identity = e.cs, e.dial, tty, actions.NewIdentity()
	o.Timeout = 2 * time.Minute
	// This control plane has no kubelet to run a capture pod.
	o.Capture = string(actions.CapturePortForward)
	return o, &out, &errOut
}

func (e *seedEnv) store() *artifact.Store {
	e.t.Helper()
	s, err := artifact.OpenStore(context.Background(), e.s3.URL(e.bucket, "etcd"), artifact.Options{Credentials: e.s3.Credentials()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = s.Close() })
	return s
}

// fill writes n keys through the cluster.
func (e *seedEnv) fill(n int) {
	e.t.Helper()
	cli, err := e.etcd.Members[0].Client()
	if err != nil {
		e.t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := 0; i < n; i += 100 {
		var ops []clientv3.Op
		for j := i; j < min(i+100, n); j++ {
			ops = append(ops, clientv3.OpPut(seedKey(j), seedValue(j)))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			e.t.Fatal(err)
		}
	}
}

func seedKey(i int) string   { return fmt.Sprintf("/acceptance/key-%05d", i) }
func seedValue(i int) string { return fmt.Sprintf("v%d-%s", i, strings.Repeat("z", i%64)) }

// clusterOutputs records what hactl left in the cluster: the ledger, the
// lease and the events.
func (e *seedEnv) clusterOutputs() {
	e.t.Helper()
	ctx := context.Background()
	if cm, err := e.cs.CoreV1().ConfigMaps(e.ns).Get(ctx, "hactl-etcd", metav1.GetOptions{}); err == nil {
		b, _ := yaml.Marshal(cm)
		e.record(string(b))
	}
	if l, err := e.cs.CoordinationV1().Leases(e.ns).Get(ctx, "hactl-etcd", metav1.GetOptions{}); err == nil {
		b, _ := yaml.Marshal(l)
		e.record(string(b))
	}
	evs, err := e.cs.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := yaml.Marshal(evs)
	e.record(string(b))
}

// assertNoCredentials fails if a credential value appears in anything
// the test collected.
func (e *seedEnv) assertNoCredentials() {
	e.t.Helper()
	e.clusterOutputs()
	e.mu.Lock()
	defer e.mu.Unlock()
	all := e.outputs.String()
	if len(all) < 1000 {
		e.t.Fatalf("only %d bytes of output collected: the credential check would prove little", len(all))
	}
	for _, s := range e.s3.Secrets() {
		if strings.Contains(all, s) {
			e.t.Errorf("a store credential appears in hactl's output, events, ledger or lease")
		}
	}
}

func (e *seedEnv) ledger() actions.LedgerContents {
	e.t.Helper()
	led, err := actions.ReadLedger(context.Background(), e.cs, e.ns, "etcd")
	if err != nil {
		e.t.Fatal(err)
	}
	return led
}

func (e *seedEnv) events(reason string) []corev1.Event {
	e.t.Helper()
	evs, err := e.cs.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []corev1.Event
	for _, ev := range evs.Items {
		if ev.Reason == reason && ev.InvolvedObject.Name == "etcd" && ev.Source.Component == actions.EventSource {
			out = append(out, ev)
		}
	}
	return out
}

func TestSeedCommandPublishesWithReceiptsAndEvents(t *testing.T) {
	e := newSeedEnv(t)
	e.fill(500)
	ctx := context.Background()

	o, out, errOut := e.seedOptions(strings.NewReader(""), false, "g1")
	o.Yes, o.Output = true, "json"
	err := o.Run(ctx)
	e.record(out.String(), errOut.String())
	if err != nil {
		t.Fatalf("seed: %v\n%s", err, errOut.String())
	}
	var doc seedDoc
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out.String())
	}
	if doc.Kind != "SeedReceipt" || doc.Result != "done" || doc.Phase != model.ActionPhasePublished || doc.Manifest == nil || doc.Already {
		t.Fatalf("receipt: %+v", doc)
	}
	var steps []string
	for _, r := range doc.Receipts {
		steps = append(steps, string(r.Phase)+"/"+string(r.Step))
	}
	if got := strings.Join(steps, ","); got != "requested/acquire-lock,capturing/capture-snapshot,uploading/upload,published/publish" {
		t.Fatalf("receipts: %s", got)
	}
	for _, want := range []string{"plan:", "capture a snapshot", "flow seed"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("the plan on stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	// The identity is the source member's, and the generation verifies.
	m, err := e.store().Verify(ctx, "g1", artifact.Expect{ClusterID: doc.Manifest.Identity.ClusterID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := e.etcd.Member(doc.Source)
	if src == nil {
		t.Fatalf("source %q is not a member", doc.Source)
	}
	st, err := src.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Identity.SourceMemberID != fmt.Sprintf("%x", st.Header.MemberId) || m.Identity.ClusterID != fmt.Sprintf("%x", st.Header.ClusterId) {
		t.Fatalf("identity %+v is not %s's (%x/%x)", m.Identity, doc.Source, st.Header.ClusterId, st.Header.MemberId)
	}
	// Ledger: one done seed entry naming the generation.
	led := e.ledger()
	if len(led.Entries) != 1 || led.Entries[0].State != model.EntryDone || led.Entries[0].Generation != "g1" || led.Entries[0].Phase != model.ActionPhasePublished {
		t.Fatalf("ledger: %+v", led.Entries)
	}
	if len(e.events("SeedPublished")) != 1 || len(e.events("SeedStarted")) != 1 {
		t.Fatalf("events: published %d, started %d", len(e.events("SeedPublished")), len(e.events("SeedStarted")))
	}

	// The same generation again: a no-op, nothing new in the ledger.
	o, out, errOut = e.seedOptions(strings.NewReader(""), false, "g1")
	o.Yes = true
	err = o.Run(ctx)
	e.record(out.String(), errOut.String())
	if err != nil || !strings.Contains(out.String(), "already published") {
		t.Fatalf("again: %v\n%s%s", err, out.String(), errOut.String())
	}
	if n := len(e.ledger().Entries); n != 1 {
		t.Fatalf("the no-op wrote the ledger: %d entries", n)
	}

	// A generation of that name from another cluster: refused, exit 5.
	up, err := e.store().Begin(ctx, "foreign", artifact.UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fw, _ := up.Create(ctx, "snapshot.db")
	_, _ = fw.Write([]byte("x"))
	_ = fw.Close()
	if _, err := up.Publish(ctx, artifact.Identity{Generation: "foreign", Engine: "etcd", EngineVersion: "3.6.0", ClusterID: "abcdef0123456789", SourceMemberID: "1", Revision: 1}); err != nil {
		t.Fatal(err)
	}
	o, out, errOut = e.seedOptions(strings.NewReader(""), false, "foreign")
	o.Yes = true
	err = o.Run(ctx)
	e.record(out.String(), errOut.String(), fmt.Sprint(err))
	if codeOf(err) != ExitRefused || !errors.Is(err, artifact.ErrGenerationExists) {
		t.Fatalf("foreign generation: exit %d: %v", codeOf(err), err)
	}

	// generations list/show/verify through the command line.
	lout, lerr, code := run(t, "-n", e.ns, "generations", "list", "etcd")
	e.record(lout, lerr)
	if code != 0 || !strings.Contains(lout, "g1") || !strings.Contains(lout, "published") || !strings.Contains(lout, m.Identity.ClusterID) {
		t.Fatalf("generations list: exit %d\n%s\n%s", code, lout, lerr)
	}
	sout, serr, code := run(t, "-n", e.ns, "generations", "show", "etcd", "g1", "-o", "json")
	e.record(sout, serr)
	if code != 0 || !strings.Contains(sout, m.Digest) || !strings.Contains(sout, `"kind": "SeedGeneration"`) {
		t.Fatalf("generations show: exit %d\n%s\n%s", code, sout, serr)
	}
	vout, verr, code := run(t, "-n", e.ns, "generations", "verify", "etcd", "g1", "--expect-cluster-id", m.Identity.ClusterID)
	e.record(vout, verr)
	if code != 0 || !strings.Contains(vout, "verified") {
		t.Fatalf("generations verify: exit %d\n%s\n%s", code, vout, verr)
	}
	vout, verr, code = run(t, "-n", e.ns, "generations", "verify", "etcd", "g1", "--expect-cluster-id", "1234", "-o", "json")
	e.record(vout, verr)
	if code != ExitRefused || !strings.Contains(vout, `"reason": "wrong_cluster"`) {
		t.Fatalf("verify against another cluster: exit %d\n%s\n%s", code, vout, verr)
	}
	e.assertNoCredentials()
}

func TestSeedCommandRefusalsChangeNothing(t *testing.T) {
	e := newSeedEnv(t)
	ctx := context.Background()
	published := func() int {
		entries, err := e.store().List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}

	// No terminal, no --yes.
	o, out, errOut := e.seedOptions(strings.NewReader("y\n"), false, "g1")
	err := o.Run(ctx)
	e.record(out.String(), errOut.String(), fmt.Sprint(err))
	if err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("no terminal: %v", err)
	}
	// Declined.
	o, out, errOut = e.seedOptions(strings.NewReader("n\n"), true, "g1")
	err = o.Run(ctx)
	e.record(out.String(), errOut.String(), fmt.Sprint(err))
	if err == nil || !strings.Contains(err.Error(), "not confirmed") || !strings.Contains(out.String(), "[y/N]") {
		t.Fatalf("declined: %v\n%s", err, out.String())
	}
	// Dry run.
	o, out, errOut = e.seedOptions(strings.NewReader(""), false, "g1")
	o.DryRun, o.Output = "client", "json"
	err = o.Run(ctx)
	e.record(out.String(), errOut.String())
	if err != nil || !strings.Contains(errOut.String(), "(dry run)") || !strings.Contains(out.String(), `"dryRun": "client"`) {
		t.Fatalf("dry run: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	// A named source that is not a member.
	o, out, errOut = e.seedOptions(strings.NewReader(""), false, "g1")
	o.Yes, o.Member = true, "etcd-7"
	err = o.Run(ctx)
	e.record(out.String(), errOut.String(), fmt.Sprint(err))
	if codeOf(err) != ExitRefused || !strings.Contains(err.Error(), "member_not_found") {
		t.Fatalf("unknown member: exit %d: %v", codeOf(err), err)
	}
	// Another action holds the lock: exit 7.
	lock, err := actions.AcquireLock(ctx, e.cs, e.ns, "etcd", actions.LockOptions{Identity: "hactl/elsewhere/1/abcd", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	o, out, errOut = e.seedOptions(strings.NewReader(""), false, "g1")
	o.Yes = true
	err = o.Run(ctx)
	e.record(out.String(), errOut.String(), fmt.Sprint(err))
	if codeOf(err) != ExitLockHeld {
		t.Fatalf("lock held: exit %d: %v", codeOf(err), err)
	}
	_ = lock.Release(ctx)
	if n := published(); n != 0 {
		t.Fatalf("%d generations in the store after refusals", n)
	}
	if n := len(e.ledger().Entries); n != 0 {
		t.Fatalf("refusals wrote %d ledger entries", n)
	}
	// No store configured: a usage error naming the annotation.
	sts, _ := e.cs.AppsV1().StatefulSets(e.ns).Get(ctx, "etcd", metav1.GetOptions{})
	delete(sts.Annotations, artifact.AnnotationStore)
	if _, err := e.cs.AppsV1().StatefulSets(e.ns).Update(ctx, sts, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	o, _, _ = e.seedOptions(strings.NewReader(""), false, "g1")
	o.Yes = true
	err = o.Run(ctx)
	if codeOf(err) != ExitUsage || !strings.Contains(err.Error(), artifact.AnnotationStore) {
		t.Fatalf("no store: exit %d: %v", codeOf(err), err)
	}
	// A Secret without the keys: the error names the keys, not values.
	_, err = e.cs.CoreV1().Secrets(e.ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "half"},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": e.s3.AccessKey}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o, out, errOut = e.seedOptions(strings.NewReader(""), false, "g1")
	o.Yes, o.store = true, storeFlags{URL: e.s3.URL(e.bucket, "etcd"), Secret: "half"}
	err = o.Run(ctx)
	e.record(out.String(), errOut.String(), fmt.Sprint(err))
	if err == nil || !strings.Contains(err.Error(), "AWS_SECRET_ACCESS_KEY") {
		t.Fatalf("half a secret: %v", err)
	}
	e.assertNoCredentials()
}

func TestSeedUsageErrors(t *testing.T) {
	testenv.SkipShort(t)
	for _, args := range [][]string{
		{"seed"}, {"seed", "c"}, {"seed", "c", "--generation", "Bad/Name"}, {"seed", "c", "d", "--generation", "g"},
		{"seed", "c", "--generation", "g", "--dry-run=server"}, {"seed", "c", "--generation", "g", "-o", "table"},
		{"generations"}, {"generations", "list"}, {"generations", "show", "c"}, {"generations", "verify", "c", "../x"},
		{"generations", "gc", "c", "--keep", "-1"}, {"generations", "gc", "c", "--dry-run=server"},
		{"agent"}, {"agent", "restore"}, {"agent", "restore", "--store", "file:///x", "--generation", "g"},
		{"agent", "restore", "--store", "file:///x", "--generation", "g", "--data-dir", "/x", "-o", "yaml"},
	} {
		out, errOut, code := run(t, args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d\n%s%s", args, code, ExitUsage, out, errOut)
		}
	}
}

func TestSeedHelpDocumentsExitCodesAndExamples(t *testing.T) {
	for _, args := range [][]string{
		{"seed"}, {"generations"}, {"generations", "list"}, {"generations", "show"}, {"generations", "verify"},
		{"generations", "gc"}, {"agent", "restore"},
	} {
		var out bytes.Buffer
		code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, append(args, "--help"))
		if code != 0 {
			t.Fatalf("%v --help: exit %d", args, code)
		}
		text := out.String()
		wants := []string{"Examples:", "Exit codes:"}
		if args[0] == "generations" && len(args) == 1 {
			wants = []string{"list", "verify", "gc"}
		}
		for _, want := range wants {
			if !strings.Contains(text, want) {
				t.Errorf("%v --help lacks %q", args, want)
			}
		}
	}
}

// TestHelperProcess is not a test: it is this binary re-executed to run
// kubectl-hactl code in a process of its own (seed with the test's
// loopback dialer, or any command line), so that a test can kill it.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envHelper)
	if mode == "" {
		t.Skip("helper process only")
	}
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: os.Stdout, ErrOut: os.Stderr}
	args := []string{}
	for i, a := range os.Args {
		if a == "--" {
			args = os.Args[i+1:]
		}
	}
	switch mode {
	case "cli":
		os.Exit(Run(streams, args))
	case "seed":
		os.Exit(helperSeed(streams))
	}
	os.Exit(99)
}

func helperSeed(streams genericiooptions.IOStreams) int {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(envKubeconfig))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 98
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 98
	}
	addrs := map[string]string{}
	if err := json.Unmarshal([]byte(os.Getenv(envAddrs)), &addrs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 98
	}
	e := &cliEnv{addrs: addrs}
	o := NewSeedOptions(nil, streams)
	o.Cluster, o.Namespace, o.Generation = "etcd", os.Getenv(envNamespace), os.Getenv(envGenArg)
	o.client, o.dial, o.identity, o.Yes = cs, e.dial, actions.NewIdentity(), true
	o.Capture = string(actions.CapturePortForward) // no kubelet here
	return codeOf(o.Run(context.Background()))
}

// helper starts this test binary as a helper process.
func helper(t *testing.T, mode string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "-test.short", "--"}, args...)...)
	cmd.Env = append(append(os.Environ(), envHelper+"="+mode), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}

// Killing seed mid-upload leaves no published generation; running it again
// resumes the same ledger entry, takes the dead holder's lock over and
// publishes the generation exactly once.
func TestSeedKilledMidUploadThenRerun(t *testing.T) {
	e := newSeedEnv(t)
	e.fill(10_000)
	ctx := context.Background()
	th := storetest.NewThrottle()
	proxyURL := th.Proxy(t, e.s3.Endpoint)
	e.setStore(strings.Replace(e.s3.URL(e.bucket, "etcd"), e.s3.Endpoint, proxyURL, 1))

	addrs, _ := json.Marshal(e.addrs)
	cmd, out := helper(t, "seed", []string{envKubeconfig + "=" + cp.AdminKubeconfig, envNamespace + "=" + e.ns,
		envAddrs + "=" + string(addrs), envGenArg + "=g-killed"})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-th.Started():
	case err := <-exited:
		t.Fatalf("seed finished before the upload was under way (%v):\n%s", err, out.String())
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the upload never started:\n%s", out.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	e.record(out.String())
	t.Logf("killed seed after %d uploaded bytes", th.Seen.Load())

	s := e.store()
	if _, err := s.ReadManifest(ctx, "g-killed"); !errors.Is(err, artifact.ErrNoManifest) {
		t.Fatalf("after the kill: %v, want no manifest", err)
	}
	entries, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if en.Published() {
			t.Fatalf("published after the kill: %s", en.Generation)
		}
	}
	led := e.ledger()
	if len(led.Entries) != 1 || led.Entries[0].State != model.EntryInProgress || led.Entries[0].Generation != "g-killed" {
		t.Fatalf("ledger after the kill: %+v", led.Entries)
	}
	killedEntry := led.Entries[0].ID

	// Again, at full speed.
	th.Slow.Store(false)
	o, sout, serr := e.seedOptions(strings.NewReader(""), false, "g-killed")
	o.Yes, o.Output = true, "json"
	err = o.Run(ctx)
	e.record(sout.String(), serr.String())
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, serr.String())
	}
	var doc seedDoc
	if err := json.Unmarshal(sout.Bytes(), &doc); err != nil || doc.Result != "done" || doc.Already {
		t.Fatalf("rerun receipt: %v %+v", err, doc)
	}
	if doc.EntryID != killedEntry {
		t.Fatalf("the rerun started entry %s instead of resuming %s", doc.EntryID, killedEntry)
	}
	if !strings.Contains(serr.String(), "took the lock over") {
		t.Errorf("the takeover of the dead holder's lock is not reported:\n%s", serr.String())
	}
	if _, err := s.Verify(ctx, "g-killed", artifact.Expect{}, nil); err != nil {
		t.Fatal(err)
	}
	entries, _ = s.List(ctx)
	n := 0
	for _, en := range entries {
		if en.Published() {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d published generations, want exactly 1", n)
	}
	led = e.ledger()
	if len(led.Entries) != 1 || led.Entries[0].State != model.EntryDone {
		t.Fatalf("ledger after the rerun: %+v", led.Entries)
	}
	e.assertNoCredentials()
}

// The acceptance path: a generation taken with `seed` from a cluster
// holding 10k keys is restored by `agent restore` (a process of its own,
// configured like an init container: etcd's environment, credentials in
// the environment) into every member of another cluster, which then serves
// exactly those keys on every member. A tampered generation is refused
// before the data directory changes.
func TestSeedThenAgentRestore10kKeysOnEveryMember(t *testing.T) {
	e := newSeedEnv(t)
	const keys = 10_000
	e.fill(keys)
	ctx := context.Background()
	o, out, errOut := e.seedOptions(strings.NewReader(""), false, "g-10k")
	o.Yes = true
	err := o.Run(ctx)
	e.record(out.String(), errOut.String())
	if err != nil {
		t.Fatalf("seed: %v\n%s", err, errOut.String())
	}
	src, err := e.store().ReadManifest(ctx, "g-10k")
	if err != nil {
		t.Fatal(err)
	}

	dst := testenv.EtcdCluster(t, etcdcluster.Options{Members: 3})
	for _, m := range dst.Members {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	storeURL := e.s3.URL(e.bucket, "etcd")
	agent := func(m memberInfo, extra ...string) (string, int) {
		args := append([]string{"agent", "restore", "--store", storeURL, "--generation", "g-10k", "--data-dir", m.dataDir,
			"--expect-cluster-id", src.Identity.ClusterID}, extra...)
		env := append(e.s3.Env(), "ETCD_NAME="+m.name, "ETCD_INITIAL_CLUSTER="+dst.InitialCluster(),
			"ETCD_INITIAL_ADVERTISE_PEER_URLS="+m.peerURL, "ETCD_INITIAL_CLUSTER_TOKEN=restored-"+dst.Token)
		cmd, out := helper(t, "cli", env, args...)
		err := cmd.Run()
		e.record(out.String())
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), code
	}

	// A tampered copy first: one flipped byte in the snapshot is refused
	// (exit 5) and the member's data directory is untouched.
	m0 := memberInfo{name: dst.Members[0].Name, dataDir: dst.Members[0].DataDir, peerURL: dst.Members[0].PeerURL}
	before := dirDigest(t, m0.dataDir)
	key := "etcd/g-10k/uploads/" + src.Upload + "/snapshot.db"
	orig := getS3(t, e.s3, e.bucket, key)
	bad := append([]byte(nil), orig...)
	bad[len(bad)/3] ^= 0x40
	putS3(t, e.s3, e.bucket, key, bad)
	text, code := agent(m0, "--replace")
	if code != ExitRefused || !strings.Contains(text, "checksum mismatch") {
		t.Fatalf("tampered generation: exit %d\n%s", code, text)
	}
	if dirDigest(t, m0.dataDir) != before {
		t.Fatal("the refused restore changed the data directory")
	}
	putS3(t, e.s3, e.bucket, key, orig)

	// Without --replace, a data directory holding other data is refused.
	if text, code := agent(m0); code != ExitRefused || !strings.Contains(text, "--replace") {
		t.Fatalf("occupied data dir without --replace: exit %d\n%s", code, text)
	}
	for _, m := range dst.Members {
		text, code := agent(memberInfo{name: m.Name, dataDir: m.DataDir, peerURL: m.PeerURL}, "--replace", "-o", "json")
		if code != 0 {
			t.Fatalf("agent restore %s: exit %d\n%s", m.Name, code, text)
		}
		var doc agentRestoreResult
		// The result document follows the agent's one-line progress
		// records (stderr) in the combined output.
		if err := json.Unmarshal([]byte(text[strings.Index(text, "{\n  \"apiVersion\""):]), &doc); err != nil || doc.Previous == "" || doc.Keys == nil || *doc.Keys != keys {
			t.Fatalf("agent restore %s -o json: %v\n%s", m.Name, err, text)
		}
		// Run again, as an init container does on every start: a no-op.
		if text, code := agent(memberInfo{name: m.Name, dataDir: m.DataDir, peerURL: m.PeerURL}); code != 0 || !strings.Contains(text, "already holds") {
			t.Fatalf("second run on %s: exit %d\n%s", m.Name, code, text)
		}
	}
	for _, m := range dst.Members {
		if err := m.Restart(ctx, etcdcluster.MemberArgs{NoWait: true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range dst.Members {
		if err := m.WaitServing(ctx); err != nil {
			t.Fatal(err)
		}
		cli, err := m.Client()
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := cli.Get(rctx, "/acceptance/", clientv3.WithPrefix(), clientv3.WithSerializable())
		all, aerr := cli.Get(rctx, "", clientv3.WithPrefix(), clientv3.WithSerializable(), clientv3.WithCountOnly())
		cancel()
		cli.Close()
		if err != nil || aerr != nil {
			t.Fatalf("%s: %v %v", m.Name, err, aerr)
		}
		if len(resp.Kvs) != keys || all.Count != keys {
			t.Fatalf("%s serves %d acceptance keys and %d keys in all, want exactly %d", m.Name, len(resp.Kvs), all.Count, keys)
		}
		for i, kv := range resp.Kvs {
			if string(kv.Key) != seedKey(i) || string(kv.Value) != seedValue(i) {
				t.Fatalf("%s: key %d is %q=%q", m.Name, i, kv.Key, kv.Value)
			}
		}
	}
	e.assertNoCredentials()
}

type memberInfo struct{ name, dataDir, peerURL string }

// dirDigest describes dir (every path, mode, size and modification time
// under it) and the names beside it (a staging or previous directory left
// behind would show).
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	siblings, err := os.ReadDir(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range siblings {
		fmt.Fprintf(&b, "beside: %s\n", s.Name())
	}
	return b.String()
}

func getS3(t *testing.T, srv *storetest.Server, bucket, key string) []byte {
	t.Helper()
	out, err := srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func putS3(t *testing.T, srv *storetest.Server, bucket, key string, b []byte) {
	t.Helper()
	if _, err := srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b)}); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := newProgressBar(&b, false, "x", 10)
	p.update(5)
	p.finish()
	if b.Len() != 0 {
		t.Fatalf("a progress bar that is off drew %q", b.String())
	}
	t.Setenv("NO_COLOR", "1")
	p = newProgressBar(&b, true, "snapshot", 100)
	p.update(50)
	p.finish()
	if s := b.String(); !strings.Contains(s, "snapshot") || !strings.Contains(s, "50 B / 100 B (50%)") || strings.Contains(s, "\x1b[38") || !strings.HasSuffix(s, "\n") {
		t.Fatalf("progress bar with NO_COLOR: %q", s)
	}
}

// The TUI's seed runs the plan its dialog showed: when the source member
// it named stops answering between the dialog and the run, the seed stops
// with a fence conflict and publishes nothing, as replace does; it never
// picks another source on its own.
func TestTUISeedRunsTheConfirmedPlan(t *testing.T) {
	e := newSeedEnv(t)
	e.fill(100)
	ctx := context.Background()
	st := NewStatusOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	st.client, st.dial, st.ProbeTimeout = e.cs, e.dial, 2*time.Second
	o := &TUIOptions{status: st, identity: actions.NewIdentity()}
	a := tui.ExecutorActions(o.executor(st))
	req := tui.Request{Namespace: e.ns, Cluster: "etcd",
		Intent: model.Intent{Action: model.ActionSeed, Options: model.ActionOptions{Generation: "g-confirmed"}}}
	d, err := a.Decide(ctx, req)
	if err != nil || d.Verb != model.VerbProceed {
		t.Fatalf("decide: %v\n%s", err, strings.Join(classify.Describe(d), "\n"))
	}
	source := sourceOf(d)
	var m *etcdcluster.Member
	for _, x := range e.etcd.Members {
		if x.Name == source {
			m = x
		}
	}
	if m == nil {
		t.Fatalf("the plan's source %q is no member", source)
	}
	// The world changes after the dialog: the confirmed source stops.
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	var receipts []model.Receipt
	err = a.Execute(ctx, req, d, func(r model.Receipt) { receipts = append(receipts, r) })
	var fc *actions.FenceConflictError
	if !errors.As(err, &fc) {
		t.Fatalf("the seed went on without the confirmed source %s: %v (receipts %+v)", source, err, receipts)
	}
	entries, err := e.store().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if en.Published() {
			t.Fatalf("generation %s was published from another source than the confirmed %s", en.Generation, source)
		}
	}
}

// TestTUISeedOfAPublishedGenerationRecordsNothing: a seed started from
// the TUI (the executor resolving the store itself) of a generation this
// cluster already published is a no-op: no ledger entry, no Event, no
// "uploaded" receipt; and a seed has no server dry run.
func TestTUISeedOfAPublishedGenerationRecordsNothing(t *testing.T) {
	e := newSeedEnv(t)
	e.fill(50)
	ctx := context.Background()
	o, out, errOut := e.seedOptions(strings.NewReader(""), false, "g1")
	o.Yes = true
	if err := o.Run(ctx); err != nil {
		t.Fatalf("seed: %v\n%s%s", err, out, errOut)
	}
	entries, events := len(e.ledger().Entries), len(e.events("SeedPublished"))+len(e.events("SeedStarted"))

	st := NewStatusOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	st.client, st.dial, st.ProbeTimeout = e.cs, e.dial, 2*time.Second
	x := (&TUIOptions{status: st, identity: actions.NewIdentity()}).executor(st)
	a := tui.ExecutorActions(x)
	req := tui.Request{Namespace: e.ns, Cluster: "etcd", Intent: model.Intent{Action: model.ActionSeed, Options: model.ActionOptions{Generation: "g1"}}}
	d, err := a.Decide(ctx, req)
	if err != nil || d.Verb != model.VerbProceed {
		t.Fatalf("decide: %v\n%s", err, strings.Join(classify.Describe(d), "\n"))
	}
	var receipts []model.Receipt
	if err := a.Execute(ctx, req, d, func(r model.Receipt) { receipts = append(receipts, r) }); err != nil {
		t.Fatalf("seed of a published generation: %v", err)
	}
	if len(receipts) != 0 {
		t.Errorf("receipts for a no-op: %+v", receipts)
	}
	if n := len(e.ledger().Entries); n != entries {
		t.Errorf("the no-op wrote the ledger: %d entries, was %d", n, entries)
	}
	if n := len(e.events("SeedPublished")) + len(e.events("SeedStarted")); n != events {
		t.Errorf("the no-op recorded Events: %d, was %d", n, events)
	}

	d.Intent.Options.Generation = "g2"
	_, err = x.Execute(ctx, d, actions.ExecOptions{DryRun: actions.DryRunServer})
	if !errors.Is(err, actions.ErrUnsupported) {
		t.Fatalf("a server dry run of a seed: %v, want ErrUnsupported", err)
	}
	if _, err := e.store().ReadManifest(ctx, "g2"); !errors.Is(err, artifact.ErrNoManifest) {
		t.Fatalf("the server dry run published g2: %v", err)
	}
}

// TestExecutorPinsARestoreToTheStoredGeneration: a restore intent that
// names only a generation (the TUI's) is decided pinned to that
// generation as the cluster's store holds it: its digest, cluster ID and
// revision, the store's URL and the default agent image.
func TestExecutorPinsARestoreToTheStoredGeneration(t *testing.T) {
	e := newSeedEnv(t)
	e.fill(20)
	ctx := context.Background()
	o, out, errOut := e.seedOptions(strings.NewReader(""), false, "g1")
	o.Yes = true
	if err := o.Run(ctx); err != nil {
		t.Fatalf("seed: %v\n%s%s", err, out, errOut)
	}
	m, err := e.store().ReadManifest(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	st := NewStatusOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	st.client, st.dial, st.ProbeTimeout = e.cs, e.dial, 2*time.Second
	x := (&TUIOptions{status: st, identity: actions.NewIdentity()}).executor(st)
	d, _, _, err := x.Decide(ctx, e.ns, "etcd", model.Intent{Action: model.ActionRestore, Options: model.ActionOptions{Generation: "g1"}})
	if err != nil {
		t.Fatal(err)
	}
	opts := d.Intent.Options
	if opts.Source == nil || opts.Source.Digest != m.Digest || opts.Source.ClusterID != m.Identity.ClusterID || opts.Source.Revision != m.Identity.Revision {
		t.Fatalf("the restore is not pinned to the stored generation: %+v, manifest %s", opts.Source, m.Digest)
	}
	if opts.AgentImage != actions.DefaultAgentImage() || opts.SeedStore == "" {
		t.Fatalf("agent image %q, store %q", opts.AgentImage, opts.SeedStore)
	}
	if _, _, _, err := x.Decide(ctx, e.ns, "etcd", model.Intent{Action: model.ActionRestore, Options: model.ActionOptions{Generation: "nope"}}); !errors.Is(err, artifact.ErrNoManifest) {
		t.Fatalf("a generation the store does not hold: %v, want ErrNoManifest", err)
	}
}
