package actions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/seeding"
	"github.com/hactl-dev/hactl/model"
)

// CaptureMode says how a seed's snapshot travels from the source member
// to the store.
type CaptureMode string

const (
	// CaptureAuto captures in a pod next to the member when one can run
	// there, else through a port-forward, saying why.
	CaptureAuto CaptureMode = "auto"
	// CaptureInPod captures in a one-shot pod scheduled on the source
	// member's node: the snapshot goes from the member to the store and
	// only the pod's receipt crosses the API server.
	CaptureInPod CaptureMode = "pod"
	// CapturePortForward streams the snapshot through a port-forward to
	// this process, which uploads it.
	CapturePortForward CaptureMode = "port-forward"
)

// ParseCaptureMode parses --capture.
func ParseCaptureMode(s string) (CaptureMode, error) {
	switch m := CaptureMode(s); m {
	case "", CaptureAuto:
		return CaptureAuto, nil
	case CaptureInPod, CapturePortForward:
		return m, nil
	}
	return "", fmt.Errorf("--capture must be auto, pod or port-forward, got %q", s)
}

// Capture pods: names, labels and limits.
const (
	// CaptureLabel marks a capture pod with the cluster it captures.
	CaptureLabel = "hactl.dev/capture-of"
	// DefaultCaptureStartTimeout is how long a capture pod may take to
	// start (scheduled, image pulled) before auto falls back to a
	// port-forward.
	DefaultCaptureStartTimeout = 2 * time.Minute
	// captureTLSDir is where a capture pod mounts the members' client TLS
	// Secret.
	captureTLSDir = "/etc/hactl/member-tls"
	// captureUser is the unprivileged user a capture pod runs as.
	captureUser = 65532
)

// captureSpecAnnotation records a digest of what the capture pod runs
// (image, command, arguments, credentials' Secret): a rerun adopts a pod
// of its action only when it would have created the very same one (the
// store, for one, has not changed since).
const captureSpecAnnotation = "hactl.dev/capture-spec"

