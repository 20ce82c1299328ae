package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/agent"
	"github.com/hactl-dev/hactl/agent/restore"
	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/status"
)

// Environment variables the agent reads when the matching flag is not
// given: the etcd container's own (so an init container can share its
// env), and hactl's for the store.
const (
	envStore      = agent.EnvStore
	envGeneration = agent.EnvGeneration
	envRestoreID  = "HACTL_RESTORE_ID"
)

// defaultAgentTimeout is the agent's default --timeout: that of hactl's
// restore pods, within their activeDeadlineSeconds.
const defaultAgentTimeout = actions.RestoreAgentTimeout

// NewCmdAgent builds `kubectl-hactl agent`, the commands hactl runs inside
// a cluster's pods.
func NewCmdAgent(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Commands hactl runs inside a cluster's pods (init containers, the exporter)",
		Long: `Commands meant to run inside a cluster's pods: restore and capture, for
example as an init container next to the engine container, and exporter,
the verdicts as Prometheus metrics (a Deployment of its own).

Restore and capture need no access to the API server: store credentials
come from the environment (typically from a Secret through envFrom:
AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for s3://,
GOOGLE_APPLICATION_CREDENTIALS_JSON for gs://, AZURE_STORAGE_ACCOUNT with
AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or
AZURE_STORAGE_CONNECTION_STRING, for azblob://), and are never printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageError("agent needs a subcommand: restore, capture or exporter\nSee '%s --help'.", cmd.CommandPath())
		},
	}
	cmd.AddCommand(NewCmdAgentRestore(streams), NewCmdAgentCapture(streams), NewCmdAgentExporter(flags, streams))
	return cmd
}

// AgentRestoreOptions holds the flags of `agent restore`.
type AgentRestoreOptions struct {
	Store      string
	Generation string
	DataDir    string
	Output     string
	Replace    bool
	RestoreID  string

	// Target boundary.
	ExpectClusterID string
	MinRevision     int64

	// Pins: the generation as the restore was confirmed.
	ExpectDigest   string
	ExpectRevision int64

	// KeepPrevious is how many previous copies of DIR to keep.
	KeepPrevious int
	// Timeout bounds the whole restore (0: none).
	Timeout time.Duration

	// etcd member flags (defaults from ETCD_* environment variables).
	Name                string
	InitialCluster      string
	PeerURLs            string
	InitialClusterToken string
	BumpRevision        uint64
	MarkCompacted       bool

	restorer restore.EtcdMember
	getenv   func(string) string

	genericiooptions.IOStreams
}

// agentRestoreLong is the help of `kubectl-hactl agent restore`.
const agentRestoreLong = `Restore a seed generation into a data directory, verifying it before anything
on disk changes:

  1. read the generation's manifest and check it: format version, digest,
     safe paths, the pins (--expect-digest, --expect-revision: the
     generation exactly as the restore was confirmed, not another one
     published under the same ID since), the expected cluster
     (--expect-cluster-id) and boundary (--min-revision), and that the
     store holds exactly its files;
  2. recover what an interrupted restore left beside DIR: data it had
     already swapped out of DIR is kept as DIR.hactl-previous-<time>,
     never deleted;
  3. look at DIR: if it already holds this generation (restored by this
     same --restore-id, when one is given), do nothing (so the command can
     run on every pod start); if it holds other data, refuse unless
     --replace;
  4. check the volume's free space against what staging needs (refused,
     naming the bytes needed and free);
  5. download every file into a staging directory beside DIR, hashing
     every byte against the manifest;
  6. for etcd, build the member's data directory from the snapshot with
     etcd's own restore logic (as etcdutl snapshot restore) and check it;
  7. activate it by an atomic rename, journaled so that a crash at any
     point leaves the old data recoverable; the previous content of DIR is
     kept beside it as DIR.hactl-previous-<time>, and only the
     --keep-previous newest such copies are kept (older ones are removed
     once the new data is active).

DIR must be a directory inside the volume, not the volume's mount point
(activation renames it).

--timeout bounds the whole restore; when it expires before the
activation, DIR is unchanged (exit 1).

For etcd, restoring every member of a cluster from one generation with the
same --initial-cluster and token is etcd's quorum-loss recovery: the
restored cluster has a new cluster ID. The etcd flags default to the
environment variables the etcd container reads (ETCD_NAME,
ETCD_INITIAL_CLUSTER, ETCD_INITIAL_ADVERTISE_PEER_URLS,
ETCD_INITIAL_CLUSTER_TOKEN), so an init container can share its env.
--store and --generation default to HACTL_SEED_STORE and
HACTL_SEED_GENERATION.

