package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui"
)

// ContextExtension is the name of the kubeconfig context extension that
// holds hactl's per-context settings:
//
//	contexts:
//	- name: prod
//	  context:
//	    cluster: prod
//	    user: admin
//	    extensions:
//	    - name: hactl.dev
//	      extension:
//	        readonly: true
const ContextExtension = "hactl.dev"

// ContextSettings are hactl's settings for one kubeconfig context.
type ContextSettings struct {
	// ReadOnly disables every action in the TUI.
	ReadOnly bool `json:"readonly"`
}

// ErrTUIInterrupted is returned when a signal (SIGTERM, SIGHUP) ended the
// view.
var ErrTUIInterrupted = errors.New("the view was interrupted")

// ErrNoTerminal is returned by the TUI when stdin or stdout is not a
// terminal.
var ErrNoTerminal = errors.New("the TUI needs a terminal on stdin and stdout")

// TUIOptions holds the flags and state of `kubectl hactl tui`.
type TUIOptions struct {
	status *StatusOptions

	ReadOnly bool
	LogFile  string

	contextName     string
	contextReadOnly bool
	identity        string

	genericiooptions.IOStreams
}

// NewTUIOptions returns options with their defaults.
func NewTUIOptions(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *TUIOptions {
	return &TUIOptions{status: NewStatusOptions(flags, streams), IOStreams: streams}
}

// NewCmdTUI builds `kubectl hactl tui`.
func NewCmdTUI(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewTUIOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "tui [CLUSTER]",
		Short: "Open the live view: clusters, members, readiness, seed phases and repairs",
		Long: `Open a live, full-screen view of the HA clusters in the namespace (or, with
a CLUSTER name, of that cluster).

It follows the API server through watches and probes every member on its
own every --probe-interval, and shows:

  clusters    every cluster in scope: engine, members ready, verdict, top reasons
  members     the member table, the verdict with each reason and its remedy,
              and recent events (key 1)
  seed phase  seed generations, running actions with phases and receipts (key 2)
  readiness   each member's lag against the leader frontier over time, and
              the learners' catch-up (key 3)

Actions (r replace, R reseed, s seed, T restore) open a confirm dialog
showing the classifier's decision — plan, fences, quorum arithmetic,
blockers and overrides — exactly what the CLI verb would do; destructive
ones ask you to type the member name. T restores every member from a seed
generation picked from the cluster's published ones (newest first) and asks
you to type the cluster name. x explains a decision without acting.
--readonly, or "readonly: true" in the context's hactl.dev kubeconfig
extension, disables every action.

With several contexts (--all-contexts, or --context a,b) the first screen
is the fleet: every cluster of every context, grouped by context (s sorts
by verdict, / filters), each context read again every --probe-interval; a
context that cannot be read is a row with its error. enter opens a
cluster in the view of its own context (its credentials, its readonly
setting; the dialogs name it), and q there comes back to the fleet.

Keys: ? help, / filter, esc back, q quit.

Running 'kubectl hactl' with no subcommand on a terminal opens this view;
without a terminal it prints status instead.

Exit codes:
  0  the view was closed
  1  error: the view could not run (no terminal, API, RBAC), or SIGTERM or
     SIGHUP ended it
  2  usage error`,
		Example: `  # every cluster in the current namespace
  kubectl hactl tui

  # straight into one cluster, actions disabled
  kubectl hactl tui etcd-main -n db --readonly

  # every namespace, probing every 10 seconds
  kubectl hactl tui -A --probe-interval 10s

  # the fleet: every cluster of every context of the kubeconfig
  kubectl hactl tui --all-contexts -A

  # keep client-go's log lines
  kubectl hactl tui --log-file /tmp/hactl-tui.log`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError("tui takes at most one CLUSTER name, got %d", len(args))
			}
			return nil
		},
		ValidArgsFunction: completeClusters(flags),
		RunE:              runVerb(o),
	}
	o.AddFlags(cmd)
	return cmd
}

// AddFlags binds the tui flags.
func (o *TUIOptions) AddFlags(cmd *cobra.Command) {
	s := o.status
	f := cmd.Flags()
	f.BoolVarP(&s.AllNamespaces, "all-namespaces", "A", false, "Show clusters in every namespace.")
	f.BoolVar(&s.AllContexts, "all-contexts", false, "Open the fleet view: every cluster of every context of the kubeconfig (or name several: --context a,b), grouped by context; enter opens a cluster in its own context.")
	f.DurationVar(&s.ProbeTimeout, "probe-timeout", s.ProbeTimeout, "Deadline for probing each member (all members are probed in parallel).")
	f.DurationVar(&s.ProbeInterval, "probe-interval", s.ProbeInterval, "How often members are probed (watches update the view in between; the fleet view reads every context again).")
	f.BoolVar(&s.NoProbe, "no-probe", false, "Read the API server only; do not dial members.")
	f.Uint64Var(&s.LagThreshold, "lag-threshold", s.LagThreshold, "Raft entries a voter may trail the leader frontier and still count as caught up.")
	f.Uint64Var(&s.WALLagThreshold, "wal-lag-threshold", 0, "Patroni: bytes of WAL a replica's replay may trail the primary and still count as a failover candidate (default: the cluster's maximum_lag_on_failover, else 1 MiB).")
	f.DurationVar(&s.CertWarn, "cert-warn", s.CertWarn, certWarnHelp)
	f.BoolVar(&o.ReadOnly, "readonly", false, "Disable every action (replace, reseed, seed); explain still works.")
	f.StringVar(&o.LogFile, "log-file", "", "Append client-go's log lines to this file while the view runs (default: discard them).")
}