// captureSpecHash digests what a capture container runs.
func captureSpecHash(c corev1.Container) string {
	h := sha256.New()
	for _, v := range append(append([]string{c.Image}, c.Command...), c.Args...) {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	for _, e := range c.EnvFrom {
		if e.SecretRef != nil {
			h.Write([]byte("secret:" + e.SecretRef.Name))
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// CapturePodName is the name of the capture pod of a cluster's member.
func CapturePodName(member string) string { return "hactl-capture-" + member }

// PodCapturer is a Seeder that can capture in a pod: the agent's
// arguments for one capture (seeding.PodCapturer).
type PodCapturer = seeding.PodCapturer

// CapturePodSpec is what a capture pod is built from.
type CapturePodSpec struct {
	Capture SeedCapture
	// StoreURL is the store the pod uploads to; StoreSecret the Secret its
	// credentials come from (envFrom), "" for none.
	StoreURL, StoreSecret string
	AgentImage            string
	// Node is the source member's node; Endpoint its client address
	// (host:port) as the pod dials it; ServerName the name its serving
	// certificate is checked against (TLS only).
	Node, Endpoint, ServerName string
	// TLS says the members speak TLS: the Secret Capture.Cluster.TLSSecret
	// is mounted at captureTLSDir.
	TLS bool
	// Total is the source's database size (progress), 0 when unknown.
	Total    int64
	Timeout  time.Duration
	ActionID string
}

// args are what the engine's PodCapturer builds the pod's arguments
// from.
func (spec CapturePodSpec) args() seeding.PodArgs {
	a := seeding.PodArgs{Capture: spec.Capture, StoreURL: spec.StoreURL, Endpoint: spec.Endpoint, ServerName: spec.ServerName,
		Total: spec.Total, Timeout: spec.Timeout}
	if spec.TLS {
		a.TLSDir = captureTLSDir
	}
	return a
}

// errFallback is a reason the capture pod cannot do the capture: auto
// captures through a port-forward instead.
type errFallback struct{ reason string }

func (e *errFallback) Error() string { return e.reason }

// podCapture is the capture of one seed in a pod on the source member's
// node: create (or adopt, when a run of this action created it before
// dying) the pod, wait for its receipt, delete it, then publish its upload
// under the lock. An *errFallback says the pod could not capture and
// changed nothing.
type podCapture struct {
	r       *run
	client  kubernetes.Interface
	spec    CapturePodSpec
	pc      PodCapturer
	startTO time.Duration
	// progress is told the bytes streamed so far.
	progress func(int64)
	// last is the capture pod as wait last read it.
	last *corev1.Pod
}

// captureEndpoint is the address a pod dials the member at: its stable
// DNS name under the StatefulSet's headless Service, else its pod IP.
func captureEndpoint(cl model.ClusterFacts, m model.Member) (endpoint, serverName string, err error) {
	t := target(cl, m.Name)
	host := t.ServerName
	if host == "" && m.Pod != nil && len(m.Pod.IPs) > 0 {
		host = m.Pod.IPs[0]
	}
	if host == "" {
		return "", "", fmt.Errorf("member %s has no DNS name (the StatefulSet names no Service) and no pod IP", m.Name)
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("%s:%d", host, t.Port), t.ServerName, nil
}

// captureCommand is what a capture pod runs for a store: the agent image's
// small hactl-capture for s3:// (it carries the s3:// and file:// drivers
// only), `kubectl-hactl agent capture` (the same command with every
// driver) for the others.
func captureCommand(storeURL string) []string {
	if artifact.StoreScheme(storeURL) == "s3" {
		return []string{seeding.CaptureCommand}
	}
	return []string{"kubectl-hactl", "agent", "capture"}
}

// CapturePod builds the one-shot capture pod: the agent image running its
// capture (hactl-capture for s3:// stores, see captureCommand) with pc's
// arguments, required on the
// source member's node (node affinity, the template's tolerations),
// unprivileged (non-root, no capabilities, read-only root filesystem, no
// service account token: it needs no API access), store credentials only
// through envFrom of the store Secret and the members' TLS Secret mounted
// read-only. Its activeDeadlineSeconds is the seed's timeout.
func CapturePod(sts *appsv1.StatefulSet, spec CapturePodSpec, pc PodCapturer) (*corev1.Pod, error) {
	c := spec.Capture
	if spec.AgentImage == "" {
		return nil, errors.New("no agent image: capture pods need --agent-image")
	}
	if spec.Node == "" {
		return nil, &errFallback{fmt.Sprintf("member %s is not on a node yet", c.Member)}
	}
	ps := sts.Spec.Template.Spec
	ctr := corev1.Container{
		Name:    "capture",
		Image:   spec.AgentImage,
		Command: captureCommand(spec.StoreURL),
		Args:    pc.CaptureArgs(spec.args()),
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		ImagePullPolicy:          corev1.PullIfNotPresent,
	}
	if spec.StoreSecret != "" {
		ctr.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: spec.StoreSecret}}}}
	}
	var vols []corev1.Volume
	if spec.TLS {
		vols = append(vols, corev1.Volume{Name: "member-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: c.Cluster.TLSSecret}}})
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "member-tls", MountPath: captureTLSDir, ReadOnly: true})
	}
	timeout := orDur(spec.Timeout, DefaultSeedTimeout)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      CapturePodName(c.Member),
			Namespace: sts.Namespace,
			Labels: map[string]string{
				EngineLabelKey: string(c.Cluster.Engine),
				CaptureLabel:   sts.Name,
				MemberLabel:    c.Member,
			},
			Annotations: map[string]string{
				GenerationLabel:       c.Generation,
				ActionLabel:           spec.ActionID,
				captureSpecAnnotation: captureSpecHash(ctr),
				AgentImageAnnotation:  spec.AgentImage,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:        ptr.To(int64(timeout/time.Second) + 60),
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{ctr},
			Volumes:                      vols,
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{spec.Node}}},
				}}},
			}},
			Tolerations: ps.Tolerations,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(int64(captureUser)),
				RunAsGroup:     ptr.To(int64(captureUser)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			ImagePullSecrets:  ps.ImagePullSecrets,
			PriorityClassName: ps.PriorityClassName,
		},
	}
	return pod, nil
}

