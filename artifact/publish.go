package artifact

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sort"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

const (
	uploadsDir = "uploads"
	// maxUploadIDLen bounds an upload ID.
	maxUploadIDLen = 64
)

// manifestKey is the object key of generation g's manifest.
func manifestKey(g string) string { return g + "/" + ManifestName }

// uploadPrefix is the key prefix of one upload of generation g.
func uploadPrefix(g, upload string) string { return g + "/" + uploadsDir + "/" + upload + "/" }

// newUploadID returns a sortable, unique upload ID.
func newUploadID(now time.Time) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return now.UTC().Format("20060102t150405z") + "-" + hex.EncodeToString(b)
}

// validateUploadID checks an upload ID read from a manifest: the
// characters of a generation ID, at most 64 of them.
func validateUploadID(id string) error {
	if id == "" || len(id) > maxUploadIDLen {
		return fmt.Errorf("%w: upload ID is empty or too long", ErrManifestInvalid)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%w: upload ID %q has a character outside [a-z0-9_-]", ErrManifestInvalid, truncate(id))
		}
	}
	return nil
}

// UploadOptions describe a new upload.
type UploadOptions struct {
	// Source says where the data comes from (recorded in the manifest).
	Source Source
	// CreatedBy names the program writing it ("kubectl-hactl v0.1.0").
	CreatedBy string
	// Now is the upload's creation time (time.Now when zero).
	Now time.Time
}

// Upload writes one attempt at a generation: its files first, each into
// the upload's own directory, then the manifest. Nothing is visible as a
// generation until Publish succeeds. An Upload is not safe for concurrent
// Create calls on the same path.
type Upload struct {
	store      *Store
	generation string
	id         string
	opts       UploadOptions

	mu    sync.Mutex
	files map[string]File
	open  map[string]bool
	done  bool
}

// Begin starts an upload of generation g. It does not check whether g is
// already published (ReadManifest does; Publish decides).
func (s *Store) Begin(ctx context.Context, g string, o UploadOptions) (*Upload, error) {
	if err := ValidateGeneration(g); err != nil {
		return nil, err
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return &Upload{
		store: s, generation: g, id: newUploadID(o.Now), opts: o,
		files: map[string]File{}, open: map[string]bool{},
	}, nil
}

// Adopt returns the upload another process wrote: generation g's upload
// directory id, holding files as that process committed them (path, size
// and SHA-256, as its receipt says). Nothing is read here; Publish checks
// every file's stored size before the manifest points at it, and every
// reader verifies the hashes. It is how the lock holder publishes what a
// capture pod uploaded.
func (s *Store) Adopt(g, id string, o UploadOptions, files []File) (*Upload, error) {
	if err := ValidateGeneration(g); err != nil {
		return nil, err
	}
	if err := validateUploadID(id); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: upload %s of %s lists no files", ErrManifestInvalid, id, g)
	}
	if o.Now.IsZero() {
		return nil, fmt.Errorf("upload %s of %s: the time it began is unknown", id, g)
	}
	u := &Upload{store: s, generation: g, id: id, opts: o, files: map[string]File{}, open: map[string]bool{}}
	for _, f := range files {
		if err := ValidatePath(f.Path); err != nil {
			return nil, err
		}
		if _, dup := u.files[f.Path]; dup {
			return nil, fmt.Errorf("%w: upload %s lists %q twice", ErrManifestInvalid, id, f.Path)
		}
		if f.Size < 0 || !isSHA256Hex(f.SHA256) {
			return nil, fmt.Errorf("%w: upload %s: file %q has no valid size and sha256", ErrManifestInvalid, id, f.Path)
		}
		u.files[f.Path] = f
	}
	return u, nil
}

// Began is when the upload began (recorded as the manifest's createdAt).
func (u *Upload) Began() time.Time { return u.opts.Now }

// ID is the upload's directory name.
func (u *Upload) ID() string { return u.id }

// Generation is the generation being written.
func (u *Upload) Generation() string { return u.generation }

// The upload of one file holds at most UploadConcurrency parts of
// UploadPartSize in flight, plus the one being filled, whatever the file's
// size: 15 MiB. On S3 the parts come from a pool kept for the whole upload
// (the transfer manager's, multipart from the first part: tuneS3Upload), on Azure they are its blocks; the GCS driver
// streams one request and buffers no part. 5 MiB is S3's smallest part;
// two parts in flight keep the stream moving while one is sent (a capture
// is limited by its source, not by the store), and 10000 parts (S3's
// limit) still hold 48 GiB.
const (
	UploadPartSize    = 5 << 20
	UploadConcurrency = 2
)

