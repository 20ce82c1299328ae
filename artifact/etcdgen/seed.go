package etcdgen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
)

// ErrSourceChanged: the member that answered is not the one the decision
// chose (another member ID or cluster ID behind the same pod).
var ErrSourceChanged = errors.New("seed source changed since the decision")

// SeedRequest describes one seed: capture from Source, publish as
// Generation in Store.
type SeedRequest struct {
	Store      *artifact.Store
	Generation string
	// Source is the member to capture from; Probe says how to reach it
	// (Dial is required; Credentials for TLS).
	Source engine.Target
	Probe  engine.ProbeOptions
	// ExpectClusterID and ExpectMemberID are the cluster and member the
	// decision chose; the snapshot is discarded if the member answers
	// with others. Empty: not checked.
	ExpectClusterID string
	ExpectMemberID  string
	// Info is recorded in the manifest.
	Info      artifact.Source
	CreatedBy string
	// OnPhase is told when a phase starts (capturing, uploading,
	// published); may be nil.
	OnPhase func(phase model.ActionPhase, detail string)
	// Progress receives the bytes streamed so far; may be nil.
	Progress func(n int64)
	// BeforePublish, when set, is asked once the files are uploaded,
	// before publishing (the stored sizes checked, the manifest written):
	// an error (the caller's lock is no longer known to be held)
	// aborts the upload, nothing is published, and the error is returned.
	BeforePublish func() error
	Now           time.Time
}

// SeedResult is what Seed did.
type SeedResult struct {
	Manifest *artifact.Manifest
	// Already: the generation was published before (same cluster); no
	// snapshot was taken.
	Already bool
	Took    time.Duration
}

// Existing checks whether generation g is already published. It returns
// the manifest when it is, for the same cluster (expectClusterID, when
// set); ErrGenerationExists when it belongs to another cluster; nil, nil
// when there is none; and any other error (an invalid manifest holds the
// name too).
func Existing(ctx context.Context, s *artifact.Store, g, expectClusterID string) (*artifact.Manifest, error) {
	m, err := s.ReadManifest(ctx, g)
	switch {
	case errors.Is(err, artifact.ErrNoManifest):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("generation %s exists but its manifest does not validate, so the name is taken: %w", g, err)
	case m.Identity.Engine != model.EngineEtcd || (expectClusterID != "" && !strings.EqualFold(m.Identity.ClusterID, expectClusterID)):
		return m, fmt.Errorf("%w: %s holds %s cluster %s, this is cluster %s; choose another --generation", artifact.ErrGenerationExists, g, m.Identity.Engine, m.Identity.ClusterID, expectClusterID)
	}
	return m, nil
}

// Seed captures and publishes one generation. A generation already
// published for the same cluster is a no-op (Already); any failure leaves
// no published generation (the partial upload is removed, or left for GC
// if the process dies).
func Seed(ctx context.Context, r SeedRequest) (SeedResult, error) {
	start := time.Now()
	if r.Now.IsZero() {
		r.Now = start
	}
	phase := func(p model.ActionPhase, format string, a ...any) {
		if r.OnPhase != nil {
			r.OnPhase(p, fmt.Sprintf(format, a...))
		}
	}
	if m, err := Existing(ctx, r.Store, r.Generation, r.ExpectClusterID); err != nil || m != nil {
		return SeedResult{Manifest: m, Already: m != nil && err == nil, Took: time.Since(start)}, err
	}
	up, err := r.Store.Begin(ctx, r.Generation, artifact.UploadOptions{Source: r.Info, CreatedBy: r.CreatedBy, Now: r.Now})
	if err != nil {
		return SeedResult{}, err
	}
	ok := false
	defer func() {
		if !ok {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = up.Abort(actx)
		}
	}()
	c, err := etcdengine.Open(ctx, r.Source, r.Probe)
	if err != nil {
		return SeedResult{}, err
	}
	defer c.Close()
	phase(model.ActionPhaseCapturing, "streaming a snapshot of %s into %s (upload %s)", r.Source.Member, r.Store, up.ID())
	id, err := Capture(ctx, c, up, r.Progress)
	if err != nil {
		return SeedResult{}, fmt.Errorf("capturing from %s: %w", r.Source.Member, err)
	}
	if (r.ExpectClusterID != "" && !strings.EqualFold(id.ClusterID, r.ExpectClusterID)) ||
		(r.ExpectMemberID != "" && !strings.EqualFold(id.SourceMemberID, r.ExpectMemberID)) {
		return SeedResult{}, fmt.Errorf("%w: %s answered as member %s of cluster %s, the decision chose member %s of cluster %s; the snapshot was discarded",
			ErrSourceChanged, r.Source.Member, id.SourceMemberID, id.ClusterID, r.ExpectMemberID, r.ExpectClusterID)
	}
	var size int64
	for _, f := range up.Files() {
		size += f.Size
	}
	phase(model.ActionPhaseUploading, "uploaded %d bytes (revision %d, term %d); checking the stored files, then writing the manifest", size, id.Revision, id.RaftTerm)
	if r.BeforePublish != nil {
		if err := r.BeforePublish(); err != nil {
			return SeedResult{}, fmt.Errorf("not published: %w", err)
		}
	}
	res, err := up.Publish(ctx, id)
	if err != nil {
		return SeedResult{Manifest: res.Manifest}, err
	}
	ok = true
	phase(model.ActionPhasePublished, "published generation %s (%s, %d bytes)", r.Generation, res.Manifest.Digest, res.Manifest.TotalSize)
	return SeedResult{Manifest: res.Manifest, Already: res.Already, Took: time.Since(start)}, nil
}
