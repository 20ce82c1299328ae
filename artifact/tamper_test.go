package artifact_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/hactl-dev/hactl/artifact"
)

const prefix = "seeds/etcd-main/"

// treeDigest hashes every path, mode and content under dir (and its
// siblings, so a stray staging or previous directory is seen too).
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	root := filepath.Dir(dir)
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		line := rel + " " + d.Type().String()
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			line += " " + hex.EncodeToString(s[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	h.Write([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(h.Sum(nil))
}

// existingDataDir makes a data directory holding "old" data.
func existingDataDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "volume", "data")
	if err := os.MkdirAll(filepath.Join(dir, "member", "snap"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "member", "snap", "db"), []byte("old data"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func getObject(t *testing.T, bucket, key string) []byte {
	t.Helper()
	out, err := s3srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
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

func putObject(t *testing.T, bucket, key string, b []byte) {
	t.Helper()
	if _, err := s3srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b)}); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func deleteObject(t *testing.T, bucket, key string) {
	t.Helper()
	if _, err := s3srv.Client().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
}

// rewriteManifest changes the stored manifest of g; with reseal the
// digest is recomputed, as an attacker with write access could.
func rewriteManifest(t *testing.T, bucket, g string, reseal bool, mut func(m *artifact.Manifest)) {
	t.Helper()
	key := prefix + g + "/manifest.json"
	m, err := artifact.DecodeManifest(getObject(t, bucket, key))
	if err != nil {
		t.Fatal(err)
	}
	mut(m)
	if reseal {
		m.Digest = artifact.ComputeDigest(m)
	}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	putObject(t, bucket, key, b)
}

// Each tampering is refused with its named error by both Verify and
// Restore, and Restore leaves the target data directory (and everything
// beside it) exactly as it was.
func TestTamperingRefusedBeforeTargetChanges(t *testing.T) {
	s, bucket := openS3(t)
	ctx := deadline(t)
	snap := randBytes(t, 256<<10)
	walFile := randBytes(t, 1000)
	files := map[string][]byte{"snapshot.db": snap, "member/wal/0.wal": walFile}
	var log outputLog

	type tamper struct {
		name   string
		expect artifact.Expect
		do     func(t *testing.T, g string, m *artifact.Manifest)
		want   error
	}
	dataKey := func(g string, m *artifact.Manifest, p string) string {
		return prefix + g + "/uploads/" + m.Upload + "/" + p
	}
	cases := []tamper{
		{name: "flipped byte", want: artifact.ErrChecksumMismatch, do: func(t *testing.T, g string, m *artifact.Manifest) {
			b := getObject(t, bucket, dataKey(g, m, "snapshot.db"))
			b[len(b)/2] ^= 0x01
			putObject(t, bucket, dataKey(g, m, "snapshot.db"), b)
		}},
		{name: "dot-dot path", want: artifact.ErrUnsafePath, do: func(t *testing.T, g string, m *artifact.Manifest) {
			putObject(t, bucket, prefix+g+"/uploads/"+m.Upload+"/../escape", []byte("x"))
			rewriteManifest(t, bucket, g, true, func(m *artifact.Manifest) { m.Files[0].Path = "../../escape" })
		}},
		{name: "absolute path", want: artifact.ErrUnsafePath, do: func(t *testing.T, g string, m *artifact.Manifest) {
			rewriteManifest(t, bucket, g, true, func(m *artifact.Manifest) { m.Files[0].Path = "/etc/cron.d/x" })
		}},
		{name: "manifest from another cluster", want: artifact.ErrWrongCluster, expect: artifact.Expect{ClusterID: "0123456789abcdef"}},
		{name: "missing file", want: artifact.ErrMissingFile, do: func(t *testing.T, g string, m *artifact.Manifest) {
			deleteObject(t, bucket, dataKey(g, m, "member/wal/0.wal"))
		}},
		{name: "extra file", want: artifact.ErrExtraFile, do: func(t *testing.T, g string, m *artifact.Manifest) {
			putObject(t, bucket, dataKey(g, m, "member/snap/evil"), []byte("x"))
		}},
		{name: "upload without manifest", want: artifact.ErrNoManifest, do: func(t *testing.T, g string, m *artifact.Manifest) {
			deleteObject(t, bucket, prefix+g+"/manifest.json")
		}},
		{name: "size mismatch", want: artifact.ErrSizeMismatch, do: func(t *testing.T, g string, m *artifact.Manifest) {
			putObject(t, bucket, dataKey(g, m, "snapshot.db"), snap[:len(snap)-1])
		}},
		{name: "manifest altered", want: artifact.ErrDigestMismatch, do: func(t *testing.T, g string, m *artifact.Manifest) {
			rewriteManifest(t, bucket, g, false, func(m *artifact.Manifest) { m.Identity.Revision = 999999 })
		}},
		{name: "hash swapped with digest recomputed", want: artifact.ErrChecksumMismatch, do: func(t *testing.T, g string, m *artifact.Manifest) {
			rewriteManifest(t, bucket, g, true, func(m *artifact.Manifest) {
				for i := range m.Files {
					if m.Files[i].Path == "snapshot.db" {
						m.Files[i].SHA256 = strings.Repeat("a", 64)
					}
				}
			})
		}},
		{name: "unknown manifest version", want: artifact.ErrUnknownManifestVersion, do: func(t *testing.T, g string, m *artifact.Manifest) {
			putObject(t, bucket, prefix+g+"/manifest.json", []byte(`{"kind":"SeedGeneration","manifestVersion":7}`))
		}},
		{name: "manifest moved to another generation", want: artifact.ErrManifestInvalid, do: func(t *testing.T, g string, m *artifact.Manifest) {
			other := publish(t, s, identity(g+"-src"), map[string][]byte{"snapshot.db": []byte("x")})
			b, _ := other.Manifest.Encode()
			putObject(t, bucket, prefix+g+"/manifest.json", b)
		}},
		{name: "older than the boundary", want: artifact.ErrStale, expect: artifact.Expect{MinRevision: 5000}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := "tamper-" + string(rune('a'+i))
			res := publish(t, s, identity(g), files)
			if tc.do != nil {
				tc.do(t, g, res.Manifest)
			}
			_, err := s.Verify(ctx, g, tc.expect, nil)
			log.errf(err)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify: err = %v, want %v", err, tc.want)
			}
			dataDir := existingDataDir(t)
			before := treeDigest(t, dataDir)
			_, err = artifact.Restore(ctx, s, g, artifact.RestoreOptions{DataDir: dataDir, Expect: tc.expect, Replace: true})
			log.errf(err)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Restore: err = %v, want %v", err, tc.want)
			}
			if after := treeDigest(t, dataDir); after != before {
				t.Fatalf("the refused restore changed the target directory or its parent")
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dataDir), "escape")); err == nil {
				t.Fatal("a file escaped the staging directory")
			}
		})
	}
	log.assertNoSecrets(t, s3srv.Secrets())
}

