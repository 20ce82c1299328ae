package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// runDefault is `kubectl hactl` with no subcommand: the TUI on a terminal,
// plain status otherwise (so it works in pipes and scripts).
func runDefault(cmd *cobra.Command, flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) error {
	if isTerminal(streams.In) && isTerminal(streams.Out) {
		o := NewTUIOptions(flags, streams)
		if err := o.Complete(cmd, nil); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
	o := NewStatusOptions(flags, streams)
	if err := o.Complete(cmd, nil); err != nil {
		return err
	}
	return o.Run(cmd.Context())
}
