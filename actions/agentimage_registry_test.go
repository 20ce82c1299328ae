package actions

import (
	"context"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/internal/ocitest"
	"github.com/hactl-dev/hactl/model"
)

// A tag is pinned by its registry to the digest it names now; a digest is
// not asked about; a registry that cannot answer is an error that says
// which registry and tag.
func TestResolveAgentImageAsksItsRegistry(t *testing.T) {
	reg := ocitest.Start(t)
	ctx := context.Background()
	tag, first := reg.Push(t, "hactl/agent:v1")
	got, err := ResolveAgentImage(ctx, tag)
	if err != nil || got != tag+"@"+first {
		t.Fatalf("ResolveAgentImage(%s) = %q, %v; want %s@%s", tag, got, err, tag, first)
	}
	if p, ok := pinnedTag(got); !ok || p != tag || !ImagePinned(got) {
		t.Errorf("the pin %q does not keep its tag for the reader (%q, %v)", got, p, ok)
	}

	// The tag moved: the registry's answer now.
	_, second := reg.Push(t, "hactl/agent:v1")
	if second == first {
		t.Fatal("two random images with one digest")
	}
	if got, err := ResolveAgentImage(ctx, tag); err != nil || got != tag+"@"+second {
		t.Errorf("after the tag moved: %q, %v; want the digest %s", got, err, second)
	}

	// A digest is used as is, with no request.
	before := reg.Requests()
	given := reg.Host + "/hactl/agent@" + first
	if got, err := ResolveAgentImage(ctx, given); err != nil || got != given {
		t.Errorf("a digest given: %q, %v", got, err)
	}
	if n := reg.Requests() - before; n != 0 {
		t.Errorf("resolving a digest sent %d request(s) to its registry", n)
	}

	// A tag the registry does not have, and a registry that is gone.
	if got, err := ResolveAgentImage(ctx, reg.Host+"/hactl/agent:v9"); err == nil || !strings.Contains(err.Error(), "v9") {
		t.Errorf("an unknown tag: %q, %v; want an error naming the tag", got, err)
	}
	gone := ocitest.Start(t)
	gone.Close()
	if got, err := ResolveAgentImage(ctx, gone.Host+"/hactl/agent:v1"); err == nil || !strings.Contains(err.Error(), gone.Host) {
		t.Errorf("a registry that is gone: %q, %v; want an error naming it", got, err)
	}
}

func TestPinnedTag(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	for image, want := range map[string]string{
		"ghcr.io/hactl-dev/hactl:v1@" + d:      "ghcr.io/hactl-dev/hactl:v1",
		"127.0.0.1:5000/hactl/agent:v1@" + d:   "127.0.0.1:5000/hactl/agent:v1",
		"ghcr.io/hactl-dev/hactl@" + d:         "",
		"127.0.0.1:5000/hactl/agent@" + d:      "",
		"ghcr.io/hactl-dev/hactl:v1":           "",
		"ghcr.io/hactl-dev/hactl":              "",
		"ghcr.io/hactl-dev/hactl:v1@sha256:ab": "",
	} {
		got, ok := pinnedTag(image)
		if got != want || ok != (want != "") {
			t.Errorf("pinnedTag(%q) = %q, %v; want %q", image, got, ok, want)
		}
	}
}

// Restore pods run the agent image by digest from the first pod on, when
// the tag's registry answers: on the real API server, with a real
// registry, and no node reporting anything. Every pod of one action runs
// what its first ran, even after the tag moved, and a plan's pin (the tag
// as its registry named it when the plan was made) is run as shown unless
// an earlier pod of the action ran the tag.
func TestRestorePodsRunTheRegistrysDigestFromTheFirst(t *testing.T) {
	g := newRestoreRig(t)
	reg := ocitest.Start(t)
	tag, d := reg.Push(t, "hactl/agent:v1")
	first := tag + "@" + d
	receipt := func(entry, member, detail string) model.Receipt {
		return model.Receipt{ActionID: entry, Step: model.StepRunRestore, Member: member, Outcome: model.OutcomeDone, Detail: detail}
	}
	pushed := func() string {
		_, d := reg.Push(t, "hactl/agent:v1")
		return tag + "@" + d
	}

	// A tag, resolved at the first pod: no node report needed.
	r := g.run("entry-1", tag)
	image0, asked0, detail0 := g.restore(r, "etcd-0")
	if image0 != first || asked0 != tag || !strings.Contains(detail0, first) {
		t.Fatalf("the first restore pod runs %q (annotation %q, receipt %s), want %q: its registry's digest", image0, asked0, detail0, first)
	}
	// The tag moves: the action's next pods still run what its first ran.
	moved := pushed()
	r.res.Receipts = append(r.res.Receipts, receipt("entry-1", "etcd-0", detail0))
	if image1, _, detail1 := g.restore(r, "etcd-1"); image1 != first {
		t.Errorf("after the tag moved, the second restore pod runs %q (receipt %s), want the first pod's %q", image1, detail1, first)
	}

	// A plan pinned the tag to what it names now: the pods run that, even
	// when the tag moved again and the registry is gone.
	g.clear()
	r = g.run("entry-2", moved)
	pushed()
	reg.Close()
	if image, asked, detail := g.restore(r, "etcd-0"); image != moved || asked != tag || !strings.Contains(detail, moved) {
		t.Errorf("a plan's pin: the restore pod runs %q (annotation %q, receipt %s), want %q", image, asked, detail, moved)
	}

	// A rerun of entry-1 whose plan pinned the tag after it moved: the
	// entry's earlier pod ran the first digest, and so does this one.
	g.clear()
	r = g.run("entry-1", moved, receipt("entry-1", "etcd-0", detail0))
	if image, _, detail := g.restore(r, "etcd-2"); image != first {
		t.Errorf("a rerun pinned to the moved tag runs %q (receipt %s), want %q: what the action's earlier pod ran", image, detail, first)
	}
}
