package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/model"
)

// NewCmdReseed builds `kubectl hactl reseed CLUSTER MEMBER`.
func NewCmdReseed(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newActionCmd(flags, streams, model.ActionReseed,
		"Rebuild a member's data from its peers, fenced and resumable",
		`Reseed MEMBER of CLUSTER: throw its data away and rebuild it, for a member
whose data diverged (it re-bootstrapped into a cluster of its own, seed
000), is corrupt, or lags beyond repair. For etcd the member is rebuilt
from its peers exactly as 'kubectl hactl replace' does it (remove, fenced
delete of volume and pod, learner, catch-up against the real leader
frontier, promote); reseeding from a seed generation (--generation) is
refused until the engine supports it.

The plan, with its fences and the quorum arithmetic, is printed and
confirmed (y/N, or --yes) before anything changes; the same refusals,
lock, ledger, Events and crash-resume apply as for replace.`,
		`  # rebuild a diverged member from its peers
  kubectl hactl reseed etcd-main etcd-main-1 -n db

  # print the plan only
  kubectl hactl reseed etcd-main etcd-main-1 -n db --dry-run=client`)
}
