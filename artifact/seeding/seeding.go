// Package seeding is the contract between the executor and each engine's
// seed generations: what one capture is asked (Capture), what it did
// (Outcome), and the Seeder an engine's generation format implements
// (artifact/etcdgen for etcd). The executor (package actions) holds the
// lock, writes the ledger and the receipts and runs the capture pod; a
// Seeder captures, uploads and publishes. The faces hand the executor the
// seeders by engine (engine/registry), so the executor names none.
package seeding

import (
	"context"
	"errors"
	"time"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// CaptureCommand is the agent image's capture binary: the command of a
// capture pod for the s3:// stores it carries a driver for (package agent
// builds it).
const CaptureCommand = "hactl-capture"

// ErrSourceChanged: the member that answered is not the one the decision
// chose (another member ID or cluster ID behind the same pod). A Seeder's
// error wraps it; the executor reports it as a fence conflict.
var ErrSourceChanged = errors.New("seed source changed since the decision")

// Capture is one capture the executor asks an engine's Seeder for,
// under the lock, from the member the confirmed plan chose.
type Capture struct {
	Store      *artifact.Store
	Generation string
	Cluster    model.ClusterFacts
	// Member, MemberID and ClusterID are the source as decided under the
	// lock; a member answering as another is refused (ErrSourceChanged).
	Member, MemberID, ClusterID string
	// Source is how the member is reached, Probe how it is dialled (its
	// Dial, timeout and client credentials).
	Source engine.Target
	Probe  engine.ProbeOptions
	// Info is recorded in the manifest.
	Info      artifact.Source
	CreatedBy string
	// Progress receives the bytes captured so far; may be nil.
	Progress func(int64)
	// OnCaptured is told when the capture is complete and uploaded files
	// are being checked.
	OnCaptured func()
	// BeforePublish is asked right before the manifest is written: an
	// error (the lock no longer known held) publishes nothing.
	BeforePublish func() error
}

// Outcome is what a Seeder did.
type Outcome struct {
	Manifest *artifact.Manifest
	// Already: the generation was published before for this cluster;
	// nothing was captured.
	Already bool
	Took    time.Duration
	// Via says how the capture reached the member ("a port-forward").
	Via string
}

// Seeder captures and publishes the seed generations of one engine's
// clusters: the engine's part of a seed, behind the executor's lock,
// ledger and receipts.
type Seeder interface {
	// Published returns generation g's manifest when it is already
	// published for clusterID (nil, nil when there is none); an error
	// wrapping artifact.ErrGenerationExists when the name holds another
	// cluster's generation.
	Published(ctx context.Context, s *artifact.Store, g, clusterID string) (*artifact.Manifest, error)
	// Seed captures from c.Member and publishes generation c.Generation.
	// A source that answers as another member wraps ErrSourceChanged;
	// any failure leaves nothing published.
	Seed(ctx context.Context, c Capture) (Outcome, error)
}

// PodCapturer is a Seeder that can capture in a pod next to the member:
// the agent's arguments for one capture.
type PodCapturer interface {
	CaptureArgs(a PodArgs) []string
}

// PodArgs are what a capture pod's arguments are built from.
type PodArgs struct {
	Capture Capture
	// StoreURL is the store the pod uploads to (never holding a
	// credential).
	StoreURL string
	// Endpoint is the member's client address (host:port) as the pod
	// dials it; ServerName the name its serving certificate is checked
	// against, TLSDir where the members' client TLS material is mounted
	// ("" when they speak plaintext).
	Endpoint, ServerName, TLSDir string
	// Total is the source's database size (progress), 0 when unknown.
	Total   int64
	Timeout time.Duration
}
