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
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/internal/portforward"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/verdict"
)

// StatusOptions holds the flags and state of `kubectl hactl status`.
type StatusOptions struct {
	configFlags *kubeflags.ConfigFlags
	// Output is -o; Template is --template (the template of -o
	// jsonpath or go-template when -o does not carry one), and
	// AllowMissingKeys is --allow-missing-template-keys: kubectl's
	// output flags.
	Output           string
	Template         string
	AllowMissingKeys bool

	Name          string
	Namespace     string
	AllNamespaces bool
	// AllContexts reads every context of the kubeconfig at once (as does
	// a --context naming several, comma-separated).
	AllContexts bool
	// fleet are the contexts read at once (nil: one context).
	fleet         []string
	Watch         bool
	Color         string
	ProbeTimeout  time.Duration
	ProbeInterval time.Duration
	NoProbe       bool
	LagThreshold  uint64
	// WALLagThreshold is the Patroni replay lag threshold in bytes (0:
	// each cluster's maximum_lag_on_failover).
	WALLagThreshold uint64
	// CertWarn is how long before a member's serving certificate expires
	// that it is reported (cert_expiring).
	CertWarn time.Duration
	// Selector (-l) keeps the clusters whose StatefulSet's labels match;
	// NoHeaders leaves out column headers; SortBy orders the clusters by
	// a JSONPath of their status document.
	Selector  string
	NoHeaders bool
	SortBy    string

	selector labels.Selector
	columns  []customColumn
	// headerShown: --watch printed the custom columns' header already.
	headerShown bool

	restConfig *rest.Config
	client     kubernetes.Interface
	dial       engine.DialFunc
	// memberTLS: the member TLS files' credentials, nil when none.
	memberTLS *engine.Credentials
	outIsTTY  bool

	genericiooptions.IOStreams
}

// NewStatusOptions returns options with their defaults.
func NewStatusOptions(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *StatusOptions {
	return &StatusOptions{
		configFlags:      flags,
		AllowMissingKeys: true,
		Color:            "auto",
		ProbeTimeout:     engine.DefaultTimeout,
		ProbeInterval:    5 * time.Second,
		LagThreshold:     model.DefaultLagThreshold,
		CertWarn:         verdict.DefaultCertWarn,
		IOStreams:        streams,
	}
}

// NewCmdStatus builds `kubectl hactl status`.
func NewCmdStatus(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewStatusOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "status [CLUSTER]",
		Short: "Show members, roles, phases, lag and the readiness verdict of HA clusters",
		Long: `Show every HA cluster in the namespace (or one, by name): its members, their
roles, bootstrap phase, readiness and lag against the real leader frontier,
and a verdict:

  control_ready   the cluster works now
  failover_ready  losing any one member would be survivable

Each shortfall is explained by a stable reason code (docs/reason-codes.md).
Every member is probed on its own through a port-forward, in parallel, each
bounded by --probe-timeout.

A cluster is a StatefulSet labelled hactl.dev/engine=<engine>, or one that
runs etcd.

` + exitCodeHelp,
		Example: `  # every cluster in the current namespace
  kubectl hactl status

  # one cluster, as JSON, for a script
  kubectl hactl status etcd-main -n db -o json

  # gate a rollout on failover readiness
  kubectl hactl status etcd-main && kubectl rollout restart sts/app

  # follow changes (JSON lines with -o json)
  kubectl hactl status -A --watch

  # the clusters of one team, the least ready first, as a compact list
  kubectl hactl status -l team=db --sort-by '{.readyMembers}' \
    -o custom-columns=NAME:.metadata.name,READY:.verdict.failoverReady

  # the verdicts as metrics, for node_exporter's textfile collector (a
  # complete file ends with "# EOF"; the exit code says the verdict)
  kubectl hactl status -A -o openmetrics > hactl.prom.tmp; tail -n 1 hactl.prom.tmp | grep -qx '# EOF' &&
    mv hactl.prom.tmp /var/lib/node_exporter/hactl.prom`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError("status takes at most one CLUSTER name, got %d: %s", len(args), strings.Join(args, " "))
			}
			return nil
		},
		ValidArgsFunction: completeClusters(flags),
		RunE:              runVerb(o),
	}
	o.AddFlags(cmd)
	return cmd
}

