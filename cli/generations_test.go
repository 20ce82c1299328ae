package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/storetest"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
)

// gcEnv is a fixture cluster (no members needed) with a store holding
// generations g1 (oldest) … g3 (newest), and an unfinished upload.
func gcEnv(t *testing.T) (*seedEnv, *artifact.Store) {
	t.Helper()
	testenv.SkipShort(t)
	e := &seedEnv{cliEnv: &cliEnv{t: t, cs: testenv.Clientset(t, cp.Admin), ns: testenv.Namespace(t, cp)}, s3: startS3(t)}
	fixtures.CreateCluster(t, e.cs, e.ns, fixtures.DefaultSpec("etcd"))
	ctx := context.Background()
	var err error
	if e.bucket, err = e.s3.CreateBucket(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().Secrets(e.ns).Create(ctx, secretFor(e), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.setStore(e.s3.URL(e.bucket, "etcd"))
	s := e.store()
	now := time.Now()
	for i, g := range []string{"g1", "g2", "g3"} {
		up, err := s.Begin(ctx, g, artifact.UploadOptions{Source: artifact.Source{Namespace: e.ns, Cluster: "etcd", Member: "etcd-0"}, Now: now.Add(time.Duration(i-3) * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		w, _ := up.Create(ctx, "snapshot.db")
		_, _ = w.Write([]byte(strings.Repeat(g, 1000)))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := up.Publish(ctx, artifact.Identity{Generation: g, Engine: etcdengine.Name, EngineVersion: "3.6.0", ClusterID: "c1", SourceMemberID: "m1", Revision: int64(10 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	up, _ := s.Begin(ctx, "g4", artifact.UploadOptions{})
	w, _ := up.Create(ctx, "snapshot.db")
	_, _ = w.Write([]byte("partial"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return e, s
}

func TestGenerationsListShowAndGC(t *testing.T) {
	e, s := gcEnv(t)
	ctx := context.Background()

	out, errOut, code := run(t, "-n", e.ns, "generations", "list", "etcd", "-o", "wide")
	e.record(out, errOut)
	if code != 0 {
		t.Fatalf("list: exit %d\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[1], "g4") || !strings.Contains(lines[1], "incomplete") || !strings.HasPrefix(lines[4], "g1") {
		t.Fatalf("list -o wide (newest first, the unfinished upload shown):\n%s", out)
	}
	out, _, code = run(t, "-n", e.ns, "generations", "show", "etcd", "g4")
	if code != 0 || !strings.Contains(out, "incomplete") || !strings.Contains(out, "did not finish") {
		t.Fatalf("show of an unfinished upload: exit %d\n%s", code, out)
	}
	_, errOut, code = run(t, "-n", e.ns, "generations", "verify", "etcd", "g4")
	if code != ExitRefused || !strings.Contains(errOut, "no_manifest") {
		t.Fatalf("verify of an unfinished upload: exit %d\n%s", code, errOut)
	}

	// g1 is named by an in-progress action.
	led := &actions.Ledger{Client: e.cs, Namespace: e.ns, Cluster: "etcd"}
	if _, err := led.Begin(ctx, model.LedgerEntry{ID: "seed.x.1", Action: model.ActionSeed, Holder: "hactl/elsewhere/1/x", Generation: "g1"}, nil, time.Now()); err != nil {
		t.Fatal(err)
	}

	// Not confirmed (no terminal answer): exit 5, nothing deleted.
	out, errOut, code = run(t, "-n", e.ns, "generations", "gc", "etcd", "--keep", "1", "--partial-age", "1ns")
	e.record(out, errOut)
	if code != ExitRefused || !strings.Contains(out, "Would delete") {
		t.Fatalf("gc without an answer: exit %d\n%s\n%s", code, out, errOut)
	}
	// Dry run: the plan, nothing deleted. The unfinished upload has no
	// manifest to say whose it is: kept, and the plan says so.
	out, errOut, code = run(t, "-n", e.ns, "generations", "gc", "etcd", "--keep", "1", "--partial-age", "1ns", "--dry-run")
	e.record(out, errOut)
	del, keep, _ := strings.Cut(out, "Keeping:")
	if code != 0 || strings.Contains(del, "upload") || !strings.Contains(keep, "upload") || !strings.Contains(keep, "no manifest says which cluster wrote it") || !strings.Contains(out, "--include-unowned") {
		t.Fatalf("dry run without --include-unowned: exit %d\n%s", code, out)
	}
	out, errOut, code = run(t, "-n", e.ns, "generations", "gc", "etcd", "--keep", "1", "--partial-age", "1ns", "--dry-run", "--include-unowned")
	e.record(out, errOut)
	del, keep, _ = strings.Cut(out, "Keeping:")
	if code != 0 || !strings.Contains(del, "(dry run)") || !strings.Contains(del, "generation g2") || !strings.Contains(del, "upload") ||
		strings.Contains(del, "generation g1") || !strings.Contains(keep, "generation g1") || !strings.Contains(keep, "referenced by a running action") {
		t.Fatalf("dry run: exit %d\n%s", code, out)
	}
	for _, g := range []string{"g1", "g2", "g3"} {
		if _, err := s.Verify(ctx, g, artifact.Expect{}, nil); err != nil {
			t.Fatalf("%s after a dry run: %v", g, err)
		}
	}
	// Another action holds the lock: exit 7.
	lock, err := actions.AcquireLock(ctx, e.cs, e.ns, "etcd", actions.LockOptions{Identity: "hactl/elsewhere/1/abcd", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code = run(t, "-n", e.ns, "generations", "gc", "etcd", "--keep", "1", "--partial-age", "1ns", "--yes")
	if code != ExitLockHeld {
		t.Fatalf("gc under a held lock: exit %d\n%s", code, errOut)
	}
	_ = lock.Release(ctx)

	out, errOut, code = run(t, "-n", e.ns, "generations", "gc", "etcd", "--keep", "1", "--partial-age", "1ns", "--yes", "--include-unowned", "-o", "json")
	e.record(out, errOut)
	if code != 0 {
		t.Fatalf("gc: exit %d\n%s", code, errOut)
	}
	var doc struct {
		Deleted []artifact.GCItem `json:"deleted"`
		Plan    artifact.GCPlan   `json:"plan"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("gc -o json: %v\n%s", err, out)
	}
	var deleted []string
	for _, d := range doc.Deleted {
		deleted = append(deleted, string(d.Kind)+":"+d.Generation)
	}
	// This cluster's generations first, then what no manifest ties to it.
	if strings.Join(deleted, ",") != "generation:g2,upload:g4" {
		t.Fatalf("deleted %v, want the unfinished upload and g2 (g1 is in use, g3 newest)", deleted)
	}
	for _, g := range []string{"g1", "g3"} {
		if _, err := s.Verify(ctx, g, artifact.Expect{}, nil); err != nil {
			t.Fatalf("%s after gc: %v", g, err)
		}
	}
	entries, err := s.List(ctx)
	if err != nil || len(entries) != 2 {
		t.Fatalf("after gc: %d entries (%v), want g1 and g3", len(entries), err)
	}
	// Each deletion is an Event on the StatefulSet, read back from the
	// API server.
	evs, err := e.cs.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, ev := range evs.Items {
		if ev.Reason == "GenerationDeleted" && ev.InvolvedObject.Kind == "StatefulSet" && ev.InvolvedObject.Name == "etcd" {
			said = append(said, ev.Message)
		}
	}
	if len(said) != 2 || !strings.Contains(strings.Join(said, "\n"), "generation g2") || !strings.Contains(strings.Join(said, "\n"), "upload") {
		t.Errorf("GenerationDeleted events %q, want one for g2 and one for g4's upload", said)
	}
	e.assertNoCredentials()
}

func secretFor(e *seedEnv) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "seed-store"},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": e.s3.AccessKey, "AWS_SECRET_ACCESS_KEY": e.s3.SecretKey},
	}
}

// sharedStore is one real S3 store (versitygw) that several fixture
// clusters of one namespace name in their annotations, with the same
// prefix: the setting in which gc of one cluster must leave the others'
// generations alone.
type sharedStore struct {
	t      *testing.T
	cs     kubernetes.Interface
	ns     string
	s3     *storetest.Server
	bucket string
	prefix string
	store  *artifact.Store
}

func newSharedStore(t *testing.T, clusters ...string) *sharedStore {
	t.Helper()
	testenv.SkipShort(t)
	e := &sharedStore{t: t, cs: testenv.Clientset(t, cp.Admin), ns: testenv.Namespace(t, cp), s3: startS3(t), prefix: "shared"}
	ctx := context.Background()
	var err error
	if e.bucket, err = e.s3.CreateBucket(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().Secrets(e.ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "seed-store"},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": e.s3.AccessKey, "AWS_SECRET_ACCESS_KEY": e.s3.SecretKey},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range clusters {
		fixtures.CreateCluster(t, e.cs, e.ns, fixtures.DefaultSpec(c))
		e.annotate(c, e.url())
	}
	if e.store, err = artifact.OpenStore(ctx, e.url(), artifact.Options{Credentials: e.s3.Credentials()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.store.Close() })
	return e
}

// url is the store's URL on the S3 server itself.
func (e *sharedStore) url() string { return e.s3.URL(e.bucket, e.prefix) }

// annotate points cluster's StatefulSet at store URL u.
func (e *sharedStore) annotate(cluster, u string) {
	e.t.Helper()
	ctx := context.Background()
	sts, err := e.cs.AppsV1().StatefulSets(e.ns).Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if sts.Annotations == nil {
		sts.Annotations = map[string]string{}
	}
	sts.Annotations[artifact.AnnotationStore] = u
	sts.Annotations[artifact.AnnotationStoreSecret] = "seed-store"
	if _, err := e.cs.AppsV1().StatefulSets(e.ns).Update(ctx, sts, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// publish writes and publishes generation g as seed would for cluster
// (the manifest's source names the cluster; clusterID is its etcd
// cluster ID), created at the given time.
func (e *sharedStore) publish(g, cluster, clusterID string, created time.Time) {
	e.t.Helper()
	ctx := context.Background()
	up, err := e.store.Begin(ctx, g, artifact.UploadOptions{Source: artifact.Source{Namespace: e.ns, Cluster: cluster, Member: cluster + "-0"}, CreatedBy: "test", Now: created})
	if err != nil {
		e.t.Fatal(err)
	}
	w, err := up.Create(ctx, "snapshot.db")
	if err != nil {
		e.t.Fatal(err)
	}
	_, _ = w.Write([]byte(strings.Repeat(g, 500)))
	if err := w.Close(); err != nil {
		e.t.Fatal(err)
	}
	if _, err := up.Publish(ctx, artifact.Identity{Generation: g, Engine: etcdengine.Name, EngineVersion: "3.6.0", ClusterID: clusterID, SourceMemberID: "m1", Revision: created.Unix()}); err != nil {
		e.t.Fatal(err)
	}
}

// partial leaves an unfinished upload of generation g (no manifest).
func (e *sharedStore) partial(g string) {
	e.t.Helper()
	ctx := context.Background()
	up, err := e.store.Begin(ctx, g, artifact.UploadOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	w, err := up.Create(ctx, "snapshot.db")
	if err != nil {
		e.t.Fatal(err)
	}
	_, _ = w.Write([]byte("partial"))
	if err := w.Close(); err != nil {
		e.t.Fatal(err)
	}
}

// keys lists the objects under the store's prefix with the S3 API
// itself, independently of hactl's listing and of gc's report, as
// "<generation>/<rest>".
func (e *sharedStore) keys() map[string]bool {
	e.t.Helper()
	ctx := context.Background()
	out := map[string]bool{}
	p := s3.NewListObjectsV2Paginator(e.s3.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(e.bucket), Prefix: aws.String(e.prefix + "/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			e.t.Fatalf("listing the bucket: %v", err)
		}
		for _, o := range page.Contents {
			out[strings.TrimPrefix(aws.ToString(o.Key), e.prefix+"/")] = true
		}
	}
	return out
}

// keysOf are the keys of generation directory g.
func keysOf(all map[string]bool, g string) []string {
	var out []string
	for k := range all {
		if strings.HasPrefix(k, g+"/") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// missing lists the keys of before that after lacks.
func missing(before, after map[string]bool) []string {
	var out []string
	for k := range before {
		if !after[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Two clusters share one store (one bucket, one prefix). gc of etcd-a with
// --keep 1 must delete etcd-a's old generations only: every object of
// etcd-b's generations, and the unfinished upload no manifest vouches for,
// is still in the bucket afterwards (checked with the S3 API, not with
// gc's report).
func TestGenerationsGCSharedStoreKeepsOtherClusters(t *testing.T) {
	e := newSharedStore(t, "etcd-a", "etcd-b")
	now := time.Now()
	// Interleaved: etcd-b's generations are older than etcd-a's newest.
	e.publish("a1", "etcd-a", "aaaa000000000001", now.Add(-6*time.Hour))
	e.publish("b1", "etcd-b", "bbbb000000000002", now.Add(-5*time.Hour))
	e.publish("a2", "etcd-a", "aaaa000000000001", now.Add(-4*time.Hour))
	e.publish("b2", "etcd-b", "bbbb000000000002", now.Add(-3*time.Hour))
	e.publish("a3", "etcd-a", "aaaa000000000001", now.Add(-2*time.Hour))
	e.partial("b3")
	before := e.keys()
	for _, g := range []string{"a1", "a2", "a3", "b1", "b2", "b3"} {
		if len(keysOf(before, g)) == 0 {
			t.Fatalf("the setup wrote nothing for %s: %v", g, before)
		}
	}

	out, errOut, code := run(t, "-n", e.ns, "generations", "gc", "etcd-a", "--keep", "1", "--partial-age", "1ns", "--yes")
	t.Logf("gc etcd-a --keep 1:\n%s%s", out, errOut)
	if code != 0 {
		t.Fatalf("gc etcd-a: exit %d\n%s\n%s", code, out, errOut)
	}
	after := e.keys()
	for _, g := range []string{"b1", "b2"} {
		if gone := missing(setOf(keysOf(before, g)), after); len(gone) > 0 {
			t.Errorf("gc etcd-a deleted objects of etcd-b's generation %s: %v", g, gone)
		}
	}
	if gone := missing(setOf(keysOf(before, "b3")), after); len(gone) > 0 {
		t.Errorf("gc etcd-a deleted an unfinished upload no manifest says is etcd-a's: %v", gone)
	}
	// gc did run: etcd-a's two older generations are gone, its newest stays.
	for _, g := range []string{"a1", "a2"} {
		if left := keysOf(after, g); len(left) > 0 {
			t.Errorf("etcd-a's generation %s survived gc --keep 1: %v", g, left)
		}
	}
	if gone := missing(setOf(keysOf(before, "a3")), after); len(gone) > 0 {
		t.Errorf("etcd-a's newest generation lost objects: %v", gone)
	}
	if t.Failed() {
		return
	}
	// The plan says why etcd-b's generations stay.
	for _, want := range []string{"generation b1", "generation b2", "belongs to " + e.ns + "/etcd-b", "upload"} {
		if !strings.Contains(out, want) {
			t.Errorf("gc output lacks %q:\n%s", want, out)
		}
	}
	// --all-clusters widens the scope explicitly: then etcd-b's older
	// generation goes too (each cluster keeps its --keep newest), and the
	// unfinished upload.
	out, errOut, code = run(t, "-n", e.ns, "generations", "gc", "etcd-a", "--keep", "1", "--partial-age", "1ns", "--yes", "--all-clusters")
	if code != 0 {
		t.Fatalf("gc --all-clusters: exit %d\n%s\n%s", code, out, errOut)
	}
	after = e.keys()
	if len(keysOf(after, "b1")) > 0 || len(keysOf(after, "b3")) > 0 || len(keysOf(after, "b2")) == 0 || len(keysOf(after, "a3")) == 0 {
		t.Fatalf("after gc --all-clusters --keep 1, want b1 and b3 gone and b2, a3 kept; the bucket holds %v\n%s", sortedKeys(after), out)
	}
}

// gc of a cluster whose StatefulSet does not exist has no ledger to check
// and no cluster to lock for: it refuses (exit 1) and deletes nothing
// unless --allow-missing-statefulset says to go ahead, and even then only
// under the cluster's lock.
func TestGenerationsGCWithoutStatefulSetRefuses(t *testing.T) {
	e := newSharedStore(t)
	now := time.Now()
	for i, g := range []string{"g1", "g2", "g3"} {
		e.publish(g, "etcd-gone", "cccc000000000003", now.Add(time.Duration(i-4)*time.Hour))
	}
	before := e.keys()
	out, errOut, code := run(t, "-n", e.ns, "generations", "gc", "etcd-gone", "--store", e.url(), "--store-secret", "seed-store", "--keep", "0", "--yes")
	t.Logf("gc without a StatefulSet: exit %d\n%s%s", code, out, errOut)
	if gone := missing(before, e.keys()); len(gone) > 0 {
		t.Fatalf("gc without a StatefulSet deleted %v (exit %d)\n%s\n%s", gone, code, out, errOut)
	}
	if code != ExitError || !strings.Contains(errOut, `no StatefulSet "etcd-gone"`) || !strings.Contains(errOut, "--allow-missing-statefulset") || !strings.Contains(errOut, "nothing was deleted") {
		t.Fatalf("gc without a StatefulSet: exit %d, want 1 and a message saying what happened and what to do\n%s", code, errOut)
	}

	// With the flag, but another action holds the cluster's lock: exit 7,
	// nothing deleted.
	ctx := context.Background()
	lock, err := actions.AcquireLock(ctx, e.cs, e.ns, "etcd-gone", actions.LockOptions{Identity: "hactl/elsewhere/1/abcd", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code = run(t, "-n", e.ns, "generations", "gc", "etcd-gone", "--store", e.url(), "--store-secret", "seed-store", "--keep", "0", "--yes", "--allow-missing-statefulset")
	if code != ExitLockHeld {
		t.Fatalf("gc --allow-missing-statefulset under a held lock: exit %d, want 7\n%s", code, errOut)
	}
	if gone := missing(before, e.keys()); len(gone) > 0 {
		t.Fatalf("gc under a held lock deleted %v", gone)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run(t, "-n", e.ns, "generations", "gc", "etcd-gone", "--store", e.url(), "--store-secret", "seed-store", "--keep", "1", "--yes", "--allow-missing-statefulset")
	if code != 0 {
		t.Fatalf("gc --allow-missing-statefulset: exit %d\n%s\n%s", code, out, errOut)
	}
	after := e.keys()
	if len(keysOf(after, "g1")) > 0 || len(keysOf(after, "g2")) > 0 || len(keysOf(after, "g3")) == 0 {
		t.Fatalf("after gc --allow-missing-statefulset --keep 1, want only g3; the bucket holds %v", sortedKeys(after))
	}
}

// Another client takes the cluster's Lease while gc deletes (through the
// real API server, at the moment gc deletes its first manifest on the
// real S3 server): gc finishes that generation, deletes nothing after it,
// exits 7 and says what was and was not deleted.
func TestGenerationsGCStopsWhenLockLost(t *testing.T) {
	e := newSharedStore(t, "etcd")
	now := time.Now()
	gens := []string{"g1", "g2", "g3", "g4"}
	for i, g := range gens {
		e.publish(g, "etcd", "dddd000000000004", now.Add(time.Duration(i-5)*time.Hour))
	}
	ctx := context.Background()
	var stole atomic.Int32
	thief := "hactl/thief/1/beef"
	steal := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/"+artifact.ManifestName) && stole.Add(1) == 1 {
				// Take the Lease from gc, as a forcing process would.
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					l, err := e.cs.CoordinationV1().Leases(e.ns).Get(ctx, actions.LockName("etcd"), metav1.GetOptions{})
					if err != nil {
						return err
					}
					l.Spec.HolderIdentity = ptr.To(thief)
					_, err = e.cs.CoordinationV1().Leases(e.ns).Update(ctx, l, metav1.UpdateOptions{})
					return err
				})
				if err != nil {
					t.Errorf("taking the lease: %v", err)
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	target, err := url.Parse(e.s3.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(steal(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // the request is signed for the proxy's host
		},
	}))
	t.Cleanup(proxy.Close)
	proxyURL := strings.Replace(e.url(), "endpoint="+e.s3.Endpoint, "endpoint="+proxy.URL, 1)
	if proxyURL == e.url() {
		t.Fatalf("could not point the store URL at the proxy: %s", proxyURL)
	}
	e.annotate("etcd", proxyURL)
	before := e.keys()

	out, errOut, code := run(t, "-n", e.ns, "generations", "gc", "etcd", "--keep", "1", "--yes")
	t.Logf("gc while the lock is taken: exit %d\n%s%s", code, out, errOut)
	if stole.Load() == 0 {
		t.Fatalf("gc deleted no manifest: the lease was never taken (exit %d)\n%s\n%s", code, out, errOut)
	}
	after := e.keys()
	var deleted, kept []string
	for _, g := range gens {
		switch left := keysOf(after, g); {
		case len(left) == 0:
			deleted = append(deleted, g)
		case len(left) == len(keysOf(before, g)):
			kept = append(kept, g)
		default:
			t.Errorf("generation %s half deleted: %v left of %v", g, left, keysOf(before, g))
		}
	}
	// Planned: g3, g2, g1 (newest first); the Lease went at g3's manifest.
	if strings.Join(deleted, ",") != "g3" || strings.Join(kept, ",") != "g1,g2,g4" {
		t.Fatalf("after losing the lock at the first deletion: deleted %v, kept %v; want only g3 deleted\n%s\n%s", deleted, kept, out, errOut)
	}
	if code != ExitLockHeld || !strings.Contains(errOut, thief) || !strings.Contains(errOut, "g1") || !strings.Contains(errOut, "g2") || !strings.Contains(out, "deleted generation g3") {
		t.Fatalf("gc that lost its lock: exit %d, want 7 naming the new holder and what was not deleted\n%s\n%s", code, out, errOut)
	}
	if l, err := actions.ReadLock(ctx, e.cs, e.ns, "etcd"); err != nil || l.Holder != thief {
		t.Fatalf("gc released a lock it no longer held: %+v %v", l, err)
	}
}

func setOf(keys []string) map[string]bool {
	out := map[string]bool{}
	for _, k := range keys {
		out[k] = true
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