// capturePodRoute says whether this seed can capture in a pod, and why
// not: the store must be reachable from a pod with credentials from a
// Secret, and this user must be allowed to create, read the logs of and
// delete pods in the namespace.
func (r *run) capturePodRoute(ctx context.Context, mode CaptureMode, storeURL, storeSecret string) error {
	if mode == CapturePortForward {
		return &errFallback{"--capture port-forward"}
	}
	switch {
	case storeURL == "":
		return &errFallback{"the store's URL is not known to the pod"}
	case artifact.StoreScheme(storeURL) == "file":
		return &errFallback{"the store is a directory on this machine (file://), which a pod cannot reach"}
	case strings.Contains(artifact.RedactURL(storeURL), "redacted") || strings.Contains(artifact.RedactURL(storeURL), "unparsable"):
		return &errFallback{"the store URL holds a credential, which a pod's spec would show (put it in the store Secret)"}
	case storeSecret == "" && mode == CaptureAuto:
		return &errFallback{"the store's credentials come from this machine, not from a Secret a pod could use (--store-secret or the annotation " + artifact.AnnotationStoreSecret + ")"}
	}
	for _, a := range []authorizationv1.ResourceAttributes{
		{Namespace: r.ns, Verb: "create", Resource: "pods"},
		{Namespace: r.ns, Verb: "get", Resource: "pods", Subresource: "log"},
		{Namespace: r.ns, Verb: "delete", Resource: "pods"},
	} {
		a := a
		rv, err := r.x.client().AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a},
		}, metav1.CreateOptions{})
		if err != nil {
			continue // cannot tell: the create itself will say
		}
		if !rv.Status.Allowed {
			what := a.Verb + " " + a.Resource
			if a.Subresource != "" {
				what = a.Verb + " " + a.Resource + "/" + a.Subresource
			}
			return &errFallback{fmt.Sprintf("you may not %s in namespace %s, which a capture pod needs (see docs/rbac.md)", what, r.ns)}
		}
	}
	return nil
}

// run creates or adopts the capture pod and waits for its receipt.
func (p *podCapture) run(ctx context.Context, sts *appsv1.StatefulSet) (*artifact.CaptureLine, *corev1.Pod, error) {
	want, err := CapturePod(sts, p.spec, p.pc)
	if err != nil {
		return nil, nil, err
	}
	pod, err := p.createOrAdopt(ctx, want)
	if err != nil {
		return nil, nil, err
	}
	rc, err := p.wait(ctx, pod)
	if p.last != nil {
		pod = p.last
	}
	return rc, pod, err
}

// createOrAdopt creates the capture pod, or adopts the one a run of the
// same action (same ledger entry and generation) created before it died;
// any other pod of that name (a leftover) is deleted, fenced by its UID
// and resourceVersion, first. A create whose answer was lost is found by
// name.
func (p *podCapture) createOrAdopt(ctx context.Context, want *corev1.Pod) (*corev1.Pod, error) {
	pods := p.client.CoreV1().Pods(want.Namespace)
	for attempt := 0; attempt < 3; attempt++ {
		got, err := pods.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if err := p.r.lock.Valid(); err != nil {
				return nil, err
			}
			created, cerr := pods.Create(ctx, want, metav1.CreateOptions{})
			switch {
			case cerr == nil:
				p.r.note("capture pod %s created on node %s, next to %s", created.Name, p.spec.Node, p.spec.Capture.Member)
				return created, nil
			case apierrors.IsAlreadyExists(cerr):
				continue
			case apierrors.IsForbidden(cerr) || apierrors.IsInvalid(cerr):
				// RBAC, or admission (PodSecurity, quota, policy) refused it:
				// nothing was created.
				return nil, &errFallback{fmt.Sprintf("the API server refused the capture pod: %v", cerr)}
			}
			// The answer was lost: the pod may exist.
			if _, gerr := pods.Get(ctx, want.Name, metav1.GetOptions{}); gerr == nil {
				continue
			}
			return nil, fmt.Errorf("creating capture pod %s (it may have been created; run the same command again): %w", want.Name, cerr)
		case apierrors.IsForbidden(err):
			return nil, &errFallback{fmt.Sprintf("you may not get pods in namespace %s: %v", want.Namespace, err)}
		case err != nil:
			return nil, fmt.Errorf("reading capture pod %s: %w", want.Name, err)
		}
		if got.Labels[CaptureLabel] != want.Labels[CaptureLabel] {
			return nil, fmt.Errorf("pod %s/%s exists and is not a capture pod of %s; not touching it (rename or delete it)", got.Namespace, got.Name, want.Labels[CaptureLabel])
		}
		ours := got.Annotations[ActionLabel] == want.Annotations[ActionLabel] && got.Annotations[GenerationLabel] == want.Annotations[GenerationLabel] &&
			got.Labels[MemberLabel] == want.Labels[MemberLabel] && got.Annotations[captureSpecAnnotation] == want.Annotations[captureSpecAnnotation]
		if ours && got.DeletionTimestamp == nil && got.Status.Phase != corev1.PodFailed {
			p.r.note("capture pod %s of this action exists already (phase %s): waiting for it", got.Name, got.Status.Phase)
			return got, nil
		}
		if got.DeletionTimestamp == nil {
			if err := p.r.lock.Valid(); err != nil {
				return nil, err
			}
			if err := deleteCapturePod(ctx, p.client, got); err != nil {
				return nil, fmt.Errorf("deleting the earlier capture pod %s: %w", got.Name, err)
			}
			p.r.note("deleted the earlier capture pod %s (action %s, phase %s)", got.Name, got.Annotations[ActionLabel], got.Status.Phase)
		}
		if err := p.waitGone(ctx, got); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("capture pod %s keeps changing under this action; run the same command again", want.Name)
}

