package actions

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// Observer builds the observation an action decides on: what status
// observes (API objects and every member probed on its own), plus what
// only actions need: the lock, the ledger, the template's
// --initial-cluster, template revisions and volume deletion marks, all
// read from the same list calls.
type Observer struct {
	Client kubernetes.Interface
	// Engines are the engines it probes members with and an Executor
	// sends member operations through, by name (the faces pass
	// registry.Engines()). A cluster of an engine not listed (every
	// cluster, when nil) is observed from the API server alone, and no
	// member operation reaches it.
	Engines map[model.Engine]engine.Engine
	// Dial reaches a member's port (port-forward in production).
	Dial engine.DialFunc
	// MemberTLS are client credentials from local files
	// (status.Observer.MemberTLS).
	MemberTLS *engine.Credentials
	// TLSSecret is the Secret --secret names (status.Observer.TLSSecret).
	TLSSecret    string
	ProbeTimeout time.Duration
	Verdict      model.VerdictOptions
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (o *Observer) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// engines is o.Engines.
func (o *Observer) engines() map[model.Engine]engine.Engine { return o.Engines }

// verdictOptions are o.Verdict with the verdict rules of o's engines that
// keep their own.
func (o *Observer) verdictOptions() model.VerdictOptions {
	v := o.Verdict
	if v.Rules == nil {
		v.Rules = engine.VerdictRules(o.engines())
	}
	return v
}

// recordingSource keeps the objects it read.
type recordingSource struct {
	inner status.Source
	mu    sync.Mutex
	objs  *status.Objects
}

func (s *recordingSource) Read(ctx context.Context, ns string) (*status.Objects, error) {
	o, err := s.inner.Read(ctx, ns)
	s.mu.Lock()
	s.objs = o
	s.mu.Unlock()
	return o, err
}

// Observe reads cluster namespace/name. Warnings are non-fatal problems
// to show (events not readable, a ledger key that did not decode).
func (o *Observer) Observe(ctx context.Context, namespace, name string) (status.Result, status.Warnings, error) {
	// The cluster's lock and ledger are read by name, whatever their
	// labels say.
	src := &recordingSource{inner: status.APISource{Client: o.Client, Cluster: name, Engines: o.engines()}}
	so := &status.Observer{
		Source:       src,
		Engines:      o.engines(),
		Dial:         o.Dial,
		ProxyGet:     status.PodProxy(o.Client),
		Secrets:      status.SecretsFrom(o.Client),
		MemberTLS:    o.MemberTLS,
		TLSSecret:    o.TLSSecret,
		ProbeTimeout: o.ProbeTimeout,
		Verdict:      o.Verdict,
		Now:          o.Now,
		HolderGone:   HolderGone,
	}
	results, warn, err := so.Observe(ctx, namespace, name)
	if err != nil {
		return status.Result{}, warn, err
	}
	if len(results) != 1 {
		return status.Result{}, warn, fmt.Errorf("observing %s/%s: found %d clusters", namespace, name, len(results))
	}
	obs := results[0].Observation
	// The cluster's StatefulSet: the one named as it, else the first
	// its owner controls (Crunchy PGO's StatefulSet per instance). A
	// cluster of pods without one (static pods, CloudNativePG's
	// instances) has only its members' objects decoded: the classifier
	// refuses what would need more (member_managed, the engine's rules).
	var sts *appsv1.StatefulSet
	for i := range src.objs.StatefulSets {
		s := &src.objs.StatefulSets[i]
		if s.Namespace != namespace {
			continue
		}
		ref := metav1.GetControllerOfNoCopy(s)
		switch {
		case s.Name == name:
			sts = s
		case sts == nil && ref != nil && obs.Cluster.UID != "" && string(ref.UID) == obs.Cluster.UID:
			sts = s
		}
	}
	if sts != nil {
		status.DecodeActionFacts(&obs, sts, src.objs, engine.Decoders(o.engines()))
	} else {
		status.DecodeMemberObjects(&obs, src.objs)
	}

	// The lock and the ledger came with the other objects, in the same
	// read (before the probes); an action must not decide without them.
	if err := src.objs.ActionsErr; err != nil {
		return status.Result{}, warn, actionObjectsError(err, namespace, name)
	}
	if err := src.objs.ActionsUnread[namespace+"/"+name]; err != nil {
		return status.Result{}, warn, actionObjectsError(err, namespace, name)
	}
	// obs.At stays when the observation began (status sets it): every
	// fact in it, the lock and ledger included, was read after that.
	r := status.Evaluate(obs, o.now(), so.VerdictOptions())
	// Shown through its engine's view, as status shows it.
	r.View = engine.Views(o.Engines)[obs.Cluster.Engine]
	return r, warn, nil
}

// actionObjectsError says why the cluster's lock or ledger could not be
// read, and what RBAC actions need when it was refused.
func actionObjectsError(err error, ns, name string) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%w: hactl actions need get, create and update on leases.coordination.k8s.io and configmaps %q in namespace %q (see docs/rbac.md): %v", status.ErrForbidden, LockName(name), ns, err)
	}
	return fmt.Errorf("reading the lock and ledger of %s/%s: %w", ns, name, err)
}

// Decide observes the cluster and classifies intent on it.
func (o *Observer) Decide(ctx context.Context, namespace, name string, in model.Intent) (model.Decision, status.Result, status.Warnings, error) {
	res, warn, err := o.Observe(ctx, namespace, name)
	if err != nil {
		return model.Decision{}, res, warn, err
	}
	in.Options.Verdict = o.verdictOptions()
	return classify.Classify(res.Observation, in, o.now()), res, warn, nil
}

// DecideManaged decides in when the cluster's members are another's
// (member_managed: a cluster of static pods has no StatefulSet to read a
// store or a generation from, which the verbs read before deciding);
// ok is false for any other cluster, or when it cannot be observed.
func (o *Observer) DecideManaged(ctx context.Context, namespace, name string, in model.Intent) (d model.Decision, res status.Result, warn status.Warnings, ok bool) {
	d, res, warn, err := o.Decide(ctx, namespace, name, in)
	if err != nil || res.Observation.Cluster.ManagedBy == nil {
		return model.Decision{}, status.Result{}, nil, false
	}
	return d, res, warn, true
}

// Fingerprint digests an object's metadata and spec (see
// status.Fingerprint).
func Fingerprint(meta *metav1.ObjectMeta, spec any) string { return status.Fingerprint(meta, spec) }

// StatefulSetFingerprint is the fingerprint of a StatefulSet without
// spec.replicas (see status.StatefulSetFingerprint).
func StatefulSetFingerprint(sts *appsv1.StatefulSet) string {
	return status.StatefulSetFingerprint(sts)
}

// RestoreLabel marks a restore's one-shot pods with the cluster they
// restore and MemberLabel with the member; the annotations
// GenerationLabel and ActionLabel name the generation and the ledger
// entry.
const (
	RestoreLabel    = status.LabelRestoreOf
	MemberLabel     = status.LabelMember
	GenerationLabel = status.AnnotationGeneration
	ActionLabel     = status.AnnotationActionID
)
