package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/model"
)

// NewCmdSwitchover builds `kubectl hactl switchover CLUSTER [--to MEMBER]`.
func NewCmdSwitchover(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewActionOptions(flags, model.ActionSwitchover, streams)
	cmd := &cobra.Command{
		Use:   "switchover CLUSTER [--to MEMBER]",
		Short: "Hand a Patroni cluster's primary role to a healthy replica, fenced by the observed primary",
		Long: `Switch the primary of the Patroni cluster CLUSTER over to a healthy replica:
hactl decides with the same classifier the TUI and 'kubectl hactl explain'
use, prints the plan (the primary it observed, the candidate and why),
asks y/N, then sends POST /switchover {"leader": <observed primary>,
"candidate": <chosen>} to the observed primary through a port-forward.

The candidate must be healthy: running, streaming from the primary with its
replay within the WAL lag threshold of the primary's position, not tagged
nofailover, not diverged. Without --to, hactl chooses the synchronous
standby first in synchronous mode, then the replica with the least lag.
It refuses (exit 5) when no replica is healthy, or when there is not exactly
one writable primary agreed by the leader lock.

The observed primary is the fence: if another member became primary
between the decision and the action, hactl stops with exit 6 and changes
nothing (Patroni itself refuses a switchover naming a leader that no longer
leads, with HTTP 412). hactl reports the switchover done only when the
members' own answers show a member other than the old primary as the one
writable primary holding the leader lock (the candidate, or the member
Patroni chose, named in a note), never from Patroni's answer alone. It does
not wait for the old primary: Patroni rejoins it as a replica, and until it
streams again the result says so (rejoin_pending).

The lock is the Lease hactl-CLUSTER; every step writes a receipt to the
ledger ConfigMap hactl-CLUSTER and an Event on the StatefulSet. If the
command is interrupted, run it again: it resumes from what it observes.`,
		Example: `  # show the plan (the candidate hactl chooses) and ask before acting
  kubectl hactl switchover pg-main -n db

  # hand over to a named replica, without asking
  kubectl hactl switchover pg-main -n db --to pg-main-2 --yes

  # print the plan only, as a saved plan for 'kubectl hactl apply'
  kubectl hactl switchover pg-main -n db --dry-run=client -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("switchover takes a CLUSTER (name the candidate with --to MEMBER), got %d argument(s)\nSee '%s --help'.", len(args), cmd.CommandPath())
			}
			return nil
		},
		ValidArgsFunction: completeClusters(flags),
		RunE:              runVerb(o),
	}
	cmd.Long += "\n\n" + actionExitHelp
	f := cmd.Flags()
	f.StringVar(&o.Member, "to", "", "The replica to hand the primary role to (its pod name); by default the healthiest one.")
	f.BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation: act on the plan as printed. Needed when stdin is not a terminal.")
	addDryRunFlag(f, &o.DryRun, `Must be "none", "client", or "server". client: print the plan and change nothing. server: also take the lock and check the plan under it; the switchover itself is not sent.`)
	f.StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml prints the receipts of every step (the plan and progress then go to stderr).")
	f.BoolVar(&o.Supersede, "supersede", false, "Start even though another action is recorded in progress for this cluster; that action is marked superseded.")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long the wait for the members to show the new primary may take before the command stops; run it again to resume.")
	f.DurationVar(&o.ProbeTimeout, "probe-timeout", o.ProbeTimeout, "Deadline for probing each member.")
	f.Uint64Var(&o.WALLagThreshold, "wal-lag-threshold", 0, "Bytes of WAL a replica's replay may trail the primary's position and still be a candidate (default: the cluster's maximum_lag_on_failover, else 1 MiB).")
	return cmd
}
