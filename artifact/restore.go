package artifact

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/internal/format"
)

// MarkerName is the file Restore writes into a restored data directory to
// record which generation it holds.
const MarkerName = ".hactl-generation.json"

// DefaultKeepPrevious is how many previous copies of a data directory
// (<data-dir>.hactl-previous-<time>) Restore keeps when
// RestoreOptions.KeepPrevious is 0: the newest ones. Older copies are
// removed only once a restore's new data is active, never the oldest one
// (what the volume held before the first restore), and never the copy
// that restore itself moved aside or rescued.
const DefaultKeepPrevious = 2

// Named errors of Restore (besides those in errors.go).
var (
	// ErrGenerationChanged: the generation in the store is not the one
	// the restore was pinned to (RestoreOptions.ExpectDigest,
	// ExpectRevision): it was deleted and published again under the same
	// ID since the restore was confirmed.
	ErrGenerationChanged = errors.New("generation is not the one the restore was confirmed with")
	// ErrNoSpace: the data directory's file system has too little free
	// space to stage the generation beside it.
	ErrNoSpace = errors.New("not enough free space")
)

// SpaceEstimator is implemented by a Materializer that can tell how many
// bytes staging generation m takes on the data directory's file system
// (the download and the data directory built from it, together).
// Without it Restore assumes twice the generation's size with a
// Materializer, and its size without one.
type SpaceEstimator interface {
	SpaceNeeded(m *Manifest) int64
}

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
	// Staging is a random ID of the staging attempt that built this copy;
	// the activation journal names it too, which tells an interrupted
	// activation's two halves apart.
	Staging string `json:"staging,omitempty"`
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
	// ExpectDigest pins the generation to the manifest digest the restore
	// was confirmed with: a manifest with another digest (the generation
	// was deleted and published again under the same ID) is refused with
	// ErrGenerationChanged before anything on disk changes. "" pins
	// nothing.
	ExpectDigest string
	// ExpectRevision pins the generation's revision the same way (0:
	// any).
	ExpectRevision int64
	// KeepPrevious is how many previous copies of the data directory to
	// keep beside it, the newest (DefaultKeepPrevious when 0; negative
	// keeps every one).
	KeepPrevious int
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
	// ("" when there was none). It is kept until someone removes it, or
	// until later restores have moved KeepPrevious newer copies aside.
	Previous string `json:"previous,omitempty"`
	// Rescued are previous copies an interrupted restore had left in
	// staging, moved beside the data directory.
	Rescued []string `json:"rescued,omitempty"`
	// Removed are previous copies removed beyond KeepPrevious.
	Removed []string `json:"removed,omitempty"`
	// Warnings say what went wrong after the new data was active (a
	// previous copy that could not be removed); the restore succeeded.
	Warnings []string `json:"warnings,omitempty"`
	// Already: the data directory already held this generation; nothing
	// was changed.
	Already bool `json:"already,omitempty"`
	// Bytes downloaded and verified.
	Bytes int64 `json:"bytes"`
}

