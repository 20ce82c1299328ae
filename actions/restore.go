package actions

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// RestorePodName is the name of the restore pod of member.
func RestorePodName(member string) string { return "hactl-restore-" + member }

// DigestAnnotation records on a restore pod the digest of the generation's
// manifest the restore was confirmed with (and the pod is pinned to).
const DigestAnnotation = "hactl.dev/generation-digest"

// RestorePodDeadline is a restore pod's activeDeadlineSeconds: the
// kubelet kills a pod that runs longer, which then fails (the data
// directory is unchanged unless the activation had begun, which takes
// milliseconds). RestoreAgentTimeout is the agent's own --timeout, within
// the deadline, so that the agent gives up first and says why.
const (
	RestorePodDeadline  = 30 * time.Minute
	RestoreAgentTimeout = RestorePodDeadline - 5*time.Minute
)

// restoreStep carries out one changing step of a restore.
func (r *run) restoreStep(ctx context.Context, s model.Step, dry bool) (model.Outcome, string, error) {
	switch s.Kind {
	case model.StepScaleDown, model.StepScaleUp:
		return r.scale(ctx, s, dry)
	case model.StepRunRestore:
		return r.runRestore(ctx, s, dry)
	case model.StepDeleteRestorePod:
		if s.Fence == nil {
			return "", "", fmt.Errorf("%w: restore pod of %s has no fence yet", ErrNotYet, s.Member)
		}
		return DeleteFenced(ctx, r.x.client(), *s.Fence, dry)
	}
	return "", "", fmt.Errorf("%w: step %s", ErrUnsupported, s.Kind)
}

