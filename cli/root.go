package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/internal/kubeflags"
)

// NewRootCmd builds `kubectl hactl` with its subcommands.
func NewRootCmd(streams genericiooptions.IOStreams) *cobra.Command {
	flags := kubeflags.NewConfigFlags(true)
	def := newDefaultOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "kubectl-hactl",
		Short: "Health, verdicts and fenced repairs for HA stateful clusters (etcd, Patroni)",
		Long: `hactl answers, for the highly-available stateful clusters in a namespace:
is this cluster healthy, would a failover succeed right now, and how do I
repair a member without making it worse?

Run on a terminal with no subcommand, it opens the live view and takes the
flags of 'tui' (-A, --readonly, --probe-interval, ...); without a terminal,
or with -o or --watch, it prints status and takes the flags of 'status'.`,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl hactl",
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return def.run(cmd)
		},
	}
	def.AddFlags(cmd)
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError("%v\nSee '%s --help'.", err, c.CommandPath())
	})
	flags.AddFlags(cmd.PersistentFlags())
	flags.AddMemberFlags(cmd.PersistentFlags())

	cmd.AddCommand(
		NewCmdVersion(streams),
		NewCmdStatus(flags, streams),
		NewCmdReplace(flags, streams),
		NewCmdReseed(flags, streams),
		NewCmdSwitchover(flags, streams),
		NewCmdRestore(flags, streams),
		NewCmdExplain(flags, streams),
		NewCmdHistory(flags, streams),
		NewCmdReport(flags, streams),
		NewCmdTUI(flags, streams),
		NewCmdSeed(flags, streams),
		NewCmdGenerations(flags, streams),
		NewCmdApply(flags, streams),
		NewCmdAgent(flags, streams),
		newCmdCompletion(streams),
	)
	return cmd
}

// Run executes the root command with args and returns the process exit code.
func Run(streams genericiooptions.IOStreams, args []string) int {
	return RunContext(context.Background(), streams, args)
}

// RunContext is Run with a context that cancels long-running commands
// (--watch).
func RunContext(ctx context.Context, streams genericiooptions.IOStreams, args []string) int {
	cmd := NewRootCmd(streams)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := codeOf(err)
	if code == ExitError && isCobraUsageError(err) {
		code = ExitUsage
	}
	if msg := strings.TrimSpace(err.Error()); msg != "" {
		fmt.Fprintf(streams.ErrOut, "error: %s\n", msg)
	}
	return code
}

// isCobraUsageError recognises cobra's own argument errors.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires ", "invalid argument", "flag needs an argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