// AddFlags binds the status flags.
func (o *StatusOptions) AddFlags(cmd *cobra.Command) {
	o.addOutputFlags(cmd)
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Show clusters in every namespace.")
	cmd.Flags().BoolVar(&o.AllContexts, "all-contexts", false, "Read every context of the kubeconfig at once (or name several: --context a,b), each under its name; the exit code is the worst. With --watch, every context is read again each --probe-interval.")
	cmd.Flags().DurationVar(&o.ProbeTimeout, "probe-timeout", o.ProbeTimeout, "Deadline for probing each member (all members are probed in parallel).")
	cmd.Flags().DurationVar(&o.ProbeInterval, "probe-interval", o.ProbeInterval, "With --watch, how often members are probed again.")
	cmd.Flags().BoolVar(&o.NoProbe, "no-probe", false, "Read the API server only; do not dial members (the verdict then cannot be failover-ready: lag is unknown).")
	cmd.Flags().Uint64Var(&o.LagThreshold, "lag-threshold", o.LagThreshold, "Raft entries a voter may trail the leader frontier and still count as caught up.")
	cmd.Flags().Uint64Var(&o.WALLagThreshold, "wal-lag-threshold", 0, "Patroni: bytes of WAL a replica's replay may trail the primary and still count as a failover candidate (default: the cluster's maximum_lag_on_failover, else 1 MiB).")
	cmd.Flags().DurationVar(&o.CertWarn, "cert-warn", o.CertWarn, certWarnHelp)
}

// certWarnHelp is --cert-warn's help, for status and the live view.
const certWarnHelp = "Report a member whose serving certificate (seen in its probe's TLS handshake) expires within this (cert_expiring); an expired one is cert_expired."

// addOutputFlags binds the flags only the printed status has: -o and its
// templates, --watch and --color.
func (o *StatusOptions) addOutputFlags(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format. One of: (wide, name, json, yaml, jsonpath=..., jsonpath-file=..., jsonpath-as-json=..., go-template=..., go-template-file=..., custom-columns=..., custom-columns-file=..., openmetrics). JSON/YAML use the versioned schema hactl.dev/v1alpha1; openmetrics prints the verdicts as metrics (docs/metrics.md).")
	cmd.Flags().StringVar(&o.Template, "template", "", "Template string or path to template file to use when -o=go-template, -o=go-template-file, -o=jsonpath or -o=jsonpath-file. The template format is golang templates [http://golang.org/pkg/text/template/#pkg-overview] or JSONPath.")
	cmd.Flags().BoolVar(&o.AllowMissingKeys, "allow-missing-template-keys", true, "If true, ignore any errors in templates when a field or map key is missing in the template. Only applies to golang and jsonpath output formats.")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "Keep running and print again on every change (from watches, plus a probe every --probe-interval). With -o json, one JSON document per line per change.")
	cmd.Flags().StringVar(&o.Color, "color", o.Color, "Colour the verdict: auto (on a terminal, unless NO_COLOR is set), always or never.")
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", "", "Selector (label query) on the clusters' StatefulSets, as kubectl get -l takes it (e.g. -l app=etcd,tier!=test).")
	cmd.Flags().BoolVar(&o.NoHeaders, "no-headers", false, "Print no column headers: -o custom-columns prints one line per cluster; the table keeps each cluster's heading and reasons.")
	cmd.Flags().StringVar(&o.SortBy, "sort-by", "", "Order the clusters by a JSONPath of their status document (e.g. '{.verdict.failoverReady}', .metadata.name): numbers by value, anything else as text.")
}