// Restore restores generation g from s into o.DataDir:
//
//  1. read and validate the manifest, check it against the pins
//     (o.ExpectDigest, o.ExpectRevision) and o.Expect, and compare the
//     upload's objects with it;
//  2. recover what an interrupted restore left in staging: data it had
//     already swapped out of the data directory is moved beside it as a
//     previous copy (never deleted); a copy it built but never activated
//     is deleted;
//  3. inspect the data directory: already this generation (no-op), empty
//     or missing, or other data (refused with ErrDataDirNotEmpty unless
//     o.Replace);
//  4. check that the file system has room to stage the generation
//     (ErrNoSpace);
//  5. download every file into a staging directory beside the data
//     directory, hashing every byte;
//  6. materialize and check the data directory in staging;
//  7. activate it: record in staging, durably, which copy is the new one
//     and where the old data goes, then swap the two atomically (an
//     exchange where the kernel supports it) and move the old data to
//     <DataDir>.hactl-previous-<time>;
//  8. remove previous copies beyond o.KeepPrevious, the oldest first.
//
// Every verification error (named errors of this package) happens before
// step 7, so a bad or partial generation never changes the data
// directory. A crash at any point of step 7 leaves either the old or the
// new data in place and the other one recoverable by step 2 of the next
// run, with this or another RestoreID.
func Restore(ctx context.Context, s *Store, g string, o RestoreOptions) (res RestoreResult, err error) {
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
	res = RestoreResult{DataDir: dataDir}
	m, err := s.ReadManifest(ctx, g)
	if err != nil {
		return res, err
	}
	res.Manifest = m
	if err := s.restorable(ctx, m, o, dataDir); err != nil {
		return res, err
	}

	staging := stagingDir(dataDir)
	state, err := prepareDataDir(staging, dataDir, m, o, &res)
	if err != nil || state == dirHoldsGeneration {
		return res, err
	}

	// Until the activation journal is written, staging holds nothing but
	// reproducible copies; after it, recoverStaging sorts it out.
	journaled := false
	ok := false
	defer func() {
		switch {
		case ok:
		case !journaled:
			_ = os.RemoveAll(staging)
		default:
			if rescued, err := recoverStaging(staging, dataDir, o.Now); err == nil {
				res.Rescued = append(res.Rescued, rescued...)
			}
		}
	}()
	newData, stagingID, err := s.stage(ctx, m, staging, o, &res)
	if err != nil {
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("not activating generation %s, %s is unchanged: %w", g, dataDir, err)
	}

	var prev string
	if state == dirHoldsOther {
		if prev, err = freePreviousName(dataDir, o.Now); err != nil {
			return res, err
		}
		if err := writeJournal(staging, journal{Staging: stagingID, Previous: prev}); err != nil {
			return res, err
		}
		journaled = true
		crashPoint("journaled")
	}
	res.Previous, err = activate(newData, dataDir, prev)
	if err != nil {
		return res, err
	}
	ok = true
	crashPoint("activated")
	if err := os.RemoveAll(staging); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("removing the staging directory %s: %v", staging, err))
	}
	prunePrevious(dataDir, o.KeepPrevious, &res)
	return res, nil
}

// prepareDataDir recovers what an interrupted restore left in staging,
// then says what the data directory holds: this generation already (the
// restore is done), other data (replaced only with o.Replace), or
// nothing; and checks the free space for the new data.
func prepareDataDir(staging, dataDir string, m *Manifest, o RestoreOptions, res *RestoreResult) (dirState, error) {
	var err error
	res.Rescued, err = recoverStaging(staging, dataDir, o.Now)
	if err != nil {
		return 0, err
	}
	state, err := inspectDataDir(dataDir, m, o.RestoreID)
	if err != nil {
		return state, err
	}
	switch state {
	case dirHoldsGeneration:
		res.Already = true
		prunePrevious(dataDir, o.KeepPrevious, res)
		return state, nil
	case dirHoldsOther:
		if !o.Replace {
			return state, fmt.Errorf("%w: %s holds data that is not generation %s; restoring would replace it (use --replace to keep it aside as %s.hactl-previous-<time> and restore)", ErrDataDirNotEmpty, dataDir, m.Identity.Generation, filepath.Base(dataDir))
		}
	}
	return state, checkSpace(dataDir, m, o.Materializer)
}

// restorable checks, before anything is written, that m is the
// generation the restore was confirmed with (the pins), that it is
// acceptable (o.Expect), that its objects are all in the store, and that
// the data directory's parent exists.
func (s *Store) restorable(ctx context.Context, m *Manifest, o RestoreOptions, dataDir string) error {
	if err := checkPins(m, o); err != nil {
		return err
	}
	if err := Check(m, o.Expect); err != nil {
		return err
	}
	if err := s.CheckObjects(ctx, m); err != nil {
		return err
	}
	if fi, err := os.Stat(filepath.Dir(dataDir)); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: its parent %s is not a directory", ErrDataDirUnusable, filepath.Dir(dataDir))
	}
	return nil
}

