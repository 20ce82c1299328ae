package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/exporter"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/internal/poddial"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/verdict"
)

// AgentExporterOptions holds the flags of `agent exporter`.
type AgentExporterOptions struct {
	Listen          string
	ProbeInterval   time.Duration
	ProbeTimeout    time.Duration
	LagThreshold    uint64
	WALLagThreshold uint64
	CertWarn        time.Duration

	configFlags *kubeflags.ConfigFlags
	// namespace is the one namespace watched ("" for all).
	namespace string
	// wrapTransport, when set (tests), wraps the API client's transport
	// outside the read-only guard: it sees every request the exporter
	// tries.
	wrapTransport func(http.RoundTripper) http.RoundTripper

	genericiooptions.IOStreams
}

const agentExporterLong = `Serve the verdicts of every HA cluster as Prometheus metrics, from inside
the cluster: the metrics of 'status -o openmetrics' (docs/metrics.md) on
/metrics, with the exporter's own (hactl_exporter_*), Go's and the
process's.

The clusters are read from watches (informer caches: a round lists
nothing) and every member is probed at its pod IP, in parallel, each within
--probe-timeout, once every --probe-interval and after watched objects
changed (at most once every 5s, and never sooner than twice the last
round's duration after it began). A scrape encodes the latest round: it
costs no API call and no probe however often it comes, and
hactl_cluster_observed_timestamp_seconds says how old the round is.

The exporter changes nothing. Its API client refuses every request but
GET, HEAD and OPTIONS (and any connection upgrade: no exec, attach or
port-forward) before it leaves the process, it never takes hactl's lock,
it asks members only what status asks them, and it needs no
pods/portforward: it dials pods directly (through ALL_PROXY, SOCKS5, when
that is set). Its ServiceAccount needs get, list and watch on StatefulSets,
Pods, PersistentVolumeClaims, PodDisruptionBudgets, Services,
EndpointSlices, Events, ConfigMaps and Leases (docs/exporter.md ships the
Deployment and least-privilege RBAC). A Secret is read only for a cluster
whose probes need one (the client TLS Secret its StatefulSet names with
hactl.dev/client-tls-secret), with a Role in that namespace.

It watches every namespace unless -n names one. It connects with the pod's
ServiceAccount inside a cluster, else with the kubeconfig.

  /metrics   OpenMetrics, or Prometheus' text format, as the scraper asks
  /healthz   200 while the loop is alive (a round ended within three
             intervals), else 503: a liveness probe
  /readyz    200 once a round succeeded and the last one did not fail,
             else 503 with the reason: a readiness probe`

// NewCmdAgentExporter builds `kubectl-hactl agent exporter`.
func NewCmdAgentExporter(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &AgentExporterOptions{
		Listen:        ":9808",
		ProbeInterval: exporter.DefaultInterval,
		ProbeTimeout:  engine.DefaultTimeout,
		LagThreshold:  model.DefaultLagThreshold,
		CertWarn:      verdict.DefaultCertWarn,
		configFlags:   flags,
		IOStreams:     streams,
	}
	cmd := &cobra.Command{
		Use:   "exporter [--listen-address ADDR]",
		Short: "Serve every HA cluster's verdict as Prometheus metrics from inside the cluster",
		Long:  agentExporterLong,
		Example: `  # what the exporter's Deployment runs (docs/exporter.md)
  kubectl-hactl agent exporter --listen-address=0.0.0.0:9808

  # one namespace only (its ServiceAccount then needs a Role there only)
  kubectl-hactl agent exporter -n db --listen-address=0.0.0.0:9808`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if cmd.Flags().Changed("namespace") && flags.Namespace != nil {
				o.namespace = *flags.Namespace
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen-address", o.Listen, "Where to serve /metrics, /healthz and /readyz (host:port).")
	f.DurationVar(&o.ProbeInterval, "probe-interval", o.ProbeInterval, "How often members are probed again (rounds also follow watched changes, at most one every 5s or twice the last round's duration).")
	f.DurationVar(&o.ProbeTimeout, "probe-timeout", o.ProbeTimeout, "Deadline for probing each member (all members are probed in parallel).")
	f.Uint64Var(&o.LagThreshold, "lag-threshold", o.LagThreshold, "Raft entries a voter may trail the leader frontier and still count as caught up.")
	f.Uint64Var(&o.WALLagThreshold, "wal-lag-threshold", 0, "Patroni: bytes of WAL a replica's replay may trail the primary and still count as a failover candidate (default: the cluster's maximum_lag_on_failover, else 1 MiB).")
	f.DurationVar(&o.CertWarn, "cert-warn", o.CertWarn, certWarnHelp)
	return cmd
}

// Validate checks the flags.
func (o *AgentExporterOptions) Validate() error {
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return usageError("--listen-address must be host:port (e.g. :9808 or 0.0.0.0:9808), got %q", o.Listen)
	}
	if o.ProbeInterval < time.Second {
		return usageError("--probe-interval must be at least 1s")
	}
	if o.ProbeTimeout <= 0 {
		return usageError("--probe-timeout must be positive")
	}
	if o.CertWarn <= 0 {
		return usageError("--cert-warn must be positive (e.g. 720h for 30 days)")
	}
	return nil
}

// Run watches, serves and observes until SIGINT or SIGTERM.
func (o *AgentExporterOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, _, err := restConfig(o.configFlags)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return withCode(ExitError, fmt.Errorf("cannot serve on --listen-address %s: %w", o.Listen, err))
	}
	return o.serve(ctx, cfg, ln)
}

// serve runs the exporter with the API server cfg names, on ln, until
// ctx ends.
func (o *AgentExporterOptions) serve(ctx context.Context, cfg *rest.Config, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(exporter.ReadOnly)
	if o.wrapTransport != nil {
		cfg.Wrap(o.wrapTransport)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(o.ErrOut, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
	}
	var w *status.Watcher
	lookup := func(ns, pod string) (string, error) { return w.PodIP(ns, pod) }
	w = status.NewWatcher(client, o.namespace, status.WatchOptions{Observer: status.Observer{
		Engines:      registry.Engines(),
		Secrets:      status.SecretsFrom(client),
		HolderGone:   actions.HolderGone,
		ProbeTimeout: o.ProbeTimeout,
		Verdict:      model.VerdictOptions{LagThreshold: o.LagThreshold, WALLagThreshold: o.WALLagThreshold, CertWarn: o.CertWarn},
		Dial:         poddial.New(lookup, o.ProbeTimeout),
	}})
	defer w.Stop()
	e := exporter.New(w, exporter.Options{Interval: o.ProbeInterval, Logf: logf})
	srv := &http.Server{Handler: e.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	where := "every namespace"
	if o.namespace != "" {
		where = "namespace " + o.namespace
	}
	logf("serving /metrics, /healthz and /readyz on %s; watching %s", ln.Addr(), where)
	if err := w.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	ran := make(chan error, 1)
	go func() { ran <- e.Run(ctx) }()
	select {
	case err := <-served:
		cancel()
		<-ran
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case err := <-ran:
		logf("stopping")
		return err
	}
}
