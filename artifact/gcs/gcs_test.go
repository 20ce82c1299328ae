package gcs

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

const testBucket = "hactl-test"

// newFakeGCS starts an in-process fake-gcs-server on a free loopback port
// with one empty bucket, testBucket.
func newFakeGCS(t testing.TB) *fakestorage.Server {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: testBucket})
	return srv
}

// openTest opens testBucket on srv anonymously. pageSize > 0 overrides the
// default listing page size; client may be nil.
func openTest(t testing.TB, endpoint string, pageSize int, client *http.Client) *blob.Bucket {
	t.Helper()
	drv, err := openDriver(context.Background(), testBucket, Options{Endpoint: endpoint, Anonymous: true, HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	if pageSize > 0 {
		drv.pageSize = pageSize
	}
	drv.retryDelay = time.Millisecond
	b := blob.NewBucket(drv)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	p := make([]byte, n)
	if _, err := rand.Read(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// countingTransport counts the requests whose path contains substr.
type countingTransport struct {
	substr string
	n      atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.Contains(req.URL.EscapedPath(), c.substr) {
		c.n.Add(1)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestRoundTrip writes small and multi-MiB objects and reads them back in
// full and in ranges, checking the reader's Size, ModTime and ContentType.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	srv := newFakeGCS(t)
	b := openTest(t, srv.URL(), 0, nil)

	if err := b.WriteAll(ctx, "small.txt", []byte("hello, gcs"), &blob.WriterOptions{ContentType: "text/plain"}); err != nil {
		t.Fatal(err)
	}
	got, err := b.ReadAll(ctx, "small.txt")
	if err != nil || string(got) != "hello, gcs" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}

	big := randomBytes(t, 5<<20+123) // several pipe writes and chunks
	before := time.Now().Add(-time.Minute)
	if err := b.WriteAll(ctx, "dir/big.bin", big, &blob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
		t.Fatal(err)
	}
	got, err = b.ReadAll(ctx, "dir/big.bin")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("big round trip: %d bytes (want %d), %v", len(got), len(big), err)
	}

	cases := []struct {
		offset, length int64
		want           []byte
	}{
		{3<<20 + 7, 1000, big[3<<20+7 : 3<<20+7+1000]},
		{5 << 20, -1, big[5<<20:]},
		{0, 10, big[:10]},
		{int64(len(big)) - 5, 100, big[len(big)-5:]}, // runs past the end
		{int64(len(big)) + 10, -1, nil},              // starts past the end
		{42, 0, nil},
	}
	for _, c := range cases {
		r, err := b.NewRangeReader(ctx, "dir/big.bin", c.offset, c.length, nil)
		if err != nil {
			t.Fatalf("NewRangeReader(%d, %d): %v", c.offset, c.length, err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("range (%d, %d): got %d bytes, want %d, err %v", c.offset, c.length, len(got), len(c.want), err)
		}
		if r.Size() != int64(len(big)) || r.ContentType() != "application/octet-stream" || r.ModTime().Before(before) {
			t.Errorf("range (%d, %d): Size %d, ContentType %q, ModTime %v", c.offset, c.length, r.Size(), r.ContentType(), r.ModTime())
		}
	}
}

// TestAttributes checks Size, ContentType, MD5, ETag, ModTime and Metadata,
// and that a ContentMD5 matching the bytes is accepted.
func TestAttributes(t *testing.T) {
	ctx := context.Background()
	b := openTest(t, newFakeGCS(t).URL(), 0, nil)
	data := []byte(`{"kind":"manifest"}`)
	sum := md5.Sum(data)
	opts := &blob.WriterOptions{
		ContentType: "application/json",
		Metadata:    map[string]string{"hactl-digest": "sha256:abc", "owner": "test"},
		ContentMD5:  sum[:],
	}
	start := time.Now().Add(-time.Minute)
	if err := b.WriteAll(ctx, "m/manifest.json", data, opts); err != nil {
		t.Fatal(err)
	}
	a, err := b.Attributes(ctx, "m/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	if a.Size != int64(len(data)) || a.ContentType != "application/json" || !bytes.Equal(a.MD5, sum[:]) {
		t.Errorf("Size %d ContentType %q MD5 %x; want %d, application/json, %x", a.Size, a.ContentType, a.MD5, len(data), sum)
	}
	if a.ModTime.Before(start) || a.ModTime.After(time.Now().Add(time.Minute)) {
		t.Errorf("ModTime %v is not about now", a.ModTime)
	}
	if a.ETag == "" || !strings.HasPrefix(a.ETag, `"`) {
		t.Errorf("ETag %q, want a quoted value", a.ETag)
	}
	if a.Metadata["hactl-digest"] != "sha256:abc" || a.Metadata["owner"] != "test" || len(a.Metadata) != 2 {
		t.Errorf("Metadata %v", a.Metadata)
	}
	if _, err := b.Attributes(ctx, "m/missing.json"); gcerrors.Code(err) != gcerrors.NotFound {
		t.Errorf("Attributes of a missing object: %v (code %v), want NotFound", err, gcerrors.Code(err))
	}
}

// TestList covers Prefix, Delimiter and paging over more objects than one
// page, counting the list requests to prove several pages were fetched.
func TestList(t *testing.T) {
	ctx := context.Background()
	srv := newFakeGCS(t)
	ct := &countingTransport{substr: "/o"}
	b := openTest(t, srv.URL(), 4, &http.Client{Transport: ct})
	var many []string
	for i := range 11 {
		many = append(many, fmt.Sprintf("many/%02d", i))
	}
	keys := append([]string{"dir/a/1", "dir/a/2", "dir/b", "dir/c/x", "dirt", "other"}, many...)
	for _, k := range keys {
		if err := b.WriteAll(ctx, k, []byte(k), nil); err != nil {
			t.Fatal(err)
		}
	}

	list := func(opts *blob.ListOptions) []string {
		t.Helper()
		var out []string
		it := b.List(opts)
		for {
			o, err := it.Next(ctx)
			if err == io.EOF {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.IsDir {
				out = append(out, o.Key+" (dir)")
			} else {
				if o.Size != int64(len(o.Key)) || o.ModTime.IsZero() || len(o.MD5) != md5.Size {
					t.Errorf("%s: Size %d ModTime %v MD5 %x", o.Key, o.Size, o.ModTime, o.MD5)
				}
				out = append(out, o.Key)
			}
		}
	}
	ct.n.Store(0)
	if got := list(&blob.ListOptions{Prefix: "many/"}); strings.Join(got, ",") != strings.Join(many, ",") {
		t.Errorf("List many/ = %v, want %v", got, many)
	}
	if n := ct.n.Load(); n != 3 {
		t.Errorf("listing 11 objects with page size 4 took %d requests, want 3", n)
	}
	want := "dir/a/ (dir),dir/b,dir/c/ (dir)"
	if got := list(&blob.ListOptions{Prefix: "dir/", Delimiter: "/"}); strings.Join(got, ",") != want {
		t.Errorf("List dir/ with delimiter = %v, want %s", got, want)
	}
	want = "dir/ (dir),dirt,many/ (dir),other"
	if got := list(&blob.ListOptions{Delimiter: "/"}); strings.Join(got, ",") != want {
		t.Errorf("List / with delimiter = %v, want %s", got, want)
	}

	// ListPage passes its page size through and returns the page token.
	page, next, err := b.ListPage(ctx, blob.FirstPageToken, 5, &blob.ListOptions{Prefix: "many/"})
	if err != nil || len(page) != 5 || len(next) == 0 || page[0].Key != "many/00" {
		t.Fatalf("first page: %d objects, token %q, %v", len(page), next, err)
	}
	page, next, err = b.ListPage(ctx, next, 5, &blob.ListOptions{Prefix: "many/"})
	if err != nil || len(page) != 5 || page[0].Key != "many/05" || len(next) == 0 {
		t.Fatalf("second page: %d objects starting %v, token %q, %v", len(page), page, next, err)
	}
}

// TestIfNotExist checks that a second IfNotExist write is refused with
// FailedPrecondition and leaves the first object intact.
func TestIfNotExist(t *testing.T) {
	ctx := context.Background()
	b := openTest(t, newFakeGCS(t).URL(), 0, nil)
	opts := &blob.WriterOptions{IfNotExist: true}
	if err := b.WriteAll(ctx, "once", []byte("first"), opts); err != nil {
		t.Fatal(err)
	}
	err := b.WriteAll(ctx, "once", []byte("second"), opts)
	if gcerrors.Code(err) != gcerrors.FailedPrecondition {
		t.Fatalf("second IfNotExist write: %v (code %v), want FailedPrecondition", err, gcerrors.Code(err))
	}
	if got, err := b.ReadAll(ctx, "once"); err != nil || string(got) != "first" {
		t.Errorf("after the refused write: %q, %v", got, err)
	}
	// Without IfNotExist the object is replaced.
	if err := b.WriteAll(ctx, "once", []byte("third"), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.ReadAll(ctx, "once"); string(got) != "third" {
		t.Errorf("after an overwrite: %q", got)
	}
}

// TestDelete checks Delete and the NotFound codes of every operation on a
// missing object.
func TestDelete(t *testing.T) {
	ctx := context.Background()
	b := openTest(t, newFakeGCS(t).URL(), 0, nil)
	if err := b.WriteAll(ctx, "gone/soon", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "gone/soon"); err != nil {
		t.Fatal(err)
	}
	_, errAttr := b.Attributes(ctx, "gone/soon")
	_, errRead := b.NewReader(ctx, "gone/soon", nil)
	_, errRange := b.NewRangeReader(ctx, "gone/soon", 1, 1, nil)
	errDel := b.Delete(ctx, "gone/soon")
	for name, err := range map[string]error{"Attributes": errAttr, "NewReader": errRead, "NewRangeReader": errRange, "Delete": errDel} {
		if gcerrors.Code(err) != gcerrors.NotFound {
			t.Errorf("%s after Delete: %v (code %v), want NotFound", name, err, gcerrors.Code(err))
		}
	}
	if ok, err := b.Exists(ctx, "gone/soon"); ok || err != nil {
		t.Errorf("Exists = %v, %v", ok, err)
	}
}

// TestAbortedWriteLeavesNoObject cancels writers after bytes reached the
// server, and fails one with a wrong ContentMD5: none may create or
// replace an object.
func TestAbortedWriteLeavesNoObject(t *testing.T) {
	ctx := context.Background()
	b := openTest(t, newFakeGCS(t).URL(), 0, nil)
	if err := b.WriteAll(ctx, "kept", []byte("original"), nil); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"new", "kept"} {
		wctx, cancel := context.WithCancel(ctx)
		w, err := b.NewWriter(wctx, key, &blob.WriterOptions{ContentType: "application/octet-stream"})
		if err != nil {
			t.Fatal(err)
		}
		// Write returns once the transport has taken the bytes.
		if _, err := w.Write(randomBytes(t, 2<<20)); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := w.Close(); gcerrors.Code(err) != gcerrors.Canceled {
			t.Errorf("%s: Close after cancel: %v (code %v), want Canceled", key, err, gcerrors.Code(err))
		}
	}
	if ok, err := b.Exists(ctx, "new"); ok || err != nil {
		t.Errorf("a cancelled write created an object (Exists %v, %v)", ok, err)
	}
	if got, err := b.ReadAll(ctx, "kept"); err != nil || string(got) != "original" {
		t.Errorf("a cancelled write replaced an object: %d bytes, %v", len(got), err)
	}

	wrong := md5.Sum([]byte("something else"))
	err := b.WriteAll(ctx, "bad-md5", []byte("payload"), &blob.WriterOptions{ContentMD5: wrong[:]})
	if err == nil {
		t.Fatal("a write with a wrong ContentMD5 succeeded")
	}
	if ok, err := b.Exists(ctx, "bad-md5"); ok || err != nil {
		t.Errorf("a write with a wrong ContentMD5 left an object (Exists %v, %v)", ok, err)
	}
}

// TestServerChecksMD5 sends a wrong md5Hash straight to the driver (the
// portable type would catch it first) to prove the service is asked to
// verify it.
func TestServerChecksMD5(t *testing.T) {
	ctx := context.Background()
	srv := newFakeGCS(t)
	drv, err := openDriver(ctx, testBucket, Options{Endpoint: srv.URL(), Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	wrong := md5.Sum([]byte("not the payload"))
	w, err := drv.NewTypedWriter(ctx, "k", "text/plain", &driver.WriterOptions{ContentMD5: wrong[:]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("payload")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil {
		t.Fatal("the service accepted a wrong md5Hash")
	}
	if _, err := srv.GetObject(testBucket, "k"); err == nil {
		t.Error("an object exists after the refused upload")
	}
}

// TestKeys round-trips awkward keys and checks the object names the
// service stores: the whole name is one escaped path segment, and CR, LF,
// "../" and "__0x" are escaped as gcsblob does.
func TestKeys(t *testing.T) {
	ctx := context.Background()
	srv := newFakeGCS(t)
	b := openTest(t, srv.URL(), 0, nil)
	stored := map[string]string{
		"a/b/c":             "a/b/c",
		"a%2Fb":             "a%2Fb",
		"sp ace?q=1#frag+;": "sp ace?q=1#frag+;",
		"ünï/☺":             "ünï/☺",
		"line\nbreak\r":     "line__0xa__break__0xd__",
		"x/../y":            "x/..__0x2f__y",
		"__0x41__":          "__0x5f___0x41__",
		"..":                "..",
	}
	for key, name := range stored {
		if err := b.WriteAll(ctx, key, []byte(key), nil); err != nil {
			t.Fatalf("write %q: %v", key, err)
		}
		if _, err := srv.GetObject(testBucket, name); err != nil {
			t.Errorf("key %q: no object named %q on the server: %v", key, name, err)
		}
		if got, err := b.ReadAll(ctx, key); err != nil || string(got) != key {
			t.Errorf("read %q: %q, %v", key, got, err)
		}
		it := b.List(&blob.ListOptions{Prefix: key})
		if o, err := it.Next(ctx); err != nil || o.Key != key {
			t.Errorf("list %q: %+v, %v", key, o, err)
		}
	}
}

func TestEscapeRoundTrip(t *testing.T) {
	for _, k := range []string{
		"", "plain", "__0x", "__0x__", "___0x2f__", "__0x2f/", "a\n__0x", "__0x5f__\r", "../..", "__0xzz__", "_\n_", "__0x110000__",
	} {
		if got := unescapeKey(escapeKey(k)); got != k {
			t.Errorf("unescape(escape(%q)) = %q (escaped %q)", k, got, escapeKey(k))
		}
	}
	// Names written by gcsblob for keys without "__0x" read back the same.
	if escapeKey("a\r\n../b") != "a__0xd____0xa__..__0x2f__b" {
		t.Errorf("escapeKey differs from gcsblob: %q", escapeKey("a\r\n../b"))
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"__0x41__", "a/../b", "x\ny", "_____0x1__"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !strings.ContainsRune(s, '\uFFFD') && strings.ToValidUTF8(s, "") == s {
			if got := unescapeKey(escapeKey(s)); got != s {
				t.Errorf("unescape(escape(%q)) = %q", s, got)
			}
		}
	})
}

// TestCopy checks Copy through the rewrite API, metadata included.
func TestCopy(t *testing.T) {
	ctx := context.Background()
	b := openTest(t, newFakeGCS(t).URL(), 0, nil)
	opts := &blob.WriterOptions{ContentType: "text/plain", Metadata: map[string]string{"k": "v"}}
	if err := b.WriteAll(ctx, "src/obj", []byte("copy me"), opts); err != nil {
		t.Fatal(err)
	}
	if err := b.Copy(ctx, "dst/obj", "src/obj", nil); err != nil {
		t.Fatal(err)
	}
	got, err := b.ReadAll(ctx, "dst/obj")
	if a, aerr := b.Attributes(ctx, "dst/obj"); err != nil || aerr != nil || string(got) != "copy me" || a.Metadata["k"] != "v" {
		t.Errorf("copy: %q, %v, %v", got, err, aerr)
	}
	if err := b.Copy(ctx, "dst/2", "src/missing", nil); gcerrors.Code(err) != gcerrors.NotFound {
		t.Errorf("copy of a missing object: %v, want NotFound", err)
	}
}

func TestSignedURLUnimplemented(t *testing.T) {
	b := openTest(t, newFakeGCS(t).URL(), 0, nil)
	_, err := b.SignedURL(context.Background(), "k", nil)
	if gcerrors.Code(err) != gcerrors.Unimplemented {
		t.Errorf("SignedURL: %v, want Unimplemented", err)
	}
}

// TestRetry puts a proxy in front of the server that answers the first
// GETs with 503: reads succeed after retrying; a 404 is not retried.
func TestRetry(t *testing.T) {
	ctx := context.Background()
	srv := newFakeGCS(t)
	target, _ := url.Parse(srv.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	failures, gets := 0, 0
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Method == http.MethodGet {
			gets++
			if failures > 0 {
				failures--
				mu.Unlock()
				http.Error(w, `{"error":{"message":"backend error"}}`, http.StatusServiceUnavailable)
				return
			}
		}
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	b := openTest(t, front.URL, 0, nil)
	if err := b.WriteAll(ctx, "r", []byte("retried"), nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	failures, gets = 2, 0
	mu.Unlock()
	if got, err := b.ReadAll(ctx, "r"); err != nil || string(got) != "retried" {
		t.Fatalf("read through two 503s: %q, %v", got, err)
	}
	mu.Lock()
	if gets != 3 {
		t.Errorf("%d GETs, want 3", gets)
	}
	failures, gets = maxAttempts, 0
	mu.Unlock()
	if _, err := b.Attributes(ctx, "r"); gcerrors.Code(err) != gcerrors.Internal || !strings.Contains(err.Error(), "backend error") {
		t.Errorf("after %d 503s: %v (code %v), want Internal", maxAttempts, err, gcerrors.Code(err))
	}
	mu.Lock()
	gets = 0
	mu.Unlock()
	if _, err := b.Attributes(ctx, "missing"); gcerrors.Code(err) != gcerrors.NotFound {
		t.Errorf("missing: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if gets != 1 {
		t.Errorf("a 404 was sent %d times, want 1", gets)
	}
}

func TestErrorCode(t *testing.T) {
	api := func(status int) error { return &apiError{op: "read", bucket: "b", key: "k", status: status, msg: "m"} }
	cases := []struct {
		err  error
		want gcerrors.ErrorCode
	}{
		{api(404), gcerrors.NotFound},
		{api(412), gcerrors.FailedPrecondition},
		{api(401), gcerrors.PermissionDenied},
		{api(403), gcerrors.PermissionDenied},
		{api(400), gcerrors.InvalidArgument},
		{api(429), gcerrors.ResourceExhausted},
		{api(500), gcerrors.Internal},
		{api(503), gcerrors.Internal},
		{api(418), gcerrors.Unknown},
		{&apiError{err: context.Canceled}, gcerrors.Canceled},
		{&apiError{err: fmt.Errorf("x: %w", context.DeadlineExceeded)}, gcerrors.DeadlineExceeded},
		{&apiError{err: &authError{msg: "no"}}, gcerrors.PermissionDenied},
		{&apiError{err: errors.New("connection refused")}, gcerrors.Unknown},
		{errUnimplemented, gcerrors.Unimplemented},
		{errEmptyKey, gcerrors.InvalidArgument},
	}
	for _, c := range cases {
		if got := errorCode(c.err); got != c.want {
			t.Errorf("errorCode(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestOpenBucketValidation(t *testing.T) {
	ctx := context.Background()
	for name, o := range map[string]Options{
		"bad endpoint":  {Endpoint: "ftp://x", Anonymous: true},
		"no host":       {Endpoint: "http://", Anonymous: true},
		"anon and json": {Anonymous: true, CredentialsJSON: []byte(`{}`)},
	} {
		if _, err := OpenBucket(ctx, "b", o); err == nil {
			t.Errorf("%s: OpenBucket succeeded", name)
		}
	}
	if _, err := OpenBucket(ctx, "", Options{Anonymous: true}); err == nil {
		t.Error("OpenBucket with no bucket name succeeded")
	}
}
