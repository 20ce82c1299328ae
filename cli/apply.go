package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// DefaultPlanMaxAge is how old a saved plan apply acts on by default.
const DefaultPlanMaxAge = 15 * time.Minute

// planSkew is how far in the future a plan's createdAt may lie (the
// planning machine's clock ahead of this one's).
const planSkew = time.Minute

const applyExitHelp = `Exit codes:
  0  applied (or nothing left to do); with --dry-run, the plan would apply
  1  error: API, RBAC, network; a wait that timed out (run the verb itself,
     e.g. 'kubectl hactl replace ...', to resume); the plan was not confirmed
  2  usage error: no plan, or not a valid plan (unknown apiVersion or kind,
     a missing field, a plan that disagrees with itself)
  5  refused: the plan itself is a refusal, or the classifier refused while
     the action ran
  6  the plan does not match the cluster: older than --max-age, made against
     another Kubernetes cluster or StatefulSet, or the cluster changed since
     it was made (fences, member IDs, leader, generation digest, ...):
     nothing was changed, make a new plan; or, when the output names a
     ledger entry ("the action began"), a fence conflict while the action
     ran: it may have changed the cluster, run the verb to resume
  7  lock held: another hactl action is working on this cluster`

// ApplyOptions holds the flags and state of `kubectl hactl apply`.
type ApplyOptions struct {
	configFlags *kubeflags.ConfigFlags

	Filename     string
	MaxAge       time.Duration
	Yes          bool
	DryRun       string
	Output       string
	Timeout      time.Duration
	ProbeTimeout time.Duration
	Capture      string
	AgentImage   string
	// LagThreshold and WALLagThreshold are what apply decides with,
	// never the plan's: a plan made with other thresholds is refused.
	LagThreshold    uint64
	WALLagThreshold uint64

	plan            *planDoc
	timeoutSet      bool
	probeTimeoutSet bool
	nsFlag          string
	server          string
	client          kubernetes.Interface
	dial            engine.DialFunc
	memberTLS       *engine.Credentials
	memberSecret    string
	inIsTTY         bool
	errIsTTY        bool
	now             func() time.Time

	genericiooptions.IOStreams
}

// NewApplyOptions returns options with their defaults.
func NewApplyOptions(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *ApplyOptions {
	return &ApplyOptions{configFlags: flags, MaxAge: DefaultPlanMaxAge, DryRun: string(actions.DryRunNone),
		Timeout: actions.DefaultWaitTimeout, ProbeTimeout: engine.DefaultTimeout, LagThreshold: model.DefaultLagThreshold,
		now: time.Now, IOStreams: streams}
}

// NewCmdApply builds `kubectl hactl apply -f PLAN`.
func NewCmdApply(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewApplyOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "apply -f PLAN",
		Short: "Execute a saved plan of replace, reseed, restore, seed or switchover exactly, or refuse if the cluster changed",
		Long: `Execute a plan saved with --dry-run=client -o json (plan now, apply later,
exactly this): the plan holds the classifier's decision with every fence,
when it was made and which cluster it is for.

apply refuses, with exit 6 and nothing changed, a plan older than --max-age
(default 15m; 0: no expiry), a plan made against another Kubernetes cluster
(the kube-system namespace's UID) or another StatefulSet (its UID), and a
plan the cluster no longer matches. It decides again, first to show whether
the plan still holds and then under the cluster's lock, exactly as the verb
would with the plan's command line, and compares: the action and every
option (the lag thresholds included), the steps, every fence (UID;
resourceVersion unless only the object's status moved), the member to
remove and the member IDs the steps name, the leader (a switchover's
primary), the engine cluster ID, what is replaced, the ledger entry
resumed, the quorum and each voter's lag, and for a restore the
generation's manifest digest. Any difference is named; nothing is deleted.
When they are equal it executes the plan's decision, and the executor's
fences guard the rest of the way, as for the verb.

apply decides with its own --lag-threshold and --wal-lag-threshold (the
verbs' defaults), never with the plan's: a plan made with other thresholds
(or edited to name others) is refused with exit 6; give the plan's values
to these flags to apply it.

The plan is shown and confirmed (y/N) on a terminal; without a terminal,
or with -f - (stdin holds the plan), --yes is needed. --dry-run=client
re-checks the plan against the cluster and says whether it would apply;
-o json|yaml prints the receipts as the verb does. An interrupted apply is
resumed by running the verb itself (the ledger records the action).

` + applyExitHelp,
		Example: `  # plan, review, apply exactly that
  kubectl hactl replace etcd-main etcd-main-2 -n db --dry-run=client -o json > plan.json
  kubectl hactl apply -f plan.json

  # in a pipeline: refuse a plan older than 5 minutes, receipts as JSON
  kubectl hactl apply -f plan.json --yes --max-age 5m -o json

  # does the plan still hold? (changes nothing)
  kubectl hactl apply -f plan.json --dry-run=client

  # from stdin
  cat plan.json | kubectl hactl apply -f - --yes`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return usageError("apply takes no arguments (the plan names the cluster), got %d; give the plan with -f FILE\nSee '%s --help'.", len(args), cmd.CommandPath())
			}
			return nil
		},
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              runVerb(o),
	}
	o.AddFlags(cmd)
	return cmd
}

