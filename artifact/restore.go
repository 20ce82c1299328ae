package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// MarkerName is the file Restore writes into a restored data directory to
// record which generation it holds.
const MarkerName = ".hactl-generation.json"

// Marker is the content of MarkerName.
type Marker struct {
	Generation string    `json:"generation"`
	Digest     string    `json:"digest"`
	ClusterID  string    `json:"clusterID"`
	Revision   int64     `json:"revision"`
	RestoredAt time.Time `json:"restoredAt"`
	// RestoreID names the restore that wrote it (RestoreOptions.RestoreID),
	// "" when none was given.
	RestoreID string `json:"restoreID,omitempty"`
}

// Materializer turns a generation's verified files into a data directory.
type Materializer interface {
	// Materialize builds the data directory dst (which does not exist)
	// from the files in src, laid out as the manifest lists them.
	Materialize(ctx context.Context, m *Manifest, src, dst string) error
	// Check inspects dst before it is activated; an error keeps the old
	// data directory in place.
	Check(ctx context.Context, m *Manifest, dst string) error
}

// RestoreOptions configure Restore.
type RestoreOptions struct {
	// DataDir is the data directory to restore into. It must be a
	// directory below a mount point (not the mount point itself): the new
	// data is activated by renaming it into place.
	DataDir string
	// Expect is what the target requires (checked before anything on
	// disk changes).
	Expect Expect
	// Materializer turns the files into a data directory; nil means the
	// files themselves are the data directory.
	Materializer Materializer
	// Replace allows restoring over a data directory that holds other
	// data; that data is kept beside it (RestoreResult.Previous).
	Replace bool
	// Progress receives bytes downloaded and verified.
	Progress Progress
	// Now stamps the marker and the previous directory's name.
	Now time.Time
	// RestoreID names this restore (hactl's ledger entry). With it, a data
	// directory counts as already restored only if this same restore
	// wrote it: restoring the same generation again in a new restore
	// (after the cluster wrote more) replaces the data. Without it, a data
	// directory holding the generation is left alone (an init container
	// that runs on every start).
	RestoreID string
}

// RestoreResult says what Restore did.
type RestoreResult struct {
	Manifest *Manifest `json:"manifest"`
	DataDir  string    `json:"dataDir"`
	// Previous is where the data directory's old content was moved to
	// ("" when there was none). It is kept until someone removes it.
	Previous string `json:"previous,omitempty"`
	// Already: the data directory already held this generation; nothing
	// was changed.
	Already bool `json:"already,omitempty"`
	// Bytes downloaded and verified.
	Bytes int64 `json:"bytes"`
}

