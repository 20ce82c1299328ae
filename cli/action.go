package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hactl-dev/hactl/engine/registry"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// actionExitHelp documents the exit codes of replace and reseed.
const actionExitHelp = `Exit codes:
  0  done (or nothing left to do)
  1  error: API, RBAC, network; a wait that timed out (run the same command
     again to resume); the plan was not confirmed
  2  usage error
  5  refused by the classifier: the reason is printed, with the flag that
     overrides it where one may
  6  fence conflict: the cluster changed between the decision and the
     action; nothing that was not confirmed was changed
  7  lock held: another hactl action is working on this cluster`

// ActionOptions holds the flags and state of replace and reseed.
type ActionOptions struct {
	configFlags *kubeflags.ConfigFlags

	Action     model.Action
	Cluster    string
	Member     string
	Namespace  string
	Yes        bool
	DryRun     string
	Output     string
	MoveLeader bool
	Supersede  bool
	// SwitchoverFirst: reseed or replace a Patroni primary after
	// switching over (--switchover-first).
	SwitchoverFirst bool
	// AcceptNoFailover and AcceptWriteStall take down a Patroni
	// cluster's last failover candidate, or its synchronous standby under
	// synchronous_mode_strict (--accept-no-failover, --accept-write-stall).
	AcceptNoFailover bool
	AcceptWriteStall bool
	// WALLagThreshold is a Patroni replica's replay lag in bytes that
	// still counts as caught up (0: the cluster's own bound).
	WALLagThreshold uint64
	Generation      string
	ProbeTimeout    time.Duration

	// restore only.
	store        storeFlags
	AgentImage   string
	Force        bool
	source       *model.GenerationFacts
	storeURL     string
	secretName   string
	restoreBytes int64
	Timeout      time.Duration
	LagThreshold uint64

	client       kubernetes.Interface
	dial         engine.DialFunc
	memberTLS    *engine.Credentials
	memberSecret string
	inIsTTY      bool
	errIsTTY     bool
	saved        savedPlan

	genericiooptions.IOStreams
}

// NewActionOptions returns options with their defaults.
func NewActionOptions(flags *kubeflags.ConfigFlags, a model.Action, streams genericiooptions.IOStreams) *ActionOptions {
	return &ActionOptions{
		configFlags:  flags,
		Action:       a,
		DryRun:       string(actions.DryRunNone),
		ProbeTimeout: engine.DefaultTimeout,
		Timeout:      actions.DefaultWaitTimeout,
		LagThreshold: model.DefaultLagThreshold,
		IOStreams:    streams,
	}
}

// newActionCmd builds replace or reseed.
func newActionCmd(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams, a model.Action, short, long, example string) *cobra.Command {
	o := NewActionOptions(flags, a, streams)
	cmd := &cobra.Command{
		Use:     string(a) + " CLUSTER MEMBER",
		Short:   short,
		Long:    long + "\n\n" + actionExitHelp,
		Example: example,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError("%s takes a CLUSTER and a MEMBER (its pod name), got %d argument(s)\nSee '%s --help'.", a, len(args), cmd.CommandPath())
			}
			return nil
		},
		ValidArgsFunction: completeClusterMember(flags),
		RunE:              runVerb(o),
	}
	o.AddFlags(cmd)
	return cmd
}