// stage downloads and verifies m's files into staging, builds the new
// data directory from them (o.Materializer, else the files as they are),
// marks it with the generation and syncs it. It returns the staged
// directory and the marker's staging ID; res.Bytes counts the download.
func (s *Store) stage(ctx context.Context, m *Manifest, staging string, o RestoreOptions, res *RestoreResult) (newData, stagingID string, err error) {
	download := filepath.Join(staging, "download")
	if err := os.MkdirAll(download, 0o700); err != nil {
		return "", "", fmt.Errorf("creating the staging directory: %w", err)
	}
	res.Bytes, err = s.download(ctx, m, download, o.Progress)
	if err != nil {
		return "", "", err
	}
	newData = filepath.Join(staging, stagedName)
	if o.Materializer != nil {
		if err := o.Materializer.Materialize(ctx, m, download, newData); err != nil {
			return "", "", fmt.Errorf("%w: building the data directory from generation %s: %w", ErrRestoreCheck, m.Identity.Generation, err)
		}
		if err := o.Materializer.Check(ctx, m, newData); err != nil {
			return "", "", fmt.Errorf("%w: %w", ErrRestoreCheck, err)
		}
	} else if err := os.Rename(download, newData); err != nil {
		return "", "", err
	}
	if stagingID, err = newStagingID(); err != nil {
		return "", "", err
	}
	if err := writeMarker(newData, m, o.Now, o.RestoreID, stagingID); err != nil {
		return "", "", err
	}
	if err := syncTree(newData); err != nil {
		return "", "", fmt.Errorf("syncing the restored data: %w", err)
	}
	return newData, stagingID, nil
}

// checkPins refuses a manifest that is not the one the restore was
// confirmed with.
func checkPins(m *Manifest, o RestoreOptions) error {
	g := m.Identity.Generation
	switch {
	case o.ExpectDigest != "" && m.Digest != o.ExpectDigest:
		return fmt.Errorf("%w: generation %s in the store has digest %s, not %s, the one this restore was confirmed with (it was deleted and published again under the same ID since); check it and confirm the restore again",
			ErrGenerationChanged, g, m.Digest, o.ExpectDigest)
	case o.ExpectRevision != 0 && m.Identity.Revision != o.ExpectRevision:
		return fmt.Errorf("%w: generation %s in the store holds revision %d, not %d, the one this restore was confirmed with (it was deleted and published again under the same ID since); check it and confirm the restore again",
			ErrGenerationChanged, g, m.Identity.Revision, o.ExpectRevision)
	}
	return nil
}

// checkSpace refuses to stage m when the file system of dataDir's parent
// (where staging goes) has less room than staging takes. The old data is
// kept, so nothing it occupies counts as free.
func checkSpace(dataDir string, m *Manifest, mat Materializer) error {
	need := m.TotalSize
	switch e := mat.(type) {
	case SpaceEstimator:
		need = e.SpaceNeeded(m)
	case nil:
	default:
		need = 2 * m.TotalSize
	}
	parent := filepath.Dir(dataDir)
	free, err := freeSpace(parent)
	if err != nil {
		return fmt.Errorf("reading the free space of %s: %w", parent, err)
	}
	if free >= 0 && need > free {
		return fmt.Errorf("%w: staging generation %s beside %s needs %d bytes (%s), the file system has %d bytes free (%s); make room (previous copies %s.hactl-previous-* can go once you no longer need them) or use a larger volume",
			ErrNoSpace, m.Identity.Generation, dataDir, need, format.Bytes(need), free, format.Bytes(free), filepath.Base(dataDir))
	}
	return nil
}

func newStagingID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
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

// In staging: stagedName is the data directory being built, journalName
// the activation journal, discardName a fresh copy being deleted (renamed
// there first, so that a crash while deleting it leaves nothing that
// could be mistaken for old data). legacyStagedName is where hactl
// before the journal built it; what is found there is always kept.
const (
	stagedName       = "new"
	journalName      = "activation.json"
	discardName      = "discard"
	legacyStagedName = "data"
	previousInfix    = ".hactl-previous-"
)