// AddFlags binds the apply flags.
func (o *ApplyOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&o.Filename, "filename", "f", "", `The plan: a file written by --dry-run=client -o json|yaml, or "-" for stdin.`)
	_ = cmd.MarkFlagFilename("filename", "json", "yaml", "yml")
	f.DurationVar(&o.MaxAge, "max-age", o.MaxAge, "Refuse a plan older than this (exit 6): make it again. 0: no expiry.")
	f.BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation: act on the plan as printed. Needed when stdin is not a terminal or holds the plan.")
	addDryRunFlag(f, &o.DryRun, `Must be "none", "client", or "server". client: re-check the plan against the cluster and change nothing. server: also take the lock, decide again under it and send every delete with the API server's dry run.`)
	f.StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml prints the receipts of every step, as the plan's verb does (the plan and progress then go to stderr).")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long each wait may take (default: the plan's --timeout).")
	f.DurationVar(&o.ProbeTimeout, "probe-timeout", o.ProbeTimeout, "Deadline for probing each member (default: the plan's).")
	f.StringVar(&o.Capture, "capture", string(actions.CaptureAuto), `Seed plans: where the snapshot travels, "auto", "pod" or "port-forward" (see kubectl hactl seed --help).`)
	f.StringVar(&o.AgentImage, "agent-image", "", "Seed plans: the capture pod's image (default "+actions.DefaultAgentImage()+").")
	f.Uint64Var(&o.LagThreshold, "lag-threshold", o.LagThreshold, fmt.Sprintf("The lag threshold apply decides with (raft entries, 1 to %d); a plan made with another one is refused (exit 6).", MaxLagThreshold))
	f.Uint64Var(&o.WALLagThreshold, "wal-lag-threshold", 0, fmt.Sprintf("Patroni: the WAL lag threshold apply decides with (bytes, at most %d; 0: the cluster's maximum_lag_on_failover, else 1 MiB); a plan made with another one is refused (exit 6).", MaxWALLagThreshold))
}

// Complete reads the kubeconfig.
func (o *ApplyOptions) Complete(cmd *cobra.Command, args []string) error {
	o.timeoutSet, o.probeTimeoutSet = cmd.Flags().Changed("timeout"), cmd.Flags().Changed("probe-timeout")
	if o.configFlags != nil && o.configFlags.Namespace != nil {
		o.nsFlag = *o.configFlags.Namespace
	}
	c, err := connect(o.configFlags, true)
	if err != nil {
		return err
	}
	o.client, o.dial, o.memberTLS, o.memberSecret = c.client, c.dial, c.memberTLS, c.memberSecret
	o.server = serverOf(o.configFlags)
	o.inIsTTY, o.errIsTTY = isTerminal(o.In), isTerminal(o.ErrOut)
	return nil
}

// Validate checks the flags and reads the plan.
func (o *ApplyOptions) Validate() error {
	if o.Filename == "" {
		return usageError("apply needs the plan: -f FILE (or -f - for stdin), made with e.g. 'kubectl hactl replace CLUSTER MEMBER --dry-run=client -o json > FILE'")
	}
	if err := normalizeDryRun(&o.DryRun, true); err != nil {
		return err
	}
	if _, err := actions.ParseCaptureMode(o.Capture); err != nil {
		return usageError("%v", err)
	}
	if err := validateOutput(o.Output); err != nil {
		return err
	}
	if o.MaxAge < 0 {
		return usageError("--max-age must not be negative (0: no expiry)")
	}
	if (o.timeoutSet && o.Timeout <= 0) || (o.probeTimeoutSet && o.ProbeTimeout <= 0) {
		return usageError("--timeout and --probe-timeout must be positive")
	}
	if err := checkThresholds(o.LagThreshold, o.WALLagThreshold); err != nil {
		return err
	}
	if o.plan == nil {
		p, err := o.readPlan()
		if err != nil {
			return err
		}
		o.plan = p
	}
	if o.nsFlag != "" && o.nsFlag != o.plan.Target.Namespace {
		return usageError("the plan is for namespace %q, but -n says %q: drop -n (the plan names its cluster)", o.plan.Target.Namespace, o.nsFlag)
	}
	if actions.DryRun(o.DryRun) == actions.DryRunServer && o.plan.Action == model.ActionSeed {
		return usageError(`--dry-run=server is not offered for a seed plan (nothing a seed changes goes through the API server): use "client"`)
	}
	return nil
}

