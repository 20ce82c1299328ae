// Package agent is the part of hactl that runs inside a cluster without a
// Kubernetes client: the capture of a seed generation in a one-shot
// capture pod. The agent image's small binary, hactl-capture
// (cmd/hactl-capture), is Main; `kubectl-hactl agent capture` is the same
// command inside the plugin. Neither talks to the API server: the lock
// holder reads the receipt from the pod's log and publishes.
//
// The package imports no Kubernetes, CLI-framework or TUI package
// (internal/archtest checks), so the capture pod's process starts small:
// its own memory is the etcd client's, the store driver's and the upload's
// bounded buffers.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/etcdgen"
	"github.com/hactl-dev/hactl/artifact/seeding"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/buildinfo"
	"github.com/hactl-dev/hactl/internal/format"
)

// Environment variables read when the matching flag is not given (the
// same as `kubectl-hactl agent restore` reads).
const (
	EnvStore      = "HACTL_SEED_STORE"
	EnvGeneration = "HACTL_SEED_GENERATION"
)

// CaptureCommand is the agent image's capture binary (the executor's
// contract names it: seeding.CaptureCommand).
const CaptureCommand = seeding.CaptureCommand

// CaptureBuildTags are the build tags hactl-capture is built with (make
// build, the image, the tests' and the sandbox's builds): the s3:// and
// file:// store drivers only (artifact/store_s3only.go), which keeps the capture
// pod's process small. Capture pods for gs:// and azblob:// stores run
// `kubectl-hactl agent capture`, which has every driver.
const CaptureBuildTags = "hactl_s3only"

// DefaultCaptureTimeout is --timeout's default: a seed's (hactl passes its
// own --timeout to its capture pods).
const DefaultCaptureTimeout = time.Hour

// Exit codes of a capture; the same as kubectl-hactl's for the same cases.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitUsage   = 2
	ExitRefused = 5
)

// captureMemoryLimit is the Go runtime's soft memory limit in a capture
// (unless GOMEMLIMIT says otherwise). What the capture keeps live is
// bounded: the upload's pool of artifact.UploadPartSize ×
// (UploadConcurrency+1) parts (15 MiB), the gRPC stream's messages and the
// runtime's own; the rest of what it allocates is the snapshot's messages,
// garbage at once. At 32 MiB the garbage collector runs before the heap
// doubles over that live set rather than after: in a 256 MiB capture the
// process's peak fell from 64 MiB (48 MiB limit) to 49 MiB, for about 10 %
// more CPU.
const captureMemoryLimit = 32 << 20