// scale sets the StatefulSet's replicas, provided it is still the object
// the decision fenced: same UID, same metadata and spec, and (by the
// update's own optimistic concurrency) unchanged since it was read.
func (r *run) scale(ctx context.Context, s model.Step, dry bool) (model.Outcome, string, error) {
	f := s.Fence
	if f == nil {
		return "", "", fmt.Errorf("%w: %s has no fence", ErrUnsupported, s.Kind)
	}
	sets := r.x.client().AppsV1().StatefulSets(f.Namespace)
	sts, err := sets.Get(ctx, f.Name, metav1.GetOptions{})
	if err != nil {
		return "", "", fmt.Errorf("reading StatefulSet %s/%s: %w", f.Namespace, f.Name, err)
	}
	what := fmt.Sprintf("StatefulSet %s (uid %s, resourceVersion %s)", f.Name, f.UID, f.ResourceVersion)
	if string(sts.UID) != f.UID || (f.Fingerprint != "" && StatefulSetFingerprint(sts) != f.Fingerprint) {
		return model.OutcomeConflict, what + ": replaced or edited since the decision; not scaled, observing again", nil
	}
	if sts.Spec.Replicas != nil && int(*sts.Spec.Replicas) == s.Replicas {
		return model.OutcomeAlready, fmt.Sprintf("%s already wants %d replicas", what, s.Replicas), nil
	}
	sts.Spec.Replicas = ptr.To(int32(s.Replicas))
	opts := metav1.UpdateOptions{}
	if dry {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = sets.Update(ctx, sts, opts)
	switch {
	case apierrors.IsConflict(err):
		return model.OutcomeConflict, what + ": changed while scaling; not retried, observing again", nil
	case apierrors.IsForbidden(err):
		return "", "", fmt.Errorf("%w: you may not update statefulsets.apps %s/%s; restore needs update on statefulsets (see docs/rbac.md): %v", status.ErrForbidden, f.Namespace, f.Name, err)
	case err != nil:
		return "", "", fmt.Errorf("scaling %s: %w", what, err)
	case dry:
		return model.OutcomeDryRun, fmt.Sprintf("would scale %s to %d replicas (server dry run)", what, s.Replicas), nil
	}
	return model.OutcomeDone, fmt.Sprintf("scaled %s to %d replicas", what, s.Replicas), nil
}

// runRestore creates the member's restore pod. One that exists already
// for the same generation and action counts as done. The pod runs the
// agent image by digest when one is known (restoreImage); the first pod
// of a tag runs the tag, and the digest its node reports is what every
// later restore pod of the action runs.
func (r *run) runRestore(ctx context.Context, s model.Step, dry bool) (model.Outcome, string, error) {
	cl := r.last.Observation.Cluster
	pods := r.x.client().CoreV1().Pods(cl.Namespace)
	sts, err := r.x.client().AppsV1().StatefulSets(cl.Namespace).Get(ctx, cl.Name, metav1.GetOptions{})
	if err != nil {
		return "", "", fmt.Errorf("reading StatefulSet %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	img, err := r.restoreImage(ctx, pods, cl.Name, dry)
	if err != nil {
		return "", "", err
	}
	o := r.confirmed.Intent.Options
	o.AgentImage = img.image
	pod, err := RestorePod(sts, cl, o, s, r.entryID)
	if err != nil {
		return "", "", err
	}
	pod.Annotations[AgentImageAnnotation] = img.asked
	if err := samePinnedGeneration(ctx, pods, cl.Name, pod); err != nil {
		return "", "", err
	}
	opts := metav1.CreateOptions{}
	if dry {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	created, err := pods.Create(ctx, pod, opts)
	switch {
	case apierrors.IsAlreadyExists(err):
		got, gerr := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if gerr == nil && got.Labels[RestoreLabel] == cl.Name && got.Annotations[GenerationLabel] == pod.Annotations[GenerationLabel] &&
			got.Annotations[DigestAnnotation] == pod.Annotations[DigestAnnotation] &&
			(dry || got.Annotations[ActionLabel] == pod.Annotations[ActionLabel]) {
			return model.OutcomeAlready, fmt.Sprintf("restore pod %s exists already (phase %s, %s)", pod.Name, got.Status.Phase, podImageRan(got, "restore")), nil
		}
		return "", "", fmt.Errorf("pod %s/%s exists and is not this restore's (delete it if it is a leftover): %w", cl.Namespace, pod.Name, err)
	case apierrors.IsForbidden(err):
		return "", "", fmt.Errorf("%w: you may not create pods in namespace %s; restore needs create on pods (see docs/rbac.md): %v", status.ErrForbidden, cl.Namespace, err)
	case err != nil:
		return "", "", fmt.Errorf("creating restore pod %s: %w", pod.Name, err)
	case dry:
		ran := imageRan(img.asked, img.pinned(), img.by, img.imageID)
		if img.pinned() == "" && !ImagePinned(img.asked) {
			ran = "agent image " + img.asked + " (a tag: the first restore pod's node resolves it)"
		}
		return model.OutcomeDryRun, fmt.Sprintf("would create restore pod %s running %s (server dry run)", pod.Name, ran), nil
	}
	if img.learn {
		// The first pod of the tag: its node says which digest the tag
		// is, and every later restore pod of the action runs that.
		r.note("restore pod %s created: waiting for its node to report the digest of agent image %s", pod.Name, img.asked)
		got, _ := awaitImageID(ctx, pods, created, "restore", DefaultAgentImageWait)
		id, _ := containerImageID(got, "restore")
		img.imageID = id
		if pinned := PinnedFromImageID(img.asked, id); pinned != "" {
			img.image, img.by = pinned, "the node of restore pod "+pod.Name
			r.note("restore pod %s runs %s: the later restore pods of this action run that digest", pod.Name, img.image)
		} else {
			r.warn("restore pod %s runs agent image %s by its tag and no digest of it is known (its node reported %q): the restore pods of this action run the tag, which each node resolves on its own; name the image by digest (--agent-image repo@sha256:…) to pin it",
				pod.Name, img.asked, id)
		}
	}
	return model.OutcomeDone, fmt.Sprintf("created restore pod %s running %s: generation %s into %s on volume %s-%s", pod.Name,
		imageRan(img.asked, img.pinned(), img.by, img.imageID), r.confirmed.Intent.Options.Generation, cl.Template.DataDir, cl.Template.DataVolume, s.Member), nil
}

// agentImagePick is the agent image a restore pod runs.
type agentImagePick struct {
	// asked is the image asked for (--agent-image); image what the pod
	// runs: asked, or asked pinned to the digest learned by (by).
	asked, image, by string
	// learn: image is a tag no pod of this action ran yet: the digest is
	// learned from this pod's node.
	learn bool
	// imageID is what a node reported when no digest is known.
	imageID string
}

// pinned is the digest the pod runs, "" when it runs a tag.
func (p agentImagePick) pinned() string {
	if ImagePinned(p.image) {
		return p.image
	}
	return ""
}

// restoreImage picks the agent image of this action's next restore pod:
// the image asked for when it is a digest; else the digest an earlier
// restore pod of this action ran for the same tag, as the ledger entry's
// receipts record it or as that pod (its spec, or its node's report)
// shows it, waiting for the report of one that has not started yet; else
// the digest its registry names for the tag now, when no pod of this
// action ran it before; else the tag, to be learned from this pod's node.
func (r *run) restoreImage(ctx context.Context, pods corev1client.PodInterface, cluster string, dry bool) (agentImagePick, error) {
	asked := r.confirmed.Intent.Options.AgentImage
	p := agentImagePick{asked: asked, image: asked}
	// planned is the digest the plan pinned a tag to (repo:tag@sha256:…,
	// as ResolveAgentImage writes it): the tag's earlier pods of this
	// action still come first, so that a rerun after the tag moved runs
	// what they ran.
	planned := ""
	if tag, ok := pinnedTag(asked); ok {
		planned, asked = asked, tag
		p.asked, p.image = asked, planned
	}
	if asked == "" || (ImagePinned(asked) && planned == "") {
		return p, nil
	}
	if _, _, err := imageRepository(asked); err != nil {
		return p, err
	}
	details := r.restoreDetails()
	if pinned := recordedImage(details, asked); pinned != "" {
		p.image, p.by = pinned, "an earlier restore pod of this action, as ledger entry "+r.entryID+" records it"
		return p, nil
	}
	if r.entryID == "" {
		if planned != "" {
			p.by = "its registry when the plan was made"
		}
		return p, nil
	}
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: RestoreLabel + "=" + cluster})
	if err != nil {
		return p, fmt.Errorf("listing the restore pods of %s: %w", cluster, err)
	}
	decided, ran, pending := r.fromEarlierPods(&p, list.Items, asked)
	if decided {
		return p, nil
	}
	if unresolvedRecorded(details, asked) {
		// An earlier pod's node was waited for already and reported no
		// digest: its state now is all there is to know.
		ran = true
	}
	if pending != nil && !ran && !dry {
		got, err := awaitImageID(ctx, pods, pending, "restore", DefaultAgentImageWait)
		if err != nil {
			return p, err
		}
		id, _ := containerImageID(got, "restore")
		if pinned := PinnedFromImageID(asked, id); pinned != "" {
			p.image, p.by = pinned, "the node of restore pod "+got.Name
			return p, nil
		}
		p.imageID = id
		ran = true
	}
	if !ran && planned != "" {
		p.by = "its registry when the plan was made"
		return p, nil
	}
	if !ran {
		// No pod of this action ran the tag: its registry pins it now,
		// else the first pod's node does.
		pinned, err := ResolveAgentImage(ctx, asked)
		if err == nil {
			p.image, p.by = pinned, "its registry"
			return p, nil
		}
		if !dry {
			r.note("agent image %s: %v; the first restore pod's node resolves the tag", asked, err)
		}
	}
	p.learn = !ran && !dry
	return p, nil
}

// fromEarlierPods looks through the restore pods of this action that
// were asked to run asked: one that runs it by digest, or whose node
// reported the digest, decides p's image (decided). Otherwise ran says
// whether one ran it without a digest known (p.imageID is what its node
// reported) and pending is one whose node has not reported yet.
func (r *run) fromEarlierPods(p *agentImagePick, pods []corev1.Pod, asked string) (decided, ran bool, pending *corev1.Pod) {
	for i := range pods {
		q := &pods[i]
		if q.DeletionTimestamp != nil || q.Annotations[ActionLabel] != r.entryID || q.Annotations[AgentImageAnnotation] != asked {
			continue
		}
		if spec := containerImage(q, "restore"); ImagePinned(spec) {
			p.image, p.by = spec, "an earlier restore pod of this action ("+q.Name+")"
			return true, ran, pending
		}
		id, final := containerImageID(q, "restore")
		if pinned := PinnedFromImageID(asked, id); pinned != "" {
			p.image, p.by = pinned, "the node of restore pod "+q.Name
			return true, ran, pending
		}
		switch {
		case final:
			ran, p.imageID = true, id
		case pending == nil:
			pending = q
		}
	}
	return false, ran, pending
}

// restoreDetails are the details of this action's run-restore receipts:
// this run's and those its ledger entry recorded before.
func (r *run) restoreDetails() []string {
	var out []string
	add := func(rc model.Receipt) {
		if rc.Step == model.StepRunRestore && (rc.Outcome == model.OutcomeDone || rc.Outcome == model.OutcomeAlready) && rc.DryRun == "" {
			out = append(out, rc.Detail)
		}
	}
	for _, rc := range r.res.Receipts {
		add(rc)
	}
	for _, e := range r.last.Observation.Ledger {
		if r.entryID != "" && e.ID == r.entryID {
			for _, rc := range e.Receipts {
				add(rc)
			}
		}
	}
	return out
}

// samePinnedGeneration refuses to create pod while a restore pod of the
// same action is pinned to another manifest digest of the generation: the
// generation was deleted and published again between runs of this
// action, and the members would be restored from different data.
func samePinnedGeneration(ctx context.Context, pods podLister, cluster string, pod *corev1.Pod) error {
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: RestoreLabel + "=" + cluster})
	if err != nil {
		return fmt.Errorf("listing the restore pods of %s: %w", cluster, err)
	}
	want := pod.Annotations[DigestAnnotation]
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil || p.Name == pod.Name || p.Annotations[ActionLabel] != pod.Annotations[ActionLabel] ||
			p.Annotations[GenerationLabel] != pod.Annotations[GenerationLabel] {
			continue
		}
		if got := p.Annotations[DigestAnnotation]; got != want {
			return fmt.Errorf("restore pod %s of this restore restored generation %s with manifest digest %q, but the generation now has digest %s (it was deleted and published again since): "+
				"not creating %s, the members would hold different data. Delete the restore pods (kubectl delete pod -n %s -l %s=%s) and run the restore again to restore every member from the generation as it is now",
				p.Name, pod.Annotations[GenerationLabel], got, want, pod.Name, pod.Namespace, RestoreLabel, cluster)
		}
	}
	return nil
}