func previousDir(dataDir string, now time.Time) string {
	return dataDir + previousInfix + now.UTC().Format("20060102t150405.000000000z")
}

// freePreviousName returns a previous directory's name for now that does
// not exist yet.
func freePreviousName(dataDir string, now time.Time) (string, error) {
	base := previousDir(dataDir, now)
	for i := 0; i < 1000; i++ {
		p := base
		if i > 0 {
			p = fmt.Sprintf("%s-%d", base, i)
		}
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p, nil
		} else if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("no free name for a previous copy of %s", dataDir)
}

// journal is written into staging, durably, before an activation swaps
// the data directory: it names the staged copy (its marker's Staging) and
// where the old data goes.
type journal struct {
	Staging  string `json:"staging"`
	Previous string `json:"previous"`
}

func writeJournal(staging string, j journal) error {
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	tmp := filepath.Join(staging, journalName+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("writing the activation journal: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(staging, journalName))
	}
	if err == nil {
		err = syncDir(staging)
	}
	if err != nil {
		return fmt.Errorf("writing the activation journal: %w", err)
	}
	return nil
}

func readJournal(staging string) (journal, error) {
	var j journal
	b, err := os.ReadFile(filepath.Join(staging, journalName))
	if err != nil {
		return j, err
	}
	if len(b) > 64<<10 {
		return j, errors.New("activation journal too large")
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return j, err
	}
	if j.Staging == "" {
		return j, errors.New("activation journal names no staged copy")
	}
	return j, nil
}

// recoverStaging clears what an interrupted restore left in staging,
// whatever the restore ID it ran with. Data that may be the data
// directory's old content is never deleted: it is moved beside the data
// directory as a previous copy (the name the journal promised, when it
// is free), whose paths it returns. Only a copy proven to be one this
// package built and never activated is deleted:
//
//   - no journal: the activation never began (the journal is durable
//     before the swap), so the staged copy is a fresh one;
//   - a journal, and the data directory's marker names the journal's
//     staged copy: the swap happened, so staging holds the old data;
//   - a journal, the data directory does not name it, and the staged
//     copy's own marker does: the swap did not happen.
//
// Anything else there (an unreadable journal, a copy hactl built before
// the journal existed) is kept.
func recoverStaging(staging, dataDir string, now time.Time) ([]string, error) {
	if _, err := os.Lstat(staging); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var rescued []string
	keep := func(left, promised string) error {
		dst := ""
		if promised != "" && filepath.Dir(promised) == filepath.Dir(dataDir) && strings.HasPrefix(filepath.Base(promised), filepath.Base(dataDir)+previousInfix) {
			if _, err := os.Lstat(promised); errors.Is(err, fs.ErrNotExist) {
				dst = promised
			}
		}
		if dst == "" {
			var err error
			if dst, err = freePreviousName(dataDir, now); err != nil {
				return err
			}
		}
		if err := os.Rename(left, dst); err != nil {
			return fmt.Errorf("keeping the data an interrupted restore left in %s: %w", left, err)
		}
		rescued = append(rescued, dst)
		return nil
	}
	j, jerr := readJournal(staging)
	staged := filepath.Join(staging, stagedName)
	if _, err := os.Lstat(staged); err == nil {
		fresh := errors.Is(jerr, fs.ErrNotExist)
		if jerr == nil {
			dm, derr := readMarker(dataDir)
			sm, serr := readMarker(staged)
			swapped := derr == nil && dm.Staging == j.Staging
			fresh = !swapped && serr == nil && sm.Staging == j.Staging
		}
		if fresh {
			discard := filepath.Join(staging, discardName)
			err := os.RemoveAll(discard)
			if err == nil {
				err = os.Rename(staged, discard)
			}
			if err != nil {
				return rescued, fmt.Errorf("clearing the staging directory %s: %w", staging, err)
			}
		} else if err := keep(staged, j.Previous); err != nil {
			return rescued, err
		}
	}
	if _, err := os.Lstat(filepath.Join(staging, legacyStagedName)); err == nil {
		if err := keep(filepath.Join(staging, legacyStagedName), ""); err != nil {
			return rescued, err
		}
	}
	if len(rescued) > 0 {
		if err := syncDir(filepath.Dir(dataDir)); err != nil {
			return rescued, err
		}
	}
	if err := os.RemoveAll(staging); err != nil {
		return rescued, fmt.Errorf("clearing the staging directory %s: %w", staging, err)
	}
	return rescued, nil
}

// prunePrevious removes previous copies of dataDir beyond the keep newest
// (by the time in their names), never res.Previous nor res.Rescued. It
// runs only once the data directory holds the generation.
func prunePrevious(dataDir string, keep int, res *RestoreResult) {
	if keep == 0 {
		keep = DefaultKeepPrevious
	}
	if keep < 0 {
		return
	}
	parent, prefix := filepath.Dir(dataDir), filepath.Base(dataDir)+previousInfix
	entries, err := os.ReadDir(parent)
	if err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("listing previous copies: %v", err))
		return
	}
	protect := map[string]bool{res.Previous: true}
	for _, p := range res.Rescued {
		protect[p] = true
	}
	var prev []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			prev = append(prev, filepath.Join(parent, e.Name()))
		}
	}
	// Newest first: the names carry a fixed-width UTC time. The oldest
	// copy is kept too, whatever the bound: it is what the volume held
	// before the first restore (the only copy of writes no generation
	// has).
	sort.Sort(sort.Reverse(sort.StringSlice(prev)))
	for i, p := range prev {
		if i < keep || i == len(prev)-1 || protect[p] {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("removing previous copy %s: %v", p, err))
			continue
		}
		res.Removed = append(res.Removed, p)
	}
	if len(res.Removed) > 0 {
		_ = syncDir(parent)
	}
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