func (o *ApplyOptions) readPlan() (*planDoc, error) {
	if o.Filename == "-" {
		return readPlan(o.In, "from stdin")
	}
	f, err := os.Open(o.Filename)
	if err != nil {
		return nil, usageError("reading the plan: %v", err)
	}
	defer f.Close()
	return readPlan(f, o.Filename)
}

// durations are the probe and wait timeouts: the flags when given, else
// the plan's.
func (o *ApplyOptions) durations() (probe, wait time.Duration) {
	probe, wait = o.ProbeTimeout, o.Timeout
	if !o.probeTimeoutSet {
		probe, _ = time.ParseDuration(o.plan.Options.ProbeTimeout)
	}
	if !o.timeoutSet {
		wait, _ = time.ParseDuration(o.plan.Options.Timeout)
	}
	return probe, wait
}

func (o *ApplyOptions) human() io.Writer {
	if o.Output != "" {
		return o.ErrOut
	}
	return o.Out
}

// what names the plan's action: "replace etcd-1 of db/etcd".
func (o *ApplyOptions) what() string {
	p := o.plan
	s := string(p.Action)
	if p.Action == model.ActionSeed {
		s += " generation " + p.Options.Generation
	} else if p.Member != "" {
		s += " " + p.Member
	}
	return s + " of " + p.Cluster
}

// Run checks the plan against the cluster, asks, and executes it.
func (o *ApplyOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// Validate normalized it; a caller that skipped Validate must not
	// act for real on a value nothing read as a dry run.
	if err := normalizeDryRun(&o.DryRun, true); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.plan.Action == model.ActionSeed {
		return o.runSeed(ctx)
	}
	p := o.plan
	dry := actions.DryRun(o.DryRun)
	ao := o.actionOptions()
	w := o.human()
	var res actions.Result
	o.printPlan(w)
	if done, err := o.precheck(ctx, w); done || err != nil {
		return ao.finish(res, actionError(o.withReplan(err)))
	}
	x := ao.executor()
	x.Plan = &p.Decision
	// The decision is made again with the intent the verb builds from
	// the plan's command line and apply's own thresholds, never with the
	// plan's intent: what an edit changed there shows as a difference.
	confirmed := p.Decision
	confirmed.Intent = ao.intent()
	if p.Action == model.ActionRestore {
		if err := o.repinRestore(ctx, &confirmed.Intent); err != nil {
			return ao.finish(res, actionError(o.withReplan(err)))
		}
	}
	if err := o.recheck(ctx, w, x, confirmed.Intent); err != nil {
		return ao.finish(res, actionError(o.withReplan(err)))
	}
	if err := o.confirm(w, dry); err != nil {
		return ao.finish(res, actionError(o.withReplan(err)))
	}
	// The prompt may have waited: the age holds at execution too.
	if err := o.checkAge(); err != nil {
		return ao.finish(res, actionError(o.withReplan(err)))
	}
	res, err := x.Execute(ctx, confirmed, actions.ExecOptions{
		DryRun:    dry,
		OnReceipt: func(r model.Receipt) { printReceipt(w, r) },
		Warn:      func(s string) { fmt.Fprintf(o.ErrOut, "warning: %s\n", s) },
		Note:      func(s string) { fmt.Fprintln(w, s) },
	})
	if err == nil && dry == actions.DryRunNone {
		fmt.Fprintf(w, "%s: done, as planned (ledger entry %s)\n", o.what(), res.EntryID)
	}
	switch {
	case err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled):
		err = fmt.Errorf("interrupted; the lock was released: run '%s' to resume: %w", p.command(), err)
	case err != nil && res.EntryID != "" && dry == actions.DryRunNone:
		// Past the plan check the action began: what it did is in the
		// ledger, and the verb resumes it. Never "nothing was changed".
		err = fmt.Errorf("the action began (ledger entry %s) and stopped; it may have changed the cluster: run '%s' to see where it stands and resume: %w", res.EntryID, p.command(), err)
	}
	return ao.finish(res, actionError(o.withReplan(err)))
}

