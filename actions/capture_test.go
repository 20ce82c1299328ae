package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hactl-dev/hactl/artifact/etcdgen"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
)

// A capture pod runs on the source member's node and nowhere else (node
// affinity on the node's name, the template's tolerations), unprivileged
// and without an API token, gets the store credentials only through
// envFrom of the store Secret (never a value in its spec), mounts the
// members' TLS Secret only when the cluster names one, and asks the agent
// to refuse any other member or cluster.
func TestCapturePodSpec(t *testing.T) {
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "etcd", UID: "uid-1"},
		Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Tolerations:      []corev1.Toleration{{Key: "dedicated", Value: "etcd", Effect: corev1.TaintEffectNoSchedule}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
		}}},
	}
	for _, tls := range []bool{false, true} {
		cl := model.ClusterFacts{Namespace: "db", Name: "etcd", Engine: etcdengine.Name, ServiceName: "etcd-headless"}
		if tls {
			cl.TLSSecret = "etcd-client-tls"
		}
		m := model.Member{Name: "etcd-1", Pod: &model.PodFacts{Node: "node-b", IPs: []string{"10.0.0.7"}}}
		ep, sn, err := captureEndpoint(cl, m)
		if err != nil || ep != "etcd-1.etcd-headless.db.svc:2379" || sn != "etcd-1.etcd-headless.db.svc" {
			t.Fatalf("endpoint %q %q %v", ep, sn, err)
		}
		spec := CapturePodSpec{
			Capture:  SeedCapture{Generation: "g1", Cluster: cl, Member: "etcd-1", MemberID: "abc", ClusterID: "def", CreatedBy: "kubectl-hactl test"},
			StoreURL: "s3://seeds/etcd?endpoint=https://s3.example", StoreSecret: "store-creds", AgentImage: "example/hactl:1",
			Node: "node-b", Endpoint: ep, ServerName: sn, TLS: tls, ActionID: "seed-1",
		}
		pod, err := CapturePod(sts, spec, etcdgen.Seeder{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Name != "hactl-capture-etcd-1" || pod.Labels[CaptureLabel] != "etcd" || pod.Annotations[ActionLabel] != "seed-1" || pod.Labels[EngineLabelKey] != "etcd" {
			t.Fatalf("metadata: %+v", pod.ObjectMeta)
		}
		if got := nodeOfAffinity(pod); got != "node-b" || pod.Spec.NodeName != "" {
			t.Fatalf("placed on %q (nodeName %q), want node-b through the scheduler", got, pod.Spec.NodeName)
		}
		if len(pod.Spec.Tolerations) != 1 || pod.Spec.ImagePullSecrets[0].Name != "pull" {
			t.Fatalf("tolerations %v, pull secrets %v", pod.Spec.Tolerations, pod.Spec.ImagePullSecrets)
		}
		ps, c := pod.Spec, pod.Spec.Containers[0]
		if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken || ps.RestartPolicy != corev1.RestartPolicyNever ||
			ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot || *c.SecurityContext.AllowPrivilegeEscalation ||
			!*c.SecurityContext.ReadOnlyRootFilesystem || ps.ActiveDeadlineSeconds == nil {
			t.Fatalf("pod is not locked down: %+v / %+v", ps, c.SecurityContext)
		}
		if len(c.Env) != 0 || len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef.Name != "store-creds" {
			t.Fatalf("credentials: env %v, envFrom %v", c.Env, c.EnvFrom)
		}
		args := strings.Join(c.Args, " ")
		for _, want := range []string{"--endpoint=etcd-1.etcd-headless.db.svc:2379", "--expect-member-id=abc", "--expect-cluster-id=def", "--generation=g1", "-o json"} {
			if !strings.Contains(args, want) {
				t.Errorf("args %q lack %q", args, want)
			}
		}
		mounted := slices.ContainsFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool { return v.MountPath == captureTLSDir && v.ReadOnly })
		if mounted != tls || strings.Contains(args, "--tls-dir") != tls || strings.Contains(args, "--server-name=etcd-1.etcd-headless.db.svc") != tls {
			t.Fatalf("tls %v: mounts %v, args %q", tls, c.VolumeMounts, args)
		}
		// The image's small capture binary has the s3:// driver only: other
		// stores are captured by kubectl-hactl, with the same arguments.
		if !slices.Equal(c.Command, []string{"hactl-capture"}) {
			t.Fatalf("an s3:// store's capture pod runs %q, want hactl-capture", c.Command)
		}
		for _, store := range []string{"gs://seeds/etcd", "azblob://seeds/etcd"} {
			spec.StoreURL = store
			pod, err := CapturePod(sts, spec, etcdgen.Seeder{})
			if err != nil {
				t.Fatal(err)
			}
			if c := pod.Spec.Containers[0]; !slices.Equal(c.Command, []string{"kubectl-hactl", "agent", "capture"}) || !slices.Contains(c.Args, "--store="+store) {
				t.Fatalf("%s: the capture pod runs %q %q, want kubectl-hactl agent capture", store, c.Command, c.Args)
			}
		}
	}
	// No node yet: no pod, a reason to fall back.
	if _, err := CapturePod(sts, CapturePodSpec{AgentImage: "x", Capture: SeedCapture{Member: "etcd-2"}}, etcdgen.Seeder{}); err == nil {
		t.Fatal("a capture pod without a node")
	}
}

