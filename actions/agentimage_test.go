package actions

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/hactl-dev/hactl/model"
)

const (
	imgDigestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	imgDigestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// Only a reference that names its content by digest is pinned: a tag,
// the default tag, or a local image ID is not.
func TestImagePinned(t *testing.T) {
	for image, want := range map[string]bool{
		"ghcr.io/hactl-dev/hactl@" + imgDigestA:        true,
		"ghcr.io/hactl-dev/hactl:v1.2.3@" + imgDigestA: true,
		"localhost:5000/hactl@" + imgDigestA:           true,
		"busybox@" + imgDigestA:                        true,
		"ghcr.io/hactl-dev/hactl:v1.2.3":               false,
		"ghcr.io/hactl-dev/hactl":                      false,
		"localhost:5000/hactl":                         false,
		imgDigestA:                                     false,
		"ghcr.io/hactl-dev/hactl@sha256:abc":           false,
		"ghcr.io/hactl-dev/hactl@" + imgDigestA + "@x": false,
		"": false,
	} {
		if got := ImagePinned(image); got != want {
			t.Errorf("ImagePinned(%q) = %v, want %v", image, got, want)
		}
	}
}

// PinImage keeps the repository as written and swaps its tag for the
// digest.
func TestPinImage(t *testing.T) {
	for image, want := range map[string]string{
		"ghcr.io/hactl-dev/hactl:v1.2.3":           "ghcr.io/hactl-dev/hactl@" + imgDigestA,
		"ghcr.io/hactl-dev/hactl":                  "ghcr.io/hactl-dev/hactl@" + imgDigestA,
		"localhost:5000/hactl:e2e":                 "localhost:5000/hactl@" + imgDigestA,
		"localhost:5000/hactl":                     "localhost:5000/hactl@" + imgDigestA,
		"hactl:test":                               "hactl@" + imgDigestA,
		"ghcr.io/hactl-dev/hactl:v1@" + imgDigestB: "ghcr.io/hactl-dev/hactl@" + imgDigestA,
	} {
		if got, err := PinImage(image, imgDigestA); err != nil || got != want {
			t.Errorf("PinImage(%q) = %q, %v; want %q", image, got, err, want)
		}
	}
	if got, err := PinImage("hactl:test", "sha256:short"); err == nil {
		t.Errorf("PinImage to a malformed digest = %q, want an error", got)
	}
}

// The kubelet's imageID pins the image only when it names a digest of the
// same repository; a runtime's scheme prefix is allowed, Docker Hub names
// are compared normalized, and a local image ID alone, another
// repository's digest or nothing at all pin nothing.
func TestPinnedFromImageID(t *testing.T) {
	const tag = "ghcr.io/hactl-dev/hactl:v1.2.3"
	pinned := "ghcr.io/hactl-dev/hactl@" + imgDigestA
	for _, tc := range []struct{ image, imageID, want string }{
		{tag, "ghcr.io/hactl-dev/hactl@" + imgDigestA, pinned},
		{tag, "docker-pullable://ghcr.io/hactl-dev/hactl@" + imgDigestA, pinned},
		{"busybox:1.36", "docker.io/library/busybox@" + imgDigestA, "busybox@" + imgDigestA},
		{tag, imgDigestA, ""},
		{tag, "docker://" + imgDigestA, ""},
		{tag, "ghcr.io/someone-else/hactl@" + imgDigestA, ""},
		{tag, tag, ""},
		{tag, "", ""},
	} {
		if got := PinnedFromImageID(tc.image, tc.imageID); got != tc.want {
			t.Errorf("PinnedFromImageID(%q, %q) = %q, want %q", tc.image, tc.imageID, got, tc.want)
		}
	}
}

// A container's imageID is final once the container was created or the
// pod ended; before, an empty one means "not yet".
func TestContainerImageIDFinal(t *testing.T) {
	pod := func(phase corev1.PodPhase, cs ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: cs}}
	}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	for name, tc := range map[string]struct {
		pod   *corev1.Pod
		id    string
		final bool
	}{
		"no status yet":          {pod(corev1.PodPending), "", false},
		"creating":               {pod(corev1.PodPending, corev1.ContainerStatus{Name: "restore", State: waiting}), "", false},
		"reported":               {pod(corev1.PodPending, corev1.ContainerStatus{Name: "restore", State: waiting, ImageID: "x@" + imgDigestA}), "x@" + imgDigestA, true},
		"running, none reported": {pod(corev1.PodRunning, corev1.ContainerStatus{Name: "restore", State: running}), "", true},
		"failed before it ran":   {pod(corev1.PodFailed), "", true},
		"its image not pulled":   {pod(corev1.PodPending, corev1.ContainerStatus{Name: "restore", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}), "", true},
		"another container's":    {pod(corev1.PodPending, corev1.ContainerStatus{Name: "other", State: running, ImageID: "x@" + imgDigestB}), "", false},
	} {
		id, final := containerImageID(tc.pod, "restore")
		if id != tc.id || final != tc.final {
			t.Errorf("%s: containerImageID = %q, %v; want %q, %v", name, id, final, tc.id, tc.final)
		}
	}
}

