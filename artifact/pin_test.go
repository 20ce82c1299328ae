package artifact_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/artifact"
)

// fileStore opens a store in a temporary directory and returns its URL
// too (for helper processes).
func fileStore(t *testing.T) (*artifact.Store, string) {
	t.Helper()
	u := "file://" + t.TempDir() + "/store"
	s, err := artifact.OpenStore(context.Background(), u, artifact.Options{CreateDir: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, u
}

// A restore pinned to the digest (and revision) it was confirmed with
// refuses the generation once it was deleted and published again under
// the same ID with other data, before anything on disk changes; pinned
// to the new digest, it restores.
func TestRestorePinnedToConfirmedGeneration(t *testing.T) {
	s, _ := openS3(t)
	ctx := deadline(t)
	publish(t, s, identity("g1"), map[string][]byte{"snapshot.db": []byte("the data that was confirmed")})
	confirmed, err := s.ReadManifest(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	id := identity("g1")
	id.Revision += 500
	publish(t, s, id, map[string][]byte{"snapshot.db": []byte("other data, same generation ID")})
	now, err := s.ReadManifest(ctx, "g1")
	if err != nil || now.Digest == confirmed.Digest {
		t.Fatalf("republished manifest: %v, digest %s (confirmed %s)", err, now.Digest, confirmed.Digest)
	}

	for name, o := range map[string]artifact.RestoreOptions{
		"digest":   {ExpectDigest: confirmed.Digest},
		"revision": {ExpectRevision: confirmed.Identity.Revision},
	} {
		t.Run(name, func(t *testing.T) {
			dir := existingDataDir(t)
			before := treeDigest(t, dir)
			o.DataDir, o.Replace = dir, true
			_, err := artifact.Restore(ctx, s, "g1", o)
			if !errors.Is(err, artifact.ErrGenerationChanged) || !strings.Contains(err.Error(), "published again") {
				t.Fatalf("restore pinned to the confirmed %s: %v, want ErrGenerationChanged", name, err)
			}
			if name == "digest" && (!strings.Contains(err.Error(), confirmed.Digest) || !strings.Contains(err.Error(), now.Digest)) {
				t.Fatalf("the refusal does not name both digests: %v", err)
			}
			if treeDigest(t, dir) != before {
				t.Fatal("the refused restore changed the data directory or what is beside it")
			}
		})
	}
	t.Run("pinned to the current digest", func(t *testing.T) {
		dir := existingDataDir(t)
		if _, err := artifact.Restore(ctx, s, "g1", artifact.RestoreOptions{DataDir: dir, Replace: true, ExpectDigest: now.Digest,
			ExpectRevision: now.Identity.Revision}); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "snapshot.db")); err != nil || string(b) != "other data, same generation ID" {
			t.Fatalf("restored %q %v", b, err)
		}
	})
}