// ErrStoreWrite marks an error of the store while an upload writes (the
// store refused or did not answer), as opposed to one of the data's
// source.
var ErrStoreWrite = errors.New("the store did not take the upload")

// storeWriteError is an upload's write error: its message unchanged, and
// errors.Is(err, ErrStoreWrite).
type storeWriteError struct{ err error }

func (e storeWriteError) Error() string        { return e.err.Error() }
func (e storeWriteError) Unwrap() error        { return e.err }
func (e storeWriteError) Is(target error) bool { return target == ErrStoreWrite }

// FileWriter streams one file to the store, hashing and counting as it
// goes. Close commits it; Abort (or a cancelled context) discards it.
type FileWriter struct {
	u      *Upload
	path   string
	w      *blob.Writer
	cancel context.CancelFunc
	h      hash.Hash
	n      int64
	closed bool
}

// Create starts streaming the file at path (a relative path, checked with
// ValidatePath). ctx bounds the whole write.
func (u *Upload) Create(ctx context.Context, path string) (*FileWriter, error) {
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return nil, errors.New("upload already published or aborted")
	}
	if _, ok := u.files[path]; ok || u.open[path] {
		return nil, fmt.Errorf("file %q written twice in one upload", path)
	}
	wctx, cancel := context.WithCancel(ctx)
	w, err := u.store.bucket.NewWriter(wctx, uploadPrefix(u.generation, u.id)+path, &blob.WriterOptions{
		ContentType: "application/octet-stream",
		// No single-shot MD5: the content is hashed here (SHA-256) and
		// verified on every read.
		DisableContentTypeDetection: true,
		BufferSize:                  UploadPartSize,
		MaxConcurrency:              UploadConcurrency,
		BeforeWrite:                 u.store.tuneS3Upload,
	})
	if err != nil {
		cancel()
		return nil, storeWriteError{fmt.Errorf("starting upload of %s to %s: %w", path, u.store, u.store.scrub(err))}
	}
	u.open[path] = true
	return &FileWriter{u: u, path: path, w: w, cancel: cancel, h: sha256.New()}, nil
}

// Write streams p to the store and into the hash.
func (f *FileWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.h.Write(p[:n])
	f.n += int64(n)
	if err != nil {
		return n, storeWriteError{fmt.Errorf("uploading %s after %d bytes: %w", f.path, f.n, f.u.store.scrub(err))}
	}
	return n, nil
}

// Written is the number of bytes written so far.
func (f *FileWriter) Written() int64 { return f.n }

// Close finishes the upload of the file and records its size and hash.
func (f *FileWriter) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	defer f.cancel()
	err := f.w.Close()
	f.u.mu.Lock()
	defer f.u.mu.Unlock()
	delete(f.u.open, f.path)
	if err != nil {
		return storeWriteError{fmt.Errorf("finishing upload of %s: %w", f.path, f.u.store.scrub(err))}
	}
	f.u.files[f.path] = File{Path: f.path, Size: f.n, SHA256: hex.EncodeToString(f.h.Sum(nil))}
	return nil
}

// Abort discards the file: the store never shows it.
func (f *FileWriter) Abort() {
	if f.closed {
		return
	}
	f.closed = true
	f.cancel()
	_ = f.w.Close()
	f.u.mu.Lock()
	delete(f.u.open, f.path)
	f.u.mu.Unlock()
}