// AddFlags binds the action flags.
func (o *ActionOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation: act on the plan as printed. Needed when stdin is not a terminal.")
	addDryRunFlag(f, &o.DryRun, `Must be "none", "client", or "server". client: print the plan and change nothing. server: also send every delete with the API server's dry run (its preconditions are checked for real); engine changes are not sent.`)
	f.StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml prints the receipts of every step (the plan and progress then go to stderr).")
	f.BoolVar(&o.MoveLeader, "move-leader", false, "If the member leads the cluster, move leadership to the healthiest follower first (otherwise acting on the leader is refused).")
	f.BoolVar(&o.Supersede, "supersede", false, "Start even though another action is recorded in progress for this cluster; that action is marked superseded.")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long each wait (pod gone, pod recreated, member started, caught up, ready) may take before the command stops; run it again to resume.")
	f.DurationVar(&o.ProbeTimeout, "probe-timeout", o.ProbeTimeout, "Deadline for probing each member.")
	f.Uint64Var(&o.LagThreshold, "lag-threshold", o.LagThreshold, "Raft entries a member may trail the leader frontier and count as caught up (and be promoted).")
	if o.Action == model.ActionReplace || o.Action == model.ActionReseed {
		f.BoolVar(&o.SwitchoverFirst, "switchover-first", false, "Patroni: if the member is the primary, switch over to the healthiest replica first (otherwise acting on the primary is refused).")
		f.BoolVar(&o.AcceptNoFailover, "accept-no-failover", false, "Patroni: act even though the member is the last replica that could take over from the primary: while it rebuilds, losing the primary leaves nothing to fail over to.")
		f.BoolVar(&o.AcceptWriteStall, "accept-write-stall", false, "Patroni: act even though the member is the synchronous standby under synchronous_mode_strict: while it rebuilds, the primary commits no writes.")
		f.Uint64Var(&o.WALLagThreshold, "wal-lag-threshold", 0, "Patroni: bytes of WAL a replica's replay may trail the primary's position and count as caught up (default: the cluster's maximum_lag_on_failover, else 1 MiB).")
	}
	if o.Action == model.ActionReseed {
		f.StringVar(&o.Generation, "generation", "", "Reseed from this seed generation instead of from the member's peers (not supported for etcd yet: refused).")
	}
	if o.Action == model.ActionRestore {
		f.StringVar(&o.Generation, "generation", "", "The seed generation to restore every member from (required).")
		o.store.add(f)
		f.StringVar(&o.AgentImage, "agent-image", actions.DefaultAgentImage(), "Image of the restore pods: any image with kubectl-hactl on its PATH; a tag is pinned to the digest its registry names now, else to the one the first pod's node reports.")
		f.BoolVar(&o.Force, "force", false, "Restore even though the cluster has quorum, or the generation names another cluster ID (an earlier incarnation of this one): every write after the generation is lost.")
	}
}

// Complete reads the kubeconfig and arguments.
func (o *ActionOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Cluster = args[0]
	if len(args) > 1 {
		o.Member = args[1]
	}
	c, err := connect(o.configFlags, true)
	if err != nil {
		return err
	}
	o.Namespace, o.client, o.dial, o.memberTLS, o.memberSecret = c.namespace, c.client, c.dial, c.memberTLS, c.memberSecret
	o.inIsTTY, o.errIsTTY = isTerminal(o.In), isTerminal(o.ErrOut)
	return nil
}

// Validate checks the flags.
func (o *ActionOptions) Validate() error {
	if err := normalizeDryRun(&o.DryRun, true); err != nil {
		return err
	}
	if err := validateOutput(o.Output); err != nil {
		return err
	}
	if o.Timeout <= 0 || o.ProbeTimeout <= 0 {
		return usageError("--timeout and --probe-timeout must be positive")
	}
	if o.Action == model.ActionRestore {
		if o.Generation == "" {
			return usageError("restore needs --generation G (list them with 'kubectl hactl generations list %s')", o.Cluster)
		}
		if err := artifact.ValidateGeneration(o.Generation); err != nil {
			return usageError("--generation: %v", err)
		}
		if o.AgentImage == "" {
			return usageError("--agent-image must not be empty")
		}
	}
	return nil
}

// prepareRestore reads generation o.Generation's manifest from the
// cluster's store (which verifies its format, digest and identity) and
// keeps what the classifier and the restore pods need. The pods verify
// every byte again before they touch a data directory.
func (o *ActionOptions) prepareRestore(ctx context.Context) error {
	src, err := actions.ReadRestoreSource(ctx, o.client, o.Namespace, o.Cluster, o.Generation, o.store.ref())
	switch {
	case errors.Is(err, actions.ErrNoStore):
		// A cluster another owns is refused for that, store or none.
		return refuseManaged(ctx, o.human(), o.executor().Observer, o.Namespace, o.Cluster, o.intent(), withCode(ExitUsage, err))
	case err != nil && refusedRestore(err):
		return withCode(ExitRefused, fmt.Errorf("generation %s cannot be restored, nothing was changed: %w", o.Generation, err))
	case err != nil:
		return refuseManaged(ctx, o.human(), o.executor().Observer, o.Namespace, o.Cluster, o.intent(), err)
	}
	m, id := src.Manifest, src.Manifest.Identity
	o.source, o.storeURL, o.secretName, o.restoreBytes = src.Facts, src.StoreURL, src.StoreSecret, m.TotalSize
	fmt.Fprintf(o.human(), "generation %s in %s: %s cluster %s, revision %d, %d file(s), %s, created %s\n", id.Generation, src.Store,
		id.Engine, id.ClusterID, id.Revision, len(m.Files), format.Bytes(m.TotalSize), m.CreatedAt.UTC().Format(time.RFC3339))
	asked := o.AgentImage
	pinned, rerr := actions.ResolveAgentImage(ctx, asked)
	if rerr == nil {
		o.AgentImage = pinned
	}
	fmt.Fprintln(o.human(), actions.AgentImageResolved(asked, pinned, rerr, model.ActionRestore))
	if src.StoreSecret == "" && !strings.HasPrefix(src.StoreURL, "file://") {
		fmt.Fprintf(o.ErrOut, "warning: no --store-secret (or %s annotation): the restore pods get no store credentials and rely on their own environment\n", artifact.AnnotationStoreSecret)
	}
	return nil
}