Store credentials come from the environment only, under the key names of
a store Secret (hactl's restore pods get the Secret's keys through
envFrom): AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN for
s3:// (the AWS SDK's default chain); GOOGLE_APPLICATION_CREDENTIALS_JSON
(a service account's JSON key) for gs://; AZURE_STORAGE_ACCOUNT with
AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or
AZURE_STORAGE_CONNECTION_STRING, for azblob://. Without them the SDK's
defaults apply (GOOGLE_APPLICATION_CREDENTIALS, workload identity). They
are never printed.

Exit codes:
  0  restored, or DIR already held this generation
  1  error (store unreachable, disk, restore failed)
  2  usage error
  5  refused: the generation failed verification (not the pinned digest
     or revision, wrong cluster, stale, unsafe path, missing or extra
     file, size or checksum mismatch, no manifest, unknown manifest
     version, truncated stream), the volume has too little free space, or
     DIR holds other data and --replace was not given; DIR is unchanged`

// NewCmdAgentRestore builds `kubectl-hactl agent restore`.
func NewCmdAgentRestore(streams genericiooptions.IOStreams) *cobra.Command {
	o := &AgentRestoreOptions{IOStreams: streams, getenv: os.Getenv}
	cmd := &cobra.Command{
		Use:   "restore --store URL --generation G --data-dir DIR",
		Short: "Verify a seed generation and restore it into a data directory (init container)",
		Long:  agentRestoreLong,
		Example: `  # as an init container of an etcd StatefulSet (env shared with etcd)
  kubectl-hactl agent restore --store 's3://seeds/etcd-main?endpoint=https://s3.example&use_path_style=true' \
      --generation nightly-42 --data-dir /var/lib/etcd/data

  # by hand, replacing what is there (kept as DIR.hactl-previous-<time>)
  kubectl-hactl agent restore --store file:///backups/etcd-main --generation g1 \
      --data-dir /var/lib/etcd/data --name etcd-0 \
      --initial-cluster etcd-0=http://etcd-0.etcd:2380 \
      --initial-advertise-peer-urls http://etcd-0.etcd:2380 --replace -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.AddFlags(cmd)
	return cmd
}

// AddFlags binds the agent restore flags.
func (o *AgentRestoreOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.Store, "store", "", "Store URL of the generations (default $"+envStore+"): s3://bucket/prefix?endpoint=…&use_path_style=true, gs://bucket/prefix, azblob://container/prefix or file:///dir.")
	f.StringVar(&o.Generation, "generation", "", "Generation ID to restore (default $"+envGeneration+").")
	f.StringVar(&o.DataDir, "data-dir", "", "Data directory to restore into (a directory inside the volume, not its mount point).")
	f.StringVar(&o.RestoreID, "restore-id", "", "Name this restore (default $"+envRestoreID+"). With it, DIR counts as already restored only if this same restore wrote it, so a new restore of the same generation replaces data written since; without it, DIR holding the generation is left alone.")
	f.BoolVar(&o.Replace, "replace", false, "Restore even if DIR holds other data; that data is kept as DIR.hactl-previous-<time>.")
	f.StringVar(&o.ExpectClusterID, "expect-cluster-id", "", "Refuse a generation of any other cluster (hex cluster ID).")
	f.StringVar(&o.ExpectDigest, "expect-digest", "", "Refuse the generation unless its manifest digest is exactly this (sha256:…): pins it as the restore was confirmed, so that one deleted and published again under the same ID is refused.")
	f.Int64Var(&o.ExpectRevision, "expect-revision", 0, "Refuse the generation unless it holds exactly this revision (0: any).")
	f.IntVar(&o.KeepPrevious, "keep-previous", artifact.DefaultKeepPrevious, "How many previous copies of DIR (DIR.hactl-previous-<time>) to keep, the newest; older ones are removed once the new data is active (at least 1).")
	f.DurationVar(&o.Timeout, "timeout", defaultAgentTimeout, "Give up the whole restore after this long (0: never); DIR is unchanged unless the activation had begun.")
	f.Int64Var(&o.MinRevision, "min-revision", 0, "Refuse a generation holding an older revision than this (the target's boundary).")
	f.StringVar(&o.Name, "name", "", "etcd: the member's --name (default $ETCD_NAME).")
	f.StringVar(&o.InitialCluster, "initial-cluster", "", "etcd: --initial-cluster of the restored cluster (default $ETCD_INITIAL_CLUSTER).")
	f.StringVar(&o.PeerURLs, "initial-advertise-peer-urls", "", "etcd: the member's peer URLs, comma-separated (default $ETCD_INITIAL_ADVERTISE_PEER_URLS).")
	f.StringVar(&o.InitialClusterToken, "initial-cluster-token", "", "etcd: --initial-cluster-token (default $ETCD_INITIAL_CLUSTER_TOKEN, else etcd's default).")
	f.Uint64Var(&o.BumpRevision, "bump-revision", 0, "etcd: raise the restored revision by this much (with --mark-compacted), so that watchers never see revisions go back.")
	f.BoolVar(&o.MarkCompacted, "mark-compacted", false, "etcd: mark the restored revision compacted (with --bump-revision).")
	f.StringVarP(&o.Output, "output", "o", "", "Output format: json prints the result as one JSON document; default is text.")
}

