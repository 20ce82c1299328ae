package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/status"
)

// generationsAPIVersion is the schema of the JSON/YAML documents the
// seed-generation commands print.
const generationsAPIVersion = status.SchemaVersion

// storeFlags are the flags every command that reads a seed store takes.
type storeFlags struct {
	URL    string
	Secret string
}

func (f *storeFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.URL, "store", "", "Store URL of the cluster's seed generations (default: the StatefulSet's annotation "+artifact.AnnotationStore+"): s3://bucket/prefix?endpoint=…&use_path_style=true, gs://bucket/prefix, azblob://container/prefix or file:///dir.")
	fs.StringVar(&f.Secret, "store-secret", "", "Secret in the cluster's namespace holding the store credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (s3://), GOOGLE_APPLICATION_CREDENTIALS_JSON (gs://), AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or AZURE_STORAGE_CONNECTION_STRING (azblob://) (default: the annotation "+artifact.AnnotationStoreSecret+"; without either, the environment's credentials are used). Values are never printed.")
}

func (f storeFlags) ref() actions.StoreRef { return actions.StoreRef{URL: f.URL, Secret: f.Secret} }

// openStore resolves and opens the store of cluster ns/name from the
// flags, else the StatefulSet's annotations (actions.OpenClusterStore); a
// cluster without a store is a usage error (give --store).
func openStore(ctx context.Context, c kubernetes.Interface, ns, name string, f storeFlags, o actions.StoreOpen) (*actions.ClusterStore, error) {
	cs, err := actions.OpenClusterStore(ctx, c, ns, name, f.ref(), o)
	if errors.Is(err, actions.ErrNoStore) {
		return nil, withCode(ExitUsage, err)
	}
	return cs, err
}

// generationsOptions is what every generations subcommand shares.
type generationsOptions struct {
	configFlags *kubeflags.ConfigFlags
	store       storeFlags
	Output      string

	Namespace string
	Cluster   string
	client    kubernetes.Interface
	outIsTTY  bool

	genericiooptions.IOStreams
}

func (o *generationsOptions) addFlags(cmd *cobra.Command, outputs string) {
	o.store.add(cmd.Flags())
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: "+outputs+".")
}

func (o *generationsOptions) complete(args []string) error {
	o.Cluster = args[0]
	c, err := connect(o.configFlags, false)
	if err != nil {
		return err
	}
	o.Namespace, o.client = c.namespace, c.client
	o.outIsTTY = isTerminal(o.ErrOut)
	return nil
}

// completeGeneration completes CLUSTER GENERATION commands (json or yaml
// output) and returns the checked generation ID.
func (o *generationsOptions) completeGeneration(args []string) (string, error) {
	if err := o.complete(args); err != nil {
		return "", err
	}
	if err := o.validateOutput("json", "yaml"); err != nil {
		return "", err
	}
	if err := artifact.ValidateGeneration(args[1]); err != nil {
		return "", usageError("%v", err)
	}
	return args[1], nil
}

func (o *generationsOptions) validateOutput(allowed ...string) error {
	for _, a := range append(allowed, "") {
		if o.Output == a {
			return nil
		}
	}
	return usageError("--output must be one of %s, got %q", strings.Join(allowed, ", "), o.Output)
}

func (o *generationsOptions) open(ctx context.Context, needSTS bool) (*actions.ClusterStore, error) {
	return openStore(ctx, o.client, o.Namespace, o.Cluster, o.store, actions.StoreOpen{NeedStatefulSet: needSTS})
}

// generationState names an entry's state.
type generationState string

const (
	statePublished  generationState = "published"
	stateIncomplete generationState = "incomplete"
	stateInvalid    generationState = "invalid"
)

func stateOf(e artifact.Entry) generationState {
	switch {
	case e.Published():
		return statePublished
	case errors.Is(e.Err, artifact.ErrNoManifest):
		return stateIncomplete
	}
	return stateInvalid
}

