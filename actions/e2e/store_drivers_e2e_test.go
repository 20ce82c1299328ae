package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/storetest/emulators"
	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/internal/testbins"
	"github.com/hactl-dev/hactl/model"
)

// driverStore is an object store emulator as a cluster's seed store.
type driverStore struct {
	name string
	// url is the store URL (bucket or container, prefix, emulator
	// parameters); secret the store Secret's data.
	url    string
	secret map[string]string
	// secrets are the values that must appear nowhere.
	secrets []string
	// used reports what shows the emulator served authenticated requests.
	used func() string
	// tokens, when set, counts the access tokens the emulator handed out
	// for the Secret's key: each restore pod, a process of its own, must
	// get one.
	tokens func() int64
}

// TestGCSStoreEndToEnd: seed, list, verify and restore through the
// plugin with a gs:// store (fake-gcs-server behind an OAuth2 gate) whose
// service-account key comes from the Secret the StatefulSet names.
func TestGCSStoreEndToEnd(t *testing.T) {
	skipShort(t)
	g, err := emulators.StartGCS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Stop)
	bucket := g.CreateBucket("")
	storeEndToEnd(t, driverStore{
		name: "gcs", url: g.URL(bucket, "e2e/"+staticCluster), secret: g.SecretData(), secrets: g.Secrets(),
		used: func() string {
			return fmt.Sprintf("%d access tokens for the key, %d requests or assertions refused", g.Tokens.Load(), g.Refused.Load())
		},
		tokens: g.Tokens.Load,
	})
	if g.Tokens.Load() == 0 {
		t.Error("no access token was ever handed out: the key was not used")
	}
}

// TestAzureStoreEndToEnd: the same with an azblob:// store (Azurite,
// local-emulator URL parameters) whose account and shared key come from
// the Secret.
func TestAzureStoreEndToEnd(t *testing.T) {
	skipShort(t)
	bin, err := testbins.Dir()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := emulators.StartAzurite(ctx, bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop() })
	c, err := a.CreateContainer(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	storeEndToEnd(t, driverStore{
		name: "azure", url: a.URL(c, "e2e/"+staticCluster), secret: a.SecretData(), secrets: a.Secrets(),
		used: func() string { return "Azurite enforces shared-key authentication" },
	})
}