// waitGone waits until pod old (that UID) is gone.
func (p *podCapture) waitGone(ctx context.Context, old *corev1.Pod) error {
	pods := p.client.CoreV1().Pods(old.Namespace)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := pods.Get(ctx, old.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && got.UID != old.UID) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the earlier capture pod %s is still being deleted", old.Name)
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

// sleepCtx waits d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// podChanges wakes the capture pod's wait loop when the pod changes (its
// phase, its containers' states), so that a finished capture is seen at
// once rather than up to a poll later: a watch on that one pod, from the
// resourceVersion last read. The loop still reads the pod itself (with a
// get) on every wake-up; an event only ends the sleep early. When the
// watch ends or cannot be opened, the loop sleeps its full interval, and
// the watch is opened again at most once per interval; once the API
// server refuses it (RBAC without watch on pods), never again.
type podChanges struct {
	pods    corev1client.PodInterface
	w       watch.Interface
	opened  time.Time
	refused bool
}

// next waits until the pod changes after pod's resourceVersion, ctx ends
// (its error), or d passes.
func (c *podChanges) next(ctx context.Context, pod *corev1.Pod, d time.Duration) error {
	if c.w == nil && !c.refused && time.Since(c.opened) >= d {
		c.open(ctx, pod)
	}
	var events <-chan watch.Event // nil without a watch: never ready
	if c.w != nil {
		events = c.w.ResultChan()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	case ev, ok := <-events:
		if !ok || ev.Type == watch.Error {
			c.stop()
		}
	}
	return nil
}

// open watches pod (by name) from its resourceVersion; on an error there
// is no watch until the next open, and none at all after a refusal.
func (c *podChanges) open(ctx context.Context, pod *corev1.Pod) {
	c.opened = time.Now()
	w, err := c.pods.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", pod.Name).String(),
		ResourceVersion: pod.ResourceVersion,
	})
	switch {
	case err == nil:
		c.w = w
	case apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err):
		c.refused = true
	}
}

func (c *podChanges) stop() {
	if c.w != nil {
		c.w.Stop()
		c.w = nil
	}
}

// unscheduledTimeout is how long a capture pod may wait for a scheduler
// to act on it at all (a scheduler sets PodScheduled within seconds).
const unscheduledTimeout = 20 * time.Second

// scheduledOrTried reports whether a scheduler acted on pod.
func scheduledOrTried(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" {
		return true
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return true
		}
	}
	return false
}

// oldImageHint explains a capture container that could not run its
// command: an agent image from before hactl-capture (an older release
// pinned with --agent-image, or a cached image of the same tag).
func oldImageHint(msg string) string {
	if !strings.Contains(msg, seeding.CaptureCommand) || !strings.Contains(msg, "not found") {
		return ""
	}
	return "; the agent image has no " + seeding.CaptureCommand + ": use the agent image of this hactl's version (--agent-image), or --capture port-forward"
}

// notStarting is why a pod that has not started never will by itself.
func notStarting(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return "it cannot be scheduled on node " + nodeOfAffinity(pod) + ": " + c.Message
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError":
				return fmt.Sprintf("its container cannot start (%s: %s)", w.Reason, w.Message) + oldImageHint(w.Message)
			}
		}
	}
	return ""
}

