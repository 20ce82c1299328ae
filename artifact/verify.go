package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"gocloud.dev/blob"

	"github.com/hactl-dev/hactl/model"
)

// Expect is what a target requires of a generation. Zero fields are not
// checked.
type Expect struct {
	// Engine the target runs.
	Engine model.Engine
	// ClusterID the generation must come from (ErrWrongCluster).
	ClusterID string
	// MinRevision and MinRaftTerm are the target's boundary: a
	// generation below either is refused (ErrStale).
	MinRevision int64
	MinRaftTerm uint64
}

// Check compares a validated manifest with what the target expects.
func Check(m *Manifest, e Expect) error {
	id := m.Identity
	if e.Engine != "" && id.Engine != e.Engine {
		return fmt.Errorf("%w: generation %s holds %s data, the target runs %s", ErrWrongCluster, id.Generation, id.Engine, e.Engine)
	}
	if e.ClusterID != "" && !strings.EqualFold(id.ClusterID, e.ClusterID) {
		return fmt.Errorf("%w: generation %s comes from cluster %s, the target is cluster %s", ErrWrongCluster, id.Generation, id.ClusterID, e.ClusterID)
	}
	if id.Revision < e.MinRevision {
		return fmt.Errorf("%w: generation %s holds revision %d, the target requires at least %d", ErrStale, id.Generation, id.Revision, e.MinRevision)
	}
	if id.RaftTerm < e.MinRaftTerm {
		return fmt.Errorf("%w: generation %s was taken at raft term %d, the target requires at least %d", ErrStale, id.Generation, id.RaftTerm, e.MinRaftTerm)
	}
	return nil
}

// ReadManifest reads, decodes and validates generation g's manifest. A
// generation with uploaded files but no manifest (an unfinished upload)
// and a generation that does not exist both fail with ErrNoManifest.
func (s *Store) ReadManifest(ctx context.Context, g string) (*Manifest, error) {
	if err := ValidateGeneration(g); err != nil {
		return nil, err
	}
	r, err := s.bucket.NewReader(ctx, manifestKey(g), nil)
	if err != nil {
		if isNotFound(err) {
			if partial, _ := s.hasObjects(ctx, g+"/"); partial {
				return nil, fmt.Errorf("%w: generation %s in %s has uploaded files but no manifest: its upload did not finish", ErrNoManifest, g, s)
			}
			return nil, fmt.Errorf("%w: no generation %s in %s", ErrNoManifest, g, s)
		}
		return nil, fmt.Errorf("reading the manifest of %s from %s: %w", g, s, s.scrub(err))
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of %s from %s: %w", g, s, s.scrub(err))
	}
	m, err := DecodeManifest(b)
	if err != nil {
		return nil, fmt.Errorf("generation %s: %w", g, err)
	}
	if m.Identity.Generation != g {
		return nil, fmt.Errorf("%w: the manifest stored as generation %s names generation %s", ErrManifestInvalid, g, m.Identity.Generation)
	}
	return m, nil
}

func (s *Store) hasObjects(ctx context.Context, prefix string) (bool, error) {
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix})
	_, err := it.Next(ctx)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	return err == nil, s.scrub(err)
}

// CheckObjects compares the objects of m's upload with its file list:
// every listed file must exist with its size (ErrMissingFile,
// ErrSizeMismatch) and nothing else may be there (ErrExtraFile). It reads
// no content.
func (s *Store) CheckObjects(ctx context.Context, m *Manifest) error {
	prefix := uploadPrefix(m.Identity.Generation, m.Upload)
	want := make(map[string]File, len(m.Files))
	for _, f := range m.Files {
		want[f.Path] = f
	}
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix})
	seen := map[string]bool{}
	var extra []string
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("listing generation %s in %s: %w", m.Identity.Generation, s, s.scrub(err))
		}
		if obj.IsDir {
			continue
		}
		rel := strings.TrimPrefix(obj.Key, prefix)
		f, ok := want[rel]
		if !ok {
			extra = append(extra, rel)
			continue
		}
		seen[rel] = true
		if obj.Size != f.Size {
			return fmt.Errorf("%w: %s is %d bytes in the store, the manifest says %d", ErrSizeMismatch, rel, obj.Size, f.Size)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("%w: generation %s holds %d file(s) its manifest does not list: %s", ErrExtraFile, m.Identity.Generation, len(extra), quoteList(extra, 5))
	}
	var missing []string
	for _, f := range m.Files {
		if !seen[f.Path] {
			missing = append(missing, f.Path)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: generation %s lacks %d file(s) its manifest lists: %s", ErrMissingFile, m.Identity.Generation, len(missing), quoteList(missing, 5))
	}
	return nil
}

