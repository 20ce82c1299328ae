package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/artifact"
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
		up, err := s.Begin(ctx, g, artifact.UploadOptions{Now: now.Add(time.Duration(i-3) * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		w, _ := up.Create(ctx, "snapshot.db")
		_, _ = w.Write([]byte(strings.Repeat(g, 1000)))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := up.Publish(ctx, artifact.Identity{Generation: g, Engine: model.EngineEtcd, EngineVersion: "3.6.0", ClusterID: "c1", SourceMemberID: "m1", Revision: int64(10 + i)}); err != nil {
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
	// Dry run: the plan, nothing deleted.
	out, errOut, code = run(t, "-n", e.ns, "generations", "gc", "etcd", "--keep", "1", "--partial-age", "1ns", "--dry-run")
	e.record(out, errOut)
	del, keep, _ := strings.Cut(out, "Keeping:")
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

	out, errOut, code = run(t, "-n", e.ns, "generations", "gc", "etcd", "--keep", "1", "--partial-age", "1ns", "--yes", "-o", "json")
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
	if strings.Join(deleted, ",") != "upload:g4,generation:g2" {
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
	e.assertNoCredentials()
}

func secretFor(e *seedEnv) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "seed-store"},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": e.s3.AccessKey, "AWS_SECRET_ACCESS_KEY": e.s3.SecretKey},
	}
}
