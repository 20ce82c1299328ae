package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hactl-dev/hactl/engine/registry"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// SeedOptions holds the flags and state of `kubectl hactl seed`.
type SeedOptions struct {
	configFlags *kubeflags.ConfigFlags
	store       storeFlags

	Cluster      string
	Namespace    string
	Generation   string
	Member       string
	Yes          bool
	DryRun       string
	Output       string
	Supersede    bool
	ProbeTimeout time.Duration
	Timeout      time.Duration
	LagThreshold uint64
	Capture      string
	AgentImage   string

	client       kubernetes.Interface
	dial         engine.DialFunc
	memberTLS    *engine.Credentials
	memberSecret string
	inIsTTY      bool
	errIsTTY     bool
	identity     string
	saved        savedPlan

	genericiooptions.IOStreams
}

// NewSeedOptions returns options with their defaults.
func NewSeedOptions(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *SeedOptions {
	return &SeedOptions{
		configFlags:  flags,
		DryRun:       string(actions.DryRunNone),
		ProbeTimeout: engine.DefaultTimeout,
		Timeout:      time.Hour,
		LagThreshold: model.DefaultLagThreshold,
		Capture:      string(actions.CaptureAuto),
		IOStreams:    streams,
	}
}

// NewCmdSeed builds `kubectl hactl seed`.
func NewCmdSeed(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewSeedOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "seed CLUSTER --generation G",
		Short: "Capture a seed generation: a verified, immutable base backup in object storage",
		Long: `Capture a seed generation of CLUSTER and publish it to the cluster's store.

The classifier picks a healthy source (the leader, or a voter within the
lag threshold of the real leader frontier; --member names one) and the
plan is shown and confirmed (y/N, or --yes). Then, under the cluster's
action lock, hactl observes again and takes a snapshot from that member
(etcd Maintenance.Snapshot), streamed once to the store while hashed:
by default (--capture auto) in a one-shot capture pod (hactl-capture-MEMBER,
the agent image) on the member's node, so the data goes from the member to
the store and only the pod's receipt crosses the API server; when no such
pod can run (no store Secret, RBAC, admission, unschedulable, image not
pulled) through a port-forward to this process, with the reason printed.
Holding the lock, hactl then checks the stored size and writes the manifest
last with create-if-absent semantics: a capture pod never publishes. Until the manifest exists there is
no generation: an interrupted seed leaves nothing published, and running
the same command again publishes it once.

Phases: requested -> capturing -> uploading -> published (or failed), each
recorded as a receipt in the cluster's ledger (ConfigMap hactl-CLUSTER) and
as an Event on the StatefulSet. On a terminal, a progress bar shows bytes,
rate and ETA on stderr.

The same --generation with the same cluster is a no-op (exit 0); a
generation of that name from another cluster is refused: generations are
immutable.

The store is --store or the StatefulSet's annotation ` + artifact.AnnotationStore + `;
credentials come from --store-secret or the annotation ` + artifact.AnnotationStoreSecret + `
(a Secret with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for s3://,
GOOGLE_APPLICATION_CREDENTIALS_JSON for gs://, AZURE_STORAGE_ACCOUNT with
AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or
AZURE_STORAGE_CONNECTION_STRING, for azblob://), else from the
environment. They never appear in output, events or the ledger.

` + strings.Replace(actionExitHelp, "  0  done (or nothing left to do)", "  0  published (or already published for this cluster)", 1),
		Example: `  # capture from the best source, after confirming the plan
  kubectl hactl seed etcd-main --generation nightly-42

  # in a script, with an explicit store and credentials, JSON receipt on stdout
  kubectl hactl seed etcd-main --generation 2026-11-29 --yes -o json \
      --store 's3://seeds/etcd-main?endpoint=https://s3.example&use_path_style=true' \
      --store-secret seed-store-creds

  # show the plan only
  kubectl hactl seed etcd-main --generation g1 --dry-run=client`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("seed takes one CLUSTER, got %d argument(s)\nSee '%s --help'.", len(args), cmd.CommandPath())
			}
			return nil
		},
		ValidArgsFunction: completeClusters(flags),
		RunE:              runVerb(o),
	}
	o.AddFlags(cmd)
	return cmd
}