type podLister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
}

// RestorePod builds the one-shot pod that restores generation
// o.Generation into member s.Member's data directory: the engine
// container's data volume mount, the template's placement and security
// settings, the agent image, and store credentials only through envFrom
// of o.StoreSecret. The agent is pinned to the generation as the decision
// read it (o.Source: manifest digest, cluster ID, revision) and refuses
// any other content under the same ID; a decision without a digest gets
// no pod. The pod has activeDeadlineSeconds RestorePodDeadline, the
// agent --timeout RestoreAgentTimeout.
func RestorePod(sts *appsv1.StatefulSet, cl model.ClusterFacts, o model.ActionOptions, s model.Step, actionID string) (*corev1.Pod, error) {
	src := o.Source
	switch {
	case src == nil || src.Digest == "":
		return nil, fmt.Errorf("generation %s: the decision carries no manifest digest to pin the restore pods to; not creating %s", o.Generation, RestorePodName(s.Member))
	case src.Generation != o.Generation:
		return nil, fmt.Errorf("the decision read generation %s but restores %s; not creating %s", src.Generation, o.Generation, RestorePodName(s.Member))
	}
	t := cl.Template
	c := containerNamed(sts, t.Container)
	if c == nil {
		return nil, fmt.Errorf("StatefulSet %s/%s has no engine container %q", sts.Namespace, sts.Name, t.Container)
	}
	if t.DataVolume == "" || t.DataDir == "" {
		return nil, fmt.Errorf("StatefulSet %s/%s: the data directory's volume is unknown", sts.Namespace, sts.Name)
	}
	if o.AgentImage == "" {
		return nil, fmt.Errorf("no agent image: restore needs --agent-image")
	}
	args := restoreAgentArgs(t, o, s, actionID)
	mount := corev1.VolumeMount{Name: t.DataVolume, MountPath: t.DataMount}
	for _, m := range c.VolumeMounts {
		if m.Name == t.DataVolume {
			mount = m
			mount.ReadOnly = false
		}
	}
	restore := corev1.Container{
		Name:                     "restore",
		Image:                    o.AgentImage,
		Command:                  []string{"kubectl-hactl", "agent", "restore"},
		Args:                     args,
		VolumeMounts:             []corev1.VolumeMount{mount},
		SecurityContext:          c.SecurityContext,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		ImagePullPolicy:          corev1.PullIfNotPresent,
	}
	if o.StoreSecret != "" {
		restore.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: o.StoreSecret}}}}
	}
	ps := sts.Spec.Template.Spec
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      RestorePodName(s.Member),
			Namespace: sts.Namespace,
			Labels: map[string]string{
				EngineLabelKey: string(cl.Engine),
				RestoreLabel:   sts.Name,
				MemberLabel:    s.Member,
			},
			Annotations: map[string]string{
				GenerationLabel:      o.Generation,
				DigestAnnotation:     src.Digest,
				ActionLabel:          actionID,
				AgentImageAnnotation: o.AgentImage,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:         corev1.RestartPolicyNever,
			ActiveDeadlineSeconds: ptr.To(int64(RestorePodDeadline / time.Second)),
			Containers:            []corev1.Container{restore},
			Volumes:               []corev1.Volume{{Name: t.DataVolume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: t.DataVolume + "-" + s.Member}}}},
			NodeSelector:          ps.NodeSelector,
			Tolerations:           ps.Tolerations,
			SecurityContext:       ps.SecurityContext,
			ImagePullSecrets:      ps.ImagePullSecrets,
			ServiceAccountName:    ps.ServiceAccountName,
			PriorityClassName:     ps.PriorityClassName,
		},
	}
	return pod, nil
}