// Complete reads the kubeconfig and arguments.
func (o *StatusOptions) Complete(cmd *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.Name = args[0]
	}
	var err error
	if o.fleet, err = o.fleetContexts(); err != nil || o.fleet != nil {
		o.outIsTTY = isTerminal(o.Out)
		return err
	}
	o.restConfig, o.Namespace, err = restConfig(o.configFlags)
	if err != nil {
		return err
	}
	if o.AllNamespaces {
		o.Namespace = ""
	}
	o.client, err = kubernetes.NewForConfig(o.restConfig)
	if err != nil {
		return err
	}
	if !o.NoProbe {
		if o.memberTLS, err = memberTLS(o.configFlags); err != nil {
			return err
		}
		o.dial, err = portforward.NewDialer(o.restConfig)
		if err != nil {
			return err
		}
	}
	o.outIsTTY = isTerminal(o.Out)
	return nil
}

// Validate checks flag combinations.
func (o *StatusOptions) Validate() error {
	switch o.Color {
	case "auto", "always", "never":
	default:
		return usageError("--color must be auto, always or never, got %q", o.Color)
	}
	if o.Name != "" && o.AllNamespaces {
		return usageError("a CLUSTER name cannot be combined with --all-namespaces")
	}
	if o.ProbeTimeout <= 0 {
		return usageError("--probe-timeout must be positive")
	}
	if o.CertWarn <= 0 {
		return usageError("--cert-warn must be positive (e.g. 720h for 30 days)")
	}
	if o.fleet != nil {
		switch o.format() {
		case "", "wide", "json", "yaml":
		default:
			return usageError("with several contexts, -o is wide, json or yaml (each cluster names its context), not %q", o.format())
		}
	}
	if o.Watch && o.ProbeInterval < time.Second {
		return usageError("--probe-interval must be at least 1s")
	}
	if o.Selector != "" && o.Name != "" {
		return usageError("a CLUSTER name cannot be combined with -l (as kubectl get: select by name or by labels)")
	}
	if err := o.parseSelector(); err != nil {
		return err
	}
	if o.SortBy != "" {
		if err := checkSortBy(o.SortBy); err != nil {
			return err
		}
	}
	switch f := o.format(); {
	case f == "" || f == "wide" || f == "name":
	case f == "openmetrics":
		if o.Watch {
			return usageError("-o openmetrics prints one snapshot (for node_exporter's textfile collector or a scrape): run it again instead of --watch")
		}
	case f == "custom-columns" || f == "custom-columns-file":
		return usageError("-o %s needs its columns: -o custom-columns=NAME:.metadata.name,READY:.verdict.failoverReady, or -o custom-columns-file=FILE", f)
	case strings.HasPrefix(f, "custom-columns=") || strings.HasPrefix(f, "custom-columns-file="):
		kind, spec, _ := strings.Cut(f, "=")
		cols, err := customColumns(spec, kind == "custom-columns-file")
		if err != nil {
			return usageError("%v", err)
		}
		o.columns = cols
	default:
		if _, err := o.printer(); err != nil {
			return usageError("%v", err)
		}
	}
	return nil
}

// parseSelector reads -l into the selector the observer filters by.
func (o *StatusOptions) parseSelector() error {
	if o.Selector == "" {
		return nil
	}
	sel, err := labels.Parse(o.Selector)
	if err != nil {
		return usageError("-l %q is not a label selector: %v", o.Selector, err)
	}
	o.selector = sel
	return nil
}

// format is -o; --template alone means -o go-template, as in kubectl.
func (o *StatusOptions) format() string {
	if o.Output == "" && o.Template != "" {
		return "go-template"
	}
	return o.Output
}

func (o *StatusOptions) useColor() bool {
	switch o.Color {
	case "always":
		return true
	case "never":
		return false
	}
	return o.outIsTTY && os.Getenv("NO_COLOR") == ""
}

