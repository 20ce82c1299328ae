package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/etcdgen"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/buildinfo"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// AgentCaptureOptions holds the flags of `agent capture`.
type AgentCaptureOptions struct {
	Store      string
	Generation string
	Endpoint   string
	Member     string
	ServerName string
	TLSDir     string

	ExpectClusterID string
	ExpectMemberID  string

	SourceNamespace, SourceCluster, SourceUID string
	CreatedBy                                 string

	Total   int64
	Timeout time.Duration
	Output  string

	getenv func(string) string
	genericiooptions.IOStreams
}

const agentCaptureLong = `Capture a seed generation's snapshot from an etcd member and upload it,
unpublished, into its own upload directory of the store, hashing every
byte as it streams. It runs in hactl's one-shot capture pods, scheduled
next to the source member, so that the snapshot goes from the member to
the store without crossing the API server; ` + "`kubectl hactl seed`" + ` reads
the receipt from the pod's log and, holding the cluster's lock, publishes
the upload (checks the stored sizes, writes the manifest last).

It publishes nothing itself. It refuses (exit 5, the upload removed) a
member that answers as another member or cluster than
--expect-member-id / --expect-cluster-id.

--endpoint is the member's client address (host:port), dialled directly.
With --tls-dir, it speaks TLS with the client certificate in that
directory (tls.crt and tls.key, ca.crt for the members' CA: the keys of
the Secret the annotation hactl.dev/client-tls-secret names, mounted as a
volume), checking the member's certificate against --server-name.

Store credentials come from the environment only, as for agent restore
(hactl's capture pods get the store Secret's keys through envFrom), and
are never printed.

With -o json, stdout is one JSON line per event: {"kind":"CaptureProgress"}
every 2 s while streaming, then {"kind":"CaptureReceipt"} (the upload, its
files with sizes and SHA-256, the identity to publish with) or
{"kind":"CaptureFailed"}.

Exit codes:
  0  uploaded (not published)
  1  error (member or store unreachable, timeout); nothing usable uploaded
  2  usage error
  5  refused: the member is not the one expected; the upload was removed`

// captureMemoryLimit is the Go runtime's soft memory limit in a capture
// (unless GOMEMLIMIT says otherwise): what the capture keeps live is
// bounded (artifact.UploadPartSize × (UploadConcurrency+1) of upload
// parts, the gRPC stream's window, the runtime), so the garbage collector
// runs before the heap doubles over it rather than after.
const captureMemoryLimit = 48 << 20