// Complete reads the kubeconfig, the context's hactl settings and the
// arguments.
func (o *TUIOptions) Complete(cmd *cobra.Command, args []string) error {
	if err := o.status.Complete(cmd, args); err != nil {
		return err
	}
	if len(o.status.fleet) > 0 {
		// The fleet view: each context is connected to when it is read,
		// and the one a cluster is opened in when it is opened.
		return nil
	}
	raw, err := o.status.configFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return kubeconfigError(err)
	}
	o.contextName = raw.CurrentContext
	if c := o.status.configFlags.Context; c != nil && *c != "" {
		o.contextName = *c
	}
	settings, err := contextSettings(raw, o.contextName)
	if err != nil {
		return err
	}
	o.contextReadOnly = settings.ReadOnly
	return nil
}

// contextSettings reads the hactl.dev extension of a kubeconfig context.
func contextSettings(raw clientcmdapi.Config, name string) (ContextSettings, error) {
	var s ContextSettings
	kc, ok := raw.Contexts[name]
	if !ok || kc == nil {
		return s, nil
	}
	ext, ok := kc.Extensions[ContextExtension]
	if !ok || ext == nil {
		return s, nil
	}
	var b []byte
	switch e := ext.(type) {
	case *runtime.Unknown:
		b = e.Raw
	default:
		var err error
		if b, err = json.Marshal(e); err != nil {
			return s, fmt.Errorf("reading the %s extension of context %q: %w", ContextExtension, name, err)
		}
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("the %s extension of kubeconfig context %q is not {readonly: true|false}: %s", ContextExtension, name, format.JSONProblem(err, "the extension"))
	}
	return s, nil
}

// Validate checks flag values and that a terminal is attached.
func (o *TUIOptions) Validate() error {
	s := o.status
	if s.ProbeTimeout <= 0 {
		return usageError("--probe-timeout must be positive")
	}
	if s.ProbeInterval < time.Second {
		return usageError("--probe-interval must be at least 1s")
	}
	if s.CertWarn <= 0 {
		return usageError("--cert-warn must be positive (e.g. 720h for 30 days)")
	}
	if err := s.parseSelector(); err != nil {
		return err
	}
	if !isTerminal(o.In) || !isTerminal(o.Out) {
		return fmt.Errorf("%w; use 'kubectl hactl status' in scripts and pipes", ErrNoTerminal)
	}
	return nil
}

// readOnly says whether actions are disabled in context name, whose
// hactl.dev extension says contextRO, and why.
func (o *TUIOptions) readOnly(name string, contextRO bool) (bool, string) {
	switch {
	case o.ReadOnly:
		return true, "--readonly"
	case contextRO:
		return true, fmt.Sprintf("context %s is read-only", name)
	}
	return false, ""
}

// Run opens the view until the user quits.
func (o *TUIOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		select {
		case sig := <-sigs:
			cancel(fmt.Errorf("%w by signal %v", ErrTUIInterrupted, sig))
		case <-ctx.Done():
		}
	}()
	var logw io.Writer = io.Discard
	if o.LogFile != "" {
		f, err := os.OpenFile(o.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("opening --log-file: %w", err)
		}
		defer f.Close()
		logw = f
	}
	o.identity = actions.ProcessIdentity()
	if len(o.status.fleet) > 0 {
		return o.runFleet(ctx, logw)
	}
	return o.runView(ctx, o.status, o.contextName, o.contextReadOnly, logw)
}

// runView opens the view of one context (s connected to it) until the
// user quits.
func (o *TUIOptions) runView(ctx context.Context, s *StatusOptions, contextName string, contextRO bool, logw io.Writer) error {
	observer := s.observer(status.APISource{Client: s.client, Engines: registry.Engines()})
	backend := tui.NewKubeBackend(s.client, s.Namespace, *observer)
	ro, why := o.readOnly(contextName, contextRO)
	var acts tui.Actions
	holder := ""
	if x := o.executor(s); x != nil {
		acts, holder = tui.ExecutorActions(x), x.Identity
	}
	err := tui.Run(ctx, tui.Options{
		Config: tui.Config{
			Namespace:      s.Namespace,
			Context:        contextName,
			Cluster:        s.Name,
			ProbeInterval:  s.ProbeInterval,
			Probes:         !s.NoProbe,
			Verdict:        observer.VerdictOptions(),
			Views:          engine.Views(observer.Engines),
			ReadOnly:       ro,
			ReadOnlyReason: why,
			LockHolder:     holder,
		},
		Deps: tui.Deps{Backend: backend, Actions: acts, Generations: tui.StoreGenerations(s.client)},
		In:   o.In,
		Out:  o.Out,
		Env:  os.Environ(),
		Log:  logw,
	})
	backend.Shutdown()
	if err == nil && errors.Is(context.Cause(ctx), ErrTUIInterrupted) {
		// Say why the view went away.
		return context.Cause(ctx)
	}
	return err
}

// executor is what the TUI's action keys run through: the classifier and
// fenced executor of the CLI verbs, under one lock identity for this
// process. Nil without probes (nothing can be decided without asking the
// members).
func (o *TUIOptions) executor(s *StatusOptions) *actions.Executor {
	if s.NoProbe || s.dial == nil {
		return nil
	}
	return &actions.Executor{
		Observer: &actions.Observer{
			Engines:      registry.Engines(),
			Client:       s.client,
			Dial:         s.dial,
			MemberTLS:    s.memberTLS,
			TLSSecret:    memberSecret(s.configFlags),
			ProbeTimeout: s.ProbeTimeout,
			Verdict:      model.VerdictOptions{LagThreshold: s.LagThreshold, WALLagThreshold: s.WALLagThreshold, CertWarn: s.CertWarn},
		},
		Seeders:  registry.Seeders(),
		Identity: o.identity,
	}
}