func writeMarker(dir string, m *Manifest, now time.Time, restoreID, stagingID string) error {
	b, err := json.MarshalIndent(Marker{
		Generation: m.Identity.Generation, Digest: m.Digest, ClusterID: m.Identity.ClusterID,
		Revision: m.Identity.Revision, RestoredAt: now.UTC(), RestoreID: restoreID, Staging: stagingID,
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

// activate moves newData into place at dataDir. With prev set (dataDir
// holds data, and the journal names prev), the old content goes to prev,
// which it returns.
func activate(newData, dataDir, prev string) (string, error) {
	parent := filepath.Dir(dataDir)
	if prev == "" {
		// A missing or empty directory: rename(2) replaces an empty one.
		if err := renameOverEmpty(newData, dataDir); err != nil {
			return "", fmt.Errorf("activating the restored data at %s: %w", dataDir, err)
		}
		return "", syncDir(parent)
	}
	if err := exchange(newData, dataDir); err == nil {
		// newData now holds the old content; the journal says so to a
		// rerun that finds it there.
		crashPoint("exchanged")
		if err := os.Rename(newData, prev); err != nil {
			return "", fmt.Errorf("the restored data is active at %s, but moving the old data aside to %s failed (it is kept in %s until a rerun moves it): %w", dataDir, prev, newData, err)
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
	crashPoint("moved-aside")
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

// crashHook, when set (by tests), is called at each crash point of an
// activation: "journaled" (the journal is durable, nothing swapped yet),
// "exchanged" (the new data is active, the old data still in staging),
// "moved-aside" (without an exchange: the old data moved aside, the data
// directory missing) and "activated" (before staging is cleared and old
// previous copies are removed).
var crashHook func(point string)

// freeSpace reports the bytes this process may still write on dir's file
// system (-1: unknown, nothing is checked). Tests replace it.
var freeSpace = availableBytes

func crashPoint(p string) {
	if crashHook != nil {
		crashHook(p)
	}
}
