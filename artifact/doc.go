// Package artifact implements seed generations: immutable, verified base
// backups of one HA cluster kept in object storage.
//
// A generation is named by an operator-chosen generation ID and keyed by
// the identity of what it holds (Identity: engine and version, cluster ID,
// source member ID, raft term and index, revision). Its manifest (a
// versioned JSON document, see Manifest) lists every file with its size
// and SHA-256 and carries an aggregate digest over the identity and the
// file list.
//
// # Publishing
//
// A writer streams each file once, hashing while it uploads (Upload.Create),
// into an upload directory of its own, and writes the manifest last with
// create-if-absent semantics (Upload.Publish). A reader therefore never
// sees a partial generation: without a manifest there is no generation.
// Publishing the same generation ID again with the same identity is a
// no-op; with a different identity it fails with ErrGenerationExists
// (generations are immutable). A writer that dies mid-upload leaves only
// an unreferenced upload directory, which GC removes.
//
// # Store layout
//
// Under the store's prefix (the path of an s3://, gs:// or azblob:// URL,
// or the directory of a file:// URL):
//
//	<generation>/manifest.json
//	<generation>/uploads/<upload-id>/<file path>
//
// # Verification
//
// Everything read from a store is untrusted. DecodeManifest checks the
// framing (size, strict JSON, known manifest version, digest, safe and
// unique paths); Check compares the identity with what the target expects
// (cluster, boundary); Store.Verify and Restore hash every byte. Each
// failure is a named error (ErrNoManifest, ErrUnknownManifestVersion,
// ErrManifestInvalid, ErrUnsafePath, ErrWrongCluster, ErrStale,
// ErrMissingFile, ErrExtraFile, ErrSizeMismatch, ErrChecksumMismatch,
// ErrTruncated, ErrDigestMismatch), and all of them are raised before a
// target data directory is touched.
//
// # Restore
//
// Restore downloads into a staging directory beside the data directory,
// verifying as it goes, lets the engine turn the files into a data
// directory (for etcd, package artifact/etcdrestore), checks it, and only
// then activates it by an atomic rename, keeping the previous data
// directory beside it.
//
// # Credentials
//
// Store credentials come from the environment (the cloud SDKs' default
// chains) or from a Secret reference read by the caller (Credentials).
// Their values never appear in errors, String or JSON output: Credentials
// redacts itself and every error a Store returns is scrubbed of them.
//
// This package imports package model and the gocloud.dev blob drivers; it
// never imports an engine or client-go.
package artifact
