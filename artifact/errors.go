package artifact

import "errors"

// Named errors. Every refusal wraps exactly one of them (test with
// errors.Is); the message around it says which generation, file or field.
var (
	// ErrNoManifest: the generation has no manifest. Either it was never
	// written, or its upload did not finish (files without a manifest
	// are a partial upload and never a generation).
	ErrNoManifest = errors.New("no manifest")
	// ErrUnknownManifestVersion: the manifest declares a format version
	// this hactl does not read.
	ErrUnknownManifestVersion = errors.New("unknown manifest version")
	// ErrManifestInvalid: the manifest is not a well-formed document
	// (bad JSON, unknown fields, trailing data, too large, missing or
	// malformed fields, duplicate files).
	ErrManifestInvalid = errors.New("invalid manifest")
	// ErrUnsafePath: a file path is absolute, climbs out of its
	// directory (".."), or is otherwise not a clean relative path.
	ErrUnsafePath = errors.New("unsafe path")
	// ErrDigestMismatch: the aggregate digest does not match the
	// manifest's identity and file list (the manifest was altered).
	ErrDigestMismatch = errors.New("aggregate digest mismatch")
	// ErrWrongCluster: the generation belongs to another cluster or
	// engine than the target.
	ErrWrongCluster = errors.New("generation belongs to another cluster")
	// ErrStale: the generation is older than the target's boundary.
	ErrStale = errors.New("generation older than the target's boundary")
	// ErrMissingFile: a file the manifest lists is not in the store.
	ErrMissingFile = errors.New("missing file")
	// ErrExtraFile: the upload holds a file the manifest does not list.
	ErrExtraFile = errors.New("extra file")
	// ErrSizeMismatch: a file's size differs from the manifest's.
	ErrSizeMismatch = errors.New("size mismatch")
	// ErrChecksumMismatch: a file's SHA-256 differs from the manifest's.
	ErrChecksumMismatch = errors.New("checksum mismatch")
	// ErrTruncated: a file's stream ended before its declared size.
	ErrTruncated = errors.New("truncated stream")
	// ErrGenerationExists: a generation with this ID but another
	// identity is already published; generations are immutable.
	ErrGenerationExists = errors.New("generation already exists with another identity")
	// ErrInvalidGeneration: a generation ID is not a valid name.
	ErrInvalidGeneration = errors.New("invalid generation ID")
	// ErrInvalidStore: a store URL cannot be used.
	ErrInvalidStore = errors.New("invalid store URL")
	// ErrDataDirNotEmpty: the target data directory holds data that is
	// not this generation, and replacing it was not allowed.
	ErrDataDirNotEmpty = errors.New("data directory is not empty")
	// ErrDataDirUnusable: the target data directory cannot be activated
	// by rename (it is a mount point, or its parent is missing).
	ErrDataDirUnusable = errors.New("data directory cannot be replaced by rename")
	// ErrRestoreCheck: the restored data failed the engine's check
	// before activation.
	ErrRestoreCheck = errors.New("restored data failed its check")
	// ErrInUse: a generation is referenced by a running action.
	ErrInUse = errors.New("generation in use by a running action")
)

// errExchangeUnsupported: the platform cannot swap two directories
// atomically.
var errExchangeUnsupported = errors.New("atomic exchange not supported")
