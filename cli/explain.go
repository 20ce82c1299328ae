package cli

import (
	"context"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/engine/registry"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/model"
)

// ExplainOptions holds the flags and state of `kubectl hactl explain`.
type ExplainOptions struct {
	configFlags *kubeflags.ConfigFlags

	Cluster         string
	Member          string
	Namespace       string
	Intent          string
	MoveLeader      bool
	SwitchoverFirst bool
	// AcceptNoFailover and AcceptWriteStall explain as if those
	// overrides were given (Patroni).
	AcceptNoFailover bool
	AcceptWriteStall bool
	Supersede        bool
	Generation       string
	Output           string
	ProbeTimeout     time.Duration
	LagThreshold     uint64

	client       kubernetes.Interface
	dial         engine.DialFunc
	memberTLS    *engine.Credentials
	memberSecret string

	genericiooptions.IOStreams
}

// NewCmdExplain builds `kubectl hactl explain CLUSTER MEMBER`.
func NewCmdExplain(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ExplainOptions{configFlags: flags, Intent: string(model.ActionReplace), ProbeTimeout: engine.DefaultTimeout,
		LagThreshold: model.DefaultLagThreshold, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "explain CLUSTER MEMBER",
		Short: "Show what replace, reseed, seed or switchover would do, and why (changes nothing)",
		Long: `Observe CLUSTER and print the decision the classifier takes for an intent
on MEMBER, exactly as 'kubectl hactl replace' (or reseed, seed) and the
TUI's confirm dialog would show it: the verb (proceed, await, observe,
done, refuse), the bootstrap shape and flow, the quorum arithmetic, the
fences (UID and resourceVersion of each object it would delete, the member
ID it would remove), the plan step by step, notes, and every blocker with
the flag that overrides it where one may.

Nothing is changed and no lock is taken. For --intent seed, MEMBER names
the source member and may be omitted to let the classifier choose; for
--intent switchover (Patroni), MEMBER names the candidate and may be
omitted likewise.

Exit codes:
  0  the decision was printed (whatever it decided)
  1  error: the cluster could not be observed
  2  usage error`,
		Example: `  # why would replacing etcd-main-0 be refused?
  kubectl hactl explain etcd-main etcd-main-0 -n db

  # the plan with leadership moved first, as JSON
  kubectl hactl explain etcd-main etcd-main-0 -n db --move-leader -o json

  # what a reseed would do
  kubectl hactl explain etcd-main etcd-main-1 --intent reseed

  # which replica a Patroni switchover would hand the primary role to
  kubectl hactl explain pg-main --intent switchover -n db`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageError("explain takes CLUSTER and MEMBER, got %d argument(s)\nSee '%s --help'.", len(args), cmd.CommandPath())
			}
			return nil
		},
		ValidArgsFunction: completeClusterMember(flags),
		RunE:              runVerb(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Intent, "intent", o.Intent, "The action to explain: replace, reseed, seed, restore or switchover.")
	f.BoolVar(&o.MoveLeader, "move-leader", false, "Explain as if --move-leader were given.")
	f.BoolVar(&o.SwitchoverFirst, "switchover-first", false, "Explain as if --switchover-first were given (Patroni).")
	f.BoolVar(&o.AcceptNoFailover, "accept-no-failover", false, "Explain as if --accept-no-failover were given (Patroni).")
	f.BoolVar(&o.AcceptWriteStall, "accept-write-stall", false, "Explain as if --accept-write-stall were given (Patroni).")
	f.BoolVar(&o.Supersede, "supersede", false, "Explain as if --supersede were given.")
	f.StringVar(&o.Generation, "generation", "", "Seed generation to reseed from (reseed only).")
	f.StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml prints the decision.")
	f.DurationVar(&o.ProbeTimeout, "probe-timeout", o.ProbeTimeout, "Deadline for probing each member.")
	f.Uint64Var(&o.LagThreshold, "lag-threshold", o.LagThreshold, "Raft entries a member may trail the leader frontier and count as caught up.")
	return cmd
}

// Complete reads the kubeconfig and arguments.
func (o *ExplainOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Cluster = args[0]
	if len(args) == 2 {
		o.Member = args[1]
	}
	c, err := connect(o.configFlags, true)
	o.Namespace, o.client, o.dial, o.memberTLS, o.memberSecret = c.namespace, c.client, c.dial, c.memberTLS, c.memberSecret
	return err
}

// Validate checks the flags.
func (o *ExplainOptions) Validate() error {
	known := false
	var names []string
	for _, a := range model.AllActions {
		names = append(names, a.String())
		known = known || o.Intent == a.String()
	}
	if !known {
		return usageError("--intent must be one of %s, got %q", strings.Join(names, ", "), o.Intent)
	}
	if o.Member == "" && o.Intent != string(model.ActionSeed) && o.Intent != string(model.ActionSwitchover) {
		return usageError("explain --intent %s needs a MEMBER", o.Intent)
	}
	if o.Generation != "" && o.Intent != string(model.ActionReseed) {
		return usageError("--generation applies to --intent reseed only")
	}
	if o.ProbeTimeout <= 0 {
		return usageError("--probe-timeout must be positive")
	}
	return validateOutput(o.Output)
}

// Run observes, classifies and prints the decision.
func (o *ExplainOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	obs := &actions.Observer{Engines: registry.Engines(), Client: o.client, Dial: o.dial, MemberTLS: o.memberTLS, TLSSecret: o.memberSecret, ProbeTimeout: o.ProbeTimeout,
		Verdict: model.VerdictOptions{LagThreshold: o.LagThreshold}}
	in := model.Intent{Action: model.Action(o.Intent), Member: o.Member, Options: model.ActionOptions{
		MoveLeader: o.MoveLeader, SwitchoverFirst: o.SwitchoverFirst, Supersede: o.Supersede, Generation: o.Generation,
		AcceptNoFailover: o.AcceptNoFailover, AcceptWriteStall: o.AcceptWriteStall,
	}}
	d, _, warn, err := obs.Decide(ctx, o.Namespace, o.Cluster, in)
	printWarnings(o.ErrOut, warn)
	if err != nil {
		return err
	}
	if o.Output != "" {
		return printDoc(o.Out, o.Output, decisionDoc{APIVersion: "hactl.dev/v1alpha1", Kind: "Decision", Decision: d})
	}
	printDecision(o.Out, d, "")
	return nil
}

// decisionDoc is what explain -o json|yaml prints.
type decisionDoc struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	model.Decision
}