// generationItem is one generation in JSON/YAML output.
type generationItem struct {
	Generation string                `json:"generation"`
	State      generationState       `json:"state"`
	Error      string                `json:"error,omitempty"`
	InUse      string                `json:"inUse,omitempty"`
	Manifest   *artifact.Manifest    `json:"manifest,omitempty"`
	Uploads    []artifact.UploadInfo `json:"uploads,omitempty"`
}

func itemOf(e artifact.Entry, inUse map[string]string) generationItem {
	it := generationItem{Generation: e.Generation, State: stateOf(e), Manifest: e.Manifest, Uploads: e.Uploads, InUse: inUse[e.Generation]}
	if e.Err != nil && it.State != statePublished {
		it.Error = e.Err.Error()
	}
	return it
}

// NewCmdGenerations builds `kubectl hactl generations`.
func NewCmdGenerations(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "generations",
		Aliases: []string{"generation", "gen"},
		Short:   "List, show, verify and garbage-collect a cluster's seed generations",
		Long: `Seed generations are immutable base backups of one cluster in object storage,
published by 'kubectl hactl seed'. Each has a manifest (written last) that
lists every file with its size and SHA-256, an aggregate digest and the
identity it was taken from: cluster ID, source member, raft term, revision,
engine and version.

The store is the StatefulSet's annotation ` + artifact.AnnotationStore + ` (or --store), its
credentials the Secret named by ` + artifact.AnnotationStoreSecret + ` (or --store-secret,
or the environment). Credentials are never printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageError("generations needs a subcommand: list, show, verify or gc\nSee '%s --help'.", cmd.CommandPath())
		},
	}
	cmd.AddCommand(
		newCmdGenerationsList(flags, streams),
		newCmdGenerationsShow(flags, streams),
		newCmdGenerationsVerify(flags, streams),
		newCmdGenerationsGC(flags, streams),
	)
	return cmd
}

func clusterArgs(n int, usage string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError("%s takes %s, got %d argument(s)\nSee '%s --help'.", cmd.CommandPath(), usage, len(args), cmd.CommandPath())
		}
		return nil
	}
}

// --- list

func newCmdGenerationsList(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &generationsOptions{configFlags: flags, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "list CLUSTER",
		Short: "List a cluster's seed generations, published and incomplete",
		Long: `List every generation in the cluster's store: published ones with their
identity, incomplete ones (files without a manifest: an upload that did not
finish, never usable) and invalid ones (a manifest that does not validate).

Exit codes:
  0  listed
  1  error (API, store)
  2  usage error`,
		Example: `  kubectl hactl generations list etcd-main
  kubectl hactl generations list etcd-main -o wide
  kubectl hactl generations list etcd-main --store 's3://seeds/etcd-main?endpoint=http://minio:9000&use_path_style=true' -o json`,
		Args:              clusterArgs(1, "exactly one CLUSTER"),
		ValidArgsFunction: completeClusters(flags),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(args); err != nil {
				return err
			}
			if err := o.validateOutput("wide", "json", "yaml"); err != nil {
				return err
			}
			return o.runList(cmd.Context())
		},
	}
	o.addFlags(cmd, "wide, json or yaml")
	return cmd
}

func (o *generationsOptions) runList(ctx context.Context) error {
	cs, err := o.open(ctx, false)
	if err != nil {
		return err
	}
	defer cs.Store.Close()
	entries, err := cs.Store.List(ctx)
	if err != nil {
		return err
	}
	inUse := map[string]string{}
	if cs.StatefulSet != nil {
		if inUse, err = actions.InUseGenerations(ctx, o.client, o.Namespace, o.Cluster); err != nil {
			fmt.Fprintf(o.ErrOut, "warning: cannot read the ledger (in-use generations unknown): %v\n", err)
			inUse = map[string]string{}
		}
	}
	sort.SliceStable(entries, func(i, j int) bool { return createdAt(entries[i]).After(createdAt(entries[j])) })
	if o.Output == "json" || o.Output == "yaml" {
		items := []generationItem{}
		for _, e := range entries {
			items = append(items, itemOf(e, inUse))
		}
		return printDoc(o.Out, o.Output, map[string]any{
			"apiVersion": generationsAPIVersion, "kind": "SeedGenerationList",
			"cluster": o.Namespace + "/" + o.Cluster, "store": cs.Store.String(), "items": items,
		})
	}
	if len(entries) == 0 {
		fmt.Fprintf(o.ErrOut, "No seed generations in %s.\n", cs.Store)
		return nil
	}
	tw := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	head := "GENERATION\tSTATE\tCREATED\tSIZE\tCLUSTER-ID\tREVISION\tTERM\tSOURCE"
	if o.Output == "wide" {
		head += "\tFILES\tDIGEST\tUPLOADS\tIN-USE"
	}
	fmt.Fprintln(tw, head)
	now := time.Now()
	for _, e := range entries {
		row := []string{e.Generation, string(stateOf(e))}
		if m := e.Manifest; m != nil {
			src := m.Source.Member
			if src == "" {
				src = m.Identity.SourceMemberID
			}
			row = append(row, format.Age(m.CreatedAt, now)+" ago", format.Bytes(m.TotalSize), m.Identity.ClusterID,
				fmt.Sprint(m.Identity.Revision), fmt.Sprint(m.Identity.RaftTerm), src)
		} else {
			row = append(row, "-", format.Bytes(uploadBytes(e)), "-", "-", "-", "-")
		}
		if o.Output == "wide" {
			files, digest := "-", "-"
			if e.Manifest != nil {
				files, digest = fmt.Sprint(len(e.Manifest.Files)), e.Manifest.Digest
			}
			use := inUse[e.Generation]
			if use == "" {
				use = "-"
			}
			row = append(row, files, digest, fmt.Sprint(len(e.Uploads)), use)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

func createdAt(e artifact.Entry) time.Time {
	if e.Manifest != nil {
		return e.Manifest.CreatedAt
	}
	var t time.Time
	for _, u := range e.Uploads {
		if u.LastModified.After(t) {
			t = u.LastModified
		}
	}
	return t
}

func uploadBytes(e artifact.Entry) int64 {
	var n int64
	for _, u := range e.Uploads {
		n += u.Bytes
	}
	return n
}

// --- show

type generationsShowOptions struct {
	generationsOptions
	Generation string
}

func newCmdGenerationsShow(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &generationsShowOptions{generationsOptions: generationsOptions{configFlags: flags, IOStreams: streams}}
	cmd := &cobra.Command{
		Use:   "show CLUSTER GENERATION",
		Short: "Show one generation's manifest: identity, files, sizes and checksums",
		Long: `Show one generation: its state, identity (engine and version, cluster ID,
source member, raft term and index, revision), aggregate digest and every
file with its size and SHA-256. This reads the manifest only; 'generations
verify' hashes the files.

Exit codes:
  0  shown
  1  error (API, store, or the generation does not exist or does not validate)
  2  usage error`,
		Example: `  kubectl hactl generations show etcd-main nightly-42
  kubectl hactl generations show etcd-main nightly-42 -o json`,
		Args:              clusterArgs(2, "CLUSTER and GENERATION"),
		ValidArgsFunction: completeClusters(flags),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.Generation, err = o.completeGeneration(args); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.addFlags(cmd, "json or yaml")
	return cmd
}

func (o *generationsShowOptions) run(ctx context.Context) error {
	cs, err := o.open(ctx, false)
	if err != nil {
		return err
	}
	defer cs.Store.Close()
	e, err := cs.Store.Get(ctx, o.Generation)
	if err != nil {
		return err
	}
	if e.Manifest == nil && len(e.Uploads) == 0 {
		return e.Err
	}
	inUse := map[string]string{}
	if cs.StatefulSet != nil {
		inUse, _ = actions.InUseGenerations(ctx, o.client, o.Namespace, o.Cluster)
	}
	if o.Output != "" {
		it := itemOf(e, inUse)
		return printDoc(o.Out, o.Output, map[string]any{
			"apiVersion": generationsAPIVersion, "kind": "SeedGeneration", "store": cs.Store.String(),
			"generation": it.Generation, "state": it.State, "error": it.Error, "inUse": it.InUse,
			"manifest": it.Manifest, "uploads": it.Uploads,
		})
	}
	w := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "Generation:\t%s\n", e.Generation)
	fmt.Fprintf(w, "State:\t%s\n", stateOf(e))
	fmt.Fprintf(w, "Store:\t%s\n", cs.Store)
	if u := inUse[e.Generation]; u != "" {
		fmt.Fprintf(w, "In use by:\t%s\n", u)
	}
	if e.Manifest == nil {
		fmt.Fprintf(w, "Problem:\t%v\n", e.Err)
		for _, u := range e.Uploads {
			fmt.Fprintf(w, "Upload:\t%s  %d object(s), %s, last written %s\n", u.ID, u.Objects, format.Bytes(u.Bytes), u.LastModified.UTC().Format(time.RFC3339))
		}
		return w.Flush()
	}
	m := e.Manifest
	id := m.Identity
	fmt.Fprintf(w, "Digest:\t%s\n", m.Digest)
	fmt.Fprintf(w, "Engine:\t%s (storage version %s)\n", id.Engine, id.EngineVersion)
	fmt.Fprintf(w, "Cluster ID:\t%s\n", id.ClusterID)
	fmt.Fprintf(w, "Source member:\t%s", id.SourceMemberID)
	if m.Source.Member != "" {
		fmt.Fprintf(w, " (%s/%s/%s)", m.Source.Namespace, m.Source.Cluster, m.Source.Member)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Raft term:\t%d\n", id.RaftTerm)
	fmt.Fprintf(w, "Raft index:\t%d\n", id.RaftIndex)
	fmt.Fprintf(w, "Revision:\t%d\n", id.Revision)
	fmt.Fprintf(w, "Created:\t%s", m.CreatedAt.UTC().Format(time.RFC3339))
	if m.CreatedBy != "" {
		fmt.Fprintf(w, " by %s", m.CreatedBy)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Upload:\t%s\n", m.Upload)
	fmt.Fprintf(w, "Size:\t%s in %d file(s)\n", format.Bytes(m.TotalSize), len(m.Files))
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "Files:")
	fw := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(fw, "  PATH\tSIZE\tSHA256")
	for _, f := range m.Files {
		fmt.Fprintf(fw, "  %s\t%d\t%s\n", f.Path, f.Size, f.SHA256)
	}
	return fw.Flush()
}

// --- verify

type generationsVerifyOptions struct {
	generationsOptions
	Generation      string
	ExpectClusterID string
	MinRevision     int64
}

func newCmdGenerationsVerify(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &generationsVerifyOptions{generationsOptions: generationsOptions{configFlags: flags, IOStreams: streams}}
	cmd := &cobra.Command{
		Use:   "verify CLUSTER GENERATION",
		Short: "Verify a generation: manifest, identity, file list and every byte's checksum",
		Long: `Verify one generation as a restore would before touching anything: the
manifest's framing (version, strict JSON, digest, safe paths), the
identity against --expect-cluster-id and --min-revision when given, that
the store holds exactly the listed files with their sizes, and the
SHA-256 of every byte. A progress bar shows on a terminal.

Every failure is named: no_manifest, unknown_manifest_version,
invalid_manifest, unsafe_path, digest_mismatch, wrong_cluster, stale,
missing_file, extra_file, size_mismatch, checksum_mismatch, truncated.

Exit codes:
  0  the generation verifies
  1  error (API, store unreachable)
  2  usage error
  5  the generation does not verify (the message names why)`,
		Example: `  kubectl hactl generations verify etcd-main nightly-42
  kubectl hactl generations verify etcd-main nightly-42 --expect-cluster-id cdf818194e3a8c32 -o json`,
		Args:              clusterArgs(2, "CLUSTER and GENERATION"),
		ValidArgsFunction: completeClusters(flags),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.Generation, err = o.completeGeneration(args); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.addFlags(cmd, "json or yaml")
	cmd.Flags().StringVar(&o.ExpectClusterID, "expect-cluster-id", "", "Also require the generation to come from this cluster ID (hex).")
	cmd.Flags().Int64Var(&o.MinRevision, "min-revision", 0, "Also require at least this revision.")
	return cmd
}

// verifyCode names a verification failure for scripts.
func verifyCode(err error) string {
	for _, c := range []struct {
		err  error
		code string
	}{
		{artifact.ErrNoManifest, "no_manifest"}, {artifact.ErrUnknownManifestVersion, "unknown_manifest_version"},
		{artifact.ErrUnsafePath, "unsafe_path"}, {artifact.ErrDigestMismatch, "digest_mismatch"},
		{artifact.ErrManifestInvalid, "invalid_manifest"}, {artifact.ErrWrongCluster, "wrong_cluster"},
		{artifact.ErrStale, "stale"}, {artifact.ErrMissingFile, "missing_file"}, {artifact.ErrExtraFile, "extra_file"},
		{artifact.ErrSizeMismatch, "size_mismatch"}, {artifact.ErrChecksumMismatch, "checksum_mismatch"},
		{artifact.ErrTruncated, "truncated"},
	} {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return ""
}

func (o *generationsVerifyOptions) run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cs, err := o.open(ctx, false)
	if err != nil {
		return err
	}
	defer cs.Store.Close()
	start := time.Now()
	var total int64
	if m, err := cs.Store.ReadManifest(ctx, o.Generation); err == nil {
		total = m.TotalSize
	}
	bar := newProgressBar(o.ErrOut, o.outIsTTY && o.Output == "", "verifying "+o.Generation, total)
	m, err := cs.Store.Verify(ctx, o.Generation, artifact.Expect{ClusterID: o.ExpectClusterID, MinRevision: o.MinRevision}, bar.update)
	bar.finish()
	code := verifyCode(err)
	if err != nil && code == "" {
		return err
	}
	if o.Output != "" {
		doc := map[string]any{
			"apiVersion": generationsAPIVersion, "kind": "SeedGenerationVerification",
			"generation": o.Generation, "store": cs.Store.String(), "verified": err == nil,
		}
		if m != nil {
			doc["digest"], doc["identity"], doc["bytes"], doc["files"] = m.Digest, m.Identity, m.TotalSize, len(m.Files)
		}
		if err != nil {
			doc["reason"], doc["error"] = code, err.Error()
		}
		if perr := printDoc(o.Out, o.Output, doc); perr != nil {
			return perr
		}
	} else if err == nil {
		fmt.Fprintf(o.Out, "generation %s verified: %d file(s), %s, every SHA-256 matches; digest %s, %s cluster %s, revision %d (%s)\n",
			o.Generation, len(m.Files), format.Bytes(m.TotalSize), m.Digest, m.Identity.Engine, m.Identity.ClusterID, m.Identity.Revision, time.Since(start).Round(time.Millisecond))
	}
	if err != nil {
		return withCode(ExitRefused, fmt.Errorf("generation %s does not verify (%s): %w", o.Generation, code, err))
	}
	return nil
}

// --- gc

type generationsGCOptions struct {
	generationsOptions
	Keep       int
	OlderThan  time.Duration
	PartialAge time.Duration
	DryRun     string
	Yes        bool
	// AllClusters: every cluster's generations in the store are
	// candidates, not only this cluster's.
	AllClusters bool
	// IncludeUnowned: uploads and generations no manifest ties to a
	// cluster are candidates.
	IncludeUnowned bool
	// AllowMissingSTS: go ahead when the StatefulSet does not exist.
	AllowMissingSTS bool
	// stsUID is the StatefulSet's UID, once read ("" when it is missing).
	stsUID string
}

func newCmdGenerationsGC(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &generationsGCOptions{generationsOptions: generationsOptions{configFlags: flags, IOStreams: streams}, Keep: 3, PartialAge: artifact.DefaultPartialAge, DryRun: "none"}
	cmd := &cobra.Command{
		Use:   "gc CLUSTER",
		Short: "Delete old seed generations and abandoned uploads of a cluster",
		Long: `Delete the cluster's generations beyond the --keep newest that are also
older than --older-than, and uploads no manifest points at (interrupted or
superseded seeds) once older than --partial-age (raised to --older-than
when that is longer).

Only this cluster's generations are candidates: those whose manifest
records this cluster's namespace and name as their source (what seed
writes, covered by the manifest's digest). Generations of other clusters
sharing the store are listed as kept ("belongs to NAMESPACE/NAME") and
never deleted; --all-clusters makes them candidates too (the --keep newest
of each cluster are kept). Uploads without a manifest, and manifests that
name no source cluster, prove no owner: they are kept unless
--include-unowned (or --all-clusters).

A generation named by an in-progress action in the cluster's ledger is
never deleted (checked again just before each deletion), and gc holds the
cluster's action lock (Lease hactl-CLUSTER) while it deletes, so no action
starts meanwhile; if the lock is taken away, gc stops before the next
deletion and says what it did and did not delete. A generation's manifest
is deleted before its files, so a reader never sees a half-deleted
generation as published. Each deletion is an Event (GenerationDeleted) on
the StatefulSet. Generations whose manifest does not validate are
never deleted (inspect them with 'generations show').

Without the cluster's StatefulSet there is no cluster to check: gc refuses
unless --allow-missing-statefulset (it then still reads the ledger, if one
is left, and takes the lock).

The plan is shown and confirmed (y/N) unless --yes; --dry-run=client only
shows it.

Exit codes:
  0  done (or nothing to delete)
  1  error (API, store, no StatefulSet)
  2  usage error
  5  not confirmed
  7  another hactl action holds the cluster's lock, or took it while gc ran`,
		Example: `  # keep the 5 newest, delete others older than a week
  kubectl hactl generations gc etcd-main --keep 5 --older-than 168h

  # see what would go
  kubectl hactl generations gc etcd-main --keep 2 --dry-run=client

  # the prefix holds only etcd-main's generations: also remove uploads
  # no manifest vouches for
  kubectl hactl generations gc etcd-main --include-unowned`,
		Args:              clusterArgs(1, "exactly one CLUSTER"),
		ValidArgsFunction: completeClusters(flags),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(args); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.addFlags(cmd, "json or yaml")
	f := cmd.Flags()
	f.IntVar(&o.Keep, "keep", o.Keep, "Always keep this many of the newest published generations (of each cluster, with --all-clusters).")
	f.DurationVar(&o.OlderThan, "older-than", 0, "Only delete generations created longer ago than this (0: any age), e.g. 168h.")
	f.DurationVar(&o.PartialAge, "partial-age", o.PartialAge, "Only delete unpublished uploads whose last write is older than this.")
	addDryRunFlag(f, &o.DryRun, `"none" deletes; "client" only shows the plan.`)
	f.BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation.")
	f.BoolVar(&o.AllClusters, "all-clusters", false, "Also delete other clusters' generations in the store (the --keep newest of each are kept; their ledgers are read, their locks are not taken) and everything --include-unowned includes.")
	f.BoolVar(&o.IncludeUnowned, "include-unowned", false, "Also delete uploads without a manifest and generations whose manifest names no source cluster: nothing proves whose they are, so give it only when no other cluster writes this store prefix.")
	f.BoolVar(&o.AllowMissingSTS, "allow-missing-statefulset", false, "Go ahead although the cluster's StatefulSet does not exist (a deleted cluster; give --store): the ledger, if left, is still read and the lock still taken.")
	return cmd
}