// addDryRunFlag declares --dry-run into *v, as every verb takes it: a
// value, or the bare flag for "client"; help says what each value does
// for this verb. The verb's Validate normalizes it (normalizeDryRun), so
// that everything after reads actions.DryRun(*v) as is.
func addDryRunFlag(f *pflag.FlagSet, v *string, help string) {
	f.StringVar(v, "dry-run", *v, help)
	f.Lookup("dry-run").NoOptDefVal = string(actions.DryRunClient)
}

// normalizeDryRun checks *v (parseDryRun; server: the verb offers a server
// dry run) and writes it back as "none", "client" or "server".
func normalizeDryRun(v *string, server bool) error {
	d, err := parseDryRun(*v, server)
	if err != nil {
		return err
	}
	*v = string(d)
	return nil
}

// parseDryRun reads --dry-run as kubectl does, for every verb: "none",
// "client", "server" (where the verb has a server dry run), and the
// older "true" (client) and "false" (none).
func parseDryRun(s string, server bool) (actions.DryRun, error) {
	d := actions.DryRun(s)
	switch s {
	case "unchanged", "true":
		d = actions.DryRunClient
	case "false":
		d = actions.DryRunNone
	}
	switch d {
	case actions.DryRunNone, actions.DryRunClient:
		return d, nil
	case actions.DryRunServer:
		if server {
			return d, nil
		}
		return "", usageError(`--dry-run=server is not offered here (nothing it changes goes through the API server): use "none" or "client"`)
	}
	if server {
		return "", usageError(`--dry-run must be "none", "client", or "server", got %q`, s)
	}
	return "", usageError(`--dry-run must be "none" or "client", got %q`, s)
}

func validateOutput(s string) error {
	switch s {
	case "", "json", "yaml":
		return nil
	}
	return usageError("--output must be json or yaml, got %q", s)
}

func (o *ActionOptions) executor() *actions.Executor {
	return &actions.Executor{
		Observer: &actions.Observer{Engines: registry.Engines(), Client: o.client, Dial: o.dial, MemberTLS: o.memberTLS, TLSSecret: o.memberSecret, ProbeTimeout: o.ProbeTimeout,
			Verdict: model.VerdictOptions{LagThreshold: o.LagThreshold, WALLagThreshold: o.WALLagThreshold}},
		Seeders:     registry.Seeders(),
		WaitTimeout: o.Timeout,
		// the identity the API requests name in their user agent
		Identity: actions.ProcessIdentity(),
	}
}

func (o *ActionOptions) intent() model.Intent {
	return model.Intent{Action: o.Action, Member: o.Member, Options: model.ActionOptions{
		MoveLeader: o.MoveLeader, SwitchoverFirst: o.SwitchoverFirst, Supersede: o.Supersede, Generation: o.Generation,
		AcceptNoFailover: o.AcceptNoFailover, AcceptWriteStall: o.AcceptWriteStall,
		Verdict: model.VerdictOptions{LagThreshold: o.LagThreshold, WALLagThreshold: o.WALLagThreshold},
		Source:  o.source, Force: o.Force, SeedStore: o.storeURL, StoreSecret: o.secretName, AgentImage: o.AgentImage,
	}}
}

