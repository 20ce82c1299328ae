package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/status"
)

// completeClusters completes HA cluster names in the current namespace.
func completeClusters(flags *kubeflags.ConfigFlags) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		k, err := connect(flags, false)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		list, err := k.client.AppsV1().StatefulSets(k.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for i := range list.Items {
			if _, ok := status.DetectEngine(&list.Items[i], engine.Decoders(registry.Engines())); ok {
				out = append(out, list.Items[i].Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
