package tui

import (
	"context"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/model"
)

// ExecutorActions runs the TUI's actions through x: the same observation,
// classifier, lock, ledger and fenced execution as the CLI verbs.
func ExecutorActions(x *actions.Executor) Actions { return executorActions{x: x} }

type executorActions struct{ x *actions.Executor }

// Decide implements Actions: a fresh observation of the cluster (API
// server, every member probed, lock and ledger), classified.
func (a executorActions) Decide(ctx context.Context, req Request) (model.Decision, error) {
	d, _, _, err := a.x.Decide(ctx, req.Namespace, req.Cluster, req.Intent)
	return d, err
}

// Execute implements Actions: it carries out the confirmed decision,
// streaming every receipt.
func (a executorActions) Execute(ctx context.Context, _ Request, d model.Decision, progress func(model.Receipt)) error {
	_, err := a.x.Execute(ctx, d, actions.ExecOptions{OnReceipt: progress})
	return err
}
