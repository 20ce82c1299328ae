package command

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/sandbox"
	"github.com/hactl-dev/hactl/sandbox/fault"
	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// Run executes hactl-sandbox with args and returns the exit code.
func Run(streams genericiooptions.IOStreams, args []string) int {
	cmd := NewRootCmd(streams)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintf(streams.ErrOut, "error: %s\n", strings.TrimSpace(err.Error()))
		return 1
	}
	return 0
}

// NewRootCmd builds the hactl-sandbox command.
func NewRootCmd(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hactl-sandbox",
		Short: "A local, real Kubernetes control plane with real etcd clusters, for hactl's demo and end-to-end tests",
		Long: `hactl-sandbox runs, on loopback only, a real control plane (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler), kwok with three
fake nodes, versitygw as an S3 artifact store, and a member runner that
runs each pod of the sandbox's etcd clusters as a real etcd process
(reachable with kubectl port-forward).

The sandbox directory defaults to $` + sandbox.EnvDir + `, else
~/.cache/hactl/sandbox ($XDG_CACHE_HOME/hactl/sandbox).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.AddCommand(
		newCmdUp(streams),
		newCmdBreak(streams),
		newCmdDown(streams),
		newCmdStatus(streams),
		newCmdScenarios(streams),
		newCmdServe(streams),
	)
	return cmd
}

func dirFlag(cmd *cobra.Command, dir *string) {
	cmd.Flags().StringVar(dir, "dir", "", "sandbox directory (default $"+sandbox.EnvDir+" or ~/.cache/hactl/sandbox)")
}

func resolveDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	return sandbox.DefaultDir()
}

// UpOptions holds up's flags.
type UpOptions struct {
	Dir       string
	Scenarios []string
	Namespace string
	Timeout   time.Duration
	Agent     string
	genericiooptions.IOStreams
}

func newCmdUp(streams genericiooptions.IOStreams) *cobra.Command {
	o := &UpOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "up [--dir DIR] [--scenario S]...",
		Short: "Start a sandbox and set up scenarios; prints the kubeconfig's path",
		Long: `Start a sandbox in the background and return once every scenario's
cluster is set up. The path of DIR/kubeconfig is printed on stdout;
progress and usage hints go to stderr.

With no --scenario, the demo set is started in namespace ` + scenario.DefaultNamespace + `:
  ` + strings.Join(scenario.Demo, ", ") + `
(see "hactl-sandbox scenarios").`,
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
	dirFlag(cmd, &o.Dir)
	cmd.Flags().StringArrayVar(&o.Scenarios, "scenario", nil, "scenario to set up (repeatable; default: the demo set)")
	cmd.Flags().StringVar(&o.Namespace, "namespace", scenario.DefaultNamespace, "namespace of the scenarios' clusters")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Minute, "give up if the sandbox is not up by then")
	cmd.Flags().StringVar(&o.Agent, "agent", "", "kubectl-hactl binary that agent pods (restore) run, with the hactl-capture capture pods run beside it (default $"+sandbox.EnvAgent+", else both built from this repository into DIR/bin)")
	return cmd
}

// Complete fills defaults.
func (o *UpOptions) Complete() (err error) {
	o.Dir, err = resolveDir(o.Dir)
	return err
}

// Validate checks the scenario names.
func (o *UpOptions) Validate() error {
	for _, s := range o.Scenarios {
		if _, err := scenario.Get(s); err != nil {
			return err
		}
	}
	return nil
}

// Run starts the sandbox. Interrupting it (Ctrl-C) stops whatever it
// started.
func (o *UpOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	begin := time.Now()
	sb, err := sandbox.Start(ctx, sandbox.Options{
		Dir: o.Dir, Scenarios: o.Scenarios, Namespace: o.Namespace, Progress: o.ErrOut, Timeout: o.Timeout, Agent: o.Agent,
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(o.Out, sb.Kubeconfig)
	w := o.ErrOut
	fmt.Fprintf(w, "\nsandbox up in %s (supervisor ready after %s), directory %s\n", time.Since(begin).Round(100*time.Millisecond),
		time.Duration(sb.State.ReadyAfter).Round(100*time.Millisecond), sb.Dir)
	printClusters(w, sb.State)
	fmt.Fprintf(w, `
Use it:
  export KUBECONFIG=%[1]s
  export PATH=%[8]s:$PATH   # kubectl, etcdctl (pinned)
  kubectl get pods -n %[2]s -o wide
  kubectl hactl status -n %[2]s
  kubectl port-forward -n %[2]s pod/<member> 12379:2379   # reaches that member's real etcd
Break a member:   go run ./cmd/hactl-sandbox break --dir %[3]s <member> stop|pause|resume|kill|wipe|rebootstrap|fill-quota|isolate|heal|colocate
                  (Patroni members also: freeze-patroni|stall-replay|stall-receive|crash-postgres|promote)
S3 store:         %[4]s (bucket %[5]s; credentials in %[6]s, mode 0600)
Logs:             %[7]s
Stop it:          go run ./cmd/hactl-sandbox down --dir %[3]s
`, sb.Kubeconfig, sb.State.Namespace, sb.Dir, sb.State.S3Endpoint, sandbox.Bucket, sb.State.S3File, sb.State.Logs, sb.State.BinDir)
	for _, c := range sb.State.Clusters {
		if c.Shape == scenario.KubeadmStacked.String() {
			pki := filepath.Join(sb.Dir, "nodes", scenario.KubeadmNodes[0], filepath.FromSlash(scenario.KubeadmEtcdPKIDir))
			fmt.Fprintf(w, `kubeadm's etcd:   kubectl get pods -n %[1]s -l component=etcd,tier=control-plane -o wide
                  kubectl hactl status %[3]s -n %[1]s --etcd-cacert %[2]s/ca.crt --etcd-cert %[2]s/healthcheck-client.crt --etcd-key %[2]s/healthcheck-client.key
                  etcdctl --endpoints https://<pod IP>:2379 --cacert ... --cert ... --key ... member list   (the same files)
                  (break its members as %[1]s/etcd-node-N)
`, c.Namespace, pki, c.Name)
		}
	}
	if sb.State.AgentError != "" {
		fmt.Fprintf(w, "\nWarning: agent pods (restore) cannot run: %s\n", sb.State.AgentError)
	}
	return nil
}

func printClusters(w interface{ Write([]byte) (int, error) }, st sandbox.State) {
	if len(st.Clusters) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\nCLUSTER\tSHAPE\tSETUP\tEXPECTED REASONS\n")
	for _, c := range st.Clusters {
		reasons := strings.Join(c.Reasons, ",")
		if reasons == "" {
			reasons = "(none: failover-ready)"
		}
		if len(c.MayAlso) > 0 {
			reasons += " (may also: " + strings.Join(c.MayAlso, ",") + ")"
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\n", c.Namespace, c.Name, c.Shape, time.Duration(c.Setup).Round(100*time.Millisecond), reasons)
	}
	tw.Flush()
}

// BreakOptions holds break's flags and arguments.
type BreakOptions struct {
	Dir    string
	Member string
	Kind   fault.Kind
	Args   []string
	genericiooptions.IOStreams
}

func newCmdBreak(streams genericiooptions.IOStreams) *cobra.Command {
	o := &BreakOptions{IOStreams: streams}
	var kinds []string
	for _, k := range fault.All() {
		kinds = append(kinds, k.String())
	}
	cmd := &cobra.Command{
		Use:   "break --dir DIR MEMBER KIND [-- ETCD-FLAGS...]",
		Short: "Inject a fault into a sandbox member",
		Long: `Inject a fault into MEMBER ([namespace/]pod; the namespace defaults to
the sandbox's). KIND is one of: ` + strings.Join(kinds, ", ") + `.

  stop         stop the member's process and keep it stopped (until resume)
  pause        freeze it (SIGSTOP), every process of it: PostgreSQL's too; resume thaws it
  resume       undo pause, stop, freeze-patroni, stall-replay or stall-receive
  kill         SIGKILL it (all its processes); it is restarted as a kubelet would (restart count +1)
  wipe         empty its data dir (the PVC stays bound) and restart it with its pod's flags
  rebootstrap  wipe, then start with chosen etcd flags (after --); by default the seed
               000 ones: --initial-cluster-state=new and an initial cluster of itself
  fill-quota   write through it until the backend quota is full (NOSPACE alarm)
  isolate      cut its peer (raft) traffic, both ways; clients still reach it
  heal         undo isolate
  colocate     move every member of its cluster to its node (rolling update)

Patroni members (PostgreSQL under Patroni):
  freeze-patroni  freeze Patroni only (SIGSTOP); PostgreSQL keeps running and writable
  stall-replay    freeze a replica's startup process: WAL arrives, nothing is replayed
  stall-receive   freeze a replica's walreceiver: no WAL arrives
  crash-postgres  SIGKILL the postmaster (Patroni restarts it)
  promote         pg_ctl promote its PostgreSQL, as the pod's user, behind Patroni's back`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args, cmd.ArgsLenAtDash()); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	dirFlag(cmd, &o.Dir)
	return cmd
}

// Complete reads the arguments.
func (o *BreakOptions) Complete(args []string, dash int) (err error) {
	if o.Dir, err = resolveDir(o.Dir); err != nil {
		return err
	}
	if dash >= 0 && dash < 2 {
		return errors.New("usage: break --dir DIR MEMBER KIND [-- ETCD-FLAGS...]")
	}
	o.Member = args[0]
	if o.Kind, err = fault.Parse(args[1]); err != nil {
		return err
	}
	o.Args = args[2:]
	return nil
}

// Validate checks that only rebootstrap takes flags.
func (o *BreakOptions) Validate() error {
	if len(o.Args) > 0 && !o.Kind.TakesArgs() {
		return fmt.Errorf("%s takes no further arguments", o.Kind)
	}
	for _, a := range o.Args {
		if !strings.HasPrefix(a, "--") {
			return fmt.Errorf("rebootstrap flags must look like --flag=value, got %q", a)
		}
	}
	return nil
}

// Run injects the fault.
func (o *BreakOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	sb, err := sandbox.Open(o.Dir)
	if err != nil {
		return err
	}
	if err := sb.Break(ctx, o.Member, o.Kind, o.Args...); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "%s: %s done\n", o.Member, o.Kind)
	return nil
}

// DownOptions holds down's flags.
type DownOptions struct {
	Dir  string
	Keep bool
	genericiooptions.IOStreams
}

func newCmdDown(streams genericiooptions.IOStreams) *cobra.Command {
	o := &DownOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "down [--dir DIR] [--keep]",
		Short: "Stop the sandbox and every process it started, then remove its directory",
		Long: `Stop the sandbox and every process it started — also after its
supervisor (or up) crashed — then remove DIR (unless --keep).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := resolveDir(o.Dir)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if err := sandbox.Down(ctx, dir, sandbox.DownOptions{KeepFiles: o.Keep}); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "sandbox in %s is down\n", dir)
			return nil
		},
	}
	dirFlag(cmd, &o.Dir)
	cmd.Flags().BoolVar(&o.Keep, "keep", false, "keep the directory (logs, data)")
	return cmd
}