func quoteList(xs []string, max int) string {
	var q []string
	for i, x := range xs {
		if i == max {
			q = append(q, fmt.Sprintf("and %d more", len(xs)-max))
			break
		}
		q = append(q, fmt.Sprintf("%q", truncate(x)))
	}
	return strings.Join(q, ", ")
}

// VerifyReader copies r to w (io.Discard to only check) while hashing,
// reading at most f.Size+1 bytes, and checks the result against f: a
// stream that ends early fails with ErrTruncated, one that is longer with
// ErrSizeMismatch, a different hash with ErrChecksumMismatch. It returns
// the bytes read.
func VerifyReader(r io.Reader, f File, w io.Writer) (int64, error) {
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(r, f.Size+1))
	if err != nil {
		if n < f.Size {
			return n, fmt.Errorf("%w: %s ended after %d of %d bytes: %w", ErrTruncated, f.Path, n, f.Size, err)
		}
		return n, fmt.Errorf("reading %s: %w", f.Path, err)
	}
	switch {
	case n < f.Size:
		return n, fmt.Errorf("%w: %s ended after %d of %d bytes", ErrTruncated, f.Path, n, f.Size)
	case n > f.Size:
		return n, fmt.Errorf("%w: %s is longer than the %d bytes the manifest says", ErrSizeMismatch, f.Path, f.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return n, fmt.Errorf("%w: %s has SHA-256 %s, the manifest says %s", ErrChecksumMismatch, f.Path, got, f.SHA256)
	}
	return n, nil
}

// Progress receives the bytes verified or transferred so far.
type Progress func(done int64)

// Open streams one file of m's upload, unverified (use VerifyReader).
func (s *Store) Open(ctx context.Context, m *Manifest, f File) (io.ReadCloser, error) {
	r, err := s.bucket.NewReader(ctx, uploadPrefix(m.Identity.Generation, m.Upload)+f.Path, nil)
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("%w: %s", ErrMissingFile, f.Path)
		}
		return nil, fmt.Errorf("reading %s from %s: %w", f.Path, s, s.scrub(err))
	}
	return r, nil
}

// Verify reads generation g's manifest, checks it against e, checks its
// objects and hashes every byte of every file. It returns the manifest
// when everything holds.
func (s *Store) Verify(ctx context.Context, g string, e Expect, progress Progress) (*Manifest, error) {
	m, err := s.ReadManifest(ctx, g)
	if err != nil {
		return nil, err
	}
	if err := Check(m, e); err != nil {
		return m, err
	}
	if err := s.CheckObjects(ctx, m); err != nil {
		return m, err
	}
	var done int64
	for _, f := range m.Files {
		r, err := s.Open(ctx, m, f)
		if err != nil {
			return m, err
		}
		n, err := VerifyReader(r, f, &progressWriter{base: done, fn: progress})
		r.Close()
		if err != nil {
			return m, fmt.Errorf("generation %s: %w", g, s.scrub(err))
		}
		done += n
	}
	return m, nil
}

// progressWriter reports cumulative bytes (base plus what passed through
// it) to a Progress.
type progressWriter struct {
	base, n int64
	fn      Progress
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if p.fn != nil {
		p.fn(p.base + p.n)
	}
	return len(b), nil
}