// AddFlags binds the seed flags.
func (o *SeedOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.Generation, "generation", "", "Generation ID to publish (required): lower-case letters, digits, '-', '_', '.'.")
	f.StringVar(&o.Member, "member", "", "Capture from this member (pod name) instead of the one the classifier picks; it must be a healthy voter.")
	o.store.add(f)
	f.BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation. Needed when stdin is not a terminal.")
	addDryRunFlag(f, &o.DryRun, `"none" seeds; "client" prints the plan and changes nothing.`)
	f.StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml prints the seed receipt (the plan and progress go to stderr).")
	f.BoolVar(&o.Supersede, "supersede", false, "Start even though another action is recorded in progress; that action is marked superseded.")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long the capture and upload may take.")
	f.DurationVar(&o.ProbeTimeout, "probe-timeout", o.ProbeTimeout, "Deadline for probing each member.")
	f.Uint64Var(&o.LagThreshold, "lag-threshold", o.LagThreshold, "Raft entries a source may trail the leader frontier.")
	f.StringVar(&o.Capture, "capture", o.Capture, `Where the snapshot travels: "pod" captures in a one-shot pod on the source member's node, straight from the member to the store (only its receipt crosses the API server); "port-forward" streams it through the API server to this process, which uploads it; "auto" uses a pod when one can run there, else a port-forward, and says why.`)
	f.StringVar(&o.AgentImage, "agent-image", "", "Image of the capture pod: any image with kubectl-hactl on its PATH (default "+actions.DefaultAgentImage()+"); repo@sha256:… pins its bytes; a tag is pinned to the digest its registry names now, else run as its node resolves it, and the receipt names the digest.")
}

// Complete reads the kubeconfig and arguments.
func (o *SeedOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Cluster = args[0]
	c, err := connect(o.configFlags, true)
	if err != nil {
		return err
	}
	o.Namespace, o.client, o.dial, o.memberTLS, o.memberSecret = c.namespace, c.client, c.dial, c.memberTLS, c.memberSecret
	o.inIsTTY, o.errIsTTY = isTerminal(o.In), isTerminal(o.ErrOut)
	o.identity = actions.ProcessIdentity()
	return nil
}

// Validate checks the flags.
func (o *SeedOptions) Validate() error {
	if o.Generation == "" {
		return usageError("--generation is required")
	}
	if err := artifact.ValidateGeneration(o.Generation); err != nil {
		return usageError("--generation: %v", err)
	}
	if err := normalizeDryRun(&o.DryRun, false); err != nil {
		return err
	}
	if err := validateOutput(o.Output); err != nil {
		return err
	}
	if o.Timeout <= 0 || o.ProbeTimeout <= 0 {
		return usageError("--timeout and --probe-timeout must be positive")
	}
	if _, err := actions.ParseCaptureMode(o.Capture); err != nil {
		return usageError("%v", err)
	}
	return nil
}

func (o *SeedOptions) human() io.Writer {
	if o.Output != "" {
		return o.ErrOut
	}
	return o.Out
}

func (o *SeedOptions) observer() *actions.Observer {
	return &actions.Observer{Engines: registry.Engines(), Client: o.client, Dial: o.dial, MemberTLS: o.memberTLS, TLSSecret: o.memberSecret, ProbeTimeout: o.ProbeTimeout, Verdict: model.VerdictOptions{LagThreshold: o.LagThreshold}}
}

func (o *SeedOptions) intent(cs *actions.ClusterStore) model.Intent {
	return model.Intent{Action: model.ActionSeed, Member: o.Member, Options: model.ActionOptions{
		Supersede: o.Supersede, Generation: o.Generation, SeedStore: cs.Store.String(), LockHolder: o.identity,
		Verdict: model.VerdictOptions{LagThreshold: o.LagThreshold},
	}}
}

