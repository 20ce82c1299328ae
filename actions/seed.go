package actions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/seeding"
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
	// Capture is how the snapshot reaches the store (CaptureAuto when
	// empty): in a pod next to the source member, or through a
	// port-forward.
	Capture CaptureMode
	// AgentImage is the capture pod's image (DefaultAgentImage when
	// empty).
	AgentImage string
	// StoreURL and StoreSecret are the store as a pod reaches it: its URL
	// (never holding a credential) and the Secret its credentials come
	// from ("" for none). Filled from the StatefulSet's annotations when
	// Store is nil.
	StoreURL, StoreSecret string
	// StartTimeout bounds how long a capture pod may take to start before
	// auto falls back to a port-forward (DefaultCaptureStartTimeout when
	// zero).
	StartTimeout time.Duration
}

// SeedCapture, SeedOutcome and Seeder are the executor's contract with
// each engine's seed generations (package seeding); the faces hand an
// Executor the seeders by engine (Executor.Seeders).
type (
	SeedCapture = seeding.Capture
	SeedOutcome = seeding.Outcome
	Seeder      = seeding.Seeder
)

// SeederFor returns engine e's Seeder among those x was handed.
func (x *Executor) SeederFor(e model.Engine) (Seeder, error) {
	s, ok := x.Seeders[e]
	if !ok || s == nil {
		return nil, fmt.Errorf("%w: seed generations of %s clusters", ErrUnsupported, e)
	}
	return s, nil
}

// seedSource is the capture step of a seed decision.
func seedSource(d model.Decision) model.Step {
	for _, s := range d.Steps {
		if s.Kind == model.StepCaptureSnapshot {
			return s
		}
	}
	return model.Step{}
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
func verifySeed(confirmed, now model.Decision) error {
	if now.Verb != model.VerbProceed {
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
	if r.o.Seed.StoreURL == "" {
		r.o.Seed.StoreURL, r.o.Seed.StoreSecret = cs.URL, cs.Secret
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
	seeder, err := r.x.SeederFor(r.last.Observation.Cluster.Engine)
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
			fmt.Sprintf("generation %s was already published in %s (%s); ledger entry closed", gen, store, published.Digest), nil, model.Step{})
		r.cleanCapturePods(ctx)
		return nil
	}
	return r.capture(ctx, store, seeder, seedSource(now))
}

// capture runs the engine's capture, upload and publish from src: in a
// capture pod next to the member when the Seeder can and one can run
// there, else (auto, saying why, or --capture port-forward) through a
// port-forward.
func (r *run) capture(ctx context.Context, store *artifact.Store, seeder Seeder, src model.Step) error {
	cl := r.last.Observation.Cluster
	creds, err := Credentials(ctx, r.x.client(), cl)
	if err != nil {
		r.receipt(model.StepCaptureSnapshot, model.ActionPhaseFailed, model.OutcomeFailed, "stopped before capturing: "+err.Error(), nil, src)
		return err
	}
	var auth *engine.BasicAuth
	if cl.Template.Password != nil {
		// The members ask every client for a password (etcd's auth):
		// the capture gives the one the template names.
		if auth, err = RESTAuth(ctx, r.x.client(), cl); err != nil {
			r.receipt(model.StepCaptureSnapshot, model.ActionPhaseFailed, model.OutcomeFailed, "stopped before capturing: "+err.Error(), nil, src)
			return err
		}
	}
	var member model.Member
	for _, m := range r.last.Observation.Members {
		if m.Name == src.Member {
			member = m
		}
	}
	var total int64
	if member.Engine != nil {
		total = member.Engine.DBSize
	}
	captured := false
	via := "through a port-forward"
	sctx, cancel := context.WithTimeout(ctx, orDur(r.o.Seed.Timeout, DefaultSeedTimeout))
	defer cancel()
	c := SeedCapture{
		Store: store, Generation: r.confirmed.Intent.Options.Generation, Cluster: cl,
		Member: src.Member, MemberID: src.MemberID, ClusterID: clusterIDOf(r.last),
		Source: target(cl, src.Member), Probe: engine.ProbeOptions{Dial: r.x.Observer.Dial, Timeout: r.x.Observer.ProbeTimeout, Credentials: creds, Auth: auth},
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
				fmt.Sprintf("captured a snapshot of %s (member %s) %s", src.Member, src.MemberID, via), nil, src)
		},
		BeforePublish: r.lock.Valid,
	}
	var (
		out  SeedOutcome
		used bool
	)
	if pc, ok := seeder.(PodCapturer); ok {
		var why string
		out, used, why, err = r.captureInPod(sctx, pc, c, member, total, &via)
		if !used {
			via = "through a port-forward (" + why + ")"
		}
	}
	if !used {
		out, err = seeder.Seed(sctx, c)
		if errors.Is(err, seeding.ErrSourceChanged) {
			err = &FenceConflictError{Detail: err.Error()}
		}
	}
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
			fmt.Sprintf("generation %s was published meanwhile in %s (%s); its own upload was discarded", m.Identity.Generation, store, m.Digest), nil, src)
		return nil
	}
	r.receipt(model.StepUpload, model.ActionPhaseUploading, model.OutcomeDone,
		fmt.Sprintf("uploaded %s to %s (upload %s); stored sizes checked", format.Bytes(m.TotalSize), store, m.Upload), nil, src)
	r.receipt(model.StepPublish, model.ActionPhasePublished, model.OutcomeDone, "published "+publishedDetail(m, out.Took), nil, src)
	r.cleanCapturePods(ctx)
	return nil
}

