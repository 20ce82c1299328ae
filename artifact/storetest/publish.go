package storetest

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/hactl-dev/hactl/artifact"
)

// Publish uploads files (path → content) as generation id.Generation,
// captured from src, and publishes it with identity id; any failure fails
// the test.
func Publish(t testing.TB, s *artifact.Store, id artifact.Identity, src artifact.Source, files map[string][]byte) artifact.PublishResult {
	t.Helper()
	ctx := context.Background()
	u, err := s.Begin(ctx, id.Generation, artifact.UploadOptions{Source: src, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for p, b := range files {
		w, err := u.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := u.Publish(ctx, id)
	if err != nil {
		t.Fatalf("publishing %s: %v", id.Generation, err)
	}
	return res
}
