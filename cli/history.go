package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/status"
)

// HistoryOptions holds the flags and state of `kubectl hactl history`.
type HistoryOptions struct {
	configFlags *kubeflags.ConfigFlags

	Name      string
	Namespace string
	Output    string
	NoHeaders bool

	client kubernetes.Interface

	genericiooptions.IOStreams
}

// NewCmdHistory builds `kubectl hactl history CLUSTER`.
func NewCmdHistory(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &HistoryOptions{configFlags: flags, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "history CLUSTER",
		Short: "Show one time-sorted list of the cluster's leader changes, hactl actions and events",
		Long: `Print what happened to CLUSTER's leadership and membership, oldest first,
each row with its source:

  dcs       the engine's own record in the API server: Patroni's timeline
            history (each promotion: the timeline that ended, its last WAL
            position, the reason and the new leader) and who took the
            leader lock last
  hactl     hactl's actions from the cluster's ledger: each start, every
            change it made or may have made, and its end
  events    Kubernetes Events about the StatefulSet, its pods and claims
            (the API server keeps them for an hour by default)
  observed  the leader this run observed, and each leader change hactl's
            actions saw (every receipt in the ledger records the leader
            the action observed when it wrote it)

It reads the API server only: no member is dialled, nothing is changed.`,
		Example: `  # what happened to pg-main, oldest first
  kubectl hactl history pg-main -n db

  # the same as JSON (kind ClusterHistory), for a ticket
  kubectl hactl history pg-main -n db -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("history takes one CLUSTER name, got %d", len(args))
			}
			return nil
		},
		ValidArgsFunction: completeClusters(flags),
		RunE:              runVerb(o),
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml (kind ClusterHistory); the default is a table.")
	cmd.Flags().BoolVar(&o.NoHeaders, "no-headers", false, "Print the table without its header.")
	return cmd
}

// Complete reads the kubeconfig and the argument.
func (o *HistoryOptions) Complete(_ *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.Name = args[0]
	}
	cfg, ns, err := restConfig(o.configFlags)
	if err != nil {
		return err
	}
	o.Namespace = ns
	o.client, err = kubernetes.NewForConfig(cfg)
	return err
}

// Validate checks the output format.
func (o *HistoryOptions) Validate() error {
	switch o.Output {
	case "", "json", "yaml":
		return nil
	}
	return usageError("-o %q: history prints a table, json or yaml", o.Output)
}

// Run observes the cluster from the API server and prints its timeline.
func (o *HistoryOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	obs := &status.Observer{Source: status.APISource{Client: o.client, Engines: registry.Engines()}, Engines: registry.Engines(), HolderGone: actions.HolderGone}
	r, err := observeOne(ctx, obs, o.Namespace, o.Name, o.ErrOut)
	if err != nil {
		return err
	}
	evs, err := o.client.CoreV1().Events(o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(o.ErrOut, "warning: events not read (%v): the timeline leaves them out\n", err)
	}
	var h *status.ClusterHistory
	if evs != nil {
		h = status.History(r, status.EventsOf(evs.Items, r))
	} else {
		h = status.History(r, nil)
		h.Notes = append(h.Notes, "Events could not be read")
	}
	switch strings.ToLower(o.Output) {
	case "json":
		return (&printers.JSONPrinter{}).PrintObj(h, o.Out)
	case "yaml":
		return (&printers.YAMLPrinter{}).PrintObj(h, o.Out)
	}
	return status.PrintHistory(o.Out, h, o.NoHeaders)
}

// observeOne observes the one cluster name in namespace ns, printing the
// observer's warnings on errOut; an unknown cluster is an error that
// says how to list them.
func observeOne(ctx context.Context, obs *status.Observer, ns, name string, errOut io.Writer) (status.Result, error) {
	results, warn, err := obs.Observe(ctx, ns, name)
	for _, w := range warn {
		fmt.Fprintf(errOut, "warning: %s\n", w)
	}
	if err != nil {
		return status.Result{}, err
	}
	if len(results) == 0 {
		return status.Result{}, fmt.Errorf("no HA cluster %q in namespace %q ('kubectl hactl status -A' lists them)", name, ns)
	}
	return results[0], nil
}