func nodeOfAffinity(pod *corev1.Pod) string {
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range t.MatchFields {
				return strings.Join(f.Values, ",")
			}
		}
	}
	return pod.Spec.NodeName
}

// wait polls the pod until it ends and returns its receipt. A pod that
// does not start within the start timeout, or fails before streaming a
// byte, is deleted (fenced) and reported as *errFallback; a pod that fails
// later is an error (its log's reason), as is one whose member answered as
// another (a fence conflict).
func (p *podCapture) wait(ctx context.Context, pod *corev1.Pod) (*artifact.CaptureLine, error) {
	pods := p.client.CoreV1().Pods(pod.Namespace)
	started := time.Now()
	var streamed int64
	var lastLog time.Time
	changes := &podChanges{pods: pods}
	defer changes.stop()
	for {
		got, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || (err == nil && got.UID != pod.UID):
			return nil, fmt.Errorf("capture pod %s was deleted while it ran", pod.Name)
		case err != nil:
			if ctx.Err() != nil {
				return nil, fmt.Errorf("waiting for capture pod %s: %w; the pod may still be running: run the same command again to adopt it", pod.Name, ctx.Err())
			}
			// a transient error: the deadline below still holds
		default:
			pod = got
			p.last = got
		}
		switch pod.Status.Phase {
		case corev1.PodSucceeded:
			return p.receipt(ctx, pod)
		case corev1.PodFailed:
			log, lerr := p.logs(ctx, pod.Name, 0)
			n, last := artifact.LastCaptureLines(log)
			streamed = max(streamed, n)
			return nil, p.failed(ctx, pod, last, lerr, streamed)
		case corev1.PodRunning:
			if time.Since(lastLog) >= 2*time.Second {
				lastLog = time.Now()
				if log, err := p.logs(ctx, pod.Name, 5); err == nil {
					if n, _ := artifact.LastCaptureLines(log); n > streamed {
						streamed = n
						if p.progress != nil {
							p.progress(n)
						}
					}
				}
			}
		case corev1.PodPending, "":
			if why := notStarting(pod); why != "" {
				p.deletePod(ctx, pod)
				return nil, &errFallback{fmt.Sprintf("capture pod %s did not start: %s", pod.Name, why)}
			}
			if !scheduledOrTried(pod) && time.Since(started) > unscheduledTimeout {
				p.deletePod(ctx, pod)
				return nil, &errFallback{fmt.Sprintf("capture pod %s was not scheduled within %s (no scheduler acted on it)", pod.Name, unscheduledTimeout)}
			}
			if time.Since(started) > p.startTO {
				p.deletePod(ctx, pod)
				return nil, &errFallback{fmt.Sprintf("capture pod %s did not start within %s (phase %s)", pod.Name, p.startTO, pod.Status.Phase)}
			}
		}
		// Any other phase (Unknown: its node stopped reporting) may still
		// end with a receipt: wait, within the seed's timeout, for the
		// pod's next change or a second, whichever comes first.
		if err := changes.next(ctx, pod, time.Second); err != nil {
			return nil, fmt.Errorf("waiting for capture pod %s (phase %s): %w; the pod may still be running: run the same command again to adopt it", pod.Name, pod.Status.Phase, err)
		}
	}
}

// receipt reads the receipt a capture pod that succeeded left in its log
// (three tries); without one its upload is kept for a rerun to adopt.
func (p *podCapture) receipt(ctx context.Context, pod *corev1.Pod) (*artifact.CaptureLine, error) {
	var lerr error
	for attempt := 0; attempt < 3; attempt++ {
		var log []byte
		if log, lerr = p.logs(ctx, pod.Name, 0); lerr == nil {
			if _, last := artifact.LastCaptureLines(log); last != nil && last.Kind == artifact.CaptureReceiptKind {
				return last, nil
			}
			lerr = artifact.ErrNoCaptureReceipt
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return nil, err
		}
	}
	// Its upload is complete: keep the pod, a rerun adopts it.
	return nil, fmt.Errorf("capture pod %s succeeded but its receipt cannot be read (%v); nothing was published: run the same command again to publish its upload, or delete the pod (kubectl delete pod -n %s %s) to capture anew",
		pod.Name, lerr, pod.Namespace, pod.Name)
}