// withReplan names, in a plan conflict, the command that makes the plan
// again.
func (o *ApplyOptions) withReplan(err error) error {
	var pc *actions.PlanConflictError
	if errors.As(err, &pc) && pc.Replan == "" {
		pc.Replan = o.plan.replanCommand()
	}
	return err
}

// actionOptions are the plan's verb's options, for its executor and its
// receipts document.
func (o *ApplyOptions) actionOptions() *ActionOptions {
	p := o.plan
	ao := NewActionOptions(o.configFlags, p.Action, o.IOStreams)
	ao.Cluster, ao.Member, ao.Namespace = p.Target.StatefulSet, p.Member, p.Target.Namespace
	ao.Yes, ao.DryRun, ao.Output = o.Yes, o.DryRun, o.Output
	ao.MoveLeader, ao.Supersede, ao.Force, ao.Generation, ao.AgentImage = p.Options.MoveLeader, p.Options.Supersede, p.Options.Force, p.Options.Generation, p.Options.AgentImage
	ao.SwitchoverFirst, ao.AcceptNoFailover, ao.AcceptWriteStall = p.Options.SwitchoverFirst, p.Options.AcceptNoFailover, p.Options.AcceptWriteStall
	// apply's own thresholds, never the plan's (compared, not used)
	ao.LagThreshold, ao.WALLagThreshold = o.LagThreshold, o.WALLagThreshold
	if p.Action == model.ActionRestore {
		ao.storeURL, ao.secretName = p.Options.Store, p.Options.StoreSecret
	}
	ao.ProbeTimeout, ao.Timeout = o.durations()
	ao.client, ao.dial, ao.memberTLS, ao.memberSecret, ao.inIsTTY = o.client, o.dial, o.memberTLS, o.memberSecret, o.inIsTTY
	return ao
}

// printPlan shows where the plan comes from, then its decision as the
// verb showed it.
func (o *ApplyOptions) printPlan(w io.Writer) {
	p := o.plan
	dry := actions.DryRun(o.DryRun)
	t := p.Target
	fmt.Fprintf(w, "plan: %s, made %s (%s ago)", o.what(), p.CreatedAt.UTC().Format(time.RFC3339), o.plan.age(o.now()).Round(time.Second))
	if p.CreatedBy != "" {
		fmt.Fprintf(w, " by %s", p.CreatedBy)
	}
	fmt.Fprintf(w, "\n  for StatefulSet %s/%s (uid %s)", t.Namespace, t.StatefulSet, t.StatefulSetUID)
	if t.KubeSystemUID != "" {
		fmt.Fprintf(w, " of the Kubernetes cluster with kube-system uid %s", t.KubeSystemUID)
	}
	if t.Server != "" {
		fmt.Fprintf(w, " (planned via %s)", t.Server)
	}
	fmt.Fprintln(w)
	printDecision(w, p.Decision, dryRunSuffix(dry))
}

// precheck refuses a plan that is too old, made for another cluster, or
// that does not proceed; done says there is nothing to apply (and no
// error).
func (o *ApplyOptions) precheck(ctx context.Context, w io.Writer) (done bool, err error) {
	if err := o.checkAge(); err != nil {
		return true, err
	}
	if err := o.checkTarget(ctx); err != nil {
		return true, err
	}
	p := o.plan
	d := p.Decision
	switch d.Verb {
	case model.VerbProceed:
		return false, nil
	case model.VerbDone:
		if d.Resume != "" {
			return false, nil
		}
		fmt.Fprintf(w, "%s: the plan has nothing to do\n", o.what())
		return true, nil
	case model.VerbRefuse:
		return true, withCode(ExitRefused, fmt.Errorf("the plan is a refusal, there is nothing to apply (make a new plan once the cause is fixed: %s): %w", p.replanCommand(), &actions.RefusedError{Decision: d}))
	}
	return true, withCode(ExitRefused, fmt.Errorf("%w: the plan's decision is %s (%s), there is nothing to apply; make a new plan later: %s", actions.ErrRefused, d.Verb, firstBlockerDetail(d), p.replanCommand()))
}