// CaptureHelp is the capture command's description (its --help).
const CaptureHelp = `Capture a seed generation's snapshot from an etcd member and upload it,
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

// CaptureOptions are the flags of a capture.
type CaptureOptions struct {
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

	// Program names this binary in the default --created-by (default
	// kubectl-hactl).
	Program string
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
	// Out gets the receipt (and, with -o json, every line); ErrOut the
	// text progress.
	Out, ErrOut io.Writer
}

// UsageError is a command-line mistake (exit 2).
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usageError(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// ExitCode is the exit code err asks for: 0 for nil, 2 for a usage error,
// 5 for a member that is not the one expected, else 1.
func ExitCode(err error) int {
	var ue *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue):
		return ExitUsage
	case errors.Is(err, etcdgen.ErrSourceChanged):
		return ExitRefused
	}
	return ExitError
}

// AddFlags adds the capture's flags to f.
func (o *CaptureOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Store, "store", "", "Store URL of the generations (default $"+EnvStore+").")
	f.StringVar(&o.Generation, "generation", "", "Generation ID to upload (default $"+EnvGeneration+").")
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
	f.DurationVar(&o.Timeout, "timeout", DefaultCaptureTimeout, "Give up after this long (0: never); nothing usable is left.")
	f.StringVarP(&o.Output, "output", "o", "", "Output format: json prints JSON lines (progress, then the receipt); default is text.")
}

func (o *CaptureOptions) getenv(k string) string {
	if o.Getenv == nil {
		return os.Getenv(k)
	}
	return o.Getenv(k)
}

// CheckStoreFlags checks what every agent command (capture here, restore
// in kubectl-hactl) takes alike: a store, a generation and -o json or
// nothing. Its errors are *UsageError.
func CheckStoreFlags(store, generation, output string) error {
	switch {
	case store == "":
		return usageError("--store is required (or set %s)", EnvStore)
	case generation == "":
		return usageError("--generation is required (or set %s)", EnvGeneration)
	case output != "" && output != "json":
		return usageError("--output must be json (or omitted), got %q", output)
	}
	return nil
}

// Validate checks the flags, filling --store and --generation from the
// environment.
func (o *CaptureOptions) Validate() error {
	if o.Store == "" {
		o.Store = o.getenv(EnvStore)
	}
	if o.Generation == "" {
		o.Generation = o.getenv(EnvGeneration)
	}
	if err := CheckStoreFlags(o.Store, o.Generation, o.Output); err != nil {
		return err
	}
	switch {
	case o.Endpoint == "":
		return usageError("--endpoint is required: the member's client address, host:port")
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
		program := o.Program
		if program == "" {
			program = "kubectl-hactl"
		}
		o.CreatedBy = program + " " + buildinfo.Version + " (capture pod)"
	}
	return nil
}

// Run captures and uploads. A member that answers as another member or
// cluster is refused with an error wrapping etcdgen.ErrSourceChanged.
func (o *CaptureOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	out, errOut := o.Out, o.ErrOut
	if out == nil {
		out = io.Discard
	}
	if errOut == nil {
		errOut = io.Discard
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, fmt.Errorf("the capture took longer than --timeout %s", o.Timeout))
		defer cancel()
	}
	if o.getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(captureMemoryLimit))
	}
	start := time.Now()
	var mu sync.Mutex
	emit := func(l artifact.CaptureLine) {
		mu.Lock()
		defer mu.Unlock()
		if o.Output == "json" {
			b, _ := json.Marshal(l)
			fmt.Fprintf(out, "%s\n", b)
			return
		}
		switch l.Kind {
		case artifact.CaptureProgressKind:
			fmt.Fprintf(errOut, "%s  %-10s %s\n", time.Now().UTC().Format(time.RFC3339), "transfer", format.Progress(l.Bytes, l.Total, time.Since(start)))
		case artifact.CaptureReceiptKind:
			fmt.Fprintf(out, "uploaded %d bytes of generation %s from %s (member %s, cluster %s, revision %d) as upload %s; not published\n",
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
	emit(artifact.CaptureLine{Kind: artifact.CaptureFailedKind, Generation: o.Generation, Error: err.Error(),
		SourceChanged: errors.Is(err, etcdgen.ErrSourceChanged), StoreFailed: errors.Is(err, artifact.ErrStoreWrite)})
	return err
}

func (o *CaptureOptions) capture(ctx context.Context, start time.Time, emit func(artifact.CaptureLine)) (*etcdgen.Captured, error) {
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
		if tls, err = credentialsFromDir(o.TLSDir); err != nil {
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

// credentialsFromDir reads a mounted TLS Secret (its keys as files), with
// the key names the API's Secret is read with.
func credentialsFromDir(dir string) (*engine.Credentials, error) {
	data := map[string][]byte{}
	for _, keys := range [][]string{engine.CredentialKeys.Cert, engine.CredentialKeys.Key, engine.CredentialKeys.CA} {
		for _, k := range keys {
			b, err := os.ReadFile(filepath.Join(dir, k))
			switch {
			case err == nil:
				data[k] = b
			case !errors.Is(err, os.ErrNotExist):
				return nil, fmt.Errorf("reading the TLS material in %s: %w", dir, err)
			}
		}
	}
	cr, err := engine.CredentialsFromKeys(data)
	if err != nil {
		return nil, fmt.Errorf("the TLS directory %s has %w", dir, err)
	}
	return cr, nil
}
