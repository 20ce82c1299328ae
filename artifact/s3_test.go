package artifact_test

import (
	"errors"
	"testing"

	"github.com/hactl-dev/hactl/artifact"
)

func TestPublishIsCreateIfAbsent(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) *artifact.Store{
		"s3":   func(t *testing.T) *artifact.Store { s, _ := openS3(t); return s },
		"file": openFile,
	} {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := deadline(t)
			files := map[string][]byte{"snapshot.db": randBytes(t, 100<<10)}
			first := publish(t, s, identity("g1"), files)
			if first.Already {
				t.Fatal("first publish reported Already")
			}
			again := publish(t, s, identity("g1"), map[string][]byte{"snapshot.db": randBytes(t, 10)})
			if !again.Already || again.Manifest.Digest != first.Manifest.Digest {
				t.Fatalf("same identity again: Already=%v digest %s, want the first manifest %s", again.Already, again.Manifest.Digest, first.Manifest.Digest)
			}
			other := identity("g1")
			other.ClusterID = "ffff0000ffff0000"
			u, err := s.Begin(ctx, "g1", artifact.UploadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w, _ := u.Create(ctx, "snapshot.db")
			_, _ = w.Write([]byte("other"))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			_, err = u.Publish(ctx, other)
			if !errors.Is(err, artifact.ErrGenerationExists) {
				t.Fatalf("other identity: err = %v, want ErrGenerationExists", err)
			}
			m, err := s.Verify(ctx, "g1", artifact.Expect{}, nil)
			if err != nil {
				t.Fatalf("the first generation no longer verifies: %v", err)
			}
			if m.Digest != first.Manifest.Digest {
				t.Fatalf("manifest changed: %s, want %s", m.Digest, first.Manifest.Digest)
			}
			e, err := s.Get(ctx, "g1")
			if err != nil {
				t.Fatal(err)
			}
			if len(e.Uploads) != 1 || !e.Uploads[0].Referenced {
				t.Fatalf("uploads after refused publishes: %+v, want only the referenced one", e.Uploads)
			}
		})
	}
}
