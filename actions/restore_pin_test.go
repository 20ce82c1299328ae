package actions

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
)

const (
	pinDigest      = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	otherPinDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

func pinFixture() (*appsv1.StatefulSet, model.ClusterFacts, model.ActionOptions, model.Step) {
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "etcd", UID: "uid-1"},
		Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "etcd", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
		}}}}},
	}
	cl := model.ClusterFacts{Namespace: "db", Name: "etcd", Engine: etcdengine.Name, Template: model.TemplateFacts{
		Container: "etcd", DataDir: "/var/lib/etcd/data", DataVolume: "data", DataMount: "/var/lib/etcd",
		InitialCluster: []model.InitialClusterEntry{{Name: "etcd-0", PeerURL: "http://etcd-0.etcd:2380"}},
	}}
	o := model.ActionOptions{Generation: "g1", SeedStore: "s3://seeds/etcd", AgentImage: "hactl:test",
		Source: &model.GenerationFacts{Generation: "g1", Engine: etcdengine.Name, ClusterID: "cdf818194e3a8c32", Revision: 4000, Digest: pinDigest}}
	s := model.Step{Kind: model.StepRunRestore, Member: "etcd-0", PeerURLs: []string{"http://etcd-0.etcd:2380"}}
	return sts, cl, o, s
}

// The restore pod carries the confirmed generation's digest, cluster ID
// and revision to the agent, a deadline and an agent timeout within it;
// a decision without a digest (or for another generation) gets no pod.
func TestRestorePodPinsTheConfirmedGeneration(t *testing.T) {
	sts, cl, o, s := pinFixture()
	pod, err := RestorePod(sts, cl, o, s, "entry-1")
	if err != nil {
		t.Fatal(err)
	}
	args := pod.Spec.Containers[0].Args
	for _, want := range []string{"--expect-digest=" + pinDigest, "--expect-cluster-id=cdf818194e3a8c32", "--expect-revision=4000",
		"--timeout=" + RestoreAgentTimeout.String(), "--restore-id=entry-1"} {
		if !slices.Contains(args, want) {
			t.Errorf("restore pod args lack %s: %q", want, args)
		}
	}
	if pod.Annotations[DigestAnnotation] != pinDigest {
		t.Errorf("digest annotation %q", pod.Annotations[DigestAnnotation])
	}
	d := pod.Spec.ActiveDeadlineSeconds
	if d == nil || time.Duration(*d)*time.Second != RestorePodDeadline || RestoreAgentTimeout >= RestorePodDeadline {
		t.Errorf("activeDeadlineSeconds %v, agent timeout %s: want %s and a timeout within it", d, RestoreAgentTimeout, RestorePodDeadline)
	}

	for name, mut := range map[string]func(o *model.ActionOptions){
		"no source":            func(o *model.ActionOptions) { o.Source = nil },
		"no digest":            func(o *model.ActionOptions) { o.Source.Digest = "" },
		"another generation's": func(o *model.ActionOptions) { o.Source.Generation = "g0" },
	} {
		_, _, o, _ := pinFixture()
		mut(&o)
		if pod, err := RestorePod(sts, cl, o, s, "entry-1"); err == nil || pod != nil {
			t.Errorf("%s: RestorePod = %v, %v; want no pod", name, pod, err)
		}
	}
}

type podList []corev1.Pod

func (l podList) List(context.Context, metav1.ListOptions) (*corev1.PodList, error) {
	return &corev1.PodList{Items: l}, nil
}

// A restore resumed after the generation was published again refuses to
// create a member's pod while another member's pod of the same action is
// pinned to the earlier digest: the members would hold different data.
func TestRestorePodRefusesMixedDigests(t *testing.T) {
	sts, cl, o, s := pinFixture()
	pod, err := RestorePod(sts, cl, o, s, "entry-1")
	if err != nil {
		t.Fatal(err)
	}
	sibling := func(action, digest string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hactl-restore-etcd-1", Namespace: "db",
			Labels:      map[string]string{RestoreLabel: "etcd", MemberLabel: "etcd-1"},
			Annotations: map[string]string{GenerationLabel: "g1", ActionLabel: action, DigestAnnotation: digest}}}
	}
	ctx := context.Background()
	if err := samePinnedGeneration(ctx, podList{sibling("entry-1", pinDigest)}, "etcd", pod); err != nil {
		t.Errorf("a sibling pinned to the same digest: %v", err)
	}
	if err := samePinnedGeneration(ctx, podList{sibling("entry-0", otherPinDigest)}, "etcd", pod); err != nil {
		t.Errorf("a leftover of another action: %v", err)
	}
	err = samePinnedGeneration(ctx, podList{sibling("entry-1", otherPinDigest)}, "etcd", pod)
	if err == nil || !strings.Contains(err.Error(), otherPinDigest) || !strings.Contains(err.Error(), pinDigest) || !strings.Contains(err.Error(), "published again") {
		t.Errorf("a sibling pinned to another digest: %v, want a refusal naming both digests", err)
	}
}