func firstBlockerDetail(d model.Decision) string {
	if len(d.Blockers) == 0 {
		return "no reason given"
	}
	return fmt.Sprintf("%s: %s", d.Blockers[0].Code, d.Blockers[0].Detail)
}

// planStaleError refuses a plan by its age. It matches
// actions.ErrFenceConflict (exit 6).
type planStaleError struct{ msg string }

func (e *planStaleError) Error() string        { return e.msg }
func (e *planStaleError) Is(target error) bool { return target == actions.ErrFenceConflict }

// checkAge refuses a plan older than --max-age, or made in the future.
func (o *ApplyOptions) checkAge() error {
	p := o.plan
	age := p.age(o.now())
	switch {
	case age < -planSkew:
		return withCode(ExitFenceConflict, &planStaleError{fmt.Sprintf("the plan was made in the future (createdAt %s, %s from now): the clocks differ, or it was edited; nothing was changed: make a new plan: %s",
			p.CreatedAt.UTC().Format(time.RFC3339), (-age).Round(time.Second), p.replanCommand())})
	case o.MaxAge > 0 && age > o.MaxAge:
		return withCode(ExitFenceConflict, &planStaleError{fmt.Sprintf("the plan is %s old (made %s), older than --max-age %s: the cluster may have changed since; nothing was changed: make a new plan, review it and apply that: %s",
			age.Round(time.Second), p.CreatedAt.UTC().Format(time.RFC3339), o.MaxAge, p.replanCommand())})
	}
	return nil
}

// checkTarget refuses a plan made for another Kubernetes cluster or
// another StatefulSet.
func (o *ApplyOptions) checkTarget(ctx context.Context) error {
	p := o.plan
	now, err := actions.ReadPlanTarget(ctx, o.client, p.Target.Namespace, p.Target.StatefulSet)
	if err != nil {
		return err
	}
	now.Server = o.server
	if c := actions.TargetDiff(p.Target, now); len(c) > 0 {
		return &actions.PlanConflictError{Changes: c}
	}
	if p.Target.KubeSystemUID != "" && now.KubeSystemUID == "" {
		fmt.Fprintf(o.ErrOut, "warning: namespace %s is not readable: the Kubernetes cluster is recognised by the StatefulSet's UID only\n", actions.KubeSystemNamespace)
	}
	return nil
}

// repinRestore reads the plan's generation from its store again and pins
// intent in to it, so that the decision made now names the manifest as it
// is now: one deleted and published again under the same ID differs by
// its digest.
func (o *ApplyOptions) repinRestore(ctx context.Context, in *model.Intent) error {
	p := o.plan
	src, err := actions.ReadRestoreSource(ctx, o.client, p.Target.Namespace, p.Target.StatefulSet, p.Options.Generation,
		actions.StoreRef{URL: p.Options.Store, Secret: p.Options.StoreSecret})
	switch {
	case err != nil && refusedRestore(err):
		return &actions.PlanConflictError{Changes: []string{fmt.Sprintf("generation %s cannot be read from the plan's store as the plan saw it: %v", p.Options.Generation, err)}}
	case err != nil:
		return err
	}
	src.Pin(&in.Options)
	return nil
}

// recheck decides again now (without the lock) and holds the decision
// against the plan, so that a plan that no longer holds is refused before
// it is confirmed. Under the lock, the executor decides and compares once
// more (Executor.Plan).
func (o *ApplyOptions) recheck(ctx context.Context, w io.Writer, x *actions.Executor, in model.Intent) error {
	p := o.plan
	d, _, warn, err := x.Decide(ctx, p.Target.Namespace, p.Target.StatefulSet, in)
	printWarnings(o.ErrOut, warn)
	if err != nil {
		return err
	}
	return o.compare(w, d)
}

// compare holds decision d, made now, against the plan.
func (o *ApplyOptions) compare(w io.Writer, d model.Decision) error {
	if d.Verb == model.VerbRefuse && d.OnlyLockHeld() {
		return decisionError(d)
	}
	if c := actions.PlanDiff(o.plan.Decision, d); len(c) > 0 {
		return &actions.PlanConflictError{Changes: c}
	}
	dry := actions.DryRun(o.DryRun)
	if dry == actions.DryRunClient {
		fmt.Fprintf(w, "the plan would apply: the cluster matches it as observed now (dry run: nothing was changed)\n")
	} else {
		fmt.Fprintf(w, "re-checked: the cluster matches the plan as observed now\n")
	}
	return nil
}