func (o *generationsGCOptions) validate() error {
	if err := o.validateOutput("json", "yaml"); err != nil {
		return err
	}
	if err := normalizeDryRun(&o.DryRun, false); err != nil {
		return err
	}
	switch {
	case o.Keep < 0:
		return usageError("--keep must not be negative")
	case o.OlderThan < 0 || o.PartialAge < 0:
		return usageError("--older-than and --partial-age must not be negative")
	case o.Output != "" && !o.Yes && o.DryRun == "none":
		return usageError("-o %s cannot ask for confirmation: add --yes or --dry-run=client", o.Output)
	}
	return nil
}

// self is the cluster gc runs for: its name and, when its StatefulSet
// exists, its UID (generations another same-named StatefulSet wrote are
// not its own).
func (o *generationsGCOptions) self() artifact.Owner {
	return artifact.Owner{Namespace: o.Namespace, Cluster: o.Cluster, UID: o.stsUID}
}

func (o *generationsGCOptions) scope() artifact.GCScope {
	return artifact.GCScope{Cluster: o.self(), AllClusters: o.AllClusters, Unowned: o.IncludeUnowned}
}

// gc is the collector of this cluster's store cs.
func (o *generationsGCOptions) gc(cs *actions.ClusterStore) *actions.GC {
	return &actions.GC{
		Client: o.client, Store: cs, Scope: o.scope(),
		Options: artifact.GCOptions{Keep: o.Keep, OlderThan: o.OlderThan, PartialAge: o.PartialAge},
		Warn:    func(m string) { fmt.Fprintf(o.ErrOut, "warning: %s\n", m) },
	}
}

