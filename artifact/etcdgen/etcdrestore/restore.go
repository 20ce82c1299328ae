// Package etcdrestore is the restore half of an etcd seed generation:
// Restorer, the artifact.Materializer for etcd, turns a verified snapshot
// into a member data directory with etcd's own restore logic
// (go.etcd.io/etcd/etcdutl/v3/snapshot, as `etcdutl snapshot restore`
// does), then checks the result's integrity before it is activated.
// Restoring every member of a cluster from one generation, each with the
// same --initial-cluster and token, yields a new cluster with a new
// cluster ID: this is etcd's documented quorum-loss recovery.
//
// It is apart from etcdgen (the capture half) because etcd's restore
// logic brings etcd's server packages, whose initialisation the capture
// binary (hactl-capture) does without.
package etcdrestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/etcdgen"
)

// Engine is the engine whose generations this package restores.
const Engine = etcdgen.Engine

// Restorer turns an etcd generation into the data directory of one
// member, as `etcdutl snapshot restore` would with the same flags.
type Restorer struct {
	// Name is the member's --name.
	Name string
	// InitialCluster is --initial-cluster ("name=peerURL,...") of the
	// restored cluster; every member must be restored with the same one.
	InitialCluster string
	// PeerURLs are the member's --initial-advertise-peer-urls.
	PeerURLs []string
	// InitialClusterToken is --initial-cluster-token.
	InitialClusterToken string
	// RevisionBump raises the restored revision (with MarkCompacted) so
	// that watchers never see revisions go back.
	RevisionBump  uint64
	MarkCompacted bool
	// Logger receives etcd's restore log (nil: silent).
	Logger *zap.Logger
}

// Validate checks the flags before anything is downloaded.
func (r Restorer) Validate() error {
	var missing []string
	if r.Name == "" {
		missing = append(missing, "--name")
	}
	if r.InitialCluster == "" {
		missing = append(missing, "--initial-cluster")
	}
	if len(r.PeerURLs) == 0 {
		missing = append(missing, "--initial-advertise-peer-urls")
	}
	if len(missing) > 0 {
		return fmt.Errorf("an etcd restore needs %s (or the ETCD_* environment variables of the same names)", strings.Join(missing, ", "))
	}
	if r.RevisionBump > 0 != r.MarkCompacted {
		return errors.New("--bump-revision and --mark-compacted go together")
	}
	found := false
	for _, kv := range strings.Split(r.InitialCluster, ",") {
		name, url, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return fmt.Errorf("--initial-cluster entry %q is not name=peerURL", kv)
		}
		if name == r.Name {
			found = true
			for _, p := range r.PeerURLs {
				if p == url {
					return nil
				}
			}
		}
	}
	if !found {
		return fmt.Errorf("--initial-cluster has no entry for member %q", r.Name)
	}
	return fmt.Errorf("--initial-cluster gives member %q another peer URL than --initial-advertise-peer-urls %v", r.Name, r.PeerURLs)
}

func (r Restorer) logger() *zap.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return zap.NewNop()
}

// Materialize restores the snapshot in src into the new data directory
// dst with etcd's restore logic, which checks the snapshot's own SHA-256
// trailer as well.
func (r Restorer) Materialize(ctx context.Context, m *artifact.Manifest, src, dst string) error {
	if m.Identity.Engine != etcdgen.Engine {
		return fmt.Errorf("generation %s holds %s data, not etcd", m.Identity.Generation, m.Identity.Engine)
	}
	if err := r.Validate(); err != nil {
		return err
	}
	if len(m.Files) != 1 || m.Files[0].Path != etcdgen.SnapshotFile {
		return fmt.Errorf("an etcd generation holds exactly %s; generation %s lists %d file(s)", etcdgen.SnapshotFile, m.Identity.Generation, len(m.Files))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := snapshot.NewV3(r.logger()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        filepath.Join(src, etcdgen.SnapshotFile),
		Name:                r.Name,
		OutputDataDir:       dst,
		PeerURLs:            r.PeerURLs,
		InitialCluster:      r.InitialCluster,
		InitialClusterToken: r.InitialClusterToken,
		RevisionBump:        r.RevisionBump,
		MarkCompacted:       r.MarkCompacted,
	})
	if err != nil {
		return fmt.Errorf("etcd snapshot restore: %w", err)
	}
	return nil
}

// Check opens the restored backend read-only and walks it: the bolt
// integrity check and every key must parse.
func (r Restorer) Check(_ context.Context, m *artifact.Manifest, dst string) error {
	db := filepath.Join(dst, "member", "snap", "db")
	if _, err := os.Stat(db); err != nil {
		return fmt.Errorf("the restored data directory has no backend: %w", err)
	}
	st, err := snapshot.NewV3(r.logger()).Status(db)
	if err != nil {
		return fmt.Errorf("the restored backend of generation %s does not check out: %w", m.Identity.Generation, err)
	}
	if st.TotalSize <= 0 {
		return fmt.Errorf("the restored backend of generation %s is empty", m.Identity.Generation)
	}
	return nil
}

// Status is the summary of a restored backend (for messages).
type Status = snapshot.Status

// BackendStatus reads the backend of a data directory.
func BackendStatus(dataDir string) (Status, error) {
	return snapshot.NewV3(zap.NewNop()).Status(filepath.Join(dataDir, "member", "snap", "db"))
}