// confirm asks on a terminal, unless --yes or a dry run.
func (o *ApplyOptions) confirm(w io.Writer, dry actions.DryRun) error {
	if dry != actions.DryRunNone || o.Yes {
		return nil
	}
	if !o.inIsTTY || o.Filename == "-" {
		return fmt.Errorf("refusing to apply the plan without confirmation: stdin is not a terminal (or holds the plan); review the plan above and run again with --yes; nothing was changed")
	}
	ok, err := confirm(o.In, w, fmt.Sprintf("Apply this plan (%s), made %s ago?", o.what(), o.plan.age(o.now()).Round(time.Second)))
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("not confirmed; nothing was changed")
	}
	return nil
}

// runSeed applies a seed plan: the seed's own path (store, published
// check, capture under the lock) with the plan's decision.
func (o *ApplyOptions) runSeed(ctx context.Context) error {
	p := o.plan
	dry := actions.DryRun(o.DryRun)
	so := NewSeedOptions(o.configFlags, o.IOStreams)
	so.Cluster, so.Namespace, so.Generation, so.Member = p.Target.StatefulSet, p.Target.Namespace, p.Options.Generation, p.Member
	so.Yes, so.DryRun, so.Output, so.Supersede = o.Yes, string(dry), o.Output, p.Options.Supersede
	so.ProbeTimeout, so.Timeout = o.durations()
	so.LagThreshold = o.LagThreshold // apply's own, never the plan's
	so.Capture, so.AgentImage = o.Capture, o.AgentImage
	if so.Capture == "" {
		so.Capture = string(actions.CaptureAuto)
	}
	so.store = storeFlags{URL: p.Options.Store, Secret: p.Options.StoreSecret}
	so.client, so.dial, so.memberTLS, so.memberSecret, so.inIsTTY, so.errIsTTY = o.client, o.dial, o.memberTLS, o.memberSecret, o.inIsTTY, o.errIsTTY
	so.identity = actions.ProcessIdentity()
	doc := &seedDoc{APIVersion: status.SchemaVersion, Kind: "SeedReceipt", Cluster: p.Cluster,
		Generation: p.Options.Generation, Phase: model.ActionPhaseRequested, Receipts: []model.Receipt{}}
	err := o.withReplan(o.seed(ctx, so, doc))
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

func (o *ApplyOptions) seed(ctx context.Context, so *SeedOptions, doc *seedDoc) error {
	p := o.plan
	w := o.human()
	o.printPlan(w)
	if done, err := o.precheck(ctx, w); done || err != nil {
		return err
	}
	cs, err := openStore(ctx, o.client, p.Target.Namespace, p.Target.StatefulSet, so.store, actions.StoreOpen{NeedStatefulSet: true, Write: true})
	if err != nil {
		return err
	}
	defer cs.Store.Close()
	doc.Store = cs.Store.String()
	if want := p.Decision.Intent.Options.SeedStore; doc.Store != want {
		return &actions.PlanConflictError{Changes: []string{fmt.Sprintf("the seed store is now %s, the plan's was %s", doc.Store, want)}}
	}
	x := so.executor()
	x.Plan = &p.Decision
	// Decided again with the seed's own intent from the plan's command
	// line, never with the plan's intent (see Run).
	confirmed := p.Decision
	confirmed.Intent = so.intent(cs)
	d, res, warn, err := x.Decide(ctx, p.Target.Namespace, p.Target.StatefulSet, confirmed.Intent)
	printWarnings(o.ErrOut, warn)
	if err != nil {
		return err
	}
	if done, err := so.published(ctx, x, cs, d, res, doc); done || err != nil {
		return err
	}
	if err := o.compare(w, d); err != nil {
		return err
	}
	if err := o.confirm(w, actions.DryRun(so.DryRun)); err != nil {
		return err
	}
	if err := o.checkAge(); err != nil {
		return err
	}
	return so.execute(ctx, x, cs, confirmed, doc)
}

// checkThresholds refuses lag thresholds outside their documented ranges
// (exit 2).
func checkThresholds(lag, wal uint64) error {
	if lag < 1 || lag > MaxLagThreshold {
		return usageError("--lag-threshold %d is outside its range: 1 to %d raft entries", lag, MaxLagThreshold)
	}
	if wal > MaxWALLagThreshold {
		return usageError("--wal-lag-threshold %d is outside its range: 0 (the cluster's own) to %d bytes", wal, MaxWALLagThreshold)
	}
	return nil
}
