package artifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"gocloud.dev/blob"
)

// UploadInfo describes one upload directory of a generation.
type UploadInfo struct {
	ID      string `json:"id"`
	Objects int    `json:"objects"`
	Bytes   int64  `json:"bytes"`
	// LastModified is the newest object's modification time.
	LastModified time.Time `json:"lastModified"`
	// Referenced: the generation's manifest points at this upload.
	Referenced bool `json:"referenced"`
}

// Entry is one generation directory of a store.
type Entry struct {
	Generation string `json:"generation"`
	// Manifest is nil when the generation is not published (Err wraps
	// ErrNoManifest) or its manifest does not validate (Err says why).
	Manifest *Manifest `json:"manifest,omitempty"`
	Err      error     `json:"-"`
	// Uploads are the generation's upload directories, oldest first.
	Uploads []UploadInfo `json:"uploads,omitempty"`
}

// Published reports whether the entry is a valid published generation.
func (e Entry) Published() bool { return e.Manifest != nil && e.Err == nil }

// List reads every generation directory of the store, published or not,
// ordered by generation ID. Directories whose names are not generation
// IDs are ignored (they are not hactl's).
func (s *Store) List(ctx context.Context) ([]Entry, error) {
	it := s.bucket.List(&blob.ListOptions{Delimiter: "/"})
	var names []string
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", s, s.scrub(err))
		}
		if !obj.IsDir {
			continue
		}
		g := strings.TrimSuffix(obj.Key, "/")
		if ValidateGeneration(g) == nil {
			names = append(names, g)
		}
	}
	sort.Strings(names)
	out := make([]Entry, 0, len(names))
	for _, g := range names {
		e, err := s.entry(ctx, g)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Get reads one generation directory (Entry.Err wraps ErrNoManifest when
// it has no manifest, and the entry then has no uploads when nothing is
// there at all).
func (s *Store) Get(ctx context.Context, g string) (Entry, error) {
	if err := ValidateGeneration(g); err != nil {
		return Entry{}, err
	}
	return s.entry(ctx, g)
}

func (s *Store) entry(ctx context.Context, g string) (Entry, error) {
	e := Entry{Generation: g}
	e.Manifest, e.Err = s.ReadManifest(ctx, g)
	if e.Err != nil && !isContentError(e.Err) {
		return e, e.Err
	}
	if e.Err != nil {
		e.Manifest = nil
	}
	prefix := g + "/" + uploadsDir + "/"
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix})
	byID := map[string]*UploadInfo{}
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return e, fmt.Errorf("listing generation %s in %s: %w", g, s, s.scrub(err))
		}
		if obj.IsDir {
			continue
		}
		id, _, ok := strings.Cut(strings.TrimPrefix(obj.Key, prefix), "/")
		if !ok {
			continue
		}
		u := byID[id]
		if u == nil {
			u = &UploadInfo{ID: id, Referenced: e.Manifest != nil && e.Manifest.Upload == id}
			byID[id] = u
		}
		u.Objects++
		u.Bytes += obj.Size
		if obj.ModTime.After(u.LastModified) {
			u.LastModified = obj.ModTime
		}
	}
	for _, u := range byID {
		e.Uploads = append(e.Uploads, *u)
	}
	sort.Slice(e.Uploads, func(i, j int) bool { return e.Uploads[i].ID < e.Uploads[j].ID })
	return e, nil
}

// isContentError reports whether err is about what a manifest says (or
// that there is none), as opposed to the store failing.
func isContentError(err error) bool {
	for _, target := range []error{
		ErrNoManifest, ErrUnknownManifestVersion, ErrManifestInvalid, ErrUnsafePath, ErrDigestMismatch,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// Delete removes generation g: its manifest first (so that from then on
// no reader sees it as published), then every file.
func (s *Store) Delete(ctx context.Context, g string) error {
	if err := ValidateGeneration(g); err != nil {
		return err
	}
	if err := s.bucket.Delete(ctx, manifestKey(g)); err != nil && !isNotFound(err) {
		return fmt.Errorf("deleting the manifest of %s from %s: %w", g, s, s.scrub(err))
	}
	return s.deletePrefix(ctx, g+"/")
}

// DeleteUpload removes one upload directory of generation g. It refuses
// the upload the manifest points at (delete the generation instead).
func (s *Store) DeleteUpload(ctx context.Context, g, upload string) error {
	if err := ValidateGeneration(g); err != nil {
		return err
	}
	if err := validateUploadID(upload); err != nil {
		return err
	}
	if m, err := s.ReadManifest(ctx, g); err == nil && m.Upload == upload {
		return fmt.Errorf("upload %s holds published generation %s; delete the generation instead", upload, g)
	}
	return s.deletePrefix(ctx, uploadPrefix(g, upload))
}
