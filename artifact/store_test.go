package artifact_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/artifact"
)

func TestRestoreStagesAndActivates(t *testing.T) {
	s, _ := openS3(t)
	ctx := deadline(t)
	files := map[string][]byte{"snapshot.db": randBytes(t, 300<<10), "member/wal/0.wal": randBytes(t, 10)}
	publish(t, s, identity("r1"), files)
	check := func(dir string) {
		t.Helper()
		for p, want := range files {
			got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
			if err != nil || string(got) != string(want) {
				t.Fatalf("%s after restore: err=%v, %d bytes, want %d", p, err, len(got), len(want))
			}
		}
		mk, err := artifact.ReadMarker(dir)
		if err != nil || mk.Generation != "r1" {
			t.Fatalf("marker: %+v %v", mk, err)
		}
	}

	t.Run("missing data dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		var seen int64
		res, err := artifact.Restore(ctx, s, "r1", artifact.RestoreOptions{DataDir: dir, Progress: func(n int64) { seen = n }})
		if err != nil {
			t.Fatal(err)
		}
		check(dir)
		if res.Previous != "" || res.Already || res.Bytes != int64(300<<10+10) || seen != res.Bytes {
			t.Fatalf("result %+v, progress %d", res, seen)
		}
		again, err := artifact.Restore(ctx, s, "r1", artifact.RestoreOptions{DataDir: dir})
		if err != nil || !again.Already {
			t.Fatalf("restoring the same generation again: %+v %v, want Already", again, err)
		}
		entries, _ := os.ReadDir(filepath.Dir(dir))
		if len(entries) != 1 {
			t.Fatalf("left beside the data dir: %v", entries)
		}
	})
	t.Run("a new restore ID restores the same generation again", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		if _, err := artifact.Restore(ctx, s, "r1", artifact.RestoreOptions{DataDir: dir, RestoreID: "restore-a"}); err != nil {
			t.Fatal(err)
		}
		// What the member wrote since the restore.
		if err := os.WriteFile(filepath.Join(dir, "written-later"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		same, err := artifact.Restore(ctx, s, "r1", artifact.RestoreOptions{DataDir: dir, RestoreID: "restore-a", Replace: true})
		if err != nil || !same.Already {
			t.Fatalf("the same restore again: %+v %v, want Already", same, err)
		}
		next, err := artifact.Restore(ctx, s, "r1", artifact.RestoreOptions{DataDir: dir, RestoreID: "restore-b", Replace: true})
		if err != nil || next.Already || next.Previous == "" {
			t.Fatalf("a new restore of the same generation: %+v %v, want a restore keeping the previous data", next, err)
		}
		check(dir)
		if _, err := os.Stat(filepath.Join(dir, "written-later")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("data written after the first restore survived the second: %v", err)
		}
		if mk, _ := artifact.ReadMarker(dir); mk.RestoreID != "restore-b" {
			t.Fatalf("marker names restore %q", mk.RestoreID)
		}
	})
	t.Run("empty data dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := artifact.Restore(ctx, s, "r1", artifact.RestoreOptions{DataDir: dir}); err != nil {
			t.Fatal(err)
		}
		check(dir)
	})
	t.Run("other data refused without replace", func(t *testing.T) {
		dir := existingDataDir(t)
		before := treeDigest(t, dir)
		_, err := artifact.Restore(ctx, s, "r1", artifact.RestoreOptions{DataDir: dir})
		if !errors.Is(err, artifact.ErrDataDirNotEmpty) || !strings.Contains(err.Error(), "--replace") {
			t.Fatalf("err = %v, want ErrDataDirNotEmpty naming --replace", err)
		}
		if treeDigest(t, dir) != before {
			t.Fatal("refused restore changed the target")
		}
	})
	t.Run("replace keeps the previous data", func(t *testing.T) {
		dir := existingDataDir(t)
		res, err := artifact.Restore(ctx, s, "r1", artifact.RestoreOptions{DataDir: dir, Replace: true})
		if err != nil {
			t.Fatal(err)
		}
		check(dir)
		old, err := os.ReadFile(filepath.Join(res.Previous, "member", "snap", "db"))
		if err != nil || string(old) != "old data" {
			t.Fatalf("previous data at %q: %q %v", res.Previous, old, err)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), ".data.hactl-staging")); !os.IsNotExist(err) {
			t.Fatalf("staging left behind: %v", err)
		}
	})
	t.Run("interrupted activation keeps the old data", func(t *testing.T) {
		// As if a restore crashed right after swapping: the old data sits
		// in staging, the data dir is missing.
		dir := existingDataDir(t)
		staging := filepath.Join(filepath.Dir(dir), ".data.hactl-staging")
		if err := os.MkdirAll(staging, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dir, filepath.Join(staging, "data")); err != nil {
			t.Fatal(err)
		}
		if _, err := artifact.Restore(ctx, s, "r1", artifact.RestoreOptions{DataDir: dir}); err != nil {
			t.Fatal(err)
		}
		check(dir)
		prev, _ := filepath.Glob(dir + ".hactl-previous-*")
		if len(prev) != 1 {
			t.Fatalf("previous dirs: %v, want the rescued old data", prev)
		}
		if b, _ := os.ReadFile(filepath.Join(prev[0], "member", "snap", "db")); string(b) != "old data" {
			t.Fatalf("rescued data: %q", b)
		}
	})
	t.Run("interrupted after the exchange keeps the old data", func(t *testing.T) {
		// As if a restore crashed right after swapping: the data dir holds
		// the generation, the old data sits in staging.
		dir := existingDataDir(t)
		if _, err := artifact.Restore(ctx, s, "r1", artifact.RestoreOptions{DataDir: dir, Replace: true}); err != nil {
			t.Fatal(err)
		}
		prev, _ := filepath.Glob(dir + ".hactl-previous-*")
		staging := filepath.Join(filepath.Dir(dir), ".data.hactl-staging")
		if err := os.MkdirAll(staging, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(prev[0], filepath.Join(staging, "data")); err != nil {
			t.Fatal(err)
		}
		res, err := artifact.Restore(ctx, s, "r1", artifact.RestoreOptions{DataDir: dir})
		if err != nil || !res.Already {
			t.Fatalf("rerun: %+v %v", res, err)
		}
		check(dir)
		prev, _ = filepath.Glob(dir + ".hactl-previous-*")
		if len(prev) != 1 {
			t.Fatalf("previous dirs: %v, want the old data moved out of staging", prev)
		}
		if b, _ := os.ReadFile(filepath.Join(prev[0], "member", "snap", "db")); string(b) != "old data" {
			t.Fatalf("rescued data: %q", b)
		}
		if _, err := os.Stat(staging); !os.IsNotExist(err) {
			t.Fatalf("staging left: %v", err)
		}
	})
	t.Run("data dir is a file", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "data")
		_ = os.WriteFile(f, []byte("x"), 0o600)
		if _, err := artifact.Restore(ctx, s, "r1", artifact.RestoreOptions{DataDir: f, Replace: true}); !errors.Is(err, artifact.ErrDataDirUnusable) {
			t.Fatalf("err = %v, want ErrDataDirUnusable", err)
		}
	})
	t.Run("parent missing", func(t *testing.T) {
		if _, err := artifact.Restore(ctx, s, "r1", artifact.RestoreOptions{DataDir: filepath.Join(t.TempDir(), "a", "b")}); !errors.Is(err, artifact.ErrDataDirUnusable) {
			t.Fatalf("err = %v, want ErrDataDirUnusable", err)
		}
	})
}

