package actions

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/hactl-dev/hactl/model"
)

// Agent pods (capture and restore pods) run the agent image by digest
// (repo@sha256:…), never by a mutable tag, wherever the digest is known:
// every pod of one action then runs the same bytes, and its receipts name
// them. A digest given (--agent-image repo@sha256:…) is used as is. A
// tag is resolved by its registry before the plan is shown (a HEAD of its
// manifest, ResolveAgentImage): the plan, a saved plan and every pod then
// name repo:tag@sha256:…. When the registry cannot be asked (unreachable,
// credentials this machine lacks, the tag unknown to it), the kubelet
// resolves it: the first pod of the action runs the tag, its container
// status reports the image it ran (imageID, repo@sha256:…), its receipt
// names that digest, and every later restore pod of the action runs it (a
// seed has one capture pod). When no digest can be learned (the node
// reports none, or only the image's local ID) the pods run the tag and
// the action says so.

// AgentImageAnnotation records on an agent pod the agent image it was
// asked to run (--agent-image, a tag or a digest); its container's image
// is that image pinned by digest when the digest was known.
const AgentImageAnnotation = "hactl.dev/agent-image"

// DefaultAgentImageWait bounds how long an action waits for the first
// agent pod's node to report the digest of the image it runs (the pod
// scheduled, the image pulled, the container created).
const DefaultAgentImageWait = DefaultCaptureStartTimeout

// DefaultAgentImageResolveTimeout bounds the registry request that
// resolves an agent image's tag to its digest.
const DefaultAgentImageResolveTimeout = 10 * time.Second

// ResolveAgentImage pins image to the digest its registry names for its
// tag now: a HEAD request for the manifest (an image index for a
// multi-platform image, which every node resolves to its own platform),
// with the credentials of this machine's Docker config, else anonymous,
// within DefaultAgentImageResolveTimeout. The result keeps the tag for
// the reader: repo:tag@sha256:…, which a kubelet pulls by the digest
// alone. A digest is returned as is, without a request. An error says
// why the registry could not pin it (the caller then leaves the tag to
// the node, and says so).
func ResolveAgentImage(ctx context.Context, image string) (string, error) {
	if ImagePinned(image) {
		return image, nil
	}
	tag, err := name.NewTag(image)
	if err != nil {
		return "", fmt.Errorf("agent image %q: %w", image, err)
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultAgentImageResolveTimeout)
	defer cancel()
	desc, err := remote.Head(tag, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithUserAgent("hactl"))
	if err != nil {
		return "", fmt.Errorf("asking registry %s for tag %s of %s: %w", tag.RegistryStr(), tag.TagStr(), tag.RepositoryStr(), err)
	}
	pinned := image + "@" + desc.Digest.String()
	if !ImagePinned(pinned) {
		return "", fmt.Errorf("registry %s named %q for %s, not a digest", tag.RegistryStr(), desc.Digest, image)
	}
	return pinned, nil
}

// pinnedTag is the tag a digest names beside it (repo:tag for
// repo:tag@sha256:…); false when image is not a digest or names no tag.
func pinnedTag(image string) (string, bool) {
	if !ImagePinned(image) {
		return "", false
	}
	base := image[:strings.LastIndex(image, "@")]
	t, err := name.NewTag(base)
	if err != nil || !strings.HasSuffix(base, ":"+t.TagStr()) {
		return "", false
	}
	return base, true
}

// AgentImageResolved is the plan line for agent image asked after
// ResolveAgentImage answered pinned (or failed with err) for action a.
func AgentImageResolved(asked, pinned string, err error, a model.Action) string {
	switch {
	case err != nil:
		return AgentImagePlan(asked, a) + "; its registry did not pin it: " + err.Error()
	case pinned != asked:
		return "agent image: " + pinned + " (by digest: tag " + asked + " as its registry names it now)"
	}
	return AgentImagePlan(asked, a)
}

// ImagePinned reports whether image names its content by digest
// (repo@sha256:…, a tag before the digest allowed).
func ImagePinned(image string) bool {
	_, err := name.NewDigest(image)
	return err == nil
}

// AgentImagePlan is the line of a plan that names the image its agent
// pods run (a restore's restore pods, else a seed's capture pod): a
// digest as is; a tag, with how its digest is learned.
func AgentImagePlan(image string, a model.Action) string {
	switch {
	case ImagePinned(image):
		return "agent image: " + image + " (by digest)"
	case a == model.ActionRestore:
		return "agent image: " + image + ", a tag: the first restore pod runs it, every later restore pod of this restore runs the digest that pod's node reports, and the receipts name it (--agent-image repo@sha256:… pins it beforehand)"
	}
	return "agent image: " + image + ", a tag: the capture pod runs it as its node resolves it, and the receipt names the digest that node reports (--agent-image repo@sha256:… pins it beforehand)"
}

// imageRepository is image's repository as written (its tag and digest
// cut off) and as normalized (registry and path, for comparisons).
func imageRepository(image string) (written, normalized string, err error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return "", "", fmt.Errorf("agent image %q: %w", image, err)
	}
	written = image
	if i := strings.LastIndex(written, "@"); i >= 0 {
		written = written[:i]
	}
	if t, err := name.NewTag(written); err == nil && strings.HasSuffix(written, ":"+t.TagStr()) {
		written = strings.TrimSuffix(written, ":"+t.TagStr())
	}
	return written, ref.Context().Name(), nil
}