// NewCmdAgentCapture builds `kubectl-hactl agent capture`.
func NewCmdAgentCapture(streams genericiooptions.IOStreams) *cobra.Command {
	o := &AgentCaptureOptions{IOStreams: streams, getenv: os.Getenv}
	cmd := &cobra.Command{
		Use:   "capture --store URL --generation G --endpoint HOST:PORT",
		Short: "Upload a snapshot of a member into the store, unpublished (capture pods)",
		Long:  agentCaptureLong,
		Example: `  # what a capture pod runs
  kubectl-hactl agent capture --store 's3://seeds/etcd-main?endpoint=https://s3.example&use_path_style=true' \
      --generation nightly-42 --endpoint etcd-main-1.etcd-main-headless.db.svc:2379 --member etcd-main-1 \
      --expect-member-id 8e9e05c52164694d --expect-cluster-id cdf818194e3a8c32 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Store, "store", "", "Store URL of the generations (default $"+envStore+").")
	f.StringVar(&o.Generation, "generation", "", "Generation ID to upload (default $"+envGeneration+").")
	f.StringVar(&o.Endpoint, "endpoint", "", "The member's client address, host:port.")
	f.StringVar(&o.Member, "member", "", "The member's name (its pod), for messages and the manifest.")
	f.StringVar(&o.ServerName, "server-name", "", "With --tls-dir: the name the member's serving certificate is checked against (default the --endpoint host).")
	f.StringVar(&o.TLSDir, "tls-dir", "", "Directory holding tls.crt, tls.key and ca.crt: speak TLS to the member with this client certificate.")
	f.StringVar(&o.ExpectClusterID, "expect-cluster-id", "", "Refuse a member of any other cluster (hex cluster ID).")
	f.StringVar(&o.ExpectMemberID, "expect-member-id", "", "Refuse a member with any other member ID (hex).")
	f.StringVar(&o.SourceNamespace, "source-namespace", "", "Recorded in the manifest: the cluster's namespace.")
	f.StringVar(&o.SourceCluster, "source-cluster", "", "Recorded in the manifest: the cluster's name.")
	f.StringVar(&o.SourceUID, "source-uid", "", "Recorded in the manifest: the StatefulSet's UID.")
	f.StringVar(&o.CreatedBy, "created-by", "", "Recorded in the manifest: who captured it (default this binary and version).")
	f.Int64Var(&o.Total, "total", 0, "The member's database size in bytes, when known (progress lines carry it).")
	f.DurationVar(&o.Timeout, "timeout", actions.DefaultSeedTimeout, "Give up after this long (0: never); nothing usable is left.")
	f.StringVarP(&o.Output, "output", "o", "", "Output format: json prints JSON lines (progress, then the receipt); default is text.")
	return cmd
}

// Validate checks the flags, filling --store and --generation from the
// environment.
func (o *AgentCaptureOptions) Validate() error {
	if o.Store == "" {
		o.Store = o.getenv(envStore)
	}
	if o.Generation == "" {
		o.Generation = o.getenv(envGeneration)
	}
	switch {
	case o.Store == "":
		return usageError("--store is required (or set %s)", envStore)
	case o.Generation == "":
		return usageError("--generation is required (or set %s)", envGeneration)
	case o.Endpoint == "":
		return usageError("--endpoint is required: the member's client address, host:port")
	case o.Output != "" && o.Output != "json":
		return usageError("--output must be json (or omitted), got %q", o.Output)
	case o.Timeout < 0:
		return usageError("--timeout must not be negative")
	}
	if _, port, err := net.SplitHostPort(o.Endpoint); err != nil || port == "" {
		return usageError("--endpoint %q is not host:port", o.Endpoint)
	}
	if err := artifact.ValidateGeneration(o.Generation); err != nil {
		return usageError("--generation: %v", err)
	}
	if o.Member == "" {
		o.Member, _, _ = net.SplitHostPort(o.Endpoint)
	}
	if o.CreatedBy == "" {
		o.CreatedBy = "kubectl-hactl " + buildinfo.Version + " (capture pod)"
	}
	return nil
}

// Run captures and uploads.
func (o *AgentCaptureOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, fmt.Errorf("the capture took longer than --timeout %s", o.Timeout))
		defer cancel()
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(captureMemoryLimit)
	}
	start := time.Now()
	var mu sync.Mutex
	emit := func(l artifact.CaptureLine) {
		mu.Lock()
		defer mu.Unlock()
		if o.Output == "json" {
			b, _ := json.Marshal(l)
			fmt.Fprintf(o.Out, "%s\n", b)
			return
		}
		switch l.Kind {
		case artifact.CaptureProgressKind:
			fmt.Fprintf(o.ErrOut, "%s  %-10s %s\n", time.Now().UTC().Format(time.RFC3339), "transfer", progressText(l.Bytes, l.Total, time.Since(start)))
		case artifact.CaptureReceiptKind:
			fmt.Fprintf(o.Out, "uploaded %d bytes of generation %s from %s (member %s, cluster %s, revision %d) as upload %s; not published\n",
				l.Bytes, l.Generation, o.Member, l.Identity.SourceMemberID, l.Identity.ClusterID, l.Identity.Revision, l.Upload)
		}
	}
	c, err := o.capture(ctx, start, emit)
	if err == nil {
		files := c.Upload.Files()
		id := c.Identity
		src := artifact.Source{Namespace: o.SourceNamespace, Cluster: o.SourceCluster, Member: o.Member, UID: o.SourceUID}
		emit(artifact.CaptureLine{Kind: artifact.CaptureReceiptKind, Bytes: c.Size, Generation: o.Generation, Upload: c.Upload.ID(),
			Began: c.Upload.Began().UTC(), Files: files, Identity: &id, Source: &src, CreatedBy: o.CreatedBy, TookMS: time.Since(start).Milliseconds()})
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	changed := errors.Is(err, etcdgen.ErrSourceChanged)
	emit(artifact.CaptureLine{Kind: artifact.CaptureFailedKind, Generation: o.Generation, Error: err.Error(), SourceChanged: changed,
		StoreFailed: errors.Is(err, artifact.ErrStoreWrite)})
	if changed {
		return withCode(ExitRefused, err)
	}
	return err
}

func (o *AgentCaptureOptions) capture(ctx context.Context, start time.Time, emit func(artifact.CaptureLine)) (*etcdgen.Captured, error) {
	creds, err := artifact.CredentialsFromEnv(artifact.StoreScheme(o.Store), o.getenv)
	if err != nil {
		return nil, err
	}
	store, err := artifact.OpenStore(ctx, o.Store, artifact.Options{Credentials: creds})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	host, portText, _ := net.SplitHostPort(o.Endpoint)
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, usageError("--endpoint %q: the port is not a number", o.Endpoint)
	}
	var tls *engine.Credentials
	if o.TLSDir != "" {
		if tls, err = tlsFromDir(ctx, o.TLSDir); err != nil {
			return nil, err
		}
		tls.ServerName = o.ServerName
	}
	target := engine.Target{Member: o.Member, Pod: host, Port: port, ServerName: host}
	if o.ServerName != "" {
		target.ServerName = o.ServerName
	}
	var d net.Dialer
	dial := func(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", o.Endpoint)
	}
	var last time.Time
	return etcdgen.CaptureUpload(ctx, etcdgen.SeedRequest{
		Store:           store,
		Generation:      o.Generation,
		Source:          target,
		Probe:           engine.ProbeOptions{Dial: dial, Credentials: tls},
		ExpectClusterID: o.ExpectClusterID,
		ExpectMemberID:  o.ExpectMemberID,
		Info:            artifact.Source{Namespace: o.SourceNamespace, Cluster: o.SourceCluster, Member: o.Member, UID: o.SourceUID},
		CreatedBy:       o.CreatedBy,
		Now:             start,
		Progress: func(n int64) {
			if time.Since(last) >= 2*time.Second {
				last = time.Now()
				emit(artifact.CaptureLine{Kind: artifact.CaptureProgressKind, Bytes: n, Total: o.Total})
			}
		},
	})
}

// tlsFromDir reads a mounted TLS Secret (its keys as files) with the same
// key names the API's Secret is read with.
func tlsFromDir(ctx context.Context, dir string) (*engine.Credentials, error) {
	data := map[string][]byte{}
	for _, k := range []string{"tls.crt", "cert.pem", "client.crt", "tls.key", "key.pem", "client.key", "ca.crt", "ca.pem"} {
		b, err := os.ReadFile(filepath.Join(dir, k))
		switch {
		case err == nil:
			data[k] = b
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("reading the TLS material in %s: %w", dir, err)
		}
	}
	get := func(context.Context, string, string) (*corev1.Secret, error) {
		return &corev1.Secret{Data: data}, nil
	}
	return status.ReadCredentials(ctx, get, model.ClusterFacts{TLSSecret: dir}, "capture")
}
