package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/storetest"
	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
)

// captureEnv is one real etcd member holding data and a real S3 store
// (versitygw): what a capture pod sees.
type captureEnv struct {
	endpoint string
	store    *storetest.Server
	url      string
	ids      struct{ member, cluster string }
}

func newCaptureEnv(t *testing.T) *captureEnv {
	t.Helper()
	c := testenv.EtcdCluster(t, etcdcluster.Options{Members: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := storetest.Start(ctx, testenv.BinDir(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	bucket, err := srv.CreateBucket(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(c.Members[0].ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	e := &captureEnv{endpoint: u.Host, store: srv, url: srv.URL(bucket, "etcd")}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Members[0].ClientURL}, Logger: zap.NewNop(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for i := 0; i < 2000; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("/capture/key-%05d", i), strings.Repeat("v", 200)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := cli.Status(ctx, c.Members[0].ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	e.ids.member, e.ids.cluster = fmt.Sprintf("%x", st.Header.MemberId), fmt.Sprintf("%x", st.Header.ClusterId)
	return e
}

func (e *captureEnv) open(t *testing.T) *artifact.Store {
	t.Helper()
	s, err := artifact.OpenStore(context.Background(), e.url, artifact.Options{Credentials: e.store.Credentials()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// uploads lists the object keys under generation g's uploads.
func uploads(t *testing.T, s *artifact.Store, g string) []artifact.UploadInfo {
	t.Helper()
	entries, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []artifact.UploadInfo
	for _, en := range entries {
		if en.Generation == g {
			out = append(out, en.Uploads...)
		}
	}
	return out
}

// hactl-capture (the agent image's capture binary) and `kubectl-hactl
// agent capture`, each run in a process of its own as a capture pod runs
// it (store credentials from the environment), stream a real member's
// snapshot into an upload and publish nothing; the receipt on the last
// log line is enough for the lock holder to publish the upload
// (AdoptCapture, Publish), and the published generation verifies byte
// for byte. A member answering with another member ID is refused (exit 5)
// and its upload removed. No credential appears in the output.
func TestAgentCaptureUploadsUnpublished(t *testing.T) {
	testenv.SkipShort(t)
	e := newCaptureEnv(t)
	s := e.open(t)
	ctx := context.Background()
	bin := t.TempDir()
	if err := e2esuite.Build(bin, e2esuite.Capture); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cmd  func(args ...string) (*exec.Cmd, *bytes.Buffer)
	}{
		{"hactl-capture", func(args ...string) (*exec.Cmd, *bytes.Buffer) {
			cmd := exec.Command(filepath.Join(bin, e2esuite.Capture), args...)
			cmd.Env = append(os.Environ(), e.store.Env()...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			return cmd, &out
		}},
		{"kubectl-hactl agent capture", func(args ...string) (*exec.Cmd, *bytes.Buffer) {
			return helper(t, "cli", e.store.Env(), append([]string{"agent", "capture"}, args...)...)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := func(g, memberID string) (string, int) {
				cmd, out := c.cmd("--store", e.url, "--generation", g,
					"--endpoint", e.endpoint, "--member", "etcd-0", "--expect-member-id", memberID, "--expect-cluster-id", e.ids.cluster,
					"--source-namespace", "db", "--source-cluster", "etcd", "-o", "json")
				err := cmd.Run()
				var ee interface{ ExitCode() int }
				if errors.As(err, &ee) {
					return out.String(), ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				return out.String(), 0
			}
			g := "cap-" + strings.Fields(c.name)[0]
			out, code := run(g, e.ids.member)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, out)
			}
			for _, secret := range e.store.Secrets() {
				if strings.Contains(out, secret) {
					t.Fatal("a store credential appears in the agent's output")
				}
			}
			if _, err := s.ReadManifest(ctx, g); !errors.Is(err, artifact.ErrNoManifest) {
				t.Fatalf("after the agent: %v, want no manifest (the agent never publishes)", err)
			}
			_, rc := artifact.LastCaptureLines([]byte(out))
			if rc == nil || rc.Kind != artifact.CaptureReceiptKind || rc.Identity == nil {
				t.Fatalf("no receipt in the agent's output:\n%s", out)
			}
			if rc.Identity.SourceMemberID != e.ids.member || rc.Identity.ClusterID != e.ids.cluster || rc.Bytes < 2000*200 {
				t.Fatalf("receipt: %+v, want member %s of cluster %s and at least %d bytes", rc.Identity, e.ids.member, e.ids.cluster, 2000*200)
			}
			up, err := s.AdoptCapture(rc, g)
			if err != nil {
				t.Fatal(err)
			}
			res, err := up.Publish(ctx, *rc.Identity)
			if err != nil {
				t.Fatal(err)
			}
			if res.Manifest.Source.Member != "etcd-0" || res.Manifest.Upload != rc.Upload {
				t.Fatalf("manifest: %+v", res.Manifest)
			}
			if _, err := s.Verify(ctx, g, artifact.Expect{ClusterID: e.ids.cluster}, nil); err != nil {
				t.Fatalf("the published generation does not verify: %v", err)
			}
			// A receipt for another generation is refused by AdoptCapture.
			if _, err := s.AdoptCapture(rc, g+"-other"); err == nil {
				t.Fatalf("a receipt of %s was adopted as %s-other", g, g)
			}

			refused := g + "-refused"
			out, code = run(refused, "1234567890abcdef")
			if code != ExitRefused {
				t.Fatalf("a member with another ID: exit %d, want %d\n%s", code, ExitRefused, out)
			}
			if _, rc := artifact.LastCaptureLines([]byte(out)); rc == nil || rc.Kind != artifact.CaptureFailedKind || !rc.SourceChanged {
				t.Fatalf("want a CaptureFailed line with sourceChanged:\n%s", out)
			}
			if left := uploads(t, s, refused); len(left) != 0 {
				t.Fatalf("the refused capture left uploads %v", left)
			}
		})
	}
}

// LastCaptureLines takes the last progress count and the last receipt or
// failure, skipping text and foreign JSON.
func TestLastCaptureLines(t *testing.T) {
	log := strings.Join([]string{
		`{"kind":"CaptureProgress","bytes":10}`,
		`some text`,
		`{"kind":"SeedRestoreProgress","bytes":99}`,
		`{"kind":"CaptureProgress","bytes":20}`,
		`{not json`,
		`{"kind":"CaptureFailed","error":"boom"}`,
		`{"kind":"CaptureReceipt","upload":"u1","generation":"g"}`,
	}, "\n")
	n, last := artifact.LastCaptureLines([]byte(log))
	if n != 20 || last == nil || last.Kind != artifact.CaptureReceiptKind || last.Upload != "u1" {
		t.Fatalf("got %d, %+v", n, last)
	}
	if n, last := artifact.LastCaptureLines(nil); n != 0 || last != nil {
		t.Fatalf("empty log: %d, %+v", n, last)
	}
}

// hactl-capture, built as the agent image ships it (agent.CaptureBuildTags),
// carries the s3:// and file:// drivers only: a gs:// or azblob:// store is
// refused before anything is dialled, saying which binary has the driver
// (hactl's capture pods for those stores run kubectl-hactl agent capture).
func TestHactlCaptureRefusesStoresItHasNoDriverFor(t *testing.T) {
	testenv.SkipShort(t)
	bin := t.TempDir()
	if err := e2esuite.Build(bin, e2esuite.Capture); err != nil {
		t.Fatal(err)
	}
	for _, store := range []string{"gs://seeds/etcd", "azblob://seeds/etcd"} {
		cmd := exec.Command(filepath.Join(bin, e2esuite.Capture), "--store", store, "--generation", "g1", "--endpoint", "127.0.0.1:1", "-o", "json")
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("%s: %v, want exit 1\n%s", store, err, out)
		}
		_, last := artifact.LastCaptureLines(out)
		if last == nil || last.Kind != artifact.CaptureFailedKind || !strings.Contains(last.Error, "s3:// and file:// drivers only") ||
			!strings.Contains(last.Error, "kubectl-hactl agent capture") {
			t.Fatalf("%s: want a CaptureFailed line naming the drivers it has:\n%s", store, out)
		}
	}
}
