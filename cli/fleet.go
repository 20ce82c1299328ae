package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/internal/portforward"
	"github.com/hactl-dev/hactl/status"
)

// fleetParallel bounds how many contexts are read at once with
// --no-probe: enough that the round trips of a fleet's remote servers
// overlap (each read is mostly waiting: in BenchmarkFleetStatus/rtt=50ms,
// 10 contexts 50 ms away took 4.7× the slowest alone 4 at a time, 1.61×
// 32 at a time), few enough to hold every context's objects at once. fleetParallelProbed is
// the bound when members are probed too: each context then dials up to
// 64 members at once through port-forwards, and a member whose dial
// waits past its probe's deadline would read as unreachable.
// fleetContextTimeout bounds each context (a server that never answers,
// a credential plugin waiting for a login): it is then printed as timed
// out in its place.
const (
	fleetParallel       = 32
	fleetParallelProbed = 8
	fleetContextTimeout = 30 * time.Second
)

// parallel is how many contexts o reads at once.
func (o *StatusOptions) parallel() int {
	if o.NoProbe {
		return fleetParallel
	}
	return fleetParallelProbed
}

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
	raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, kubeconfigError(err)
	}
	if _, ok := raw.Contexts[named]; ok && !o.AllContexts {
		return nil, nil // a context whose name holds a comma
	}
	if err := oneContextFlags(o.configFlags); err != nil {
		return nil, err
	}
	if o.AllContexts {
		if named != "" {
			return nil, usageError("--all-contexts cannot be combined with --context")
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

// oneContextFlags refuses, with several contexts, the flags that name a
// server, a user or credentials: they would go to every context's server
// (a token to all of them, TLS checks off for all of them).
func oneContextFlags(f *kubeflags.ConfigFlags) error {
	for _, x := range []struct {
		name string
		v    *string
	}{{"--server", f.APIServer}, {"--cluster", f.ClusterName}, {"--user", f.AuthInfoName}, {"--token", f.BearerToken},
		{"--username", f.Username}, {"--password", f.Password}, {"--client-certificate", f.CertFile}, {"--client-key", f.KeyFile},
		{"--certificate-authority", f.CAFile}, {"--tls-server-name", f.TLSServerName}} {
		if x.v != nil && *x.v != "" {
			return usageError("%s names one server or user: with several contexts each context's own is used (drop %s, or read one context)", x.name, x.name)
		}
	}
	if f.Insecure != nil && *f.Insecure {
		return usageError("--insecure-skip-tls-verify would turn certificate checks off for every context: read one context with it")
	}
	return nil
}

// contextFlags are the connection flags the user gave, for context name:
// the kubeconfig, namespace, impersonation and request timeout (the
// others are refused with several contexts, see oneContextFlags).
func contextFlags(f *kubeflags.ConfigFlags, name string) *kubeflags.ConfigFlags {
	c := kubeflags.NewConfigFlags(true)
	c.Context = &name
	c.KubeConfig, c.Namespace, c.Timeout = f.KubeConfig, f.Namespace, f.Timeout
	c.Impersonate, c.ImpersonateUID, c.ImpersonateGroup = f.Impersonate, f.ImpersonateUID, f.ImpersonateGroup
	return c
}

// contextResult is one context's clusters, or why they could not be read.
type contextResult struct {
	name    string
	results []status.Result
	warn    status.Warnings
	err     error
	// absent: the CLUSTER asked for is not in this context.
	absent bool
}

// boundedContext is observeContext within fleetContextTimeout: past it
// the context is reported timed out (its reader is left to end on its
// own).
func (o *StatusOptions) boundedContext(ctx context.Context, name string) contextResult {
	ctx, cancel := context.WithTimeout(ctx, fleetContextTimeout)
	defer cancel()
	done := make(chan contextResult, 1)
	go func() { done <- o.observeContext(ctx, name) }()
	select {
	case cr := <-done:
		return cr
	case <-ctx.Done():
		return contextResult{name: name, err: fmt.Errorf("no answer within %s", fleetContextTimeout)}
	}
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
	cr.results, cr.warn, cr.err = sub.observer(status.APISource{Client: sub.client, Engines: registry.Engines()}).Observe(ctx, ns, o.Name)
	return cr
}

// runFleet reads every context at once (o.parallel() at a time), prints
// each context's clusters under its name, and exits with the worst code:
// a context that could not be read (1) over a cluster not control-ready
// (4) over one not failover-ready (3). A context's failure is printed in
// its place; the others are printed all the same.
func (o *StatusOptions) runFleet(ctx context.Context, names []string) error {
	if o.Watch {
		return o.runFleetWatch(ctx, names)
	}
	crs, err := o.readFleet(ctx, names)
	if err != nil {
		return err
	}
	if err := o.printFleet(o.Out, crs); err != nil {
		return err
	}
	failed := 0
	var all []status.Result
	for _, cr := range crs {
		for _, w := range cr.warn {
			fmt.Fprintf(o.ErrOut, "warning: context %s: %s\n", printers.EscapeTerminal(cr.name), printers.EscapeTerminal(w))
		}
		if cr.err != nil {
			failed++
			fmt.Fprintf(o.ErrOut, "error: context %s: %s\n", printers.EscapeTerminal(cr.name), printers.EscapeTerminal(cr.err.Error()))
		}
		all = append(all, cr.results...)
	}
	if failed > 0 {
		return withCode(ExitError, fmt.Errorf("%d of %d contexts could not be read", failed, len(crs)))
	}
	return verdictExit(all)
}

// readFleet reads every context, o.parallel() at a time, each within
// its own bound. With CLUSTER, a context without it is no failure unless
// no context has it.
func (o *StatusOptions) readFleet(ctx context.Context, names []string) ([]contextResult, error) {
	crs := make([]contextResult, len(names))
	sem := make(chan struct{}, o.parallel())
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			crs[i] = o.boundedContext(ctx, n)
		})
	}
	wg.Wait()
	if o.Name != "" {
		found := false
		for i, cr := range crs {
			var nf *status.NotFoundError
			if errors.As(cr.err, &nf) {
				crs[i].err, crs[i].absent = nil, true
			} else if cr.err == nil {
				found = true
			}
		}
		if !found && !slices.ContainsFunc(crs, func(cr contextResult) bool { return cr.err != nil }) {
			return crs, fmt.Errorf("no HA cluster %q in any of the %d contexts", o.Name, len(crs))
		}
	}
	return crs, nil
}

