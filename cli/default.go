package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// runDefault is `kubectl hactl` with no subcommand: a live view on a
// terminal, plain status otherwise (so it works in pipes and scripts).
func runDefault(cmd *cobra.Command, flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) error {
	o := NewStatusOptions(flags, streams)
	if err := o.Complete(cmd, nil); err != nil {
		return err
	}
	o.Watch = o.outIsTTY && isTerminal(streams.In)
	return o.Run(cmd.Context())
}