// Files lists the files committed so far, by path.
func (u *Upload) Files() []File {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]File, 0, len(u.files))
	for _, f := range u.files {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// PublishResult says how Publish ended.
type PublishResult struct {
	Manifest *Manifest
	// Already is true when the generation was already published with the
	// same identity; Manifest is then the existing one and this upload's
	// files were discarded.
	Already bool
}

// Publish checks every committed file's stored size, then writes the
// manifest for identity id with create-if-absent semantics. If the
// generation already exists with the same identity it is a no-op
// (Already); with another identity it fails with ErrGenerationExists. In
// both cases this upload's files are deleted.
func (u *Upload) Publish(ctx context.Context, id Identity) (PublishResult, error) {
	u.mu.Lock()
	if u.done {
		u.mu.Unlock()
		return PublishResult{}, errors.New("upload already published or aborted")
	}
	if len(u.open) > 0 {
		u.mu.Unlock()
		return PublishResult{}, errors.New("a file of the upload is still being written")
	}
	u.mu.Unlock()
	if id.Generation == "" {
		id.Generation = u.generation
	}
	if id.Generation != u.generation {
		return PublishResult{}, fmt.Errorf("identity names generation %q, the upload writes %q", id.Generation, u.generation)
	}
	m := &Manifest{
		Identity:  id,
		Source:    u.opts.Source,
		Upload:    u.id,
		Files:     u.Files(),
		CreatedAt: u.opts.Now.UTC().Truncate(time.Millisecond),
		CreatedBy: u.opts.CreatedBy,
	}
	if err := m.Seal(); err != nil {
		return PublishResult{}, fmt.Errorf("building the manifest of %s: %w", u.generation, err)
	}
	// The files must be in the store as hashed before the manifest
	// points at them.
	for _, f := range m.Files {
		a, err := u.store.bucket.Attributes(ctx, uploadPrefix(u.generation, u.id)+f.Path)
		if isNotFound(err) {
			return PublishResult{}, fmt.Errorf("%w: uploaded %s (upload %s) is not in the store", ErrMissingFile, f.Path, u.id)
		}
		if err != nil {
			return PublishResult{}, fmt.Errorf("checking uploaded %s: %w", f.Path, u.store.scrub(err))
		}
		if a.Size != f.Size {
			return PublishResult{}, fmt.Errorf("%w: uploaded %s holds %d bytes, %d were written", ErrSizeMismatch, f.Path, a.Size, f.Size)
		}
	}
	body, err := m.Encode()
	if err != nil {
		return PublishResult{}, err
	}
	werr := u.store.bucket.WriteAll(ctx, manifestKey(u.generation), body, &blob.WriterOptions{
		ContentType:                 "application/json",
		IfNotExist:                  true,
		DisableContentTypeDetection: true,
	})
	if werr == nil {
		u.finish()
		return PublishResult{Manifest: m}, nil
	}
	// The manifest exists (or a concurrent writer raced us): whoever
	// won decides.
	existing, rerr := u.store.ReadManifest(ctx, u.generation)
	if rerr != nil {
		if gcerrors.Code(werr) == gcerrors.FailedPrecondition {
			return PublishResult{}, fmt.Errorf("generation %s was published meanwhile but its manifest cannot be read: %w", u.generation, rerr)
		}
		return PublishResult{}, fmt.Errorf("writing the manifest of %s to %s: %w", u.generation, u.store, u.store.scrub(werr))
	}
	u.finish()
	if existing.Upload == u.id {
		// Our own write succeeded although its reply was lost.
		return PublishResult{Manifest: existing}, nil
	}
	_ = u.store.deletePrefix(ctx, uploadPrefix(u.generation, u.id))
	if existing.Identity == id {
		return PublishResult{Manifest: existing, Already: true}, nil
	}
	return PublishResult{Manifest: existing}, fmt.Errorf("%w: %s holds %s", ErrGenerationExists, u.generation, describeIdentity(existing.Identity))
}

// Abort deletes whatever the upload wrote. It is best effort: a later GC
// removes leftovers.
func (u *Upload) Abort(ctx context.Context) error {
	u.mu.Lock()
	if u.done {
		u.mu.Unlock()
		return nil
	}
	u.done = true
	u.mu.Unlock()
	return u.store.deletePrefix(ctx, uploadPrefix(u.generation, u.id))
}

func (u *Upload) finish() {
	u.mu.Lock()
	u.done = true
	u.mu.Unlock()
}

// describeIdentity renders an identity for messages.
func describeIdentity(id Identity) string {
	return fmt.Sprintf("%s cluster %s, member %s, term %d, revision %d", id.Engine, id.ClusterID, id.SourceMemberID, id.RaftTerm, id.Revision)
}

// deletePrefix deletes every object under prefix.
func (s *Store) deletePrefix(ctx context.Context, prefix string) error {
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix})
	var first error
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("listing %s in %s: %w", prefix, s, s.scrub(err))
		}
		if obj.IsDir {
			continue
		}
		if err := s.bucket.Delete(ctx, obj.Key); err != nil && !isNotFound(err) && first == nil {
			first = fmt.Errorf("deleting %s from %s: %w", obj.Key, s, s.scrub(err))
		}
	}
	return first
}
