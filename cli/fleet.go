package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/internal/portforward"
	"github.com/hactl-dev/hactl/status"
)

// fleetParallel bounds how many contexts are read at once.
const fleetParallel = 4

// fleetContexts are the contexts status reads at once: --all-contexts
// (every context of the kubeconfig), or --context a,b (nil when it names
// one context or none: the usual single-context run).
func (o *StatusOptions) fleetContexts() ([]string, error) {
	named := ""
	if c := o.configFlags.Context; c != nil {
		named = *c
	}
	if !o.AllContexts && !strings.Contains(named, ",") {
		return nil, nil
	}
	if o.AllContexts {
		if named != "" {
			return nil, usageError("--all-contexts cannot be combined with --context")
		}
		raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, kubeconfigError(err)
		}
		var names []string
		for n := range raw.Contexts {
			names = append(names, n)
		}
		slices.Sort(names)
		if len(names) == 0 {
			return nil, fmt.Errorf("%w: the kubeconfig has no context", errNoKubeconfig)
		}
		return names, nil
	}
	var names []string
	for _, n := range strings.Split(named, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names, nil
}

// contextFlags are the connection flags the user gave, for context name:
// the kubeconfig, namespace, impersonation, credentials and timeout, but
// not the context's own cluster, user or server.
func contextFlags(f *genericclioptions.ConfigFlags, name string) *genericclioptions.ConfigFlags {
	c := genericclioptions.NewConfigFlags(true)
	c.Context = &name
	c.KubeConfig, c.Namespace, c.Timeout = f.KubeConfig, f.Namespace, f.Timeout
	c.Impersonate, c.ImpersonateUID, c.ImpersonateGroup = f.Impersonate, f.ImpersonateUID, f.ImpersonateGroup
	c.BearerToken, c.Username, c.Password = f.BearerToken, f.Username, f.Password
	c.CertFile, c.KeyFile, c.CAFile, c.TLSServerName, c.Insecure = f.CertFile, f.KeyFile, f.CAFile, f.TLSServerName, f.Insecure
	return c
}

// contextResult is one context's clusters, or why they could not be read.
type contextResult struct {
	name    string
	results []status.Result
	warn    status.Warnings
	err     error
}

// observeContext reads one context as a single-context status would.
func (o *StatusOptions) observeContext(ctx context.Context, name string) contextResult {
	cr := contextResult{name: name}
	cfg, ns, err := restConfig(contextFlags(o.configFlags, name))
	if err != nil {
		cr.err = err
		return cr
	}
	if o.AllNamespaces {
		ns = ""
	}
	sub := *o
	sub.Namespace = ns
	if sub.client, err = kubernetes.NewForConfig(cfg); err != nil {
		cr.err = err
		return cr
	}
	sub.dial = nil
	if !o.NoProbe {
		if sub.dial, err = portforward.NewDialer(cfg); err != nil {
			cr.err = err
			return cr
		}
	}
	cr.results, cr.warn, cr.err = sub.observer(status.APISource{Client: sub.client}).Observe(ctx, ns, o.Name)
	return cr
}

// runFleet reads every context at once (fleetParallel at a time), prints
// each context's clusters under its name, and exits with the worst code:
// a context that could not be read (1) over a cluster not control-ready
// (4) over one not failover-ready (3). A context's failure is printed in
// its place; the others are printed all the same.
func (o *StatusOptions) runFleet(ctx context.Context, names []string) error {
	crs := make([]contextResult, len(names))
	sem := make(chan struct{}, fleetParallel)
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			crs[i] = o.observeContext(ctx, n)
		})
	}
	wg.Wait()
	if err := o.printFleet(o.Out, crs); err != nil {
		return err
	}
	failed := 0
	var all []status.Result
	for _, cr := range crs {
		for _, w := range cr.warn {
			fmt.Fprintf(o.ErrOut, "warning: context %s: %s\n", cr.name, w)
		}
		if cr.err != nil {
			failed++
			fmt.Fprintf(o.ErrOut, "error: context %s: %v\n", cr.name, cr.err)
		}
		all = append(all, cr.results...)
	}
	if failed > 0 {
		return withCode(ExitError, fmt.Errorf("%d of %d contexts could not be read", failed, len(crs)))
	}
	return verdictExit(all)
}

// printFleet prints the contexts' clusters: a table per context under a
// "context NAME" line, or one document whose items carry their context.
func (o *StatusOptions) printFleet(w io.Writer, crs []contextResult) error {
	switch f := o.format(); f {
	case "json", "yaml":
		l := status.ListToAPI(nil)
		for _, cr := range crs {
			if cr.err != nil {
				l.Errors = append(l.Errors, status.ContextError{Context: cr.name, Error: cr.err.Error()})
			}
			for _, r := range cr.results {
				cs := o.toAPI(r)
				cs.Metadata.Context = cr.name
				l.Items = append(l.Items, *cs)
			}
		}
		if f == "yaml" {
			return (&printers.YAMLPrinter{}).PrintObj(l, w)
		}
		return (&printers.JSONPrinter{}).PrintObj(l, w)
	}
	for i, cr := range crs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "context %s\n", cr.name)
		switch {
		case cr.err != nil:
			fmt.Fprintf(w, "  error: %s\n", printers.EscapeTerminal(cr.err.Error()))
		case len(cr.results) == 0:
			fmt.Fprintln(w, "  no HA clusters")
		default:
			docs := make([]*status.ClusterStatus, 0, len(cr.results))
			for _, r := range cr.results {
				docs = append(docs, o.toAPI(r))
			}
			if err := sortDocs(docs, o.SortBy); err != nil {
				return err
			}
			f := o.format()
			if err := status.PrintTable(w, docs, status.TableOptions{Wide: f == "wide", Color: o.useColor(),
				ShowNamespace: o.AllNamespaces, Now: time.Now(), NoHeaders: o.NoHeaders}); err != nil {
				return err
			}
		}
	}
	return nil
}