func (o *generationsGCOptions) run(ctx context.Context) error {
	// No StatefulSet: no cluster to check what is in use, nothing to lock
	// for. Refuse unless told.
	_, err := o.client.AppsV1().StatefulSets(o.Namespace).Get(ctx, o.Cluster, metav1.GetOptions{})
	missing := apierrors.IsNotFound(err)
	if missing && !o.AllowMissingSTS {
		return fmt.Errorf("no StatefulSet %q in namespace %q, so gc can neither check which generations the cluster's actions use nor lock the cluster; nothing was deleted. Check the cluster name and the namespace (-n); if the cluster was deleted on purpose, run again with --store URL --allow-missing-statefulset (the ledger %s, if left, is still read and the lock %s still taken)",
			o.Cluster, o.Namespace, actions.LockName(o.Cluster), actions.LockName(o.Cluster))
	}
	cs, err := o.open(ctx, false)
	if err != nil {
		return err
	}
	defer cs.Store.Close()
	if cs.StatefulSet == nil {
		fmt.Fprintf(o.ErrOut, "warning: no StatefulSet %q in namespace %q; going ahead as --allow-missing-statefulset says\n", o.Cluster, o.Namespace)
	} else {
		o.stsUID = string(cs.StatefulSet.UID)
	}
	gc := o.gc(cs)
	plan, err := gc.Plan(ctx)
	if err != nil {
		return err
	}
	dry := o.DryRun == "client"
	if o.Output == "" {
		printGCPlan(o.Out, plan, cs.Store.String(), dry, o.scope())
	}
	if len(plan.Delete) == 0 || dry {
		if o.Output != "" {
			return printDoc(o.Out, o.Output, gcDoc(cs, plan, artifact.GCResult{}, dry, ""))
		}
		return nil
	}
	if !o.Yes {
		ok, err := confirm(o.In, o.Out, fmt.Sprintf("Delete %d item(s) from %s?", len(plan.Delete), cs.Store))
		if err != nil {
			return err
		}
		if !ok {
			return withCode(ExitRefused, errors.New("not confirmed; nothing was deleted"))
		}
	}
	res, locked, err := gc.Run(ctx, plan)
	if !locked {
		// nothing ran: the lock was not taken
		return lockExit(err)
	}
	return o.report(cs, plan, res, err)
}

