// Package restore is what a restore pod runs below its command line
// (`kubectl-hactl agent restore`): it opens the generation's store with
// the credentials of the pod's environment, reads and verifies the
// manifest, materializes the generation into a data directory with its
// engine's restore logic (Materializers), checks the result, and says
// each phase as it goes. The command's flags, output and exit codes stay
// in cli.
//
// It needs no Kubernetes client: everything it reads is the store and
// the data directory.
package restore

import (
	"context"
	"fmt"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/etcdgen/etcdrestore"
	"github.com/hactl-dev/hactl/model"
)

// Options are one restore's inputs.
type Options struct {
	// Store is the store URL, Generation the generation to restore, and
	// DataDir where it goes.
	Store, Generation, DataDir string
	// Getenv reads the pod's environment (store credentials).
	Getenv func(string) string
	// Expect is the target's boundary (cluster ID, minimum revision);
	// ExpectDigest and ExpectRevision pin the generation as the restore
	// was confirmed.
	Expect         artifact.Expect
	ExpectDigest   string
	ExpectRevision int64
	// KeepPrevious, Replace and RestoreID are artifact.RestoreOptions'.
	KeepPrevious int
	Replace      bool
	RestoreID    string
	// Etcd are the etcd member's settings, for an etcd generation.
	Etcd EtcdMember
}

// EtcdMember is what restoring an etcd member needs beside the
// generation: its name, the restored cluster's --initial-cluster and
// token, its peer URLs, and the revision bump.
type EtcdMember = etcdrestore.Restorer

// Say reports one phase of the restore (verifying, recovered, pruned,
// warning, restored, checked) with its detail.
type Say func(phase, format string, args ...any)

// Result is what a restore did.
type Result struct {
	// Store names the store opened; Manifest is the generation's.
	Store    string
	Manifest *artifact.Manifest
	// Restore is what the staged restore did, once it ran (Ran).
	Restore artifact.RestoreResult
	Ran     bool
	// Keys is the number of keys the restored data holds, when the
	// engine can count them (nil otherwise).
	Keys *int
}

// Materializer is one engine's restore logic, with the checks it can make
// of what it restored.
type Materializer interface {
	artifact.Materializer
	// Validate checks the engine's settings before anything is read.
	Validate() error
	// Inspect reads the restored, activated data directory: a count of
	// what it holds (nil when it cannot say) and a line for the log.
	Inspect(dataDir string) (keys *int, detail string, err error)
}

// Materializers are the engines whose generations a restore pod can
// materialize, each from the restore's options.
var Materializers = map[model.Engine]func(Options) Materializer{
	etcdrestore.Engine: func(o Options) Materializer { return etcdMaterializer{o.Etcd} },
}

// Run restores o.Generation into o.DataDir. progress, when set, is told
// the bytes read so far and the generation's size (first 0, once the
// manifest is read). Result holds what was
// learnt even when Run fails: the store, the manifest once read, and what
// the staged restore did (Ran: data rescued from an interrupted one).
func Run(ctx context.Context, o Options, say Say, progress func(done, total int64)) (Result, error) {
	var res Result
	creds, err := artifact.CredentialsFromEnv(artifact.StoreScheme(o.Store), o.Getenv)
	if err != nil {
		return res, err
	}
	store, err := artifact.OpenStore(ctx, o.Store, artifact.Options{Credentials: creds})
	if err != nil {
		return res, err
	}
	defer store.Close()
	res.Store = store.String()
	say("verifying", "reading generation %s from %s", o.Generation, store)
	m, err := store.ReadManifest(ctx, o.Generation)
	if err != nil {
		return res, err
	}
	res.Manifest = m
	newMat, ok := Materializers[m.Identity.Engine]
	var mat Materializer
	if ok {
		mat = newMat(o)
		if err := mat.Validate(); err != nil {
			return res, &SettingsError{Err: err}
		}
	}
	say("verifying", "generation %s: %s cluster %s, member %s, revision %d, term %d, %d file(s), %d bytes", o.Generation,
		m.Identity.Engine, m.Identity.ClusterID, m.Identity.SourceMemberID, m.Identity.Revision, m.Identity.RaftTerm, len(m.Files), m.TotalSize)
	ro := artifact.RestoreOptions{
		DataDir:        o.DataDir,
		Expect:         o.Expect,
		ExpectDigest:   o.ExpectDigest,
		ExpectRevision: o.ExpectRevision,
		KeepPrevious:   o.KeepPrevious,
		Replace:        o.Replace,
		RestoreID:      o.RestoreID,
	}
	if progress != nil {
		progress(0, m.TotalSize)
		ro.Progress = func(n int64) { progress(n, m.TotalSize) }
	}
	if mat != nil {
		ro.Materializer = mat
	}
	r, err := artifact.Restore(ctx, store, o.Generation, ro)
	res.Restore, res.Ran = r, true
	dir := o.DataDir
	if r.DataDir != "" {
		dir = r.DataDir
	}
	for _, p := range r.Rescued {
		say("recovered", "an interrupted restore had swapped the old data out of %s: kept at %s", dir, p)
	}
	if err != nil {
		return res, err
	}
	for _, p := range r.Removed {
		say("pruned", "removed previous copy %s (keeping the %d newest)", p, o.KeepPrevious)
	}
	for _, w := range r.Warnings {
		say("warning", "%s", w)
	}
	if r.Already {
		say("restored", "%s already holds generation %s; nothing changed", r.DataDir, o.Generation)
		return res, nil
	}
	if mat != nil {
		if keys, detail, err := mat.Inspect(r.DataDir); err == nil {
			res.Keys = keys
			say("checked", "%s", detail)
		}
	}
	if r.Previous != "" {
		say("restored", "activated generation %s at %s; previous data kept at %s", o.Generation, r.DataDir, r.Previous)
	} else {
		say("restored", "activated generation %s at %s", o.Generation, r.DataDir)
	}
	return res, nil
}

// SettingsError says the engine's settings for the restore are not
// usable (a usage error of the command).
type SettingsError struct{ Err error }

func (e *SettingsError) Error() string { return e.Err.Error() }
func (e *SettingsError) Unwrap() error { return e.Err }

// etcdMaterializer is etcd's Restorer with the space its staging takes:
// the downloaded snapshot, the backend copied from it, and the first WAL
// segment etcd preallocates.
type etcdMaterializer struct{ etcdrestore.Restorer }

const etcdWALSegment = 64 << 20

func (e etcdMaterializer) SpaceNeeded(m *artifact.Manifest) int64 {
	return 2*m.TotalSize + etcdWALSegment
}

func (e etcdMaterializer) Inspect(dataDir string) (*int, string, error) {
	st, err := etcdrestore.BackendStatus(dataDir)
	if err != nil {
		return nil, "", err
	}
	n := st.TotalKey
	return &n, fmt.Sprintf("restored backend: %d keys, revision %d, %d bytes", st.TotalKey, st.Revision, st.TotalSize), nil
}
