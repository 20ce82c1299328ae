package etcdgen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/seeding"
	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
)

// ErrSourceChanged: the member that answered is not the one the decision
// chose (another member ID or cluster ID behind the same pod); the
// executor's contract names it (seeding.ErrSourceChanged).
var ErrSourceChanged = seeding.ErrSourceChanged

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
	case errors.Is(err, artifact.ErrManifestInvalid) || errors.Is(err, artifact.ErrUnknownManifestVersion) || errors.Is(err, artifact.ErrDigestMismatch):
		return nil, fmt.Errorf("generation %s exists but its manifest does not validate, so the name is taken: %w", g, err)
	case err != nil:
		// The store did not answer (credentials, network): nothing is
		// known about the name.
		return nil, fmt.Errorf("checking whether generation %s is already published: %w", g, err)
	case m.Identity.Engine != Engine || (expectClusterID != "" && !strings.EqualFold(m.Identity.ClusterID, expectClusterID)):
		return m, fmt.Errorf("%w: %s holds %s cluster %s, this is cluster %s; choose another --generation", artifact.ErrGenerationExists, g, m.Identity.Engine, m.Identity.ClusterID, expectClusterID)
	}
	return m, nil
}

// Captured is a snapshot uploaded into its own upload directory and not
// yet published: what a capture pod reports, and what Seed publishes.
type Captured struct {
	Upload   *artifact.Upload
	Identity artifact.Identity
	// Size is the bytes uploaded.
	Size int64
}

// CaptureUpload begins an upload of r.Generation, streams a snapshot of
// r.Source into it while hashing, and checks that the member answered as
// the one the decision chose. It publishes nothing: on any error the
// upload is removed (or left for GC if the process dies), on success it
// is the caller's to publish or abort. r.BeforePublish is not asked.
func CaptureUpload(ctx context.Context, r SeedRequest) (*Captured, error) {
	if r.Now.IsZero() {
		r.Now = time.Now()
	}
	up, err := r.Store.Begin(ctx, r.Generation, artifact.UploadOptions{Source: r.Info, CreatedBy: r.CreatedBy, Now: r.Now})
	if err != nil {
		return nil, err
	}
	ok := false
	defer abortUnless(ctx, up, &ok)
	c, err := etcdengine.Open(ctx, r.Source, r.Probe)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if r.OnPhase != nil {
		r.OnPhase(model.ActionPhaseCapturing, fmt.Sprintf("streaming a snapshot of %s into %s (upload %s)", r.Source.Member, r.Store, up.ID()))
	}
	id, err := Capture(ctx, c, up, r.Progress)
	if err != nil {
		return nil, fmt.Errorf("capturing from %s: %w", r.Source.Member, err)
	}
	if (r.ExpectClusterID != "" && !strings.EqualFold(id.ClusterID, r.ExpectClusterID)) ||
		(r.ExpectMemberID != "" && !strings.EqualFold(id.SourceMemberID, r.ExpectMemberID)) {
		return nil, fmt.Errorf("%w: %s answered as member %s of cluster %s, the decision chose member %s of cluster %s; the snapshot was discarded",
			ErrSourceChanged, r.Source.Member, id.SourceMemberID, id.ClusterID, r.ExpectMemberID, r.ExpectClusterID)
	}
	var size int64
	for _, f := range up.Files() {
		size += f.Size
	}
	ok = true
	return &Captured{Upload: up, Identity: id, Size: size}, nil
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
	if m, err := Existing(ctx, r.Store, r.Generation, r.ExpectClusterID); err != nil || m != nil {
		return SeedResult{Manifest: m, Already: m != nil && err == nil, Took: time.Since(start)}, err
	}
	c, err := CaptureUpload(ctx, r)
	if err != nil {
		return SeedResult{}, err
	}
	return PublishCaptured(ctx, r, c, start)
}

// PublishCaptured publishes what CaptureUpload (here or in a capture pod)
// uploaded: r.BeforePublish is asked first (an error publishes nothing),
// then the stored sizes are checked and the manifest written
// create-if-absent. Any failure removes the upload. start is when the
// seed began (for Took).
func PublishCaptured(ctx context.Context, r SeedRequest, c *Captured, start time.Time) (SeedResult, error) {
	up := c.Upload
	ok := false
	defer abortUnless(ctx, up, &ok)
	if r.OnPhase != nil {
		r.OnPhase(model.ActionPhaseUploading, fmt.Sprintf("uploaded %d bytes (revision %d, term %d); checking the stored files, then writing the manifest", c.Size, c.Identity.Revision, c.Identity.RaftTerm))
	}
	if r.BeforePublish != nil {
		if err := r.BeforePublish(); err != nil {
			return SeedResult{}, fmt.Errorf("not published: %w", err)
		}
	}
	res, err := up.Publish(ctx, c.Identity)
	if err != nil {
		return SeedResult{Manifest: res.Manifest}, err
	}
	ok = true
	if r.OnPhase != nil {
		r.OnPhase(model.ActionPhasePublished, fmt.Sprintf("published generation %s (%s, %d bytes)", r.Generation, res.Manifest.Digest, res.Manifest.TotalSize))
	}
	return SeedResult{Manifest: res.Manifest, Already: res.Already, Took: time.Since(start)}, nil
}

// abortUnless removes upload up unless *ok (set once it is the caller's to
// keep), within 30 s even when ctx has ended.
func abortUnless(ctx context.Context, up *artifact.Upload, ok *bool) {
	if *ok {
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = up.Abort(actx)
}
