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
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/classify"
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
func (r *run) restoreStep(ctx context.Context, s classify.Step, dry bool) (model.Outcome, string, error) {
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
func (r *run) scale(ctx context.Context, s classify.Step, dry bool) (model.Outcome, string, error) {
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
// for the same generation and action counts as done.
func (r *run) runRestore(ctx context.Context, s classify.Step, dry bool) (model.Outcome, string, error) {
	cl := r.last.Observation.Cluster
	pods := r.x.client().CoreV1().Pods(cl.Namespace)
	sts, err := r.x.client().AppsV1().StatefulSets(cl.Namespace).Get(ctx, cl.Name, metav1.GetOptions{})
	if err != nil {
		return "", "", fmt.Errorf("reading StatefulSet %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	pod, err := RestorePod(sts, cl, r.confirmed.Intent.Options, s, r.entryID)
	if err != nil {
		return "", "", err
	}
	if err := samePinnedGeneration(ctx, pods, cl.Name, pod); err != nil {
		return "", "", err
	}
	opts := metav1.CreateOptions{}
	if dry {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = pods.Create(ctx, pod, opts)
	switch {
	case apierrors.IsAlreadyExists(err):
		got, gerr := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if gerr == nil && got.Labels[RestoreLabel] == cl.Name && got.Annotations[GenerationLabel] == pod.Annotations[GenerationLabel] &&
			got.Annotations[DigestAnnotation] == pod.Annotations[DigestAnnotation] &&
			(dry || got.Annotations[ActionLabel] == pod.Annotations[ActionLabel]) {
			return model.OutcomeAlready, fmt.Sprintf("restore pod %s exists already (phase %s)", pod.Name, got.Status.Phase), nil
		}
		return "", "", fmt.Errorf("pod %s/%s exists and is not this restore's (delete it if it is a leftover): %w", cl.Namespace, pod.Name, err)
	case apierrors.IsForbidden(err):
		return "", "", fmt.Errorf("%w: you may not create pods in namespace %s; restore needs create on pods (see docs/rbac.md): %v", status.ErrForbidden, cl.Namespace, err)
	case err != nil:
		return "", "", fmt.Errorf("creating restore pod %s: %w", pod.Name, err)
	case dry:
		return model.OutcomeDryRun, fmt.Sprintf("would create restore pod %s (server dry run)", pod.Name), nil
	}
	return model.OutcomeDone, fmt.Sprintf("created restore pod %s: generation %s into %s on volume %s-%s", pod.Name,
		r.confirmed.Intent.Options.Generation, cl.Template.DataDir, cl.Template.DataVolume, s.Member), nil
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
func RestorePod(sts *appsv1.StatefulSet, cl model.ClusterFacts, o classify.Options, s classify.Step, actionID string) (*corev1.Pod, error) {
	src := o.Source
	switch {
	case src == nil || src.Digest == "":
		return nil, fmt.Errorf("generation %s: the decision carries no manifest digest to pin the restore pods to; not creating %s", o.Generation, RestorePodName(s.Member))
	case src.Generation != o.Generation:
		return nil, fmt.Errorf("the decision read generation %s but restores %s; not creating %s", src.Generation, o.Generation, RestorePodName(s.Member))
	}
	t := cl.Template
	c := status.ContainerNamed(sts, t.Container)
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
				GenerationLabel:  o.Generation,
				DigestAnnotation: src.Digest,
				ActionLabel:      actionID,
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
func restoreAgentArgs(t model.TemplateFacts, o classify.Options, s classify.Step, actionID string) []string {
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
func (r *run) restorePreflight(ctx context.Context, d classify.Decision) error {
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