// failed says why a capture pod failed (last is its last log line, lerr
// why its log could not be read, streamed how much it had read): a
// changed source is a fence conflict; a pod that read nothing, or whose
// upload the store did not take, is deleted and the port-forward route
// tried; any other is left for inspection.
func (p *podCapture) failed(ctx context.Context, pod *corev1.Pod, last *artifact.CaptureLine, lerr error, streamed int64) error {
	why := terminationMessage(pod)
	why += oldImageHint(why)
	if last != nil && last.Error != "" {
		why = last.Error
	}
	if lerr != nil && why == "" {
		why = "its log cannot be read: " + lerr.Error()
	}
	if why == "" {
		why = "it left no receipt"
	}
	if last != nil && last.SourceChanged {
		return &FenceConflictError{Detail: why}
	}
	err := fmt.Errorf("capture pod %s %s: %s", pod.Name, strings.ToLower(string(pod.Status.Phase)), why)
	if streamed == 0 || (last != nil && last.StoreFailed) {
		// Nothing read from the member, or the store did not take
		// the upload from this pod (its network, its credentials):
		// the port-forward route may still work.
		p.deletePod(ctx, pod)
		return &errFallback{err.Error()}
	}
	// Left for inspection; the next run deletes it.
	return fmt.Errorf("%w (its log: kubectl logs -n %s %s)", err, pod.Namespace, pod.Name)
}

// logs reads the capture container's log (its last tail lines; 0: all).
func (p *podCapture) logs(ctx context.Context, name string, tail int64) ([]byte, error) {
	o := &corev1.PodLogOptions{Container: "capture"}
	if tail > 0 {
		o.TailLines = &tail
	}
	return p.client.CoreV1().Pods(p.r.ns).GetLogs(name, o).DoRaw(ctx)
}

// deletePod deletes the capture pod, fenced by its UID and
// resourceVersion (read again when the kubelet wrote its status since);
// best effort: a leftover is deleted by the next run, or with its
// StatefulSet.
func (p *podCapture) deletePod(ctx context.Context, pod *corev1.Pod) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	_ = deleteCapturePod(dctx, p.client, pod)
}

// deleteCapturePod deletes pod (that UID), each attempt fenced by the
// UID and the resourceVersion just read; gone already is success.
func deleteCapturePod(ctx context.Context, c kubernetes.Interface, pod *corev1.Pod) error {
	pods := c.CoreV1().Pods(pod.Namespace)
	cur := pod
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		f := model.Fence{Kind: "Pod", Namespace: cur.Namespace, Name: cur.Name, UID: string(cur.UID), ResourceVersion: cur.ResourceVersion}
		var out model.Outcome
		out, _, err = DeleteFenced(ctx, c, f, false)
		if err != nil {
			return err
		}
		if out != model.OutcomeConflict {
			return nil
		}
		err = fmt.Errorf("capture pod %s kept changing while being deleted", pod.Name)
		got, gerr := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(gerr) || (gerr == nil && got.UID != pod.UID) {
			return nil
		}
		if gerr != nil {
			return gerr
		}
		cur = got
	}
	return err
}

// terminationMessage is the capture container's termination message.
func terminationMessage(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && strings.TrimSpace(t.Message) != "" {
			return strings.TrimSpace(t.Message)
		}
	}
	if pod.Status.Reason != "" || pod.Status.Message != "" {
		return strings.TrimSpace(pod.Status.Reason + " " + pod.Status.Message)
	}
	return ""
}

// cleanCapturePods deletes this cluster's capture pods that have ended
// (Succeeded or Failed), each fenced by UID and resourceVersion: a pod of
// an earlier run whose upload was published, or left for inspection.
// Running ones are left alone. Best effort, while the lock is held.
func (r *run) cleanCapturePods(ctx context.Context) {
	if r.lock == nil || r.lock.Valid() != nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	l, err := r.x.client().CoreV1().Pods(r.ns).List(cctx, metav1.ListOptions{LabelSelector: CaptureLabel + "=" + r.name})
	if err != nil {
		return
	}
	for i := range l.Items {
		p := &l.Items[i]
		if p.DeletionTimestamp != nil || (p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed) {
			continue
		}
		if err := deleteCapturePod(cctx, r.x.client(), p); err == nil {
			r.note("deleted capture pod %s (%s, action %s)", p.Name, strings.ToLower(string(p.Status.Phase)), p.Annotations[ActionLabel])
		}
	}
}
