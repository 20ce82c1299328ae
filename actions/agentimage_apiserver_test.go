package actions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/artifact/etcdgen"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/engine/registry"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// reportImageID does, once pod name is created in ns, what its node's
// kubelet would: reports its container running (or, failed, exited 1),
// with imageID.
func reportImageID(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name, imageID string, failed bool) <-chan error {
	t.Helper()
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type != watch.Added {
				continue
			}
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
				Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image, ImageID: imageID, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
			}}}
			if failed {
				p.Status.Phase = corev1.PodFailed
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "exited before reading the member"}}
			}
			_, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			done <- err
			return
		}
		done <- errors.New("the watch ended before the pod was created")
	}()
	return done
}

// agentImageNamespace makes a namespace with what agent pods need: its
// default service account, and a StatefulSet "etcd" whose engine
// container mounts volume data at /var/lib/etcd.
func agentImageNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface) (*corev1.Namespace, *appsv1.StatefulSet) {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "agent-image-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	// No controller manager runs to create it: pods need it.
	if _, err := cs.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "etcd"}
	sts, err := cs.AppsV1().StatefulSets(ns.Name).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd"},
		Spec: appsv1.StatefulSetSpec{ServiceName: "etcd", Replicas: ptr.To(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "etcd", Image: "registry.k8s.io/etcd:3.6.16-0", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
			}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns, sts
}

// restoreRig runs the restore-pod steps of restores of StatefulSet
// "etcd" (agentImageNamespace) on the real API server.
type restoreRig struct {
	t        *testing.T
	ctx      context.Context
	cs       kubernetes.Interface
	ns       *corev1.Namespace
	sts      *appsv1.StatefulSet
	cl       model.ClusterFacts
	opts     model.ActionOptions
	pods     corev1client.PodInterface
	warnings []string
}