// Complete fills unset flags from the environment.
func (o *AgentRestoreOptions) Complete() error {
	def := func(p *string, env string) {
		if *p == "" {
			*p = strings.TrimSpace(o.getenv(env))
		}
	}
	def(&o.Store, envStore)
	def(&o.Generation, envGeneration)
	def(&o.RestoreID, envRestoreID)
	def(&o.Name, "ETCD_NAME")
	def(&o.InitialCluster, "ETCD_INITIAL_CLUSTER")
	def(&o.PeerURLs, "ETCD_INITIAL_ADVERTISE_PEER_URLS")
	def(&o.InitialClusterToken, "ETCD_INITIAL_CLUSTER_TOKEN")
	if o.InitialClusterToken == "" {
		o.InitialClusterToken = "etcd-cluster"
	}
	var urls []string
	for _, u := range strings.Split(o.PeerURLs, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	o.restorer = restore.EtcdMember{
		Name: o.Name, InitialCluster: o.InitialCluster, PeerURLs: urls,
		InitialClusterToken: o.InitialClusterToken, RevisionBump: o.BumpRevision, MarkCompacted: o.MarkCompacted,
	}
	return nil
}

// Validate checks the flags.
func (o *AgentRestoreOptions) Validate() error {
	if err := agent.CheckStoreFlags(o.Store, o.Generation, o.Output); err != nil {
		return withCode(ExitUsage, err)
	}
	switch {
	case o.DataDir == "":
		return usageError("--data-dir is required")
	case o.MinRevision < 0:
		return usageError("--min-revision must not be negative")
	case o.ExpectRevision < 0:
		return usageError("--expect-revision must not be negative")
	case o.ExpectDigest != "" && !strings.HasPrefix(o.ExpectDigest, "sha256:"):
		return usageError("--expect-digest must be a manifest digest (sha256:…), got %q", o.ExpectDigest)
	case o.KeepPrevious < 1:
		return usageError("--keep-previous must be at least 1 (the data a restore replaces is always kept)")
	case o.Timeout < 0:
		return usageError("--timeout must not be negative")
	}
	if err := artifact.ValidateGeneration(o.Generation); err != nil {
		return usageError("--generation: %v", err)
	}
	return nil
}

// agentRestoreResult is the JSON document -o json prints.
type agentRestoreResult struct {
	APIVersion string                  `json:"apiVersion"`
	Kind       string                  `json:"kind"`
	Generation string                  `json:"generation"`
	Store      string                  `json:"store"`
	DataDir    string                  `json:"dataDir"`
	Already    bool                    `json:"alreadyRestored"`
	Previous   string                  `json:"previousDataDir,omitempty"`
	Rescued    []string                `json:"rescuedDataDirs,omitempty"`
	Removed    []string                `json:"removedPreviousDataDirs,omitempty"`
	Warnings   []string                `json:"warnings,omitempty"`
	Bytes      int64                   `json:"bytes"`
	Identity   *artifact.Identity      `json:"identity,omitempty"`
	Digest     string                  `json:"digest,omitempty"`
	Keys       *int                    `json:"keys,omitempty"`
	Error      string                  `json:"error,omitempty"`
	Refused    bool                    `json:"refused,omitempty"`
	Phases     []agentPhase            `json:"phases"`
	Result     *artifact.RestoreResult `json:"-"`
}

type agentPhase struct {
	Phase  string    `json:"phase"`
	At     time.Time `json:"at"`
	Detail string    `json:"detail"`
}

// Run restores.
func (o *AgentRestoreOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	timedOut := fmt.Errorf("the restore took longer than --timeout %s", o.Timeout)
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, timedOut)
		defer cancel()
	}
	doc := &agentRestoreResult{APIVersion: status.SchemaVersion, Kind: "SeedRestore", Generation: o.Generation, DataDir: o.DataDir}
	var mu sync.Mutex
	say := func(phase, format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		p := agentPhase{Phase: phase, At: time.Now().UTC(), Detail: fmt.Sprintf(format, a...)}
		doc.Phases = append(doc.Phases, p)
		if o.Output == "" {
			fmt.Fprintf(o.ErrOut, "%s  %-10s %s\n", p.At.Format(time.RFC3339), phase, p.Detail)
		}
	}
	err := o.restore(ctx, doc, say)
	if err != nil && errors.Is(context.Cause(ctx), timedOut) && !errors.Is(err, timedOut) {
		err = fmt.Errorf("%w: %w", timedOut, err)
	}
	if err != nil {
		doc.Error = err.Error()
		doc.Refused = refusedRestore(err)
	}
	if o.Output == "json" {
		b, jerr := json.MarshalIndent(doc, "", "  ")
		if jerr != nil {
			return jerr
		}
		fmt.Fprintf(o.Out, "%s\n", b)
	}
	switch {
	case err == nil:
		return nil
	case doc.Refused:
		return withCode(ExitRefused, fmt.Errorf("refused, %s is unchanged: %w", o.DataDir, err))
	}
	return err
}