// seedDoc is the receipt -o json|yaml prints.
type seedDoc struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Cluster    string             `json:"cluster"`
	Generation string             `json:"generation"`
	Store      string             `json:"store"`
	Source     string             `json:"source,omitempty"`
	Result     string             `json:"result"`
	Phase      model.ActionPhase  `json:"phase"`
	Already    bool               `json:"alreadyPublished,omitempty"`
	EntryID    string             `json:"entryID,omitempty"`
	Error      string             `json:"error,omitempty"`
	Manifest   *artifact.Manifest `json:"manifest,omitempty"`
	Receipts   []model.Receipt    `json:"receipts"`
}

// Run decides, confirms and seeds.
func (o *SeedOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// Validate normalized it; a caller that skipped Validate must not
	// act for real on a value nothing read as a dry run.
	if err := normalizeDryRun(&o.DryRun, false); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	doc := &seedDoc{APIVersion: status.SchemaVersion, Kind: "SeedReceipt", Cluster: o.Namespace + "/" + o.Cluster,
		Generation: o.Generation, Phase: model.ActionPhaseRequested, Receipts: []model.Receipt{}}
	err := o.run(ctx, doc)
	if err != nil {
		doc.Error = err.Error()
	}
	doc.Result = resultWord(err)
	if err != nil && doc.Phase != model.ActionPhasePublished {
		doc.Phase = model.ActionPhaseFailed
	}
	if o.Output != "" {
		if perr := printDoc(o.Out, o.Output, o.planOr(doc)); perr != nil {
			return perr
		}
	}
	return actionError(err)
}

func (o *SeedOptions) executor() *actions.Executor {
	return &actions.Executor{Observer: o.observer(), Seeders: registry.Seeders(), Identity: o.identity}
}

func (o *SeedOptions) run(ctx context.Context, doc *seedDoc) error {
	w := o.human()
	cs, err := openStore(ctx, o.client, o.Namespace, o.Cluster, o.store, actions.StoreOpen{NeedStatefulSet: true, Write: true})
	if err != nil {
		in := model.Intent{Action: model.ActionSeed, Member: o.Member, Options: model.ActionOptions{Generation: o.Generation, LockHolder: o.identity}}
		return refuseManaged(ctx, w, o.observer(), o.Namespace, o.Cluster, in, err)
	}
	defer cs.Store.Close()
	doc.Store = cs.Store.String()
	o.saved.storeURL, o.saved.storeSecret = cs.URL, cs.Secret

	x := o.executor()
	d, res, warn, err := x.Decide(ctx, o.Namespace, o.Cluster, o.intent(cs))
	printWarnings(o.ErrOut, warn)
	if err != nil {
		return err
	}
	o.saved.decision = &d
	if done, err := o.published(ctx, x, cs, d, res, doc); done || err != nil {
		return err
	}
	dry := actions.DryRun(o.DryRun)
	printDecision(w, d, dryRunSuffix(dry))
	if d.Verb != model.VerbProceed {
		return decisionError(d)
	}
	if actions.CaptureMode(o.Capture) != actions.CapturePortForward {
		image := o.AgentImage
		if image == "" {
			image = actions.DefaultAgentImage()
		}
		pinned, rerr := actions.ResolveAgentImage(ctx, image)
		if rerr == nil {
			o.AgentImage = pinned
		}
		fmt.Fprintln(w, actions.AgentImageResolved(image, pinned, rerr, model.ActionSeed))
	}
	if dry == actions.DryRunNone && !o.Yes {
		if !o.inIsTTY {
			return fmt.Errorf("refusing to seed without confirmation: stdin is not a terminal; review the plan above and run again with --yes; nothing was changed")
		}
		ok, err := confirm(o.In, w, fmt.Sprintf("Seed generation %s of %s/%s from %s as shown above?", o.Generation, o.Namespace, o.Cluster, sourceOf(d)))
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("not confirmed; nothing was changed")
		}
	}
	return o.execute(ctx, x, cs, d, doc)
}

