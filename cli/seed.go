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

	"charm.land/bubbles/v2/progress"
	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/etcdgen"
	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/buildinfo"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/verdict"
)

// SeedOptions holds the flags and state of `kubectl hactl seed`.
type SeedOptions struct {
	configFlags *genericclioptions.ConfigFlags
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

	client   kubernetes.Interface
	dial     engine.DialFunc
	inIsTTY  bool
	errIsTTY bool
	identity string
	// onReceipt, when set, receives every receipt as it is recorded (the
	// TUI's live progress).
	onReceipt func(model.Receipt)
	// confirmed, when set, is the decision the user confirmed elsewhere
	// (the TUI's dialog): it is what runs, fenced under the lock against
	// a fresh decision, never replaced by a new one.
	confirmed *classify.Decision

	genericiooptions.IOStreams
}

// NewSeedOptions returns options with their defaults.
func NewSeedOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *SeedOptions {
	return &SeedOptions{
		configFlags:  flags,
		DryRun:       string(actions.DryRunNone),
		ProbeTimeout: engine.DefaultTimeout,
		Timeout:      time.Hour,
		LagThreshold: verdict.DefaultLagThreshold,
		IOStreams:    streams,
	}
}

// NewCmdSeed builds `kubectl hactl seed`.
func NewCmdSeed(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewSeedOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "seed CLUSTER --generation G",
		Short: "Capture a seed generation: a verified, immutable base backup in object storage",
		Long: `Capture a seed generation of CLUSTER and publish it to the cluster's store.

The classifier picks a healthy source (the leader, or a voter within the
lag threshold of the real leader frontier; --member names one) and the
plan is shown and confirmed (y/N, or --yes). Then, under the cluster's
action lock, hactl observes again, takes a snapshot from that member
through a port-forward (etcd Maintenance.Snapshot), streams it once to the
store while hashing it, checks the stored size, and writes the manifest
last with create-if-absent semantics. Until the manifest exists there is
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
(a Secret with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), else from the
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
	f.StringVar(&o.DryRun, "dry-run", o.DryRun, `"none" seeds; "client" prints the plan and changes nothing.`)
	f.Lookup("dry-run").NoOptDefVal = string(actions.DryRunClient)
	f.StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml prints the seed receipt (the plan and progress go to stderr).")
	f.BoolVar(&o.Supersede, "supersede", false, "Start even though another action is recorded in progress; that action is marked superseded.")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long the capture and upload may take.")
	f.DurationVar(&o.ProbeTimeout, "probe-timeout", o.ProbeTimeout, "Deadline for probing each member.")
	f.Uint64Var(&o.LagThreshold, "lag-threshold", o.LagThreshold, "Raft entries a source may trail the leader frontier.")
}

// Complete reads the kubeconfig and arguments.
func (o *SeedOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Cluster = args[0]
	c, err := connect(o.configFlags, true)
	if err != nil {
		return err
	}
	o.Namespace, o.client, o.dial = c.namespace, c.client, c.dial
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
	dry, err := parseDryRun(o.DryRun, false)
	if err != nil {
		return err
	}
	o.DryRun = string(dry)
	if err := validateOutput(o.Output); err != nil {
		return err
	}
	if o.Timeout <= 0 || o.ProbeTimeout <= 0 {
		return usageError("--timeout and --probe-timeout must be positive")
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
	return &actions.Observer{Client: o.client, Dial: o.dial, ProbeTimeout: o.ProbeTimeout, Verdict: verdict.Options{LagThreshold: o.LagThreshold}}
}

func (o *SeedOptions) intent(store string) classify.Intent {
	return classify.Intent{Action: model.ActionSeed, Member: o.Member, Options: classify.Options{
		Supersede: o.Supersede, Generation: o.Generation, SeedStore: store, LockHolder: o.identity,
		Verdict: verdict.Options{LagThreshold: o.LagThreshold},
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
		if perr := printDoc(o.Out, o.Output, doc); perr != nil {
			return perr
		}
	}
	return actionError(err)
}

func (o *SeedOptions) run(ctx context.Context, doc *seedDoc) error {
	w := o.human()
	cs, err := openClusterStoreFor(ctx, o.client, o.Namespace, o.Cluster, o.store, true, true)
	if err != nil {
		return err
	}
	defer cs.store.Close()
	doc.Store = cs.store.String()

	obs := o.observer()
	d, res, warn, err := obs.Decide(ctx, o.Namespace, o.Cluster, o.intent(cs.store.String()))
	printWarnings(o.ErrOut, warn)
	if err != nil {
		return err
	}
	if o.confirmed != nil {
		d = *o.confirmed
	}
	clusterID := res.Analysis.ClusterID
	if clusterID == "" {
		clusterID = res.Observation.Cluster.KnownClusterID
	}
	// An already published generation of this cluster is a no-op.
	existing, err := etcdgen.Existing(ctx, cs.store, o.Generation, clusterID)
	if err != nil {
		if errors.Is(err, artifact.ErrGenerationExists) {
			return withCode(ExitRefused, err)
		}
		return err
	}
	if existing != nil {
		doc.Manifest, doc.Already, doc.Phase = existing, true, model.ActionPhasePublished
		doc.Source = existing.Source.Member
		fmt.Fprintf(w, "generation %s is already published in %s for cluster %s (%s, revision %d): nothing to do\n",
			o.Generation, cs.store, existing.Identity.ClusterID, existing.Digest, existing.Identity.Revision)
		if d.Resume != "" && d.Verb == classify.VerbProceed && o.DryRun == string(actions.DryRunNone) {
			// A seed that published and died before recording it: close
			// its ledger entry.
			return o.execute(ctx, cs, d, res, doc, existing)
		}
		return nil
	}

	suffix := ""
	if o.DryRun == string(actions.DryRunClient) {
		suffix = " (dry run)"
	}
	printDecision(w, d, suffix)
	if d.Verb != classify.VerbProceed {
		return decisionError(d)
	}
	if o.DryRun == string(actions.DryRunClient) {
		for _, s := range d.Steps {
			rc := model.Receipt{Action: model.ActionSeed, Cluster: doc.Cluster, Member: s.Member, Phase: s.Phase, Step: s.Kind,
				Outcome: model.OutcomeDryRun, At: time.Now().UTC(), Holder: o.identity, Detail: s.Detail + " (dry run)", DryRun: "client"}
			doc.Receipts = append(doc.Receipts, rc)
			printReceipt(w, rc)
		}
		return nil
	}
	if !o.Yes {
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
	return o.execute(ctx, cs, d, res, doc, nil)
}

// sourceOf is the member the decision captures from.
func sourceOf(d classify.Decision) string {
	for _, s := range d.Steps {
		if s.Kind == model.StepCaptureSnapshot {
			return s.Member
		}
	}
	return ""
}

func sourceStep(d classify.Decision) classify.Step {
	for _, s := range d.Steps {
		if s.Kind == model.StepCaptureSnapshot {
			return s
		}
	}
	return classify.Step{}
}

// seedRun is one execution of a confirmed seed decision.
type seedRun struct {
	o       *SeedOptions
	w       io.Writer
	doc     *seedDoc
	ledger  *actions.Ledger
	sts     corev1.ObjectReference
	entryID string
	source  string
	lock    *actions.Lock
}

// receipt records one receipt in the ledger (with the entry's new state),
// as an Event on the StatefulSet, in the document and on screen.
func (r *seedRun) receipt(step model.StepKind, phase model.ActionPhase, out model.Outcome, state model.EntryState, detail string, memberID string) {
	rc := model.Receipt{
		ActionID: r.entryID, Action: model.ActionSeed, Cluster: r.doc.Cluster, Member: r.source, Phase: phase, Step: step,
		Outcome: out, At: time.Now().UTC(), Holder: r.o.identity, Detail: detail, MemberID: memberID,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if r.entryID != "" && r.lock != nil {
		// The ledger is written only while the lock is known held: once
		// it may be another process's, the entry is that process's too.
		if err := r.lock.Valid(); err != nil {
			fmt.Fprintf(r.o.ErrOut, "warning: receipt not recorded in the ledger: %v\n", err)
		} else if rec, err := r.ledger.Append(ctx, r.entryID, rc, state); err != nil {
			fmt.Fprintf(r.o.ErrOut, "warning: receipt not recorded in the ledger: %v\n", err)
		} else {
			rc = rec
		}
	}
	if err := actions.RecordEvent(ctx, r.o.client, r.sts, rc); err != nil {
		fmt.Fprintf(r.o.ErrOut, "warning: event not recorded: %v\n", err)
	}
	r.doc.Receipts = append(r.doc.Receipts, rc)
	r.doc.Phase = phase
	printReceipt(r.w, rc)
	if r.o.onReceipt != nil {
		r.o.onReceipt(rc)
	}
}

// execute takes the lock, checks the decision again, records the ledger
// entry and seeds (or, with published set, only closes a resumed entry).
func (o *SeedOptions) execute(ctx context.Context, cs *clusterStore, d classify.Decision, res status.Result, doc *seedDoc, published *artifact.Manifest) error {
	sts := cs.sts
	owner := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: types.UID(sts.UID)}
	r := &seedRun{o: o, w: o.human(), doc: doc, source: sourceOf(d),
		ledger: &actions.Ledger{Client: o.client, Namespace: o.Namespace, Cluster: o.Cluster, Owner: owner},
		sts:    corev1.ObjectReference{Kind: "StatefulSet", APIVersion: "apps/v1", Namespace: o.Namespace, Name: sts.Name, UID: sts.UID},
	}
	doc.Source = r.source
	lock, err := actions.AcquireLock(ctx, o.client, o.Namespace, o.Cluster, actions.LockOptions{
		Identity: o.identity, Action: "seed " + o.Generation, Owner: owner,
	})
	if err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := lock.Release(rctx); err != nil {
			fmt.Fprintf(o.ErrOut, "warning: %v\n", err)
		}
	}()
	r.lock = lock
	if lock.TookOver != "" {
		fmt.Fprintf(o.ErrOut, "warning: took the lock over from stale holder %s (%s)\n", lock.TookOver, lock.TookOverWhy)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-lock.Lost():
			cancel()
		case <-ctx.Done():
		}
	}()

	// Decide again under the lock: the same source, the same member.
	d2, res2, warn, err := o.observer().Decide(ctx, o.Namespace, o.Cluster, o.intent(cs.store.String()))
	printWarnings(o.ErrOut, warn)
	if err != nil {
		return fmt.Errorf("observing %s/%s under the lock: %w", o.Namespace, o.Cluster, err)
	}
	if published == nil {
		if d2.Verb != classify.VerbProceed {
			return &actions.RefusedError{Decision: d2, While: "observed again under the lock"}
		}
		a, b := sourceStep(d), sourceStep(d2)
		if a.Member != b.Member || a.MemberID != b.MemberID || res.Analysis.ClusterID != res2.Analysis.ClusterID {
			return &actions.FenceConflictError{Detail: fmt.Sprintf("the seed source was %s (member %s, cluster %s), it is now %s (member %s, cluster %s)",
				a.Member, a.MemberID, res.Analysis.ClusterID, b.Member, b.MemberID, res2.Analysis.ClusterID)}
		}
	}

	at := time.Now().UTC()
	e := model.LedgerEntry{ID: d2.Resume, Action: model.ActionSeed, Member: o.Member, Holder: o.identity,
		Phase: model.ActionPhaseRequested, Generation: o.Generation}
	if e.ID == "" {
		e.ID = actions.NewEntryID(model.ActionSeed, r.source, at)
	}
	if err := lock.Valid(); err != nil {
		return err
	}
	got, err := r.ledger.Begin(ctx, e, d2.Supersedes, at)
	if err != nil {
		return fmt.Errorf("recording the seed in the ledger (nothing was changed): %w", err)
	}
	r.entryID, doc.EntryID = got.ID, got.ID
	lockDetail := fmt.Sprintf("took lease %s/%s as %s", o.Namespace, actions.LockName(o.Cluster), o.identity)
	if lock.TookOver != "" {
		lockDetail += fmt.Sprintf("; taken over from stale holder %s (%s)", lock.TookOver, lock.TookOverWhy)
	}
	r.receipt(model.StepAcquireLock, model.ActionPhaseRequested, model.OutcomeDone, model.EntryInProgress, lockDetail, "")

	if published != nil {
		r.receipt(model.StepPublish, model.ActionPhasePublished, model.OutcomeAlready, model.EntryDone,
			fmt.Sprintf("generation %s was already published in %s (%s); ledger entry closed", o.Generation, cs.store, published.Digest), "")
		return nil
	}

	src := sourceStep(d2)
	creds, err := actions.Credentials(ctx, o.client, res2.Observation.Cluster)
	if err != nil {
		r.receipt(model.StepCaptureSnapshot, model.ActionPhaseFailed, model.OutcomeFailed, model.EntryFailed, "stopped before capturing: "+err.Error(), src.MemberID)
		return err
	}
	var total int64
	for _, m := range res2.Observation.Members {
		if m.Name == src.Member && m.Engine != nil {
			total = m.Engine.DBSize
		}
	}
	bar := newProgressBar(o.ErrOut, o.errIsTTY, "snapshot of "+src.Member, total)
	captured := false
	sctx, scancel := context.WithTimeout(ctx, o.Timeout)
	defer scancel()
	sr, err := etcdgen.Seed(sctx, etcdgen.SeedRequest{
		Store:           cs.store,
		Generation:      o.Generation,
		Source:          seedTarget(res2.Observation.Cluster, src.Member),
		Probe:           engine.ProbeOptions{Dial: o.dial, Timeout: o.ProbeTimeout, Credentials: creds},
		ExpectClusterID: res2.Analysis.ClusterID,
		ExpectMemberID:  src.MemberID,
		Info:            artifact.Source{Namespace: o.Namespace, Cluster: o.Cluster, Member: src.Member, UID: string(cs.sts.UID)},
		CreatedBy:       "kubectl-hactl " + buildinfo.Version,
		Progress:        bar.update,
		BeforePublish:   lock.Valid,
		OnPhase: func(p model.ActionPhase, detail string) {
			if p == model.ActionPhaseUploading {
				bar.finish()
				captured = true
				r.receipt(model.StepCaptureSnapshot, model.ActionPhaseCapturing, model.OutcomeDone, model.EntryInProgress,
					fmt.Sprintf("captured a snapshot of %s (member %s) through a port-forward", src.Member, src.MemberID), src.MemberID)
			}
		},
	})
	bar.finish()
	if err != nil {
		step := model.StepCaptureSnapshot
		if captured {
			step = model.StepUpload
		}
		r.receipt(step, model.ActionPhaseFailed, model.OutcomeFailed, model.EntryFailed,
			fmt.Sprintf("%v; nothing was published (run the same command again)", err), src.MemberID)
		if errors.Is(err, artifact.ErrGenerationExists) {
			return withCode(ExitRefused, err)
		}
		if errors.Is(err, etcdgen.ErrSourceChanged) {
			return &actions.FenceConflictError{Detail: err.Error()}
		}
		return err
	}
	m := sr.Manifest
	doc.Manifest, doc.Already = m, sr.Already
	r.receipt(model.StepUpload, model.ActionPhaseUploading, model.OutcomeDone, model.EntryInProgress,
		fmt.Sprintf("uploaded %s to %s (upload %s); stored sizes checked", formatBytes(m.TotalSize), cs.store, m.Upload), src.MemberID)
	out := model.OutcomeDone
	if sr.Already {
		out = model.OutcomeAlready
	}
	r.receipt(model.StepPublish, model.ActionPhasePublished, out, model.EntryDone,
		fmt.Sprintf("published generation %s: %s cluster %s, member %s, term %d, revision %d, %s, digest %s (took %s)",
			o.Generation, m.Identity.Engine, m.Identity.ClusterID, m.Identity.SourceMemberID, m.Identity.RaftTerm,
			m.Identity.Revision, formatBytes(m.TotalSize), m.Digest, sr.Took.Round(time.Millisecond)), src.MemberID)
	return nil
}

// seedTarget is how to dial a member for the snapshot.
func seedTarget(cl model.ClusterFacts, member string) engine.Target {
	t := engine.Target{Member: member, Namespace: cl.Namespace, Pod: member, Port: cl.Template.ClientPort}
	if t.Port == 0 {
		t.Port = 2379
	}
	if cl.ServiceName != "" {
		t.ServerName = member + "." + cl.ServiceName + "." + cl.Namespace + ".svc"
	}
	return t
}

// --- progress

// formatBytes renders a byte count in SI units ("1.2 MB").
func formatBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// progressText is "12.3 MB / 27.1 MB (45%), 4.1 MB/s, ETA 4s"; without a
// known total, bytes and rate only.
func progressText(done, total int64, elapsed time.Duration) string {
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	txt := formatBytes(done)
	if total > 0 {
		pct := min(100, 100*float64(done)/float64(total))
		txt += fmt.Sprintf(" / %s (%.0f%%)", formatBytes(total), pct)
	}
	txt += fmt.Sprintf(", %s/s", formatBytes(int64(rate)))
	if total > 0 && rate > 0 && done < total {
		eta := time.Duration(float64(total-done) / rate * float64(time.Second))
		txt += ", ETA " + eta.Round(time.Second).String()
	}
	return txt
}

// progressBar draws a transfer's progress on a terminal, in place, at most
// ten times a second; it draws nothing when off.
type progressBar struct {
	w     io.Writer
	on    bool
	label string
	total int64
	bar   progress.Model
	color bool
	start time.Time

	mu    sync.Mutex
	last  time.Time
	drawn bool
	done  int64
	ended bool
}

func newProgressBar(w io.Writer, on bool, label string, total int64) *progressBar {
	return &progressBar{
		w: w, on: on, label: label, total: total, start: time.Now(),
		bar:   progress.New(progress.WithWidth(30), progress.WithoutPercentage(), progress.WithDefaultBlend()),
		color: os.Getenv("NO_COLOR") == "",
	}
}

func (p *progressBar) update(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = n
	if !p.on || p.ended || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.draw()
}

func (p *progressBar) draw() {
	p.last = time.Now()
	frac := 0.0
	if p.total > 0 {
		frac = min(1, float64(p.done)/float64(p.total))
	}
	bar := p.bar.ViewAs(frac)
	if !p.color {
		bar = ansi.Strip(bar)
	}
	fmt.Fprintf(p.w, "\r\x1b[2K%s %s %s", p.label, bar, progressText(p.done, p.total, time.Since(p.start)))
	p.drawn = true
}

// finish draws the final state and ends the line.
func (p *progressBar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on || p.ended {
		return
	}
	p.ended = true
	if p.total > 0 && p.done > p.total {
		p.total = p.done
	}
	p.draw()
	fmt.Fprintln(p.w)
}