// captureInPod captures in a pod on the source member's node. used is
// false when no pod could do it and nothing was changed (why says why:
// auto then captures through a port-forward); with --capture pod that is
// an error instead. via is set to how the capture ran.
func (r *run) captureInPod(ctx context.Context, pc PodCapturer, c SeedCapture, m model.Member, total int64, via *string) (out SeedOutcome, used bool, why string, err error) {
	start := time.Now()
	mode := r.o.Seed.Capture
	if mode == "" {
		mode = CaptureAuto
	}
	fallback := func(e error) (SeedOutcome, bool, string, error) {
		var fb *errFallback
		if !errors.As(e, &fb) {
			return SeedOutcome{}, true, "", e
		}
		if err := r.lock.Valid(); err != nil {
			return SeedOutcome{}, true, "", err
		}
		if mode == CaptureInPod {
			return SeedOutcome{}, true, "", fmt.Errorf("cannot capture in a pod (--capture pod): %s; nothing was published (--capture port-forward captures through the API server instead)", fb.reason)
		}
		if mode != CapturePortForward {
			r.warn("capturing through a port-forward instead of a capture pod: %s", fb.reason)
		}
		return SeedOutcome{}, false, fb.reason, nil
	}
	cl := c.Cluster
	if t := cl.Template; t.Password != nil {
		return fallback(&errFallback{"auth is enabled (" + t.PasswordFrom + " names the password), and hactl hands no password to a capture pod"})
	}
	if err := r.capturePodRoute(ctx, mode, r.o.Seed.StoreURL, r.o.Seed.StoreSecret); err != nil {
		return fallback(err)
	}
	endpoint, serverName, err := captureEndpoint(cl, m)
	if err != nil {
		return fallback(&errFallback{err.Error()})
	}
	node := ""
	if m.Pod != nil {
		node = m.Pod.Node
	}
	sts, err := r.x.client().AppsV1().StatefulSets(r.ns).Get(ctx, r.name, metav1.GetOptions{})
	if err != nil {
		return SeedOutcome{}, true, "", fmt.Errorf("reading StatefulSet %s/%s: %w", r.ns, r.name, err)
	}
	if string(sts.UID) != r.confirmed.Cluster.UID {
		return SeedOutcome{}, true, "", &FenceConflictError{Detail: fmt.Sprintf("StatefulSet %s was replaced since the decision (uid %s, now %s)", r.name, r.confirmed.Cluster.UID, sts.UID)}
	}
	spec := CapturePodSpec{
		Capture: c, StoreURL: r.o.Seed.StoreURL, StoreSecret: r.o.Seed.StoreSecret, AgentImage: r.captureImage(ctx),
		Node: node, Endpoint: endpoint, ServerName: serverName, TLS: cl.TLSSecret != "", Total: total,
		Timeout: orDur(r.o.Seed.Timeout, DefaultSeedTimeout), ActionID: r.entryID,
	}
	// Creating the pod is a change: only while the lock is known held.
	if err := r.lock.Valid(); err != nil {
		return SeedOutcome{}, true, "", err
	}
	p := &podCapture{r: r, client: r.x.client(), spec: spec, pc: pc, startTO: orDur(r.o.Seed.StartTimeout, DefaultCaptureStartTimeout), progress: c.Progress}
	rc, pod, err := p.run(ctx, sts)
	if err != nil {
		return fallback(err)
	}
	ran := podImageRan(pod, "capture")
	*via = fmt.Sprintf("in capture pod %s on node %s, next to it, running %s (only its receipt crossed the API server)", pod.Name, nodeOfAffinity(pod), ran)
	if strings.Contains(ran, "no digest known") {
		r.warn("capture pod %s ran %s; name the image by digest (--agent-image repo@sha256:…) to pin it", pod.Name, ran)
	}
	if err := capturedWhatWasDecided(rc, c, pod.Name); err != nil {
		p.deletePod(ctx, pod)
		return SeedOutcome{}, true, "", err
	}
	out, err = r.publishCaptured(ctx, p, pod, rc, c)
	if err == nil {
		out.Took, out.Via = time.Since(start), *via
	}
	return out, true, "", err
}