func (o *AgentRestoreOptions) restore(ctx context.Context, doc *agentRestoreResult, say func(string, string, ...any)) error {
	var p *lineProgress
	res, err := restore.Run(ctx, restore.Options{
		Store: o.Store, Generation: o.Generation, DataDir: o.DataDir, Getenv: o.getenv,
		Expect:       artifact.Expect{ClusterID: o.ExpectClusterID, MinRevision: o.MinRevision},
		ExpectDigest: o.ExpectDigest, ExpectRevision: o.ExpectRevision,
		KeepPrevious: o.KeepPrevious, Replace: o.Replace, RestoreID: o.RestoreID,
		Etcd: o.restorer,
	}, say, func(done, total int64) {
		if p == nil {
			p = newLineProgress(o.ErrOut, o.Output, total)
		}
		p.update(done)
	})
	if p != nil {
		p.done()
	}
	doc.Store = res.Store
	if m := res.Manifest; m != nil {
		doc.Identity, doc.Digest = &m.Identity, m.Digest
	}
	if res.Ran {
		r := res.Restore
		doc.Result = &r
		doc.Already, doc.Previous, doc.Bytes = r.Already, r.Previous, r.Bytes
		doc.Rescued, doc.Removed, doc.Warnings = r.Rescued, r.Removed, r.Warnings
		if r.DataDir != "" {
			doc.DataDir = r.DataDir
		}
	}
	doc.Keys = res.Keys
	var se *restore.SettingsError
	if errors.As(err, &se) {
		return usageError("%v", se.Err)
	}
	return err
}

// refusedRestore reports whether err is a verification refusal (as
// opposed to an I/O failure).
func refusedRestore(err error) bool {
	for _, e := range []error{
		artifact.ErrNoManifest, artifact.ErrUnknownManifestVersion, artifact.ErrManifestInvalid,
		artifact.ErrUnsafePath, artifact.ErrDigestMismatch, artifact.ErrWrongCluster, artifact.ErrStale,
		artifact.ErrMissingFile, artifact.ErrExtraFile, artifact.ErrSizeMismatch, artifact.ErrChecksumMismatch,
		artifact.ErrTruncated, artifact.ErrDataDirNotEmpty, artifact.ErrDataDirUnusable, artifact.ErrRestoreCheck,
		artifact.ErrGenerationChanged, artifact.ErrNoSpace,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// lineProgress prints a transfer's progress as occasional lines on
// stderr (the agent runs in a pod: its log is not a terminal): text every
// 5 s, or with -o json a JSON line (AgentProgress) every 2 s, which
// `kubectl hactl restore` reads from the restore pods' logs for its
// progress bar.
type lineProgress struct {
	w       io.Writer
	output  string
	total   int64
	start   time.Time
	mu      sync.Mutex
	last    time.Time
	current int64
}

// AgentProgress is the progress line `agent restore -o json` writes to
// stderr while it downloads.
type AgentProgress struct {
	Kind  string `json:"kind"`
	Bytes int64  `json:"bytes"`
	Total int64  `json:"total"`
}

// agentProgressKind is AgentProgress's kind.
const agentProgressKind = "SeedRestoreProgress"

func newLineProgress(w io.Writer, output string, total int64) *lineProgress {
	return &lineProgress{w: w, output: output, total: total, start: time.Now()}
}

func (p *lineProgress) update(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.current = n
	every := 5 * time.Second
	if p.output == "json" {
		every = 2 * time.Second
	}
	if time.Since(p.last) < every {
		return
	}
	p.print()
}

func (p *lineProgress) print() {
	p.last = time.Now()
	switch p.output {
	case "":
		fmt.Fprintf(p.w, "%s  %-10s %s\n", p.last.UTC().Format(time.RFC3339), "transfer", format.Progress(p.current, p.total, time.Since(p.start)))
	case "json":
		b, _ := json.Marshal(AgentProgress{Kind: agentProgressKind, Bytes: p.current, Total: p.total})
		fmt.Fprintf(p.w, "%s\n", b)
	}
}

// done prints the last count (JSON only: the text log has its phases).
func (p *lineProgress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.output == "json" {
		p.print()
	}
}
