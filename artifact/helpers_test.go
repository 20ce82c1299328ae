package artifact_test

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/storetest"
	"github.com/hactl-dev/hactl/model"
)

// openS3 opens a fresh store in a new bucket of the package's server, with
// credentials from a Secret reference.
func openS3(t *testing.T) (*artifact.Store, string) {
	t.Helper()
	if s3srv == nil {
		t.Skip("needs versitygw; skipped under -short")
	}
	ctx := context.Background()
	bucket, err := s3srv.CreateBucket(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	u := s3srv.URL(bucket, "seeds/etcd-main")
	s, err := artifact.OpenStore(ctx, u, artifact.Options{Credentials: s3srv.Credentials()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, bucket
}

// openFile opens a store in a temporary directory.
func openFile(t *testing.T) *artifact.Store {
	t.Helper()
	s, err := artifact.OpenStore(context.Background(), "file://"+t.TempDir()+"/store", artifact.Options{CreateDir: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func identity(g string) artifact.Identity {
	return artifact.Identity{
		Generation: g, Engine: model.Engine("etcd"), EngineVersion: "3.6.0",
		ClusterID: "cdf818194e3a8c32", SourceMemberID: "8e9e05c52164694d",
		RaftTerm: 3, RaftIndex: 1200, Revision: 1001,
	}
}

// publish writes files (path -> content) as generation g.
func publish(t *testing.T, s *artifact.Store, id artifact.Identity, files map[string][]byte) artifact.PublishResult {
	t.Helper()
	return storetest.Publish(t, s, id, artifact.Source{Namespace: "db", Cluster: "etcd-main", Member: "etcd-main-0"}, files)
}

func randBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// outputLog collects everything a test printed or returned, to be searched
// for credentials at the end.
type outputLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *outputLog) add(s string) {
	o.mu.Lock()
	o.b.WriteString(s + "\n")
	o.mu.Unlock()
}

func (o *outputLog) errf(err error) {
	if err != nil {
		o.add(err.Error())
	}
}

func (o *outputLog) assertNoSecrets(t *testing.T, secrets []string) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	all := o.b.String()
	if all == "" {
		t.Fatal("no output collected: the credential check would prove nothing")
	}
	for _, s := range secrets {
		if strings.Contains(all, s) {
			t.Errorf("a credential value appears in the output")
		}
	}
}

func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
