package cli

import (
	"context"
	"errors"
	"io"
	"os"

	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/internal/portforward"
	"github.com/hactl-dev/hactl/tui"
)

// runFleet is the live view of several contexts: the fleet view lists
// every cluster of every context (read as status --context a,b reads
// them, again every --probe-interval); enter opens a cluster in the view
// of its own context, connected with that context's credentials, so its
// actions run there and their dialogs name it; quitting that view comes
// back to the fleet, on the same cluster.
func (o *TUIOptions) runFleet(ctx context.Context, logw io.Writer) error {
	s := o.status
	// Once for every program of the loop: between two of them nothing
	// of client-go's reaches the terminal.
	defer tui.RouteKlog(logw)()
	read := func(ctx context.Context) []tui.FleetContext {
		crs, err := s.readFleet(ctx, s.fleet)
		if err != nil {
			// No context holds the CLUSTER asked for: each says so.
			out := make([]tui.FleetContext, len(s.fleet))
			for i, n := range s.fleet {
				out[i] = tui.FleetContext{Name: n, Err: err}
			}
			return out
		}
		out := make([]tui.FleetContext, 0, len(crs))
		for _, cr := range crs {
			if cr.absent {
				continue
			}
			out = append(out, tui.FleetContext{Name: cr.name, Results: cr.results, Err: cr.err})
		}
		return out
	}
	var last tui.FleetResult
	note := ""
	for {
		res, err := tui.RunFleet(ctx, tui.FleetOptions{
			Read: read, Interval: s.ProbeInterval, Note: note,
			// Back from a cluster: the same screen, on that cluster.
			Selected: last.Choice, First: last.Contexts, ByVerdict: last.ByVerdict, Filter: last.Filter,
			In: o.In, Out: o.Out, Env: os.Environ(), Log: logw,
		})
		if err != nil || !res.Opened {
			if err == nil && errors.Is(context.Cause(ctx), ErrTUIInterrupted) {
				return context.Cause(ctx)
			}
			return err
		}
		last, note = res, ""
		choice := res.Choice
		sub, err := o.contextView(choice)
		if err != nil {
			note = "context " + choice.Context + ": " + err.Error()
			continue
		}
		// Read now, as the connection just was: the settings of the
		// kubeconfig as it is.
		raw, err := s.configFlags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			note = kubeconfigError(err).Error()
			continue
		}
		settings, err := contextSettings(raw, choice.Context)
		if err != nil {
			note = err.Error()
			continue
		}
		if err := o.runView(ctx, sub, choice.Context, settings.ReadOnly, logw); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
}

// contextView is the status options of one cluster of the fleet,
// connected to its context as a single-context view would be.
func (o *TUIOptions) contextView(c tui.FleetChoice) (*StatusOptions, error) {
	s := o.status
	cfg, _, err := restConfig(contextFlags(s.configFlags, c.Context))
	if err != nil {
		return nil, err
	}
	sub := *s
	sub.fleet, sub.AllContexts, sub.AllNamespaces = nil, false, false
	sub.restConfig, sub.Namespace, sub.Name = cfg, c.Namespace, c.Cluster
	if sub.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	sub.dial = nil
	if !s.NoProbe {
		if sub.dial, err = portforward.NewDialer(cfg); err != nil {
			return nil, err
		}
	}
	return &sub, nil
}