// newRestoreRig skips t without the API server (-short).
func newRestoreRig(t *testing.T) *restoreRig {
	t.Helper()
	cfg := guardTestConfig()
	if cfg == nil {
		t.Skip("needs the API server (skipped with -short)")
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	ns, sts := agentImageNamespace(ctx, t, cs)
	_, cl, opts, _ := pinFixture()
	cl.Namespace, cl.UID = ns.Name, string(sts.UID)
	return &restoreRig{t: t, ctx: ctx, cs: cs, ns: ns, sts: sts, cl: cl, opts: opts, pods: cs.CoreV1().Pods(ns.Name)}
}

// run is a run of ledger entry entry (with its earlier receipts ledger)
// whose confirmed restore asked for agent image image.
func (g *restoreRig) run(entry, image string, ledger ...model.Receipt) *run {
	o := g.opts
	o.AgentImage = image
	r := &run{x: &Executor{Observer: &Observer{Engines: registry.Engines(), Client: g.cs}}, ns: g.ns.Name, name: "etcd", entryID: entry,
		o:         ExecOptions{DryRun: DryRunNone, Warn: func(m string) { g.warnings = append(g.warnings, m) }},
		confirmed: model.Decision{Intent: model.Intent{Action: model.ActionRestore, Options: o}}}
	r.last = status.Result{Observation: model.Observation{Cluster: g.cl}}
	if len(ledger) > 0 {
		r.last.Observation.Ledger = []model.LedgerEntry{{ID: entry, Action: model.ActionRestore, Receipts: ledger}}
	}
	return r
}

// restore runs r's restore pod of member, and returns the image its
// container was given, its agent-image annotation and the receipt's
// detail.
func (g *restoreRig) restore(r *run, member string) (image, annotation, detail string) {
	g.t.Helper()
	out, detail, err := r.runRestore(g.ctx, model.Step{Kind: model.StepRunRestore, Member: member, PeerURLs: []string{"http://" + member + ".etcd:2380"}}, false)
	if err != nil || out != model.OutcomeDone {
		g.t.Fatalf("restore pod of %s: %s, %v", member, out, err)
	}
	p, err := g.pods.Get(g.ctx, RestorePodName(member), metav1.GetOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	return p.Spec.Containers[0].Image, p.Annotations[AgentImageAnnotation], detail
}

// clear deletes the restore pods.
func (g *restoreRig) clear() {
	for _, m := range []string{"etcd-0", "etcd-1", "etcd-2"} {
		_ = g.pods.Delete(g.ctx, RestorePodName(m), metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	}
}

// Every restore pod of one action runs the same image bytes, and the
// receipts name them. On the real API server: with --agent-image a tag,
// the first restore pod runs the tag; once its node reports the digest
// it ran (imageID, as a kubelet writes it to the pod's status), the
// receipt names that digest and the next restore pod runs
// repo@sha256:…; a restore resumed after its pods are gone reads the
// digest back from its ledger entry's receipt. A digest given is run as
// is. A node that reports no digest (the sandbox's, reporting the tag)
// leaves the pods on the tag, and the action says so instead of
// pretending.
func TestRestorePodsRunTheDigestTheirFirstPodRan(t *testing.T) {
	g := newRestoreRig(t)
	ctx, cs := g.ctx, g.cs
	ns, sts, cl, pods := g.ns, g.sts, g.cl, g.pods

	const tag = "ghcr.io/hactl-dev/hactl:v1.2.3"
	digest := "sha256:" + strings.Repeat("ab", 32)
	pinned := "ghcr.io/hactl-dev/hactl@" + digest
	newRun, clear := g.run, g.clear
	restore := func(r *run, member string) (string, string) {
		t.Helper()
		image, _, detail := g.restore(r, member)
		return image, detail
	}

	// A tag: the first pod runs it, its node resolves it, the next pod
	// runs the digest.
	kubelet := reportImageID(ctx, t, cs, ns.Name, RestorePodName("etcd-0"), "docker-pullable://"+pinned, false)
	r := newRun("entry-1", tag)
	image0, detail0 := restore(r, "etcd-0")
	if err := <-kubelet; err != nil {
		t.Fatalf("reporting the first pod's imageID: %v", err)
	}
	if image0 != tag {
		t.Errorf("the first restore pod runs %q, want the tag %q (its digest is not known before it runs)", image0, tag)
	}
	if !strings.Contains(detail0, pinned) || !strings.Contains(detail0, tag) {
		t.Errorf("the first pod's receipt does not name the digest its node resolved the tag to: %s", detail0)
	}
	r.res.Receipts = append(r.res.Receipts, model.Receipt{ActionID: "entry-1", Step: model.StepRunRestore, Member: "etcd-0", Outcome: model.OutcomeDone, Detail: detail0})
	if image1, detail1 := restore(r, "etcd-1"); image1 != pinned || !strings.Contains(detail1, pinned) {
		t.Errorf("the second restore pod runs %q (receipt: %s), want %q: the digest the first pod ran", image1, detail1, pinned)
	}

	// Resumed with the pods gone: the ledger entry's receipt pins it.
	clear()
	r = newRun("entry-1", tag, model.Receipt{ActionID: "entry-1", Step: model.StepRunRestore, Member: "etcd-0", Outcome: model.OutcomeDone, Detail: detail0})
	if image2, detail2 := restore(r, "etcd-2"); image2 != pinned || !strings.Contains(detail2, pinned) {
		t.Errorf("a resumed restore's pod runs %q (receipt: %s), want %q: the digest its ledger entry recorded", image2, detail2, pinned)
	}

	// A digest given is run as is, by every pod.
	clear()
	given := "registry.example/hactl@sha256:" + strings.Repeat("cd", 32)
	r = newRun("entry-2", given)
	for _, m := range []string{"etcd-0", "etcd-1"} {
		if image, detail := restore(r, m); image != given || !strings.Contains(detail, given) {
			t.Errorf("with a digest given, the restore pod of %s runs %q (receipt: %s)", m, image, detail)
		}
	}

	// Resumed while the first pod of the tag has not started yet (the run
	// that created it died waiting for its node): the next pod runs the
	// digest that pod's node reports.
	clear()
	r = newRun("entry-4", tag)
	first, err := RestorePod(sts, cl, r.confirmed.Intent.Options, model.Step{Kind: model.StepRunRestore, Member: "etcd-0", PeerURLs: []string{"http://etcd-0.etcd:2380"}}, "entry-4")
	if err != nil {
		t.Fatal(err)
	}
	first.Annotations["hactl.dev/agent-image"] = tag
	if _, err := pods.Create(ctx, first, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubelet = reportImageID(ctx, t, cs, ns.Name, RestorePodName("etcd-0"), pinned, false)
	image1, detail1 := restore(r, "etcd-1")
	if err := <-kubelet; err != nil {
		t.Fatal(err)
	}
	if image1 != pinned || !strings.Contains(detail1, pinned) {
		t.Errorf("resumed with the first pod not started, the next restore pod runs %q (receipt: %s), want %q", image1, detail1, pinned)
	}

	// A node that reports no digest: the pods run the tag, and the
	// receipts and a warning say so.
	clear()
	g.warnings = nil
	kubelet = reportImageID(ctx, t, cs, ns.Name, RestorePodName("etcd-0"), tag, false)
	r = newRun("entry-3", tag)
	image0, detail0 = restore(r, "etcd-0")
	if err := <-kubelet; err != nil {
		t.Fatal(err)
	}
	image1, detail1 = restore(r, "etcd-1")
	if image0 != tag || image1 != tag {
		t.Errorf("with no digest reported, the restore pods run %q and %q, want the tag", image0, image1)
	}
	for _, d := range []string{detail0, detail1} {
		if !strings.Contains(d, "no digest known") || strings.Contains(d, "@sha256:") {
			t.Errorf("the receipt does not say the pod runs a tag with no digest known: %s", d)
		}
	}
	if len(g.warnings) != 1 || !strings.Contains(g.warnings[0], "no digest") {
		t.Errorf("warnings %q, want one saying no digest is known", g.warnings)
	}
}

// A capture pod's receipt names the image it ran as its node reported
// it: the wait hands back the pod as it last read it (its status, with
// the container's imageID), not as it was created. On the real API
// server, with the kubelet's report written to the pod's status.
func TestCapturePodRunReturnsThePodAsItRan(t *testing.T) {
	cfg := guardTestConfig()
	if cfg == nil {
		t.Skip("needs the API server (skipped with -short)")
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns, sts := agentImageNamespace(ctx, t, cs)
	lk, err := AcquireLock(ctx, cs, ns.Name, "etcd", LockOptions{Identity: NewIdentity(), Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release(context.Background())

	const tag = "ghcr.io/hactl-dev/hactl:v1.2.3"
	imageID := "docker-pullable://ghcr.io/hactl-dev/hactl@sha256:" + strings.Repeat("ef", 32)
	kubelet := reportImageID(ctx, t, cs, ns.Name, CapturePodName("etcd-0"), imageID, true)
	r := &run{x: &Executor{Observer: &Observer{Engines: registry.Engines(), Client: cs}}, ns: ns.Name, name: "etcd", lock: lk, o: ExecOptions{DryRun: DryRunNone}}
	p := &podCapture{r: r, client: cs, pc: etcdgen.Seeder{}, startTO: time.Hour, spec: CapturePodSpec{
		Capture:  SeedCapture{Generation: "g1", Member: "etcd-0", Cluster: model.ClusterFacts{Namespace: ns.Name, Name: "etcd", Engine: etcdengine.Name}},
		StoreURL: "s3://seeds/etcd", AgentImage: tag, Node: "node-1", Endpoint: "etcd-0.etcd:2379", ActionID: "entry-1",
	}}
	_, pod, err := p.run(ctx, sts)
	if kerr := <-kubelet; kerr != nil {
		t.Fatalf("reporting the capture pod's imageID: %v", kerr)
	}
	var fb *errFallback
	if !errors.As(err, &fb) {
		t.Fatalf("a capture pod that failed before reading the member: %v, want a fallback", err)
	}
	if pod == nil {
		t.Fatal("no capture pod handed back")
	}
	if cs := pod.Status.ContainerStatuses; len(cs) != 1 || cs[0].ImageID != imageID {
		t.Fatalf("the capture pod handed back (resourceVersion %s) does not carry its node's report (imageID %s): container statuses %+v", pod.ResourceVersion, imageID, cs)
	}
}