// A stream that breaks off mid-file is refused as truncated, through a
// real S3 client talking to the server via a proxy that cuts responses.
func TestTruncatedStream(t *testing.T) {
	s, bucket := openS3(t)
	ctx := deadline(t)
	publish(t, s, identity("trunc"), map[string][]byte{"snapshot.db": randBytes(t, 512<<10)})
	target, _ := url.Parse(s3srv.Endpoint)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method == http.MethodGet && strings.Contains(r.Request.URL.Path, "/uploads/") {
			r.Body = &cutBody{r: r.Body, left: 100 << 10}
		}
		return nil
	}
	rp.ErrorLog = log.New(io.Discard, "", 0)
	proxy := httptest.NewServer(rp)
	defer proxy.Close()
	u := strings.Replace(s3srv.URL(bucket, prefix), s3srv.Endpoint, proxy.URL, 1)
	ps, err := artifact.OpenStore(ctx, u, artifact.Options{Credentials: s3srv.Credentials()})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	if _, err := ps.Verify(ctx, "trunc", artifact.Expect{}, nil); !errors.Is(err, artifact.ErrTruncated) {
		t.Fatalf("Verify through a cutting proxy: err = %v, want ErrTruncated", err)
	}
	dataDir := existingDataDir(t)
	before := treeDigest(t, dataDir)
	if _, err := artifact.Restore(ctx, ps, "trunc", artifact.RestoreOptions{DataDir: dataDir, Replace: true}); !errors.Is(err, artifact.ErrTruncated) {
		t.Fatalf("Restore through a cutting proxy: err = %v, want ErrTruncated", err)
	}
	if treeDigest(t, dataDir) != before {
		t.Fatal("the refused restore changed the target")
	}
	// The same generation read directly is fine: the proxy did it.
	if _, err := s.Verify(ctx, "trunc", artifact.Expect{}, nil); err != nil {
		t.Fatal(err)
	}
}

// cutBody ends a response body with an error after left bytes, as a
// dropped connection does.
type cutBody struct {
	r    io.ReadCloser
	left int
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if len(p) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= n
	return n, err
}

func (c *cutBody) Close() error { return c.r.Close() }

func TestVerifyReader(t *testing.T) {
	data := []byte("hello, generation")
	sum := sha256.Sum256(data)
	f := artifact.File{Path: "x", Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	var out bytes.Buffer
	if n, err := artifact.VerifyReader(bytes.NewReader(data), f, &out); err != nil || n != f.Size || out.String() != string(data) {
		t.Fatalf("good stream: n=%d err=%v out=%q", n, err, out.String())
	}
	for name, tc := range map[string]struct {
		r    io.Reader
		want error
	}{
		"short":          {bytes.NewReader(data[:5]), artifact.ErrTruncated},
		"broken":         {io.MultiReader(bytes.NewReader(data[:5]), errReader{}), artifact.ErrTruncated},
		"long":           {bytes.NewReader(append(data, '!')), artifact.ErrSizeMismatch},
		"different byte": {bytes.NewReader(bytes.ToUpper(data)), artifact.ErrChecksumMismatch},
	} {
		if _, err := artifact.VerifyReader(tc.r, f, io.Discard); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }
