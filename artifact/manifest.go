package artifact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hactl-dev/hactl/internal/format"
)

// Manifest format constants.
const (
	// ManifestKind is the manifest's "kind".
	ManifestKind = "SeedGeneration"
	// ManifestVersion is the only manifest format version this hactl
	// writes and reads.
	ManifestVersion = 1
	// ManifestName is the manifest's object name inside a generation.
	ManifestName = "manifest.json"
	// MaxManifestBytes bounds a manifest read from a store.
	MaxManifestBytes = 4 << 20
	// MaxFiles bounds the files one generation may list.
	MaxFiles = 100_000
	// MaxFileSize bounds one file's declared size (1 PiB).
	MaxFileSize = 1 << 50
	// maxPathLen bounds one file path.
	maxPathLen = 1024
	// digestPrefix starts an aggregate digest.
	digestPrefix = "sha256:"
)

// File is one file of a generation.
type File struct {
	// Path is relative to the upload (and to the restore directory):
	// clean, slash-separated, never absolute, never "..".
	Path string `json:"path"`
	// Size in bytes.
	Size int64 `json:"size"`
	// SHA256 is the file's SHA-256, lower-case hex.
	SHA256 string `json:"sha256"`
}

// Manifest describes one published generation. It is written last, after
// every file it lists; its presence is what publishes the generation.
type Manifest struct {
	Kind string `json:"kind"`
	// Version is the manifest format version (ManifestVersion).
	Version  int      `json:"manifestVersion"`
	Identity Identity `json:"identity"`
	Source   Source   `json:"source"`
	// Upload is the upload directory holding the files.
	Upload    string    `json:"upload"`
	Files     []File    `json:"files"`
	TotalSize int64     `json:"totalSize"`
	CreatedAt time.Time `json:"createdAt"`
	CreatedBy string    `json:"createdBy,omitempty"`
	// Digest is "sha256:" and the SHA-256 of the manifest's canonical
	// form (see ComputeDigest): it binds the identity to the file list.
	Digest string `json:"digest"`
}

// ComputeDigest returns the aggregate digest of m: the SHA-256 of its
// canonical text form, one "key value" line per field in a fixed order
// (format line, identity, source, creation, upload), then one line
// "file <sha256> <size> <path>" per file in path order. Every string in it
// is free of control characters (Validate), so the form is unambiguous.
func ComputeDigest(m *Manifest) string {
	var b strings.Builder
	line := func(k, v string) { b.WriteString(k + " " + v + "\n") }
	line("hactl-seed-generation", strconv.Itoa(m.Version))
	line("kind", m.Kind)
	id := m.Identity
	line("generation", id.Generation)
	line("engine", string(id.Engine))
	line("engineVersion", id.EngineVersion)
	line("clusterID", id.ClusterID)
	line("sourceMemberID", id.SourceMemberID)
	line("raftTerm", strconv.FormatUint(id.RaftTerm, 10))
	line("raftIndex", strconv.FormatUint(id.RaftIndex, 10))
	line("revision", strconv.FormatInt(id.Revision, 10))
	line("source.namespace", m.Source.Namespace)
	line("source.cluster", m.Source.Cluster)
	line("source.member", m.Source.Member)
	if m.Source.UID != "" {
		// only when recorded, so that earlier manifests keep their digest
		line("source.statefulSetUID", m.Source.UID)
	}
	line("createdAt", m.CreatedAt.UTC().Format(time.RFC3339Nano))
	line("createdBy", m.CreatedBy)
	line("upload", m.Upload)
	line("totalSize", strconv.FormatInt(m.TotalSize, 10))
	files := append([]File(nil), m.Files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	for _, f := range files {
		b.WriteString("file " + f.SHA256 + " " + strconv.FormatInt(f.Size, 10) + " " + f.Path + "\n")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return digestPrefix + hex.EncodeToString(sum[:])
}

// Seal fills Kind, Version, TotalSize and Digest, sorting Files by path,
// and validates the result.
func (m *Manifest) Seal() error {
	m.Kind = ManifestKind
	m.Version = ManifestVersion
	m.CreatedAt = m.CreatedAt.UTC()
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	m.TotalSize = 0
	for _, f := range m.Files {
		m.TotalSize += f.Size
	}
	m.Digest = ComputeDigest(m)
	return m.Validate()
}

// Validate checks a manifest's fields, paths and digest.
func (m *Manifest) Validate() error {
	if m.Kind != ManifestKind {
		return fmt.Errorf("%w: kind is %q, want %q", ErrManifestInvalid, truncate(m.Kind), ManifestKind)
	}
	if m.Version != ManifestVersion {
		return fmt.Errorf("%w: %d (this hactl reads version %d)", ErrUnknownManifestVersion, m.Version, ManifestVersion)
	}
	if err := m.Identity.Validate(); err != nil {
		return err
	}
	if err := m.Source.validate(); err != nil {
		return err
	}
	if err := validateUploadID(m.Upload); err != nil {
		return err
	}
	if err := checkText("createdBy", m.CreatedBy, 256); err != nil {
		return err
	}
	if m.CreatedAt.IsZero() {
		return fmt.Errorf("%w: createdAt is missing", ErrManifestInvalid)
	}
	if len(m.Files) == 0 {
		return fmt.Errorf("%w: no files", ErrManifestInvalid)
	}
	if len(m.Files) > MaxFiles {
		return fmt.Errorf("%w: %d files (at most %d)", ErrManifestInvalid, len(m.Files), MaxFiles)
	}
	seen := make(map[string]bool, len(m.Files))
	var total int64
	for i, f := range m.Files {
		if err := ValidatePath(f.Path); err != nil {
			return fmt.Errorf("file %d: %w", i, err)
		}
		if seen[f.Path] {
			return fmt.Errorf("%w: file %q is listed twice", ErrManifestInvalid, f.Path)
		}
		seen[f.Path] = true
		if f.Size < 0 || f.Size > MaxFileSize {
			return fmt.Errorf("%w: file %q has size %d", ErrManifestInvalid, f.Path, f.Size)
		}
		if !isSHA256Hex(f.SHA256) {
			return fmt.Errorf("%w: file %q has no valid sha256 (64 lower-case hex digits)", ErrManifestInvalid, f.Path)
		}
		total += f.Size
	}
	// A file may not also be a directory of another file.
	for p := range seen {
		for d := dirOf(p); d != ""; d = dirOf(d) {
			if seen[d] {
				return fmt.Errorf("%w: %q is both a file and the directory of %q", ErrManifestInvalid, d, p)
			}
		}
	}
	if total != m.TotalSize {
		return fmt.Errorf("%w: totalSize %d is not the sum of the file sizes (%d)", ErrManifestInvalid, m.TotalSize, total)
	}
	if want := ComputeDigest(m); m.Digest != want {
		return fmt.Errorf("%w: the manifest says %s, its contents hash to %s", ErrDigestMismatch, truncate(m.Digest), want)
	}
	return nil
}

func dirOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ValidatePath checks one file path from a manifest: a non-empty, clean,
// slash-separated relative path of printable UTF-8, with no "." or ".."
// element, no empty element, no backslash and no leading slash, at most
// 1024 bytes. Anything else wraps ErrUnsafePath.
func ValidatePath(p string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %q %s", ErrUnsafePath, truncate(p), why)
	}
	switch {
	case p == "":
		return bad("is empty")
	case len(p) > maxPathLen:
		return bad(fmt.Sprintf("is longer than %d bytes", maxPathLen))
	case !utf8.ValidString(p):
		return bad("is not valid UTF-8")
	case strings.HasPrefix(p, "/"):
		return bad("is absolute")
	case strings.ContainsRune(p, '\\'):
		return bad("contains a backslash")
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return bad("contains a control character")
		}
	}
	for _, el := range strings.Split(p, "/") {
		switch el {
		case "..":
			return bad("climbs out of its directory")
		case ".", "":
			return bad("is not clean (empty or \".\" element)")
		}
	}
	if len(p) >= 2 && p[1] == ':' {
		return bad("looks like a drive letter")
	}
	if !fs.ValidPath(p) || !filepath.IsLocal(p) {
		return bad("is not a local relative path")
	}
	return nil
}

// versionProbe reads only the format fields, to tell an unknown version
// from a malformed document.
type versionProbe struct {
	Kind    string          `json:"kind"`
	Version json.RawMessage `json:"manifestVersion"`
}

// DecodeManifest reads a manifest from untrusted bytes: at most
// MaxManifestBytes of strict JSON (no unknown fields, no trailing data) of
// a known version, whose fields, paths and digest validate.
func DecodeManifest(b []byte) (*Manifest, error) {
	if len(b) > MaxManifestBytes {
		return nil, fmt.Errorf("%w: %d bytes (at most %d)", ErrManifestInvalid, len(b), MaxManifestBytes)
	}
	var probe versionProbe
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrManifestInvalid, format.JSONProblem(err, "a manifest"))
	}
	if len(probe.Version) == 0 {
		return nil, fmt.Errorf("%w: manifestVersion is missing", ErrManifestInvalid)
	}
	var v int
	if err := json.Unmarshal(probe.Version, &v); err != nil {
		return nil, fmt.Errorf("%w: manifestVersion is not an integer", ErrManifestInvalid)
	}
	if v != ManifestVersion {
		return nil, fmt.Errorf("%w: %d (this hactl reads version %d)", ErrUnknownManifestVersion, v, ManifestVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrManifestInvalid, format.JSONProblem(err, "a manifest"))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the manifest", ErrManifestInvalid)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Encode renders m as indented JSON with a trailing newline.
func (m *Manifest) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
