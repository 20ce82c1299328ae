package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func newCmdCompletion(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print a shell completion script for kubectl-hactl.

For 'kubectl hactl <TAB>' (kubectl's plugin completion, kubectl >= 1.26),
put the kubectl_complete-hactl script shipped with hactl on your PATH.
For the kubectl-hactl binary itself:

  source <(kubectl-hactl completion bash)`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(streams.Out, true)
			case "zsh":
				return root.GenZshCompletion(streams.Out)
			case "fish":
				return root.GenFishCompletion(streams.Out, true)
			default:
				return root.GenPowerShellCompletionWithDesc(streams.Out)
			}
		},
	}
}