// publishCaptured adopts the upload a capture pod made and publishes it
// under the identity it captured; the pod is deleted once published, or
// when its upload can never be (a rerun then captures anew).
func (r *run) publishCaptured(ctx context.Context, p *podCapture, pod *corev1.Pod, rc *artifact.CaptureLine, c SeedCapture) (SeedOutcome, error) {
	// The upload's time is the pod's, by the API server's clock, not the
	// node's.
	rc.Began = pod.CreationTimestamp.UTC()
	if c.Progress != nil {
		c.Progress(rc.Bytes)
	}
	if c.OnCaptured != nil {
		c.OnCaptured()
	}
	up, err := c.Store.AdoptCapture(rc, c.Generation)
	if err != nil {
		return SeedOutcome{}, fmt.Errorf("capture pod %s: %w", pod.Name, err)
	}
	// The upload is left in place on any failure from here: once the lock
	// may be lost, another holder may be publishing this same upload (GC
	// removes it if no one does).
	if err := c.BeforePublish(); err != nil {
		return SeedOutcome{}, fmt.Errorf("not published: %w", err)
	}
	res, err := up.Publish(ctx, *rc.Identity)
	if err != nil {
		if errors.Is(err, artifact.ErrSizeMismatch) || errors.Is(err, artifact.ErrMissingFile) || errors.Is(err, artifact.ErrGenerationExists) || errors.Is(err, artifact.ErrManifestInvalid) {
			// Its upload cannot be published (gone, short, or the name
			// taken): a rerun must not adopt the pod again.
			if r.lock.Valid() == nil {
				p.deletePod(ctx, pod)
				err = fmt.Errorf("%w (capture pod %s deleted: run the same command again to capture anew)", err, pod.Name)
			}
		}
		return SeedOutcome{Manifest: res.Manifest}, err
	}
	p.deletePod(ctx, pod)
	return SeedOutcome{Manifest: res.Manifest, Already: res.Already}, nil
}

// captureImage is the agent image a capture pod runs: pinned by its
// registry now when it names a tag, else as the node resolves it.
func (r *run) captureImage(ctx context.Context) string {
	image := r.o.Seed.AgentImage
	if image == "" {
		image = DefaultAgentImage()
	}
	if ImagePinned(image) {
		return image
	}
	pinned, err := ResolveAgentImage(ctx, image)
	if err != nil {
		r.note("agent image %s: %v; the capture pod's node resolves the tag", image, err)
		return image
	}
	r.note("agent image %s: its registry names %s", image, pinned)
	return pinned
}

// capturedWhatWasDecided refuses a capture pod's receipt rc that names
// another member, cluster or source than the decision chose (a fence
// conflict: nothing is published).
func capturedWhatWasDecided(rc *artifact.CaptureLine, c SeedCapture, pod string) error {
	id := rc.Identity
	if id == nil || (c.ClusterID != "" && !strings.EqualFold(id.ClusterID, c.ClusterID)) || (c.MemberID != "" && !strings.EqualFold(id.SourceMemberID, c.MemberID)) {
		got := "no identity"
		if id != nil {
			got = fmt.Sprintf("member %s of cluster %s", id.SourceMemberID, id.ClusterID)
		}
		return &FenceConflictError{Detail: fmt.Sprintf("capture pod %s captured %s, the decision chose member %s of cluster %s; not published", pod, got, c.MemberID, c.ClusterID)}
	}
	if rc.Source == nil || *rc.Source != c.Info {
		return &FenceConflictError{Detail: fmt.Sprintf("capture pod %s names another source (%+v) than this seed (%+v); not published", pod, rc.Source, c.Info)}
	}
	return nil
}

// publishedDetail describes a published generation.
func publishedDetail(m *artifact.Manifest, took time.Duration) string {
	id := m.Identity
	return fmt.Sprintf("generation %s: %s cluster %s, member %s, term %d, revision %d, %s, digest %s (took %s)",
		id.Generation, id.Engine, id.ClusterID, id.SourceMemberID, id.RaftTerm, id.Revision, format.Bytes(m.TotalSize), m.Digest, took.Round(time.Millisecond))
}
