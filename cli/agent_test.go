package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/storetest"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	patroniengine "github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
)

// restorePodFixture is a StatefulSet and its facts as a restore decision
// sees them (data dir inside the volume, literal initial cluster).
func restorePodFixture() (*appsv1.StatefulSet, model.ClusterFacts) {
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "etcd", UID: "uid-1"},
		Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "etcd", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
		}}}}},
	}
	cl := model.ClusterFacts{Namespace: "db", Name: "etcd", Engine: etcdengine.Name, Template: model.TemplateFacts{
		Container: "etcd", DataDir: "/var/lib/etcd/data", DataVolume: "data", DataMount: "/var/lib/etcd",
		InitialCluster: []model.InitialClusterEntry{
			{Name: "etcd-0", PeerURL: "http://etcd-0.etcd:2380"}, {Name: "etcd-1", PeerURL: "http://etcd-1.etcd:2380"},
		},
		InitialClusterToken: "etcd",
	}}
	return sts, cl
}

// publishFiles publishes files as generation g (plain files: a patroni
// generation needs no materializer, so the agent restores them as they
// are).
func publishFiles(t *testing.T, s *artifact.Store, g string, revision int64, files map[string]string) *artifact.Manifest {
	t.Helper()
	bs := map[string][]byte{}
	for p, b := range files {
		bs[p] = []byte(b)
	}
	storetest.Publish(t, s, artifact.Identity{Generation: g, Engine: patroniengine.Name, EngineVersion: "16",
		ClusterID: "7348a1f3c2b0de55", SourceMemberID: "etcd-0", RaftTerm: 1, RaftIndex: 10, Revision: revision},
		artifact.Source{Namespace: "db", Cluster: "etcd", Member: "etcd-0"}, bs)
	m, err := s.ReadManifest(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// runAgent runs `kubectl-hactl agent restore args...` in a process of its
// own (as the restore pod does) and returns its output and exit code.
func runAgent(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd, out := helper(t, "cli", env, append([]string{"agent", "restore"}, args...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("agent restore did not end within 2m\n%s", out)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), 0
}

// withDataDir returns the restore pod's arguments with --data-dir
// pointing at dir (the pod's path is inside its volume).
func withDataDir(t *testing.T, args []string, dir string) []string {
	t.Helper()
	out := append([]string(nil), args...)
	found := false
	for i, a := range out {
		if strings.HasPrefix(a, "--data-dir=") {
			out[i], found = "--data-dir="+dir, true
		}
	}
	if !found {
		t.Fatalf("restore pod args have no --data-dir: %q", args)
	}
	return out
}

// A restore pod is pinned to the generation as the confirmed decision
// read it: when the generation is deleted and published again under the
// same ID (other data) between the confirm and the pod, the pod's agent
// refuses (exit 5, a message naming both digests) and the member's data
// directory is untouched; an agent given the same arguments without the
// pins would restore the other data.
func TestRestorePodRefusesRepublishedGeneration(t *testing.T) {
	testenv.SkipShort(t)
	srv := startS3(t)
	ctx := context.Background()
	bucket, err := srv.CreateBucket(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL(bucket, "etcd")
	s, err := artifact.OpenStore(ctx, url, artifact.Options{Credentials: srv.Credentials()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	confirmed := publishFiles(t, s, "g1", 4000, map[string]string{"member/data": "the data the operator confirmed"})
	// What prepareRestore keeps for the decision, and the pod it makes.
	o := model.ActionOptions{Generation: "g1", SeedStore: url, AgentImage: "hactl:test", StoreSecret: "seed-store",
		Source: &model.GenerationFacts{Generation: "g1", Engine: confirmed.Identity.Engine, ClusterID: confirmed.Identity.ClusterID,
			Revision: confirmed.Identity.Revision, CapturedAt: confirmed.CreatedAt, Digest: confirmed.Digest}}
	sts, cl := restorePodFixture()
	pod, err := actions.RestorePod(sts, cl, o, model.Step{Kind: model.StepRunRestore, Member: "etcd-0", PeerURLs: []string{"http://etcd-0.etcd:2380"}}, "restore-entry-1")
	if err != nil {
		t.Fatal(err)
	}
	args := pod.Spec.Containers[0].Args

	// Deleted and published again under the same ID, with other data.
	if err := s.Delete(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	now := publishFiles(t, s, "g1", 4000, map[string]string{"member/data": "other data under the same generation ID"})
	if now.Digest == confirmed.Digest {
		t.Fatal("the republished generation has the confirmed digest: the test proves nothing")
	}

	member := func() string {
		dir := filepath.Join(t.TempDir(), "volume", "data")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "member-data"), []byte("the member's own data"), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir := member()
	before := dirDigest(t, dir)
	text, code := runAgent(t, srv.Env(), withDataDir(t, args, dir)...)
	if code != ExitRefused || !strings.Contains(text, confirmed.Digest) || !strings.Contains(text, now.Digest) || !strings.Contains(text, "published again") {
		t.Fatalf("restore pod's agent on the republished generation: exit %d, want %d naming both digests\n%s", code, ExitRefused, text)
	}
	t.Logf("the pinned agent refused:\n%s", text[max(0, strings.LastIndex(text, "error:")):])
	if !strings.Contains(text, "is unchanged") {
		t.Fatalf("the refusal does not say the data directory is unchanged:\n%s", text)
	}
	if dirDigest(t, dir) != before {
		t.Fatal("the refused restore changed the data directory or what is beside it")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "member-data")); err != nil || string(b) != "the member's own data" {
		t.Fatalf("the member's data after the refusal: %q %v", b, err)
	}

	// The same arguments without the pins restore the other data: the
	// refusal above is the pins' doing.
	var unpinned []string
	for _, a := range args {
		if !strings.HasPrefix(a, "--expect-") {
			unpinned = append(unpinned, a)
		}
	}
	other := member()
	if text, code := runAgent(t, srv.Env(), withDataDir(t, unpinned, other)...); code != 0 {
		t.Fatalf("unpinned agent: exit %d\n%s", code, text)
	}
	if b, err := os.ReadFile(filepath.Join(other, "member", "data")); err != nil || !bytes.Equal(b, []byte("other data under the same generation ID")) {
		t.Fatalf("unpinned agent restored %q %v", b, err)
	}
}

// The agent's --timeout bounds the whole restore: expired, it exits 1
// saying so and the data directory is unchanged. Its default fits within
// the restore pods' activeDeadlineSeconds; the pins and --keep-previous
// are checked as flags.
func TestAgentRestoreTimeoutAndFlags(t *testing.T) {
	ctx := context.Background()
	storeDir := t.TempDir()
	s, err := artifact.OpenStore(ctx, "file://"+storeDir, artifact.Options{CreateDir: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	publishFiles(t, s, "g1", 10, map[string]string{"member/data": "generation data"})
	dir := filepath.Join(t.TempDir(), "volume", "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "member-data"), []byte("the member's own data"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := dirDigest(t, dir)
	run := func(extra ...string) (string, int) {
		var out, errOut bytes.Buffer
		code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, append([]string{"agent", "restore", "--store", "file://" + storeDir,
			"--generation", "g1", "--data-dir", dir, "--replace"}, extra...))
		return out.String() + errOut.String(), code
	}

	text, code := run("--timeout", "1ns")
	if code != ExitError || !strings.Contains(text, "took longer than --timeout 1ns") {
		t.Fatalf("--timeout 1ns: exit %d, want %d saying so\n%s", code, ExitError, text)
	}
	if dirDigest(t, dir) != before {
		t.Fatal("the timed-out restore changed the data directory or what is beside it")
	}
	if defaultAgentTimeout <= 0 || defaultAgentTimeout >= actions.RestorePodDeadline {
		t.Fatalf("default --timeout %s does not fit within the restore pods' deadline %s", defaultAgentTimeout, actions.RestorePodDeadline)
	}
	for _, bad := range [][]string{
		{"--keep-previous", "0"}, {"--expect-digest", "9d30ef82"}, {"--expect-revision", "-1"}, {"--timeout", "-1s"},
	} {
		if text, code := run(bad...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", bad, code, ExitUsage, text)
		}
	}
	if dirDigest(t, dir) != before {
		t.Fatal("a usage error changed the data directory")
	}
}

// With -o json the agent writes its transfer progress to stderr as
// AgentProgress lines (what `kubectl hactl restore` reads from the
// restore pods' logs for its bar), the last one counting every byte, and
// keeps stdout to the one result document.
func TestAgentRestoreProgressLines(t *testing.T) {
	ctx := context.Background()
	storeDir := t.TempDir()
	s, err := artifact.OpenStore(ctx, "file://"+storeDir, artifact.Options{CreateDir: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := publishFiles(t, s, "g1", 10, map[string]string{"member/data": strings.Repeat("generation data ", 4096)})
	dir := filepath.Join(t.TempDir(), "volume", "data")
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		[]string{"agent", "restore", "--store", "file://" + storeDir, "--generation", "g1", "--data-dir", dir, "-o", "json"})
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out.String())
	}
	if got := lastAgentProgress(errOut.Bytes()); got != m.TotalSize || m.TotalSize == 0 {
		t.Fatalf("last progress line counts %d bytes, want the generation's %d\nstderr:\n%s", got, m.TotalSize, errOut.String())
	}
}

func TestLastAgentProgress(t *testing.T) {
	log := `{"kind":"SeedRestoreProgress","bytes":10,"total":100}
some other line {"kind":"SeedRestoreProgress","bytes":99,"total":100}
{"kind":"SeedRestoreProgress","bytes":42,"total":100}
{"kind":"SeedRestore","bytes":77}
{"kind":"SeedRestoreProgress","bytes":`
	if got := lastAgentProgress([]byte(log)); got != 42 {
		t.Fatalf("lastAgentProgress = %d, want 42 (the last whole progress line)", got)
	}
	if got := lastAgentProgress(nil); got != 0 {
		t.Fatalf("empty log: %d, want 0", got)
	}
}