// human is where the plan and progress go: stderr when stdout carries
// the receipts document.
func (o *ActionOptions) human() io.Writer {
	if o.Output != "" {
		return o.ErrOut
	}
	return o.Out
}

// Run decides, shows the plan, asks, executes and prints the receipts.
func (o *ActionOptions) Run(ctx context.Context) error {
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
	dry := actions.DryRun(o.DryRun)
	x := o.executor()
	w := o.human()
	suffix := dryRunSuffix(dry)

	var (
		d   model.Decision
		res actions.Result
		err error
	)
	if o.Action == model.ActionRestore {
		if err := o.prepareRestore(ctx); err != nil {
			return o.finish(res, err)
		}
	}
	for {
		var warn status.Warnings
		d, _, warn, err = x.Decide(ctx, o.Namespace, o.Cluster, o.intent())
		printWarnings(o.ErrOut, warn)
		if err != nil {
			return err
		}
		printDecision(w, d, suffix)
		o.saved.decision = &d
		if d.Verb != model.VerbAwait {
			break
		}
		fmt.Fprintf(w, "waiting for the deletion in flight to finish (up to %s)...%s\n", o.Timeout, suffix)
		if err := awaitChange(ctx, x, o.Namespace, o.Cluster, o.intent(), o.Timeout); err != nil {
			return err
		}
	}
	switch d.Verb {
	case model.VerbRefuse, model.VerbObserve:
		return o.finish(res, decisionError(d))
	case model.VerbDone:
		if d.Resume == "" {
			fmt.Fprintf(w, "%s: nothing to do%s\n", o.what(), suffix)
			return o.finish(res, nil)
		}
	}
	if dry == actions.DryRunNone && d.Verb == model.VerbProceed && !o.Yes {
		if !o.inIsTTY {
			return o.finish(res, fmt.Errorf("refusing to %s without confirmation: stdin is not a terminal; review the plan above and run again with --yes; nothing was changed", o.what()))
		}
		ok, err := confirm(o.In, w, fmt.Sprintf("%s of %s/%s as shown above?", titleCase(strings.TrimSpace(o.Action.String()+" "+o.Member)), o.Namespace, o.Cluster))
		if err != nil {
			return err
		}
		if !ok {
			return o.finish(res, errors.New("not confirmed; nothing was changed"))
		}
	}
	rp := o.restoreProgress(d, dry)
	res, err = x.Execute(ctx, d, actions.ExecOptions{
		DryRun:    dry,
		OnReceipt: func(r model.Receipt) { rp.observe(ctx, r); printReceipt(w, r) },
		Warn:      func(s string) { fmt.Fprintf(o.ErrOut, "warning: %s\n", s) },
	})
	rp.stop()
	if err == nil && dry == actions.DryRunNone {
		fmt.Fprintf(w, "%s: done (ledger entry %s)\n", o.what(), res.EntryID)
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = fmt.Errorf("interrupted; the lock was released: run the same command again to resume: %w", err)
	}
	return o.finish(res, actionError(err))
}

// what names the action for messages: "replace etcd-1", "restore".
func (o *ActionOptions) what() string {
	if o.Member == "" {
		return string(o.Action)
	}
	return string(o.Action) + " " + o.Member
}

// finish prints the receipts document (-o) and passes err on.
func (o *ActionOptions) finish(res actions.Result, err error) error {
	if o.Output != "" {
		doc := receiptsDoc{APIVersion: status.SchemaVersion, Kind: "ActionReceipts", Action: o.Action, Cluster: o.Namespace + "/" + o.Cluster,
			Member: o.Member, EntryID: res.EntryID, Result: resultWord(err), Receipts: res.Receipts}
		if doc.Receipts == nil {
			doc.Receipts = []model.Receipt{}
		}
		if err := printDoc(o.Out, o.Output, o.planOr(doc)); err != nil {
			return err
		}
	}
	return err
}

// receiptsDoc is what -o json|yaml prints.
type receiptsDoc struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Action     model.Action    `json:"action"`
	Cluster    string          `json:"cluster"`
	Member     string          `json:"member"`
	EntryID    string          `json:"entryID,omitempty"`
	Result     string          `json:"result"`
	Receipts   []model.Receipt `json:"receipts"`
}

