package artifact_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

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

// An S3 upload goes multipart from its first full part: a file of a part
// and a bit is stored as two parts (its ETag ends in -2), not buffered
// whole and sent in one PUT as the transfer manager's 16 MiB default
// threshold would (which kept the first 16 MiB of every capture in memory
// beside the parts). The file reads back byte for byte.
func TestS3UploadIsMultipartFromItsFirstPart(t *testing.T) {
	s, bucket := openS3(t)
	ctx := deadline(t)
	body := randBytes(t, artifact.UploadPartSize+(1<<20))
	u, err := s.Begin(ctx, "mp1", artifact.UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := u.Create(ctx, "snapshot.db")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	c := s3srv.Client()
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var key string
	for _, o := range list.Contents {
		if strings.HasSuffix(aws.ToString(o.Key), "/snapshot.db") {
			key = aws.ToString(o.Key)
		}
	}
	if key == "" {
		t.Fatalf("no snapshot.db among %d objects", len(list.Contents))
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	if etag := strings.Trim(aws.ToString(head.ETag), `"`); !strings.HasSuffix(etag, "-2") || aws.ToInt64(head.ContentLength) != int64(len(body)) {
		t.Fatalf("%s: ETag %s, %d bytes; want a two-part upload of %d bytes", key, etag, aws.ToInt64(head.ContentLength), len(body))
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Body.Close()
	b, err := io.ReadAll(got.Body)
	if err != nil || !bytes.Equal(b, body) {
		t.Fatalf("read back %d bytes (%v), not the %d written", len(b), err, len(body))
	}
}