// report prints what gc deleted and why it stopped, if it did.
func (o *generationsGCOptions) report(cs *actions.ClusterStore, plan artifact.GCPlan, res artifact.GCResult, err error) error {
	if o.Output != "" {
		stopped := ""
		if err != nil {
			stopped = err.Error()
		}
		if perr := printDoc(o.Out, o.Output, gcDoc(cs, plan, res, false, stopped)); perr != nil {
			return perr
		}
	} else {
		for _, d := range res.Deleted {
			fmt.Fprintf(o.Out, "deleted %s\n", gcItemText(d))
		}
		for _, d := range res.Skipped {
			fmt.Fprintf(o.Out, "skipped %s\n", gcItemText(d))
		}
	}
	if err == nil {
		return nil
	}
	var notDone []string
	for _, it := range res.NotDone {
		notDone = append(notDone, actions.GCItemName(it))
	}
	summary := fmt.Sprintf("deleted %d item(s); not deleted: %s", len(res.Deleted), strings.Join(notDone, ", "))
	if errors.Is(err, actions.ErrGCLockLost) || errors.Is(err, actions.ErrLockLost) {
		return withCode(ExitLockHeld, fmt.Errorf("gc lost the cluster's lock %s/%s while it deleted (%v) and stopped before the next deletion: %s. Run gc again once that action is done", o.Namespace, actions.LockName(o.Cluster), err, summary))
	}
	return fmt.Errorf("gc stopped: %w; %s", err, summary)
}