// A writer killed mid-upload (its context cancelled while streaming)
// leaves no published generation; rerunning publishes it exactly once,
// and GC removes the abandoned upload.
func TestInterruptedUploadLeavesNothingPublished(t *testing.T) {
	s, _ := openS3(t)
	ctx := deadline(t)
	uctx, cancel := context.WithCancel(ctx)
	u, err := s.Begin(uctx, "k1", artifact.UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := u.Create(uctx, "snapshot.db")
	if err != nil {
		t.Fatal(err)
	}
	// More than one multipart part, so that the upload is really under way.
	chunk := randBytes(t, 1<<20)
	for range 6 {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	_, _ = w.Write(chunk)
	if err := w.Close(); err == nil {
		t.Fatal("closing a cancelled upload succeeded")
	}
	if _, err := u.Publish(uctx, identity("k1")); err == nil {
		t.Fatal("publishing after cancel succeeded")
	}
	if _, err := s.ReadManifest(ctx, "k1"); !errors.Is(err, artifact.ErrNoManifest) {
		t.Fatalf("after the interrupted upload: %v, want ErrNoManifest", err)
	}
	entries, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Published() {
			t.Fatalf("published after an interrupted upload: %+v", e)
		}
	}

	first := publish(t, s, identity("k1"), map[string][]byte{"snapshot.db": randBytes(t, 1000)})
	second := publish(t, s, identity("k1"), map[string][]byte{"snapshot.db": randBytes(t, 1000)})
	if first.Already || !second.Already || second.Manifest.Upload != first.Manifest.Upload {
		t.Fatalf("rerun: first Already=%v, second Already=%v", first.Already, second.Already)
	}
	entries, err = s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	published := 0
	for _, e := range entries {
		if e.Published() {
			published++
		}
	}
	if published != 1 {
		t.Fatalf("%d published generations, want 1", published)
	}
	plan := artifact.PlanGC(entries, artifact.GCOptions{Keep: 1, PartialAge: time.Nanosecond, Now: time.Now().Add(time.Second)})
	deleted, err := s.ApplyGC(ctx, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deleted {
		if d.Kind != artifact.GCUpload || d.Upload == first.Manifest.Upload {
			t.Fatalf("GC deleted %+v", d)
		}
	}
	if _, err := s.Verify(ctx, "k1", artifact.Expect{}, nil); err != nil {
		t.Fatalf("GC broke the published generation: %v", err)
	}
	e, _ := s.Get(ctx, "k1")
	if len(e.Uploads) != 1 {
		t.Fatalf("uploads after GC: %+v", e.Uploads)
	}
}

// Two writers racing for one generation ID with different identities:
// exactly one wins, the other is refused, and the winner verifies.
func TestConcurrentPublishOneWins(t *testing.T) {
	s, _ := openS3(t)
	ctx := deadline(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	ups := make([]*artifact.Upload, n)
	for i := range n {
		u, err := s.Begin(ctx, "race", artifact.UploadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, _ := u.Create(ctx, "snapshot.db")
		_, _ = w.Write(randBytes(t, 64<<10))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		ups[i] = u
	}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := identity("race")
			id.Revision = int64(1000 + i)
			_, errs[i] = ups[i].Publish(ctx, id)
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, artifact.ErrGenerationExists):
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d writers won, want exactly 1 (%v)", wins, errs)
	}
	if _, err := s.Verify(ctx, "race", artifact.Expect{}, nil); err != nil {
		t.Fatalf("the winner does not verify: %v", err)
	}
}

func TestGCKeepsNewestYoungAndInUse(t *testing.T) {
	s := openFile(t)
	ctx := deadline(t)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		g := fmt.Sprintf("g%d", i)
		u, _ := s.Begin(ctx, g, artifact.UploadOptions{Now: base.Add(time.Duration(i) * 24 * time.Hour)})
		w, _ := u.Create(ctx, "f")
		_, _ = w.Write([]byte(g))
		_ = w.Close()
		if _, err := u.Publish(ctx, identity(g)); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := s.List(ctx)
	if err != nil || len(entries) != 5 {
		t.Fatalf("list: %d %v", len(entries), err)
	}
	now := base.Add(5 * 24 * time.Hour)
	plan := artifact.PlanGC(entries, artifact.GCOptions{Keep: 2, OlderThan: 60 * time.Hour, InUse: map[string]bool{"g0": true}, Now: now})
	var del []string
	for _, d := range plan.Delete {
		del = append(del, d.Generation)
	}
	// g4,g3 newest; g2 is 72h old (older than 60h) -> deleted; g1 deleted;
	// g0 in use.
	if strings.Join(del, ",") != "g2,g1" {
		t.Fatalf("delete %v, want g2,g1; plan %+v", del, plan)
	}
	done, err := s.ApplyGC(ctx, plan, func(g string) bool { return g == "g1" })
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 || done[0].Generation != "g2" {
		t.Fatalf("applied %+v, want only g2 (g1 became in use)", done)
	}
	if _, err := s.ReadManifest(ctx, "g2"); !errors.Is(err, artifact.ErrNoManifest) {
		t.Fatalf("g2 after GC: %v", err)
	}
	if e, _ := s.Get(ctx, "g2"); len(e.Uploads) != 0 {
		t.Fatalf("g2's files survived GC: %+v", e.Uploads)
	}
	for _, g := range []string{"g0", "g1", "g3", "g4"} {
		if _, err := s.Verify(ctx, g, artifact.Expect{}, nil); err != nil {
			t.Errorf("%s: %v", g, err)
		}
	}
}

func TestPlanGCTable(t *testing.T) {
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	gen := func(g string, age time.Duration) artifact.Entry {
		m := validManifest()
		m.Identity.Generation = g
		m.CreatedAt = now.Add(-age)
		m.Upload = "u-" + g
		return artifact.Entry{Generation: g, Manifest: m, Uploads: []artifact.UploadInfo{{ID: "u-" + g, Referenced: true}}}
	}
	partial := func(g string, age time.Duration) artifact.Entry {
		return artifact.Entry{Generation: g, Err: artifact.ErrNoManifest, Uploads: []artifact.UploadInfo{{ID: "p", LastModified: now.Add(-age)}}}
	}
	invalid := artifact.Entry{Generation: "bad", Err: fmt.Errorf("x: %w", artifact.ErrDigestMismatch)}
	for _, tc := range []struct {
		name    string
		entries []artifact.Entry
		o       artifact.GCOptions
		want    string
	}{
		{"keep all", []artifact.Entry{gen("a", 1), gen("b", 2)}, artifact.GCOptions{Keep: 2}, ""},
		{"keep newest", []artifact.Entry{gen("a", time.Hour), gen("b", 2*time.Hour), gen("c", 3*time.Hour)}, artifact.GCOptions{Keep: 1}, "generation:b,generation:c"},
		{"keep zero", []artifact.Entry{gen("a", time.Hour)}, artifact.GCOptions{}, "generation:a"},
		{"age protects", []artifact.Entry{gen("a", time.Hour), gen("b", 2*time.Hour)}, artifact.GCOptions{OlderThan: 90 * time.Minute}, "generation:b"},
		{"in use protects", []artifact.Entry{gen("a", time.Hour)}, artifact.GCOptions{InUse: map[string]bool{"a": true}}, ""},
		{"young partial kept", []artifact.Entry{partial("p", time.Minute)}, artifact.GCOptions{}, ""},
		{"old partial deleted", []artifact.Entry{partial("p", 2*time.Hour)}, artifact.GCOptions{}, "upload:p"},
		{"partial of in-use kept", []artifact.Entry{partial("p", 2*time.Hour)}, artifact.GCOptions{InUse: map[string]bool{"p": true}}, ""},
		{"partial age raised to older-than", []artifact.Entry{partial("p", 2*time.Hour)}, artifact.GCOptions{OlderThan: 3 * time.Hour}, ""},
		{"invalid never deleted", []artifact.Entry{invalid}, artifact.GCOptions{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Now = now
			plan := artifact.PlanGC(tc.entries, tc.o)
			var got []string
			for _, d := range plan.Delete {
				got = append(got, d.Kind.String()+":"+d.Generation)
			}
			if strings.Join(got, ",") != tc.want {
				t.Fatalf("delete %v, want %q", got, tc.want)
			}
			if len(plan.Delete)+len(plan.Keep) == 0 && len(tc.entries) > 0 {
				t.Fatal("plan says nothing about the entries")
			}
		})
	}
	for _, k := range artifact.AllGCKinds {
		if k.String() == "" {
			t.Errorf("GC kind without a name")
		}
	}
}

func TestCredentialsNeverPrinted(t *testing.T) {
	c := &artifact.Credentials{AccessKeyID: "AKIDSECRETVALUE", SecretAccessKey: "very-secret-key", SessionToken: "session-tok"}
	var b strings.Builder
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		fmt.Fprintf(&b, verb+"\n", c)
		fmt.Fprintf(&b, verb+"\n", *c)
	}
	j, _ := json.Marshal(struct{ C *artifact.Credentials }{c})
	b.Write(j)
	slog.New(slog.NewTextHandler(&b, nil)).Info("x", "creds", c)
	for _, v := range []string{"AKIDSECRETVALUE", "very-secret-key", "session-tok"} {
		if strings.Contains(b.String(), v) {
			t.Fatalf("credential value printed:\n%s", b.String())
		}
	}
	if _, err := artifact.CredentialsFromSecret("s3-creds", "s3", map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("k")}); err == nil || !strings.Contains(err.Error(), "AWS_SECRET_ACCESS_KEY") || strings.Contains(err.Error(), "k\"") {
		t.Fatalf("missing secret key: %v", err)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"s3://b/p?endpoint=http://h:1&use_path_style=true": "s3://b/p?endpoint=http://h:1&use_path_style=true",
		"s3://user:pass@b/p":                                 "s3://b/p",
		"azblob://c/p?sas_token=abc&x=1":                     "azblob://c/p?sas_token=%5Bredacted%5D&x=1",
		"gs://b/p?endpoint=http://u:pw@127.0.0.1:1":          "gs://b/p?endpoint=%5Bredacted%5D",
		"s3://b/p?endpoint=https://s3.example/@x&region=r":   "s3://b/p?endpoint=https://s3.example/@x&region=r",
		"s3://b/p?aws_secret_access_key=zzz&access_key_id=y": "s3://b/p?access_key_id=%5Bredacted%5D&aws_secret_access_key=%5Bredacted%5D",
	} {
		if got := artifact.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOpenStoreRefusals(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{
		"http://example.com/x", "s3:///prefix", "file://relative/dir", "file://host/dir",
		"s3://b/../x", "s3://user:pw-xyz123@b/p", "gs://b/p?x=1", "::",
	} {
		opts := artifact.Options{}
		_, err := artifact.OpenStore(ctx, u, opts)
		if !errors.Is(err, artifact.ErrInvalidStore) {
			t.Errorf("OpenStore(%q) = %v, want ErrInvalidStore", u, err)
		}
		if err != nil && strings.Contains(err.Error(), "pw-xyz123") {
			t.Errorf("OpenStore(%q) error shows the password: %v", u, err)
		}
	}
	_, err := artifact.OpenStore(ctx, "gs://b/p", artifact.Options{Credentials: &artifact.Credentials{AccessKeyID: "a", SecretAccessKey: "b"}})
	if !errors.Is(err, artifact.ErrInvalidStore) || !strings.Contains(err.Error(), "for s3:// stores") || !strings.Contains(err.Error(), "GOOGLE_APPLICATION_CREDENTIALS_JSON") {
		t.Errorf("gs with s3 credentials: %v", err)
	}
}

// The environment's credentials work too (the agent's path), and a
// rejected credential's error never shows it.
func TestS3CredentialsFromEnvironment(t *testing.T) {
	_, bucket := openS3(t)
	ctx := deadline(t)
	for _, kv := range s3srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	s, err := artifact.OpenStore(ctx, s3srv.URL(bucket, "env"), artifact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	publish(t, s, identity("env1"), map[string][]byte{"snapshot.db": []byte("env")})
	if _, err := s.Verify(ctx, "env1", artifact.Expect{}, nil); err != nil {
		t.Fatal(err)
	}
	var log outputLog
	wrong := &artifact.Credentials{AccessKeyID: s3srv.AccessKey, SecretAccessKey: "wrong" + s3srv.SecretKey[5:]}
	bad, err := artifact.OpenStore(ctx, s3srv.URL(bucket, "env"), artifact.Options{Credentials: wrong})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, err = bad.ReadManifest(ctx, "env1")
	if err == nil {
		t.Fatal("wrong secret accepted")
	}
	log.errf(err)
	log.add(bad.String())
	log.add(fmt.Sprintf("%v %+v", wrong, wrong))
	t.Logf("error with a wrong secret: %v", err)
	log.assertNoSecrets(t, append(s3srv.Secrets(), wrong.SecretAccessKey))
}
