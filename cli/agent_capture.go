package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/agent"
)

// NewCmdAgentCapture builds `kubectl-hactl agent capture`: the agent
// image's hactl-capture (package agent) inside the plugin, with the same
// flags, output and exit codes.
func NewCmdAgentCapture(streams genericiooptions.IOStreams) *cobra.Command {
	o := &agent.CaptureOptions{Out: streams.Out, ErrOut: streams.ErrOut}
	cmd := &cobra.Command{
		Use:   "capture --store URL --generation G --endpoint HOST:PORT",
		Short: "Upload a snapshot of a member into the store, unpublished (capture pods)",
		Long: agent.CaptureHelp + `

The agent image runs the same command as its own small binary,
` + agent.CaptureCommand + `, with the same flags, for s3:// stores (it carries the
s3:// and file:// drivers only); capture pods for gs:// and azblob://
stores run this command.`,
		Example: `  # what a capture pod runs (as hactl-capture, with the same flags)
  kubectl-hactl agent capture --store 's3://seeds/etcd-main?endpoint=https://s3.example&use_path_style=true' \
      --generation nightly-42 --endpoint etcd-main-1.etcd-main-headless.db.svc:2379 --member etcd-main-1 \
      --expect-member-id 8e9e05c52164694d --expect-cluster-id cdf818194e3a8c32 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			err := o.Validate()
			if err == nil {
				err = o.Run(cmd.Context())
			}
			if code := agent.ExitCode(err); code != agent.ExitOK && code != ExitError {
				return withCode(code, err)
			}
			return err
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}