func gcDoc(cs *actions.ClusterStore, plan artifact.GCPlan, res artifact.GCResult, dry bool, stopped string) map[string]any {
	nonNil := func(items []artifact.GCItem) []artifact.GCItem {
		if items == nil {
			return []artifact.GCItem{}
		}
		return items
	}
	plan.Delete, plan.Keep = nonNil(plan.Delete), nonNil(plan.Keep)
	doc := map[string]any{
		"apiVersion": generationsAPIVersion, "kind": "SeedGenerationGC", "store": cs.Store.String(),
		"dryRun": dry, "plan": plan, "deleted": nonNil(res.Deleted), "skipped": nonNil(res.Skipped), "notDeleted": nonNil(res.NotDone),
	}
	if stopped != "" {
		doc["stopped"] = stopped
	}
	return doc
}

func gcItemText(it artifact.GCItem) string {
	return fmt.Sprintf("%s (%s): %s", actions.GCItemName(it), format.Bytes(it.Bytes), it.Reason)
}

func printGCPlan(w io.Writer, plan artifact.GCPlan, store string, dry bool, scope artifact.GCScope) {
	suffix := ""
	if dry {
		suffix = " (dry run)"
	}
	if len(plan.Delete) == 0 {
		fmt.Fprintf(w, "Nothing to delete in %s%s.\n", store, suffix)
	} else {
		fmt.Fprintf(w, "Would delete from %s%s:\n", store, suffix)
		for _, it := range plan.Delete {
			fmt.Fprintf(w, "  - %s\n", gcItemText(it))
		}
	}
	self := scope.Cluster.String()
	others, unowned := false, false
	if len(plan.Keep) > 0 {
		fmt.Fprintln(w, "Keeping:")
		for _, it := range plan.Keep {
			fmt.Fprintf(w, "  - %s\n", gcItemText(it))
			switch {
			case it.Kind == artifact.GCInvalid:
			case it.Owner == "":
				unowned = true
			case it.Owner != self:
				others = true
			}
		}
	}
	if others && !scope.AllClusters {
		fmt.Fprintf(w, "Generations of other clusters sharing the store are never deleted by gc of %s (--all-clusters includes them).\n", self)
	}
	if unowned && !scope.AllClusters && !scope.Unowned {
		fmt.Fprintln(w, "Uploads and generations no manifest ties to a cluster are kept: nothing proves they are this cluster's (--include-unowned includes them).")
	}
}

// lockExit maps a lock error to exit 7 when the lock is held.
func lockExit(err error) error {
	if errors.Is(err, actions.ErrLockHeld) {
		return withCode(ExitLockHeld, err)
	}
	return err
}