// restoreAgentArgs are the arguments of `kubectl-hactl agent restore` in
// member s.Member's restore pod: the store, the generation pinned by its
// digest (and cluster ID and revision when known), the data directory and
// the member's place in the restored cluster.
func restoreAgentArgs(t model.TemplateFacts, o model.ActionOptions, s model.Step, actionID string) []string {
	src := o.Source
	var initial []string
	for _, e := range t.InitialCluster {
		initial = append(initial, e.Name+"="+e.PeerURL)
	}
	args := []string{
		"--store=" + o.SeedStore,
		"--generation=" + o.Generation,
		"--data-dir=" + t.DataDir,
		"--name=" + s.Member,
		"--initial-cluster=" + strings.Join(initial, ","),
		"--initial-advertise-peer-urls=" + strings.Join(s.PeerURLs, ","),
		"--replace",
		"--expect-digest=" + src.Digest,
		"--timeout=" + RestoreAgentTimeout.String(),
		"-o", "json",
	}
	if src.ClusterID != "" {
		args = append(args, "--expect-cluster-id="+src.ClusterID)
	}
	if src.Revision > 0 {
		args = append(args, "--expect-revision="+fmt.Sprint(src.Revision))
	}
	if t.InitialClusterToken != "" {
		args = append(args, "--initial-cluster-token="+t.InitialClusterToken)
	}
	if actionID != "" {
		// A new restore of the same generation replaces what the members
		// wrote since the last one.
		args = append(args, "--restore-id="+actionID)
	}
	return args
}

// EngineLabelKey is the label that names a cluster's engine.
const EngineLabelKey = "hactl.dev/engine"

// restorePreflight checks with the server's dry run, before the first
// change, that this user may scale the StatefulSet and create the restore
// pods, so that a missing RBAC rule is found before the members stop.
func (r *run) restorePreflight(ctx context.Context, d model.Decision) error {
	for _, s := range d.Steps {
		if s.Kind != model.StepScaleDown && s.Kind != model.StepRunRestore {
			continue
		}
		if _, _, err := r.restoreStep(ctx, s, true); err != nil {
			return fmt.Errorf("checking %s before acting (nothing was changed): %w", s.Kind, err)
		}
		if s.Kind == model.StepRunRestore {
			return nil // one pod is proof enough
		}
	}
	return nil
}

// containerNamed is sts's template's container called name, nil when
// none.
func containerNamed(sts *appsv1.StatefulSet, name string) *corev1.Container {
	cs := sts.Spec.Template.Spec.Containers
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}