// storeEndToEnd configures st as the static cluster's store as an
// operator would (a Secret, the StatefulSet's two annotations), writes a
// key, seeds a generation, lists and verifies it, overwrites the key,
// restores the generation (--force: the cluster keeps quorum, which keeps
// the test short) and reads the key's value from before the seed back
// from every member on its own. No output of the plugin, Event, ledger
// object (ConfigMap, Lease) or restore pod log holds a credential. The
// StatefulSet's annotations are put back at the end.
func storeEndToEnd(t *testing.T, st driverStore) {
	cluster := staticCluster
	ctx := context.Background()
	start := time.Now()
	s.WaitFailoverReady(t, cluster)
	restoreAnnotations(t, cluster)

	secretName := "seed-store-" + st.name
	if _, err := s.KC.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: namespace}, StringData: st.secret,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.KC.CoreV1().Secrets(namespace).Delete(context.Background(), secretName, metav1.DeleteOptions{})
	})
	annotate(t, cluster, map[string]any{artifact.AnnotationStore: st.url, artifact.AnnotationStoreSecret: secretName})

	var outputs strings.Builder
	hactl := func(args ...string) e2esuite.Result {
		t.Helper()
		r := s.Hactl(t, args...)
		outputs.WriteString(r.Stdout + "\n" + r.Stderr + "\n")
		return r
	}
	key := "/hactl-e2e/store-driver/" + st.name
	before := fmt.Sprintf("before-seed-%d", time.Now().UnixNano())
	put(t, cluster, key, before)

	gen := st.name + "-e2e-1"
	r := hactl("seed", cluster, "--generation", gen, "--yes", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("seed: %s", r)
	}
	var rc struct {
		Result   string             `json:"result"`
		Manifest *artifact.Manifest `json:"manifest"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rc); err != nil || rc.Result != "done" || rc.Manifest == nil {
		t.Fatalf("seed receipt: %v\n%s", err, r)
	}
	// The store Secret reaches a capture pod through envFrom: the
	// snapshot went from the member to the store in that pod.
	if !strings.Contains(r.Stderr, "in capture pod hactl-capture-") || !strings.Contains(rc.Manifest.CreatedBy, "capture pod") {
		t.Fatalf("seed did not capture in a pod:\n%s", r)
	}
	seeded := time.Now()
	if r := hactl("generations", "list", cluster, "-o", "wide"); r.Code != 0 || !strings.Contains(r.Stdout, gen) || !strings.Contains(r.Stdout, "published") {
		t.Fatalf("generations list: %s", r)
	}
	if r := hactl("generations", "verify", cluster, gen, "--expect-cluster-id", rc.Manifest.Identity.ClusterID); r.Code != 0 || !strings.Contains(r.Stdout, "verified") {
		t.Fatalf("generations verify: %s", r)
	}
	listed := time.Now()

	put(t, cluster, key, "written after the seed: the restore loses it")
	var tokens int64
	if st.tokens != nil {
		tokens = st.tokens()
	}
	r = hactl("restore", cluster, "--generation", gen, "--force", "--yes", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("restore: %s", r)
	}
	ran := 0
	for _, rc := range e2esuite.Receipts(t, r).Receipts {
		if rc.Step == model.StepRunRestore && (rc.Outcome == model.OutcomeDone || rc.Outcome == model.OutcomeAlready) {
			ran++
		}
	}
	if ran != 3 {
		t.Fatalf("%d run-restore receipts, want 3\n%s", ran, r)
	}
	if st.tokens != nil && st.tokens()-tokens < 4 {
		t.Errorf("%d access tokens handed out during the restore, want 4 or more (the plugin and each of the 3 restore pods)", st.tokens()-tokens)
	}
	for i := 0; i < 3; i++ {
		pod := fmt.Sprintf("%s-%d", cluster, i)
		poll.Until(t, 2*time.Minute, pod+" to serve the key as seeded", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := s.OpenMember(ctx, pod, 10*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			resp, err := c.KV().Get(ctx, key, clientv3.WithSerializable())
			if err != nil {
				return err
			}
			if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != before {
				return fmt.Errorf("%s serves %v", pod, resp.Kvs)
			}
			return nil
		}, poll.Every(time.Second))
	}
	restored := time.Now()
	s.WaitFailoverReady(t, cluster)

	// Everything hactl wrote or printed, and the restore pods' logs.
	for _, what := range [][]string{{"get", "events", "-o", "yaml"}, {"get", "configmap", "hactl-" + cluster, "-o", "yaml"}, {"get", "lease", "-o", "yaml"}} {
		r := s.Run(t, time.Minute, append(what, "-n", namespace)...)
		if r.Code != 0 {
			t.Fatalf("kubectl %v: %s", what, r)
		}
		outputs.WriteString(r.Stdout)
	}
	logs := restorePodLogs(t, start)
	if len(logs) < 3 {
		t.Fatalf("%d restore pod logs written during the test, want 3 or more", len(logs))
	}
	for p, l := range logs {
		if !strings.Contains(l, gen) {
			t.Errorf("restore pod log %s does not mention generation %s:\n%s", p, gen, l)
		}
		outputs.WriteString(l)
	}
	all := outputs.String()
	for _, want := range []string{"SeedPublished", gen, "hactl.dev/cluster", "verifying"} {
		if !strings.Contains(all, want) {
			t.Errorf("the collected output lacks %q: the check would prove little", want)
		}
	}
	for _, v := range st.secrets {
		if strings.Contains(all, v) {
			t.Errorf("a credential of the %s store appears in an output, event, ledger object or restore pod log", st.name)
		}
	}
	t.Logf("%s: seed %s, list+verify %s, restore+check %s; %d bytes of output checked; %s", st.name,
		seeded.Sub(start).Round(time.Second), listed.Sub(seeded).Round(time.Second), restored.Sub(listed).Round(time.Second), len(all), st.used())
}

// restoreAnnotations puts the StatefulSet's store annotations back as
// they are now when the test ends.
func restoreAnnotations(t *testing.T, cluster string) {
	t.Helper()
	sts, err := s.KC.AppsV1().StatefulSets(namespace).Get(context.Background(), cluster, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	was := map[string]any{}
	for _, k := range []string{artifact.AnnotationStore, artifact.AnnotationStoreSecret} {
		if v, ok := sts.Annotations[k]; ok {
			was[k] = v
		} else {
			was[k] = nil
		}
	}
	t.Cleanup(func() { annotate(t, cluster, was) })
}

// annotate merge-patches the StatefulSet's annotations (nil removes one).
func annotate(t *testing.T, cluster string, ann map[string]any) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if _, err := s.KC.AppsV1().StatefulSets(namespace).Patch(context.Background(), cluster, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// put writes key=value through member 0.
func put(t *testing.T, cluster, key, value string) {
	t.Helper()
	poll.Until(t, time.Minute, "writing "+key, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := s.OpenMember(ctx, cluster+"-0", 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Put(ctx, key, value)
		return err
	}, poll.Every(500*time.Millisecond))
}

// restorePodLogs reads the logs the sandbox's runner kept of hactl's
// restore pods (kept after the pods are deleted) written since since.
func restorePodLogs(t *testing.T, since time.Time) map[string]string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(s.SB.Dir, "runner", "logs", "pods", namespace+"_"+actions.RestorePodName(staticCluster)+"*"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*", "*.log"))
		for _, f := range files {
			fi, err := os.Stat(f)
			if err != nil || fi.ModTime().Before(since) {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[f] = string(b)
		}
	}
	return out
}