// Restore restores generation g from s into o.DataDir:
//
//  1. read and validate the manifest, check it against o.Expect and
//     compare the upload's objects with it;
//  2. inspect the data directory: already this generation (no-op), empty
//     or missing, or other data (refused with ErrDataDirNotEmpty unless
//     o.Replace);
//  3. download every file into a staging directory beside the data
//     directory, hashing every byte;
//  4. materialize and check the data directory in staging;
//  5. activate it by an atomic rename (an exchange where the kernel
//     supports it), moving the old data to <DataDir>.hactl-previous-<time>.
//
// Every verification error (named errors of this package) happens before
// step 5, so a bad or partial generation never changes the data
// directory.
func Restore(ctx context.Context, s *Store, g string, o RestoreOptions) (RestoreResult, error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.DataDir == "" {
		return RestoreResult{}, errors.New("no data directory given")
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return RestoreResult{}, err
	}
	res := RestoreResult{DataDir: dataDir}

	m, err := s.ReadManifest(ctx, g)
	if err != nil {
		return res, err
	}
	res.Manifest = m
	if err := Check(m, o.Expect); err != nil {
		return res, err
	}
	if err := s.CheckObjects(ctx, m); err != nil {
		return res, err
	}

	state, err := inspectDataDir(dataDir, m, o.RestoreID)
	if err != nil {
		return res, err
	}
	staging := stagingDir(dataDir)
	switch state {
	case dirHoldsGeneration:
		// An activation interrupted after the exchange left the old data
		// in staging: keep it beside the data directory.
		if err := clearStaging(staging, dataDir, m, o.Now); err != nil {
			return res, err
		}
		res.Already = true
		return res, nil
	case dirHoldsOther:
		if !o.Replace {
			return res, fmt.Errorf("%w: %s holds data that is not generation %s; restoring would replace it (use --replace to keep it aside as %s.hactl-previous-<time> and restore)", ErrDataDirNotEmpty, dataDir, g, filepath.Base(dataDir))
		}
	}

	if err := clearStaging(staging, dataDir, m, o.Now); err != nil {
		return res, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(staging)
		}
	}()
	download := filepath.Join(staging, "download")
	if err := os.MkdirAll(download, 0o700); err != nil {
		return res, fmt.Errorf("creating the staging directory: %w", err)
	}
	res.Bytes, err = s.download(ctx, m, download, o.Progress)
	if err != nil {
		return res, err
	}

	newData := filepath.Join(staging, "data")
	if o.Materializer != nil {
		if err := o.Materializer.Materialize(ctx, m, download, newData); err != nil {
			return res, fmt.Errorf("%w: building the data directory from generation %s: %w", ErrRestoreCheck, g, err)
		}
		if err := o.Materializer.Check(ctx, m, newData); err != nil {
			return res, fmt.Errorf("%w: %w", ErrRestoreCheck, err)
		}
	} else if err := os.Rename(download, newData); err != nil {
		return res, err
	}
	if err := writeMarker(newData, m, o.Now, o.RestoreID); err != nil {
		return res, err
	}
	if err := syncTree(newData); err != nil {
		return res, fmt.Errorf("syncing the restored data: %w", err)
	}

	prev, err := activate(newData, dataDir, state == dirHoldsOther, o.Now)
	res.Previous = prev
	if err != nil {
		return res, err
	}
	ok = true
	_ = os.RemoveAll(staging)
	return res, nil
}

// dirState is what a data directory holds.
type dirState int

const (
	dirMissing dirState = iota
	dirEmpty
	dirHoldsGeneration
	dirHoldsOther
)

// inspectDataDir tells whether dataDir is missing, empty, already holds
// m's generation, or holds other data; and refuses a directory that cannot
// be replaced by rename.
func inspectDataDir(dataDir string, m *Manifest, restoreID string) (dirState, error) {
	parent := filepath.Dir(dataDir)
	pfi, err := os.Stat(parent)
	if err != nil || !pfi.IsDir() {
		return 0, fmt.Errorf("%w: its parent %s is not a directory", ErrDataDirUnusable, parent)
	}
	fi, err := os.Lstat(dataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return dirMissing, nil
	}
	if err != nil {
		return 0, err
	}
	if !fi.IsDir() {
		return 0, fmt.Errorf("%w: %s is not a directory", ErrDataDirUnusable, dataDir)
	}
	if isMountPoint(dataDir, parent) {
		return 0, fmt.Errorf("%w: %s is a mount point; point --data-dir at a directory inside the volume (for example %s)", ErrDataDirUnusable, dataDir, filepath.Join(dataDir, "data"))
	}
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		return 0, err
	}
	if len(entries) == 0 {
		return dirEmpty, nil
	}
	if mk, err := readMarker(dataDir); err == nil && mk.Generation == m.Identity.Generation && mk.Digest == m.Digest &&
		(restoreID == "" || mk.RestoreID == restoreID) {
		return dirHoldsGeneration, nil
	}
	return dirHoldsOther, nil
}

func stagingDir(dataDir string) string {
	return filepath.Join(filepath.Dir(dataDir), "."+filepath.Base(dataDir)+".hactl-staging")
}

func previousDir(dataDir string, now time.Time) string {
	return dataDir + ".hactl-previous-" + now.UTC().Format("20060102t150405.000000000z")
}

// clearStaging removes what an interrupted restore left in staging. A
// leftover data directory is deleted only when it is a restored copy of
// this very generation (reproducible); anything else may be the old data
// moved aside by an interrupted activation, and is kept as a previous
// directory.
func clearStaging(staging, dataDir string, m *Manifest, now time.Time) error {
	left := filepath.Join(staging, "data")
	if _, err := os.Lstat(left); err == nil {
		if mk, err := readMarker(left); err != nil || mk.Generation != m.Identity.Generation || mk.Digest != m.Digest {
			if err := os.Rename(left, previousDir(dataDir, now)); err != nil {
				return fmt.Errorf("keeping the data an interrupted restore left in %s: %w", left, err)
			}
		}
	}
	if err := os.RemoveAll(staging); err != nil {
		return fmt.Errorf("clearing the staging directory %s: %w", staging, err)
	}
	return nil
}

