package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/internal/kubeflags"
)

// defaultOptions are the flags of `kubectl hactl` with no subcommand:
// everything tui takes (-A, --readonly, --probe-interval, …) and what
// only the printed status has (-o, --watch, --color), bound to one set of
// options that serves both.
type defaultOptions struct {
	*TUIOptions
}

func newDefaultOptions(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *defaultOptions {
	return &defaultOptions{TUIOptions: NewTUIOptions(flags, streams)}
}

// AddFlags binds the bare command's flags.
func (o *defaultOptions) AddFlags(cmd *cobra.Command) {
	o.TUIOptions.AddFlags(cmd)
	o.status.addOutputFlags(cmd)
}

// run is `kubectl hactl` with no subcommand: the TUI on a terminal, the
// printed status otherwise, or when -o or --watch ask for it (so it works
// in pipes and scripts).
func (o *defaultOptions) run(cmd *cobra.Command) error {
	s := o.status
	// --sort-by and --no-headers shape printed output only: they ask for it.
	printed := cmd.Flags().Changed("output") || s.Watch || cmd.Flags().Changed("sort-by") || cmd.Flags().Changed("no-headers")
	if !printed && isTerminal(o.In) && isTerminal(o.Out) {
		if err := prepare(func() error { return o.Complete(cmd, nil) }, o.Validate); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
	if err := prepare(func() error { return s.Complete(cmd, nil) }, s.Validate); err != nil {
		return err
	}
	return s.Run(cmd.Context())
}