// What a receipt says about the image is what a resumed restore reads
// back: the digest a tag was resolved to, for that tag only; a tag run
// without a digest is never read as one.
func TestRecordedImageReadsWhatReceiptsSay(t *testing.T) {
	const tag = "ghcr.io/hactl-dev/hactl:v1.2.3"
	pinned := "ghcr.io/hactl-dev/hactl@" + imgDigestA
	resolved := "created restore pod hactl-restore-etcd-0 running " + imageRan(tag, pinned, "the node of pod hactl-restore-etcd-0", "") + ": generation g1 into /var/lib/etcd/data on volume data-etcd-0"
	if !strings.Contains(resolved, pinned) || !strings.Contains(resolved, tag) {
		t.Fatalf("the receipt does not name the tag and its digest: %s", resolved)
	}
	if got := recordedImage([]string{"restore pod hactl-restore-etcd-1 exists already (phase Pending, agent image hactl:other)", resolved}, tag); got != pinned {
		t.Errorf("recordedImage = %q, want %q", got, pinned)
	}
	if got := recordedImage([]string{resolved}, "ghcr.io/hactl-dev/hactl:v9"); got != "" {
		t.Errorf("recordedImage for another tag = %q, want none", got)
	}
	unpinned := "created restore pod hactl-restore-etcd-0 running " + imageRan(tag, "", "", tag)
	if !strings.Contains(unpinned, "no digest known") {
		t.Errorf("a tag run without a digest: %s", unpinned)
	}
	if got := recordedImage([]string{unpinned}, tag); got != "" {
		t.Errorf("recordedImage of a tag run without a digest = %q, want none", got)
	}
	if !unresolvedRecorded([]string{unpinned}, tag) || unresolvedRecorded([]string{resolved}, tag) || unresolvedRecorded([]string{unpinned}, "ghcr.io/hactl-dev/hactl:v9") {
		t.Errorf("unresolvedRecorded does not tell a tag run without a digest (%q) from one resolved (%q)", unpinned, resolved)
	}
	given := "ghcr.io/hactl-dev/hactl@" + imgDigestB
	if got := imageRan(given, "", "", ""); got != "agent image "+given {
		t.Errorf("a digest given: %q", got)
	}
}

// What a receipt says an existing agent pod runs: the digest its node
// reported for the tag it was given, the digest it was created with (an
// earlier pod's), or the digest given; a tag its node reported no digest
// for is named a tag.
func TestPodImageRan(t *testing.T) {
	const tag = "ghcr.io/hactl-dev/hactl:v1.2.3"
	pinned := "ghcr.io/hactl-dev/hactl@" + imgDigestA
	pod := func(asked, spec, imageID string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "capture", Image: spec}}}}
		p.Name = "hactl-capture-etcd-0"
		if asked != "" {
			p.Annotations = map[string]string{AgentImageAnnotation: asked}
		}
		if imageID != "" {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "capture", ImageID: imageID}}
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		wants []string
	}{
		{"a tag its node resolved", pod(tag, tag, "docker-pullable://"+pinned), []string{"agent image " + pinned, "tag " + tag, "node of pod hactl-capture-etcd-0"}},
		{"a tag without the annotation", pod("", tag, pinned), []string{"agent image " + pinned, "tag " + tag}},
		{"the digest an earlier pod ran", pod(tag, pinned, ""), []string{"agent image " + pinned, "tag " + tag, "an earlier pod of this action"}},
		{"a digest given", pod(pinned, pinned, pinned), []string{"agent image " + pinned}},
		{"a tag, no digest reported", pod(tag, tag, tag), []string{"agent image " + tag + " by its tag: no digest known"}},
	} {
		got := podImageRan(tc.pod, "capture")
		for _, w := range tc.wants {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
	}
}

// The plan names the image its agent pods run, and for a tag how its
// digest is learned.
func TestAgentImagePlan(t *testing.T) {
	const tag = "ghcr.io/hactl-dev/hactl:v1.2.3"
	given := "ghcr.io/hactl-dev/hactl@" + imgDigestA
	if got := AgentImagePlan(given, model.ActionRestore); got != "agent image: "+given+" (by digest)" {
		t.Errorf("a digest: %q", got)
	}
	if got := AgentImagePlan(tag, model.ActionRestore); !strings.Contains(got, tag) || !strings.Contains(got, "every later restore pod") {
		t.Errorf("a restore's tag: %q", got)
	}
	if got := AgentImagePlan(tag, model.ActionSeed); !strings.Contains(got, tag) || !strings.Contains(got, "capture pod") || strings.Contains(got, "restore pod") {
		t.Errorf("a seed's tag: %q", got)
	}
	pinned := tag + "@" + imgDigestA
	if got := AgentImageResolved(tag, pinned, nil, model.ActionRestore); !strings.Contains(got, "agent image: "+pinned) || !strings.Contains(got, "its registry") {
		t.Errorf("a tag its registry pinned: %q", got)
	}
	if got := AgentImageResolved(tag, "", errors.New("no such host"), model.ActionSeed); !strings.Contains(got, "capture pod") || !strings.Contains(got, "no such host") {
		t.Errorf("a tag its registry did not pin: %q", got)
	}
}
