package cli

import (
	"context"

	"github.com/spf13/cobra"
)

// verb is a command's Options in kubectl's pattern.
type verb interface {
	Complete(cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// runVerb is the RunE of a verb: Complete, then Validate, then Run.
func runVerb(o verb) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(cmd, args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}
