package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/model"
)

// NewCmdRestore builds `kubectl hactl restore CLUSTER --generation G`.
func NewCmdRestore(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewActionOptions(flags, model.ActionRestore, streams)
	cmd := &cobra.Command{
		Use:   "restore CLUSTER --generation G",
		Short: "Restore every member of a cluster from one seed generation (quorum-loss recovery), fenced and resumable",
		Long: `Restore every member of CLUSTER from seed generation G: etcd's disaster
recovery for a cluster that lost quorum. Every member's data directory is
rebuilt from the same snapshot with the same --initial-cluster and token,
so the members form one cluster again at the generation's revision. Every
write after the generation is lost.

hactl reads and verifies the generation's manifest from the store first,
then decides with the same classifier as every action: a cluster that
still has quorum, or a generation of another cluster ID, is refused unless
--force; the template must name every member in a literal --initial-cluster,
keep --data-dir inside a volume claim template, and use
podManagementPolicy: Parallel. The plan:

  1. scale the StatefulSet to 0 (fenced by its UID and resourceVersion);
     the volumes are kept
  2. per member, run pod hactl-restore-MEMBER (restartPolicy: Never) on
     the member's volume: 'kubectl-hactl agent restore' verifies every
     byte, builds the data directory with etcd's own restore code and
     activates it by an atomic rename, keeping the previous one beside it
  3. scale back to the recorded size and wait until every member is a
     healthy voter of one cluster with a leader
  4. delete the restore pods

The plan is printed and confirmed (y/N, or --yes) before anything changes.
While the restore pods run, a progress bar on a terminal shows the bytes
they have verified, the rate and an ETA (read from their logs; quiet when
stderr is not a terminal or with -o json).
The store is --store or the StatefulSet's annotation hactl.dev/seed-store;
the restore pods get their credentials only through envFrom of the
--store-secret Secret (or the hactl.dev/seed-store-secret annotation).
A rerun resumes from what it observes (the ledger records the size to
scale back to); the same lock, ledger and Events apply as for replace.`,
		Example: `  # list the generations, then restore one after losing quorum
  kubectl hactl generations list etcd-main -n db
  kubectl hactl restore etcd-main -n db --generation nightly-42

  # print the plan only
  kubectl hactl restore etcd-main -n db --generation nightly-42 --dry-run=client

  # in a script
  kubectl hactl restore etcd-main -n db --generation nightly-42 --yes -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("restore takes one CLUSTER, got %d argument(s)\nSee '%s --help'.", len(args), cmd.CommandPath())
			}
			return nil
		},
		ValidArgsFunction: completeClusters(flags),
		RunE:              runVerb(o),
	}
	cmd.Long += "\n\n" + actionExitHelp
	o.AddFlags(cmd)
	return cmd
}
