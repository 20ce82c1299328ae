package actions

import (
	"context"
	"fmt"
	"time"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/buildinfo"
	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// DefaultSeedTimeout bounds a seed's capture and upload.
const DefaultSeedTimeout = time.Hour

// SeedExec tunes the execution of a seed decision (ExecOptions.Seed).
type SeedExec struct {
	// Store is the store to publish to. Nil opens the store the
	// StatefulSet's annotations name (artifact.AnnotationStore and
	// artifact.AnnotationStoreSecret).
	Store *artifact.Store
	// Timeout bounds the capture and upload (DefaultSeedTimeout when
	// zero).
	Timeout time.Duration
	// Progress receives the bytes captured so far from member, of total
	// (the member's database size, 0 when unknown); may be nil.
	Progress func(member string, done, total int64)
}

// SeedCapture is one capture the executor asks an engine's Seeder for,
// under the lock, from the member the confirmed plan chose.
type SeedCapture struct {
	Store      *artifact.Store
	Generation string
	Cluster    model.ClusterFacts
	// Member, MemberID and ClusterID are the source as decided under the
	// lock; a member answering as another is refused (a fence conflict).
	Member, MemberID, ClusterID string
	Dial                        engine.DialFunc
	ProbeTimeout                time.Duration
	Credentials                 *engine.Credentials
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

// SeedOutcome is what a Seeder did.
type SeedOutcome struct {
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
	// A source that answers as another member is a *FenceConflictError;
	// any failure leaves nothing published.
	Seed(ctx context.Context, c SeedCapture) (SeedOutcome, error)
}

// seeders are the engines seed generations can be captured from.
var seeders = map[model.Engine]Seeder{model.EngineEtcd: etcdSeeder{}}

// SeederFor returns engine e's Seeder.
func SeederFor(e model.Engine) (Seeder, error) {
	s, ok := seeders[e]
	if !ok {
		return nil, fmt.Errorf("%w: seed generations of %s clusters", ErrUnsupported, e)
	}
	return s, nil
}

// seedSource is the capture step of a seed decision.
func seedSource(d classify.Decision) classify.Step {
	for _, s := range d.Steps {
		if s.Kind == model.StepCaptureSnapshot {
			return s
		}
	}
	return classify.Step{}
}

// clusterIDOf is the engine cluster ID an observation established.
func clusterIDOf(res status.Result) string {
	if res.Analysis.ClusterID != "" {
		return res.Analysis.ClusterID
	}
	return res.Observation.Cluster.KnownClusterID
}

// verifySeed holds the decision under the lock against the confirmed one:
// the same source member, the same member ID, the same cluster.
func verifySeed(confirmed, now classify.Decision) error {
	if now.Verb != classify.VerbProceed {
		return &RefusedError{Decision: now, While: "observed again under the lock"}
	}
	a, b := seedSource(confirmed), seedSource(now)
	if a.Member != b.Member || a.MemberID != b.MemberID || confirmed.ClusterID != now.ClusterID {
		return &FenceConflictError{Detail: fmt.Sprintf("the seed source was %s (member %s, cluster %s), it is now %s (member %s, cluster %s)",
			a.Member, a.MemberID, confirmed.ClusterID, b.Member, b.MemberID, now.ClusterID)}
	}
	return nil
}

// seedStore is the store a seed publishes to: the caller's, or the one
// the StatefulSet's annotations name, opened here and closed by done.
func (r *run) seedStore(ctx context.Context) (s *artifact.Store, done func(), err error) {
	if r.o.Seed.Store != nil {
		return r.o.Seed.Store, func() {}, nil
	}
	cs, err := OpenClusterStore(ctx, r.x.client(), r.ns, r.name, StoreRef{}, StoreOpen{NeedStatefulSet: true, Write: true})
	if err != nil {
		return nil, nil, err
	}
	return cs.Store, func() { _ = cs.Store.Close() }, nil
}

// seed runs a seed decision under the lock: decide again, hold the
// source against the confirmed one, record the ledger entry, then
// capture, upload and publish through the engine's Seeder, a receipt for
// each. A generation already published for this cluster closes a resumed
// entry (a seed that published and died before recording it).
func (r *run) seed(ctx context.Context) error {
	store, done, err := r.seedStore(ctx)
	if err != nil {
		return err
	}
	defer done()
	now, err := r.decide(ctx)
	if err != nil {
		return err
	}
	seeder, err := SeederFor(r.last.Observation.Cluster.Engine)
	if err != nil {
		return err
	}
	gen := r.confirmed.Intent.Options.Generation
	published, err := seeder.Published(ctx, store, gen, clusterIDOf(r.last))
	if err != nil {
		return err
	}
	if published != nil && now.Resume == "" {
		// Published before (by a seed that recorded it, or meanwhile):
		// nothing to do and nothing to record.
		r.res.Manifest, r.res.Already, r.res.Source = published, true, published.Source.Member
		r.warn("generation %s is already published in %s for this cluster (%s): nothing to do", gen, store, published.Digest)
		return nil
	}
	closing := published != nil
	if !closing {
		if err := r.checkPlan(now); err != nil {
			return err
		}
		if err := verifySeed(r.confirmed, now); err != nil {
			return err
		}
	}
	r.subject = seedSource(now).Member
	if closing && r.subject == "" {
		r.subject = published.Source.Member
	}
	r.res.Source = r.subject
	if err := r.mayChange(); err != nil {
		return err
	}
	if err := r.begin(ctx, now); err != nil {
		return err
	}
	r.lockReceipt()
	if closing {
		r.res.Manifest, r.res.Already = published, true
		r.receipt(model.StepPublish, model.ActionPhasePublished, model.OutcomeAlready,
			fmt.Sprintf("generation %s was already published in %s (%s); ledger entry closed", gen, store, published.Digest), nil, classify.Step{})
		return nil
	}
	return r.capture(ctx, store, seeder, seedSource(now))
}

// capture runs the engine's capture, upload and publish from src.
func (r *run) capture(ctx context.Context, store *artifact.Store, seeder Seeder, src classify.Step) error {
	cl := r.last.Observation.Cluster
	creds, err := Credentials(ctx, r.x.client(), cl)
	if err != nil {
		r.receipt(model.StepCaptureSnapshot, model.ActionPhaseFailed, model.OutcomeFailed, "stopped before capturing: "+err.Error(), nil, src)
		return err
	}
	var total int64
	for _, m := range r.last.Observation.Members {
		if m.Name == src.Member && m.Engine != nil {
			total = m.Engine.DBSize
		}
	}
	captured := false
	sctx, cancel := context.WithTimeout(ctx, orDur(r.o.Seed.Timeout, DefaultSeedTimeout))
	defer cancel()
	out, err := seeder.Seed(sctx, SeedCapture{
		Store: store, Generation: r.confirmed.Intent.Options.Generation, Cluster: cl,
		Member: src.Member, MemberID: src.MemberID, ClusterID: clusterIDOf(r.last),
		Dial: r.x.Observer.Dial, ProbeTimeout: r.x.Observer.ProbeTimeout, Credentials: creds,
		Info:      artifact.Source{Namespace: r.ns, Cluster: r.name, Member: src.Member, UID: r.confirmed.Cluster.UID},
		CreatedBy: "kubectl-hactl " + buildinfo.Version,
		Progress: func(n int64) {
			if r.o.Seed.Progress != nil {
				r.o.Seed.Progress(src.Member, n, total)
			}
		},
		OnCaptured: func() {
			captured = true
			r.receipt(model.StepCaptureSnapshot, model.ActionPhaseCapturing, model.OutcomeDone,
				fmt.Sprintf("captured a snapshot of %s (member %s) through a port-forward", src.Member, src.MemberID), nil, src)
		},
		BeforePublish: r.lock.Valid,
	})
	if err != nil {
		step := model.StepCaptureSnapshot
		if captured {
			step = model.StepUpload
		}
		r.receipt(step, model.ActionPhaseFailed, model.OutcomeFailed, fmt.Sprintf("%v; nothing was published (run the same command again)", err), nil, src)
		return err
	}
	m := out.Manifest
	r.res.Manifest, r.res.Already = m, out.Already
	if out.Already {
		// published by another seed between the check and the capture:
		// nothing was captured or uploaded
		r.receipt(model.StepPublish, model.ActionPhasePublished, model.OutcomeAlready,
			fmt.Sprintf("generation %s was published meanwhile in %s (%s); nothing was captured", m.Identity.Generation, store, m.Digest), nil, src)
		return nil
	}
	r.receipt(model.StepUpload, model.ActionPhaseUploading, model.OutcomeDone,
		fmt.Sprintf("uploaded %s to %s (upload %s); stored sizes checked", format.Bytes(m.TotalSize), store, m.Upload), nil, src)
	r.receipt(model.StepPublish, model.ActionPhasePublished, model.OutcomeDone, "published "+publishedDetail(m, out.Took), nil, src)
	return nil
}

// publishedDetail describes a published generation.
func publishedDetail(m *artifact.Manifest, took time.Duration) string {
	id := m.Identity
	return fmt.Sprintf("generation %s: %s cluster %s, member %s, term %d, revision %d, %s, digest %s (took %s)",
		id.Generation, id.Engine, id.ClusterID, id.SourceMemberID, id.RaftTerm, id.Revision, format.Bytes(m.TotalSize), m.Digest, took.Round(time.Millisecond))
}