func (o *StatusOptions) observer(src status.Source) *status.Observer {
	obs := &status.Observer{
		Source:       src,
		Engines:      registry.Engines(),
		Secrets:      status.SecretsFrom(o.client),
		MemberTLS:    o.memberTLS,
		TLSSecret:    memberSecret(o.configFlags),
		HolderGone:   actions.HolderGone,
		ProbeTimeout: o.ProbeTimeout,
		Verdict:      model.VerdictOptions{LagThreshold: o.LagThreshold, WALLagThreshold: o.WALLagThreshold, CertWarn: o.CertWarn},
		Selector:     o.selector,
	}
	if !o.NoProbe {
		obs.Dial = o.dial
	}
	return obs
}

// Run observes, prints and returns an error carrying the exit code.
func (o *StatusOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.fleet != nil {
		return o.runFleet(ctx, o.fleet)
	}
	if o.Watch {
		return o.runWatch(ctx)
	}
	results, warn, err := o.observer(status.APISource{Client: o.client, Engines: registry.Engines()}).Observe(ctx, o.Namespace, o.Name)
	o.warn(warn)
	if err != nil {
		return err
	}
	if len(results) == 0 {
		where := fmt.Sprintf("namespace %q", o.Namespace)
		if o.Namespace == "" {
			where = "any namespace"
		}
		fmt.Fprintf(o.ErrOut, "No HA clusters found in %s.\n", where)
	}
	if err := o.print(o.Out, results, false); err != nil {
		return err
	}
	return verdictExit(results)
}

func (o *StatusOptions) warn(w status.Warnings) {
	for _, s := range w {
		fmt.Fprintf(o.ErrOut, "warning: %s\n", s)
	}
}

// print renders results in the chosen format. stream selects the
// one-document-per-line form used by --watch.
func (o *StatusOptions) print(w io.Writer, results []status.Result, stream bool) error {
	docs := make([]*status.ClusterStatus, 0, len(results))
	for _, r := range results {
		docs = append(docs, status.Document(r))
	}
	if err := sortDocs(docs, o.SortBy); err != nil {
		return err
	}
	switch f := o.format(); f {
	case "", "wide":
		return status.PrintTable(w, docs, status.TableOptions{
			Wide: f == "wide", Color: o.useColor(), ShowNamespace: o.AllNamespaces, Now: time.Now(), NoHeaders: o.NoHeaders,
		})
	case "name":
		return printNames(w, docs)
	case "openmetrics":
		return status.WriteOpenMetrics(w, docs)
	case "json":
		if stream {
			b, err := json.Marshal(o.document(docs))
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(w, "%s\n", b)
			return err
		}
	case "yaml":
		if stream {
			b, err := yaml.Marshal(o.document(docs))
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(w, "---\n%s", b)
			return err
		}
	}
	if o.columns != nil {
		return printCustomColumns(w, docs, o.columns, o.NoHeaders)
	}
	p, err := o.printer()
	if err != nil {
		return err
	}
	return p.PrintObj(o.document(docs), w)
}

// printer is -o's printer: JSON, YAML, JSONPath or a Go template. It
// never builds cli-runtime's Go template printer: Go templates run
// through internal/gotemplate (see goTemplate).
func (o *StatusOptions) printer() (printers.ResourcePrinter, error) {
	f := o.format()
	if p, ok, err := o.goTemplate(f); ok || err != nil {
		return p, err
	}
	if p, ok, err := o.jsonPath(f); ok || err != nil {
		return p, err
	}
	switch f {
	case "json":
		return &printers.JSONPrinter{}, nil
	case "yaml":
		return &printers.YAMLPrinter{}, nil
	}
	return nil, fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: wide,name,json,yaml,jsonpath,jsonpath-file,jsonpath-as-json,go-template,go-template-file,custom-columns,custom-columns-file,openmetrics", f)
}

// document is ClusterStatus for one named cluster, ClusterStatusList
// otherwise.
func (o *StatusOptions) document(docs []*status.ClusterStatus) runtime.Object {
	if o.Name != "" && len(docs) == 1 {
		return docs[0]
	}
	l := status.ListToAPI(nil)
	for _, d := range docs {
		l.Items = append(l.Items, *d)
	}
	return l
}

