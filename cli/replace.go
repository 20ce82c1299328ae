package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/model"
)

// NewCmdReplace builds `kubectl hactl replace CLUSTER MEMBER`.
func NewCmdReplace(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newActionCmd(flags, streams, model.ActionReplace,
		"Replace a member with a new, empty volume and join it again, fenced and resumable",
		`Replace MEMBER of CLUSTER: give it a new, empty volume and join it to the
cluster again. hactl first decides with the same classifier the TUI and
'kubectl hactl explain' use, prints the plan with its fences (the UID and
resourceVersion of every object it will delete, the member ID it will
remove) and the quorum arithmetic, asks y/N, then acts on exactly that:

  static-existing template (etcd run directly, state "existing"):
    remove the member → add a learner with its peer URL → delete its volume
    and pod (with the fences as preconditions) → wait for the StatefulSet to
    recreate them → wait until the learner is within --lag-threshold of the
    real leader frontier → promote it → ready
  self-registering template (Bitnami-style ETCD_ON_K8S=yes):
    remove the member → delete its volume and pod → wait until a voting
    member with its peer URL is back (the entrypoint re-adds itself)

It refuses when removing the member would leave fewer healthy voters than
quorum, when the member leads (unless --move-leader), when another hactl
action holds the cluster's lock, on a template that would re-bootstrap the
member (static-new, with an explanation of the fix) and on operator-owned
or unrecognised clusters. If anything it fenced changed before it acts, it
stops with exit 6 and changes nothing.

The lock is the Lease hactl-CLUSTER; every step writes a receipt to the
ledger ConfigMap hactl-CLUSTER and an Event on the StatefulSet. If the
command is interrupted or killed at any step, run it again: it resumes from
what it observes and never deletes twice.`,
		`  # show the plan and ask before acting
  kubectl hactl replace etcd-main etcd-main-2 -n db

  # in a script: act without asking, print the receipts as JSON
  kubectl hactl replace etcd-main etcd-main-2 -n db --yes -o json

  # the member leads: hand leadership over first
  kubectl hactl replace etcd-main etcd-main-0 -n db --move-leader

  # check the plan and the delete preconditions on the server, change nothing
  kubectl hactl replace etcd-main etcd-main-2 -n db --dry-run=server`)
}