// published handles a generation already published for this cluster: a
// no-op, or the closing of the ledger entry of a seed that published and
// died before recording it. done says the seed has nothing more to do.
func (o *SeedOptions) published(ctx context.Context, x *actions.Executor, cs *actions.ClusterStore, d model.Decision, res status.Result, doc *seedDoc) (done bool, err error) {
	seeder, err := x.SeederFor(res.Observation.Cluster.Engine)
	if err != nil {
		// no seeds of this engine: the decision refuses and says why
		return false, nil
	}
	clusterID := res.Analysis.ClusterID
	if clusterID == "" {
		clusterID = res.Observation.Cluster.KnownClusterID
	}
	existing, err := seeder.Published(ctx, cs.Store, o.Generation, clusterID)
	if errors.Is(err, artifact.ErrGenerationExists) {
		return true, withCode(ExitRefused, err)
	}
	if err != nil || existing == nil {
		return err != nil, err
	}
	doc.Manifest, doc.Already, doc.Phase = existing, true, model.ActionPhasePublished
	doc.Source = existing.Source.Member
	fmt.Fprintf(o.human(), "generation %s is already published in %s for cluster %s (%s, revision %d): nothing to do\n",
		o.Generation, cs.Store, existing.Identity.ClusterID, existing.Digest, existing.Identity.Revision)
	if d.Resume != "" && d.Verb == model.VerbProceed && o.DryRun == string(actions.DryRunNone) {
		return true, o.execute(ctx, x, cs, d, doc)
	}
	return true, nil
}

// execute runs the confirmed seed through the executor (lock, decision
// again, ledger, capture, upload, publish), printing each receipt and,
// on a terminal, the capture's progress.
func (o *SeedOptions) execute(ctx context.Context, x *actions.Executor, cs *actions.ClusterStore, d model.Decision, doc *seedDoc) error {
	w := o.human()
	var (
		mu  sync.Mutex
		bar *progressBar
	)
	endBar := func() {
		mu.Lock()
		defer mu.Unlock()
		if bar != nil {
			bar.finish()
		}
	}
	res, err := x.Execute(ctx, d, actions.ExecOptions{
		DryRun: actions.DryRun(o.DryRun),
		OnReceipt: func(rc model.Receipt) {
			if rc.Step == model.StepCaptureSnapshot {
				endBar()
			}
			doc.Receipts = append(doc.Receipts, rc)
			if rc.DryRun == "" {
				doc.Phase = rc.Phase
			}
			printReceipt(w, rc)
		},
		Warn: func(s string) { fmt.Fprintf(o.ErrOut, "warning: %s\n", s) },
		Note: func(s string) { fmt.Fprintln(w, s) },
		Seed: actions.SeedExec{Store: cs.Store, StoreURL: cs.URL, StoreSecret: cs.Secret, Capture: actions.CaptureMode(o.Capture), AgentImage: o.AgentImage,
			Timeout: o.Timeout, Progress: func(member string, done, total int64) {
				mu.Lock()
				if bar == nil {
					bar = newProgressBar(o.ErrOut, o.errIsTTY, "snapshot of "+member, total)
				}
				b := bar
				mu.Unlock()
				b.update(done)
			}},
	})
	endBar()
	doc.EntryID = res.EntryID
	if res.Source != "" {
		doc.Source = res.Source
	}
	if res.Manifest != nil {
		doc.Manifest, doc.Already = res.Manifest, res.Already
	}
	if errors.Is(err, artifact.ErrGenerationExists) {
		return withCode(ExitRefused, err)
	}
	return err
}

// sourceOf is the member the decision captures from.
func sourceOf(d model.Decision) string {
	for _, s := range d.Steps {
		if s.Kind == model.StepCaptureSnapshot {
			return s.Member
		}
	}
	return ""
}