// verdictExit maps the worst verdict among results to the exit code.
func verdictExit(results []status.Result) error {
	code := ExitOK
	for _, r := range results {
		switch {
		case !r.Verdict.ControlReady:
			code = ExitNotControlReady
		case !r.Verdict.FailoverReady && code == ExitOK:
			code = ExitNotFailoverReady
		}
	}
	if code == ExitOK {
		return nil
	}
	return withCode(code, errSilent)
}

// runWatch keeps the view current: a status.Watcher's informers feed
// change notifications, and members are probed again every
// --probe-interval.
func (o *StatusOptions) runWatch(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := status.NewWatcher(o.client, o.Namespace, status.WatchOptions{Observer: *o.observer(nil)})
	defer w.Stop()
	if err := w.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	ticker := time.NewTicker(o.ProbeInterval)
	defer ticker.Stop()
	var last []byte
	var shown status.Warnings
	for {
		results, warn, err := w.Observe(ctx, o.Name, true)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, status.ErrClusterNotFound) {
			o.warn(warn)
			return err
		}
		cleared, err := o.redraw(results, err, &last)
		if err != nil {
			return err
		}
		// Each warning is printed once while it lasts, and again after
		// the screen was cleared.
		if cleared || !slices.Equal(warn, shown) {
			o.warn(warn)
			shown = warn
		}
		if !waitForChange(ctx, w.Changes(), ticker.C) {
			return nil
		}
	}
}

// redraw prints results (or the not-found error observing them) when they
// differ from the last print; cleared says the terminal screen was
// cleared for it.
func (o *StatusOptions) redraw(results []status.Result, observeErr error, last *[]byte) (cleared bool, err error) {
	var buf bytes.Buffer
	if observeErr != nil {
		fmt.Fprintf(&buf, "%v\n", observeErr)
	} else if err := o.print(&buf, results, true); err != nil {
		return false, err
	}
	key := o.watchKey(results, buf.Bytes(), o.format())
	if bytes.Equal(key, *last) {
		return false, nil
	}
	*last = key
	data := buf.Bytes()
	if o.columns != nil && !o.NoHeaders {
		// As kubectl get -w: the header once, then the rows of each
		// change.
		if o.headerShown {
			if _, rows, ok := bytes.Cut(data, []byte("\n")); ok {
				data = rows
			}
		}
		defer func() {
			if err == nil {
				o.headerShown = true
			}
		}()
	}
	table := o.format() == "" || o.format() == "wide"
	if o.outIsTTY && table {
		fmt.Fprint(o.Out, "\x1b[H\x1b[2J")
		fmt.Fprintf(o.Out, "kubectl hactl status --watch   %s   (Ctrl-C to quit)\n\n", time.Now().Format("15:04:05"))
		cleared = true
	} else if table {
		fmt.Fprintln(o.Out)
	}
	_, err = o.Out.Write(data)
	return cleared, err
}

// waitForChange waits for a change notification (coalescing a burst of
// them into one) or a probe tick; false when ctx is done.
func waitForChange(ctx context.Context, changed <-chan struct{}, tick <-chan time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-changed:
		t := time.NewTimer(200 * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
		select {
		case <-changed:
		default:
		}
	case <-tick:
	}
	return true
}

// watchKey is what decides "changed": the documents without their
// observation times (ages in the table are ignored the same way).
func (o *StatusOptions) watchKey(results []status.Result, printed []byte, format string) []byte {
	list := status.ListToAPI(nil)
	for _, r := range results {
		list.Items = append(list.Items, *status.Document(r))
	}
	for i := range list.Items {
		list.Items[i].ObservedAt = time.Time{}
	}
	if format == "name" || strings.HasPrefix(format, "custom-columns") {
		// What these print is all that can change for their reader.
		return printed
	}
	b, _ := json.Marshal(list)
	return b
}

// isTerminal reports whether a stream (reader or writer) is a terminal.
func isTerminal(s any) bool {
	f, ok := s.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