func newCmdStatus(streams genericiooptions.IOStreams) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "status [--dir DIR]",
		Short: "Show the running sandbox: clusters, members, addresses",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := resolveDir(dir)
			if err != nil {
				return err
			}
			sb, err := sandbox.Open(d)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ms, err := sb.Members(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(streams.Out, "sandbox %s: kubeconfig %s, API server %s, S3 %s\n", sb.Dir, sb.Kubeconfig, sb.State.Server, sb.State.S3Endpoint)
			printClusters(streams.Out, sb.State)
			tw := tabwriter.NewWriter(streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "\nMEMBER\tADDRESS\tPEER (REAL)\tPOD IP\tPIDS\n")
			for _, m := range ms {
				fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%v\n", m.Namespace, m.Name, m.Address, m.PeerAddress, m.PodIP, m.Pids)
			}
			return tw.Flush()
		},
	}
	dirFlag(cmd, &dir)
	return cmd
}

func newCmdScenarios(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "scenarios",
		Short: "List the scenarios and the reason codes hactl should report for each",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, n := range scenario.Names() {
				s, _ := scenario.Get(n)
				var reasons []string
				for _, r := range s.Reasons {
					reasons = append(reasons, string(r))
				}
				if len(reasons) == 0 {
					reasons = []string{"none (failover-ready)"}
				}
				fmt.Fprintf(streams.Out, "%s (%s)\n  %s\n  expected: %s\n", s.Name, s.Shape, s.Summary, strings.Join(reasons, ", "))
			}
			return nil
		},
	}
}

func newCmdServe(streams genericiooptions.IOStreams) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:    sandbox.ServeCommand + " --dir DIR",
		Short:  "Run the sandbox in the foreground (what up starts in the background)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := resolveDir(dir)
			if err != nil {
				return err
			}
			return Serve(d, streams)
		},
	}
	dirFlag(cmd, &dir)
	return cmd
}

// Serve runs the supervisor for dir until SIGTERM or SIGINT.
func Serve(dir string, streams genericiooptions.IOStreams) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	return sandbox.Serve(ctx, dir, streams.ErrOut)
}
