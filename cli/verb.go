package cli

import (
	"context"
	"errors"

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
		if err := prepare(func() error { return o.Complete(cmd, args) }, o.Validate); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}

// prepare completes, then validates. A command line that is wrong is a
// usage error (exit 2) whether or not a kubeconfig exists: without one,
// the flags are still validated first.
func prepare(complete, validate func() error) error {
	err := complete()
	if errors.Is(err, errNoKubeconfig) {
		if verr := validate(); codeOf(verr) == ExitUsage {
			return verr
		}
		return err
	}
	if err != nil {
		return err
	}
	return validate()
}