// PinImage is image at digest d ("sha256:…"): its repository as written,
// "@", d.
func PinImage(image, d string) (string, error) {
	repo, _, err := imageRepository(image)
	if err != nil {
		return "", err
	}
	pinned := repo + "@" + d
	if !ImagePinned(pinned) {
		return "", fmt.Errorf("agent image %q: %q is not a digest", image, d)
	}
	return pinned, nil
}

// PinnedFromImageID is image pinned to the digest the kubelet reported
// for a container that runs it (its status's imageID: repo@sha256:…, or
// with the runtime's scheme, docker-pullable://repo@sha256:…), "" when the
// imageID names no digest of image's repository: empty, the image's local
// ID only (sha256:… without a repository, as for an image loaded into the
// node), or another repository's.
func PinnedFromImageID(image, imageID string) string {
	id := imageID
	if i := strings.Index(id, "://"); i >= 0 {
		id = id[i+3:]
	}
	d, err := name.NewDigest(id)
	if err != nil {
		return ""
	}
	_, want, err := imageRepository(image)
	if err != nil || d.Context().Name() != want {
		return ""
	}
	pinned, err := PinImage(image, d.DigestStr())
	if err != nil {
		return ""
	}
	return pinned
}

// containerImageID is what the kubelet reported of pod's container ctr:
// its imageID, and whether the report is final (the container was
// created, its image cannot be pulled or run, or the pod ended): an empty
// imageID then means the node reports none.
func containerImageID(pod *corev1.Pod, ctr string) (imageID string, final bool) {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		final = true
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != ctr {
			continue
		}
		if cs.ImageID != "" || cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			final = true
		}
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError":
				final = true
			}
		}
		return cs.ImageID, final
	}
	return "", final
}

// containerImage is the image pod's container ctr was given.
func containerImage(pod *corev1.Pod, ctr string) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == ctr {
			return c.Image
		}
	}
	return ""
}

// imageRan is how a receipt names the image an agent pod runs: asked is
// the image asked for (--agent-image, a tag or a digest), pinned the
// digest it runs ("" when none is known) and by how that digest was
// learned; imageID is what its node reported when no digest is known.
func imageRan(asked, pinned, by, imageID string) string {
	switch {
	case ImagePinned(asked):
		return "agent image " + asked
	case pinned != "":
		return fmt.Sprintf("agent image %s (tag %s resolved by %s)", pinned, asked, by)
	case imageID == "":
		return fmt.Sprintf("agent image %s by its tag: no digest known (its node reported none)", asked)
	}
	return fmt.Sprintf("agent image %s by its tag: no digest known (its node reported %q, no digest of that repository)", asked, imageID)
}

// podImageRan names the agent image an existing agent pod runs (see
// imageRan).
func podImageRan(q *corev1.Pod, ctr string) string {
	spec := containerImage(q, ctr)
	asked := q.Annotations[AgentImageAnnotation]
	if asked == "" {
		asked = spec
	}
	id, _ := containerImageID(q, ctr)
	switch {
	case ImagePinned(spec) && spec != asked:
		return imageRan(asked, spec, "an earlier pod of this action", "")
	case !ImagePinned(spec):
		return imageRan(asked, PinnedFromImageID(asked, id), "the node of pod "+q.Name, id)
	}
	return imageRan(asked, "", "", id)
}

// awaitImageID waits until the kubelet reports what pod's container ctr
// runs (see containerImageID), at most wait, and returns the pod as last
// read; an error only when ctx ends.
func awaitImageID(ctx context.Context, pods corev1client.PodInterface, pod *corev1.Pod, ctr string, wait time.Duration) (*corev1.Pod, error) {
	deadline := time.Now().Add(wait)
	changes := &podChanges{pods: pods}
	defer changes.stop()
	for {
		if _, final := containerImageID(pod, ctr); final || !time.Now().Before(deadline) {
			return pod, nil
		}
		if err := changes.next(ctx, pod, time.Second); err != nil {
			return pod, err
		}
		got, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || (err == nil && got.UID != pod.UID):
			return pod, nil
		case err == nil:
			pod = got
		}
	}
}

// recordedImage finds, in receipts' details, the digest an agent pod of
// this action ran for tag image (as imageRan wrote it): "" when none is
// recorded.
func recordedImage(details []string, image string) string {
	for _, d := range details {
		for _, m := range recordedImageRE.FindAllStringSubmatch(d, -1) {
			if m[2] == image {
				return m[1]
			}
		}
	}
	return ""
}

// unresolvedRecorded reports whether receipts' details record an agent
// pod of this action that ran tag image with no digest known (as
// imageRan wrote it).
func unresolvedRecorded(details []string, image string) bool {
	for _, d := range details {
		if strings.Contains(d, "agent image "+image+" by its tag: no digest known") {
			return true
		}
	}
	return false
}

var recordedImageRE = regexp.MustCompile(`agent image (\S+@sha256:[0-9a-f]{64}) \(tag (\S+) resolved by `)