// A pod the scheduler refused, or whose image cannot be pulled, will not
// start by itself: auto falls back at once instead of waiting.
func TestCapturePodNotStarting(t *testing.T) {
	unsched := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes"}}}}
	pull := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}}}
	pending := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}
	if notStarting(unsched) == "" || notStarting(pull) == "" || notStarting(pending) != "" {
		t.Fatalf("%q %q %q", notStarting(unsched), notStarting(pull), notStarting(pending))
	}
	if scheduledOrTried(pending) || !scheduledOrTried(unsched) {
		t.Fatal("scheduledOrTried")
	}
	// An agent image from before hactl-capture: the reason says so.
	old := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "CreateContainerError", Message: `exec: "hactl-capture": executable file not found in $PATH`}}}}}}
	if why := notStarting(old); !strings.Contains(why, "the agent image has no hactl-capture") || !strings.Contains(why, "--agent-image") {
		t.Fatalf("an image without hactl-capture: %q", why)
	}
	if why := notStarting(pull); strings.Contains(why, "agent image has no") {
		t.Fatalf("an image pull failure blamed on the image's age: %q", why)
	}
	for in, want := range map[string]CaptureMode{"": CaptureAuto, "auto": CaptureAuto, "pod": CaptureInPod, "port-forward": CapturePortForward} {
		if got, err := ParseCaptureMode(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseCaptureMode("ssh"); err == nil {
		t.Error("--capture ssh accepted")
	}
}

// A capture pod is adopted only by a run that would create the very same
// pod: another store, image or credentials' Secret changes its digest.
func TestCaptureSpecHashTellsPodsApart(t *testing.T) {
	base := corev1.Container{Image: "example/hactl:1", Command: []string{"hactl-capture"}, Args: []string{"--store=s3://a/p", "--generation=g"},
		EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}}
	h := captureSpecHash(base)
	if h != captureSpecHash(*base.DeepCopy()) {
		t.Fatal("the digest of the same container differs")
	}
	for name, edit := range map[string]func(c *corev1.Container){
		"store":   func(c *corev1.Container) { c.Args[0] = "--store=s3://b/p" },
		"image":   func(c *corev1.Container) { c.Image = "example/hactl:2" },
		"secret":  func(c *corev1.Container) { c.EnvFrom[0].SecretRef.Name = "other" },
		"command": func(c *corev1.Container) { c.Command = []string{"kubectl-hactl", "agent", "capture"} },
	} {
		c := base.DeepCopy()
		edit(c)
		if captureSpecHash(*c) == h {
			t.Errorf("another %s, the same digest", name)
		}
	}
}

// The pod route is refused, with the reason auto prints, before anything
// is asked of the API server: a store on this machine, a store URL
// holding a credential (a pod spec would show it), credentials that are
// not in a Secret; --capture port-forward never tries.
func TestCapturePodRouteRefusals(t *testing.T) {
	r := &run{ns: "db", name: "etcd"}
	ctx := context.Background()
	for _, c := range []struct {
		mode        CaptureMode
		url, secret string
		want        string
	}{
		{CapturePortForward, "s3://b/p", "creds", "--capture port-forward"},
		{CaptureAuto, "file:///var/backups", "", "file://"},
		{CaptureAuto, "s3://b/p?endpoint=https://s3.example&secret_access_key=abc", "creds", "credential"},
		{CaptureAuto, "s3://b/p", "", "not from a Secret"},
		{CaptureAuto, "", "creds", "URL is not known"},
	} {
		err := r.capturePodRoute(ctx, c.mode, c.url, c.secret)
		var fb *errFallback
		if !errors.As(err, &fb) || !strings.Contains(fb.reason, c.want) {
			t.Errorf("%s %q: %v, want a fallback saying %q", c.mode, c.url, err, c.want)
		}
		if strings.Contains(fmt.Sprint(err), "abc") {
			t.Errorf("the reason shows the URL's secret: %v", err)
		}
	}
}

// The wait for a capture pod wakes on the pod's change, not on its poll:
// with an interval far longer than the test, only the watch on that pod
// can end the wait once the pod's status changes, and the loop then reads
// the new phase itself.
func TestCapturePodWaitWakesOnItsChange(t *testing.T) {
	base := guardTestConfig()
	if base == nil {
		t.Skip("needs the API server (skipped with -short)")
	}
	cs := testenv.Clientset(t, base)
	ctx := context.Background()
	nso, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "capture-wait-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.CoreV1().Namespaces().Delete(ctx, nso.Name, metav1.DeleteOptions{})
	ns := nso.Name
	// No controller manager here: the pods' service account by hand.
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mk := func(name string) *corev1.Pod {
		p, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "capture", Image: "example/hactl:1"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	pod := mk("hactl-capture-etcd-0")
	changes := &podChanges{pods: cs.CoreV1().Pods(ns)}
	defer changes.stop()
	changes.open(ctx, pod)
	if changes.w == nil {
		t.Fatal("no watch on the capture pod")
	}
	woke := make(chan error, 1)
	go func() { woke <- changes.next(ctx, pod, time.Hour) }()
	pod.Status.Phase = corev1.PodSucceeded
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-woke:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the capture pod succeeded and the wait (an hour's interval) did not wake")
	}

	// A user who may not watch pods: the watch is refused once and never
	// asked for again; the wait sleeps its interval instead.
	cfg := rest.CopyConfig(base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "no-watch"}
	denied := &podChanges{pods: kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods(ns)}
	for range 2 {
		if err := denied.next(ctx, pod, time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if !denied.refused || denied.w != nil {
		t.Fatalf("after a refused watch: refused %v, watch %v", denied.refused, denied.w)
	}
}