func readMarker(dir string) (Marker, error) {
	var mk Marker
	b, err := os.ReadFile(filepath.Join(dir, MarkerName))
	if err != nil {
		return mk, err
	}
	if len(b) > 64<<10 {
		return mk, errors.New("marker too large")
	}
	err = json.Unmarshal(b, &mk)
	return mk, err
}

// ReadMarker reports which generation a data directory was restored from.
func ReadMarker(dataDir string) (Marker, error) { return readMarker(dataDir) }

func writeMarker(dir string, m *Manifest, now time.Time, restoreID string) error {
	b, err := json.MarshalIndent(Marker{
		Generation: m.Identity.Generation, Digest: m.Digest, ClusterID: m.Identity.ClusterID,
		Revision: m.Identity.Revision, RestoredAt: now.UTC(), RestoreID: restoreID,
	}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, MarkerName), append(b, '\n'), 0o600)
}

// download fetches every file of m into dir, verifying each as it is
// written.
func (s *Store) download(ctx context.Context, m *Manifest, dir string, progress Progress) (int64, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	var done int64
	for _, f := range m.Files {
		if err := ValidatePath(f.Path); err != nil { // validated already; never trust twice removed
			return done, err
		}
		if d := filepath.Dir(filepath.FromSlash(f.Path)); d != "." {
			if err := root.MkdirAll(d, 0o700); err != nil {
				return done, fmt.Errorf("creating %s in staging: %w", d, err)
			}
		}
		out, err := root.OpenFile(filepath.FromSlash(f.Path), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return done, fmt.Errorf("creating %s in staging: %w", f.Path, err)
		}
		r, err := s.Open(ctx, m, f)
		if err != nil {
			out.Close()
			return done, err
		}
		n, err := VerifyReader(r, f, &multiWriter{out, &progressWriter{base: done, fn: progress}})
		r.Close()
		if err == nil {
			err = out.Sync()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return done, fmt.Errorf("generation %s: %w", m.Identity.Generation, s.scrub(err))
		}
		done += n
	}
	return done, nil
}

type multiWriter struct {
	f *os.File
	p *progressWriter
}

func (w *multiWriter) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	_, _ = w.p.Write(b[:n])
	return n, err
}

// activate moves newData into place at dataDir. With hadData, the old
// content goes to a previous directory, whose path it returns.
func activate(newData, dataDir string, hadData bool, now time.Time) (string, error) {
	parent := filepath.Dir(dataDir)
	if !hadData {
		// A missing or empty directory: rename(2) replaces an empty one.
		if err := renameOverEmpty(newData, dataDir); err != nil {
			return "", fmt.Errorf("activating the restored data at %s: %w", dataDir, err)
		}
		return "", syncDir(parent)
	}
	prev := previousDir(dataDir, now)
	if err := exchange(newData, dataDir); err == nil {
		// newData now holds the old content.
		if err := os.Rename(newData, prev); err != nil {
			return "", fmt.Errorf("the restored data is active at %s, but moving the old data aside to %s failed (it is in %s): %w", dataDir, prev, newData, err)
		}
		return prev, syncDir(parent)
	} else if !errors.Is(err, errExchangeUnsupported) {
		return "", fmt.Errorf("activating the restored data at %s: %w", dataDir, err)
	}
	// Two renames: in between, dataDir does not exist; a rerun finds the
	// old data in prev and restores again.
	if err := os.Rename(dataDir, prev); err != nil {
		return "", fmt.Errorf("moving the old data aside to %s: %w", prev, err)
	}
	if err := os.Rename(newData, dataDir); err != nil {
		if rerr := os.Rename(prev, dataDir); rerr != nil {
			return prev, fmt.Errorf("activating the restored data failed (%v) and putting the old data back failed too; it is in %s: %w", err, prev, rerr)
		}
		return "", fmt.Errorf("activating the restored data at %s: %w", dataDir, err)
	}
	return prev, syncDir(parent)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// syncTree fsyncs every file and directory under dir.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	})
}