func resultWord(err error) string {
	switch {
	case err == nil:
		return "done"
	case errors.Is(err, actions.ErrRefused):
		return "refused"
	case errors.Is(err, actions.ErrFenceConflict):
		return "fence-conflict"
	case errors.Is(err, actions.ErrLockHeld):
		return "lock-held"
	}
	return "error"
}

func printDoc(w io.Writer, format string, v any) error {
	var b []byte
	var err error
	if format == "yaml" {
		b, err = yaml.Marshal(v)
	} else {
		b, err = json.MarshalIndent(v, "", "  ")
		b = append(b, '\n')
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// decisionError turns a refusing decision into the error and exit code
// the CLI reports.
func decisionError(d model.Decision) error {
	if d.OnlyLockHeld() {
		return withCode(ExitLockHeld, &actions.RefusedError{Decision: d})
	}
	return withCode(ExitRefused, &actions.RefusedError{Decision: d})
}

// refuseManaged is, when the cluster's members are another's (static
// pods: no StatefulSet to read a store or a generation from), the
// classifier's refusal of in, printed to w as the verbs print a decision,
// in place of err (what went wrong reading them); else err.
func refuseManaged(ctx context.Context, w io.Writer, obs *actions.Observer, ns, name string, in model.Intent, err error) error {
	d, _, _, ok := obs.DecideManaged(ctx, ns, name, in)
	if !ok {
		return err
	}
	for _, l := range classify.Describe(d) {
		fmt.Fprintln(w, l)
	}
	return withCode(ExitRefused, &actions.RefusedError{Decision: d})
}

// actionError maps executor errors to exit codes.
func actionError(err error) error {
	var re *actions.RefusedError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, actions.ErrLockHeld), errors.Is(err, actions.ErrLockLost):
		return withCode(ExitLockHeld, err)
	case errors.As(err, &re) && re.Decision.OnlyLockHeld():
		return withCode(ExitLockHeld, err)
	case errors.Is(err, actions.ErrRefused):
		return withCode(ExitRefused, err)
	case errors.Is(err, actions.ErrFenceConflict):
		return withCode(ExitFenceConflict, err)
	}
	return err
}

// awaitChange polls until the decision is no longer "await".
func awaitChange(ctx context.Context, x *actions.Executor, ns, name string, in model.Intent, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		d, _, _, err := x.Decide(ctx, ns, name, in)
		if err == nil && d.Verb != model.VerbAwait {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the deletion in flight did not finish within %s; nothing was changed", timeout)
		}
	}
}

func dryRunSuffix(d actions.DryRun) string {
	switch d {
	case actions.DryRunClient:
		return " (dry run)"
	case actions.DryRunServer:
		return " (server dry run)"
	}
	return ""
}

// printDecision writes the decision as the confirm dialog shows it.
func printDecision(w io.Writer, d model.Decision, suffix string) {
	for i, l := range classify.Describe(d) {
		if i == 0 {
			l += suffix
		}
		fmt.Fprintln(w, l)
	}
}

// printReceipt writes one progress line.
func printReceipt(w io.Writer, r model.Receipt) {
	suffix := ""
	switch r.DryRun {
	case "client":
		suffix = " (dry run)"
	case "server":
		suffix = " (server dry run)"
	}
	detail := strings.TrimSuffix(strings.TrimSuffix(r.Detail, " (dry run)"), " (server dry run)")
	fmt.Fprintf(w, "  [%s] %s %s: %s%s\n", r.Phase, r.Step, r.Outcome, detail, suffix)
}

func printWarnings(w io.Writer, warn status.Warnings) {
	for _, s := range warn {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
}

// confirm asks question on w and reads y/N from in: only "y" or "yes"
// (any case) confirms.
func confirm(in io.Reader, w io.Writer, question string) (bool, error) {
	fmt.Fprintf(w, "%s [y/N]: ", question)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// completeClusterMember completes CLUSTER, then MEMBER (the cluster's pod
// names).
func completeClusterMember(flags *kubeflags.ConfigFlags) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	clusters := completeClusters(flags)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return clusters(cmd, args, toComplete)
		case 1:
		default:
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		k, err := connect(flags, false)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		sts, err := k.client.AppsV1().StatefulSets(k.namespace).Get(ctx, args[0], metav1.GetOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		n := 1
		if sts.Spec.Replicas != nil {
			n = int(*sts.Spec.Replicas)
		}
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, fmt.Sprintf("%s-%d", sts.Name, i))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