// runFleetWatch reads every context again each --probe-interval (each
// read bounded as without --watch) and prints again when anything but
// the observation times changed: the table (cleared and redrawn on a
// terminal), or one JSON document per line (a YAML document each) per
// change. A context that fails is shown failed in its place and read
// again next round; Ctrl-C ends it.
func (o *StatusOptions) runFleetWatch(ctx context.Context, names []string) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ticker := time.NewTicker(o.ProbeInterval)
	defer ticker.Stop()
	var last []byte
	shown := map[string]bool{}
	for {
		crs, err := o.readFleet(ctx, names)
		if ctx.Err() != nil {
			return nil
		}
		var buf bytes.Buffer
		if err != nil {
			fmt.Fprintf(&buf, "%v\n", err)
		} else if err := o.printFleetOnce(&buf, crs); err != nil {
			return err
		}
		if key := o.fleetKey(crs, err); !bytes.Equal(key, last) {
			last = key
			table := o.format() == "" || o.format() == "wide"
			if o.outIsTTY && table {
				fmt.Fprint(o.Out, "\x1b[H\x1b[2J")
				fmt.Fprintf(o.Out, "kubectl hactl status --watch   %d contexts   %s   (Ctrl-C to quit)\n\n", len(names), time.Now().Format("15:04:05"))
				shown = map[string]bool{}
			} else if table {
				fmt.Fprintln(o.Out)
			}
			if _, err := o.Out.Write(buf.Bytes()); err != nil {
				return err
			}
		}
		// Each warning and failure once while it lasts.
		now := map[string]bool{}
		for _, cr := range crs {
			lines := slices.Clone(cr.warn)
			if cr.err != nil {
				lines = append(lines, "error: "+cr.err.Error())
			}
			for _, w := range lines {
				k := cr.name + "\x00" + w
				now[k] = true
				if !shown[k] {
					fmt.Fprintf(o.ErrOut, "warning: context %s: %s\n", printers.EscapeTerminal(cr.name), printers.EscapeTerminal(w))
				}
			}
		}
		shown = now
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// printFleetOnce is one round of --watch: the table as without it, or
// the list as one line of JSON (one YAML document).
func (o *StatusOptions) printFleetOnce(w io.Writer, crs []contextResult) error {
	switch o.format() {
	case "json", "yaml":
		l, err := o.fleetList(crs)
		if err != nil {
			return err
		}
		if o.format() == "yaml" {
			b, err := yaml.Marshal(l)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(w, "---\n%s", b)
			return err
		}
		b, err := json.Marshal(l)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	return o.printFleet(w, crs)
}

// fleetKey is what a round showed, without the observation times: a
// round that only observed again prints nothing.
func (o *StatusOptions) fleetKey(crs []contextResult, readErr error) []byte {
	l, err := o.fleetList(crs)
	if err != nil {
		return []byte(err.Error())
	}
	for i := range l.Items {
		l.Items[i].ObservedAt = time.Time{}
	}
	b, _ := json.Marshal(l)
	if readErr != nil {
		b = append(b, readErr.Error()...)
	}
	return b
}

// fleetList is every context's clusters as one list, each naming its
// context, with the contexts that failed.
func (o *StatusOptions) fleetList(crs []contextResult) (*status.ClusterStatusList, error) {
	l := status.ListToAPI(nil)
	var docs []*status.ClusterStatus
	for _, cr := range crs {
		if cr.err != nil {
			l.Errors = append(l.Errors, status.ContextError{Context: cr.name, Error: cr.err.Error()})
		}
		for _, r := range cr.results {
			cs := status.Document(r)
			cs.Metadata.Context = cr.name
			docs = append(docs, cs)
		}
	}
	if err := sortDocs(docs, o.SortBy); err != nil {
		return nil, err
	}
	for _, cs := range docs {
		l.Items = append(l.Items, *cs)
	}
	return l, nil
}

// printFleet prints the contexts' clusters: a table per context under a
// "context NAME" line, or one document whose items carry their context.
func (o *StatusOptions) printFleet(w io.Writer, crs []contextResult) error {
	switch f := o.format(); f {
	case "json", "yaml":
		l, err := o.fleetList(crs)
		if err != nil {
			return err
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
		fmt.Fprintf(w, "context %s\n", printers.EscapeTerminal(cr.name))
		switch {
		case cr.err != nil:
			fmt.Fprintf(w, "  error: %s\n", printers.EscapeTerminal(cr.err.Error()))
		case cr.absent:
			fmt.Fprintf(w, "  no HA cluster %s\n", printers.EscapeTerminal(o.Name))
		case len(cr.results) == 0:
			fmt.Fprintln(w, "  no HA clusters")
		default:
			// The table (or -o wide) a single context prints.
			if err := o.print(w, cr.results, false); err != nil {
				return err
			}
		}
	}
	return nil
}
