package etcdgen

import (
	"context"
	"io"

	"github.com/hactl-dev/hactl/artifact"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
)

// Engine is the engine whose generations this package captures.
const Engine = etcdengine.Name

// SnapshotFile is the name of the snapshot inside an etcd generation.
const SnapshotFile = "snapshot.db"

// Snapshotter is what Capture needs of a member client
// (*engine/etcd.Client).
type Snapshotter interface {
	Snapshot(ctx context.Context, w io.Writer) (etcdengine.SnapshotInfo, error)
}

// Capture streams a snapshot from c into u as SnapshotFile, reporting the
// bytes streamed so far to progress (may be nil), and returns the identity
// the upload should be published with. On error the file is discarded.
func Capture(ctx context.Context, c Snapshotter, u *artifact.Upload, progress func(n int64)) (artifact.Identity, error) {
	w, err := u.Create(ctx, SnapshotFile)
	if err != nil {
		return artifact.Identity{}, err
	}
	var out io.Writer = w
	if progress != nil {
		out = &progressWriter{w: w, fn: progress}
	}
	info, err := c.Snapshot(ctx, out)
	if err != nil {
		w.Abort()
		return artifact.Identity{}, err
	}
	if err := w.Close(); err != nil {
		return artifact.Identity{}, err
	}
	version := info.StorageVersion
	if version == "" {
		version = "unknown"
	}
	return artifact.Identity{
		Generation:     u.Generation(),
		Engine:         Engine,
		EngineVersion:  version,
		ClusterID:      info.ClusterID,
		SourceMemberID: info.MemberID,
		RaftTerm:       info.RaftTerm,
		RaftIndex:      info.RaftApplied,
		Revision:       info.Revision,
	}, nil
}

type progressWriter struct {
	w  io.Writer
	n  int64
	fn func(int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.n += int64(n)
	p.fn(p.n)
	return n, err
}
