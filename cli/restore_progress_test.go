package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
)

// The restore bar counts, from the real API server, a restore pod that
// succeeded in full and one still running by what its log reports (no
// kubelet here: nothing), ignores other clusters' restore pods, starts
// only once every restore pod is created and ends its line with the next
// receipt.
func TestRestoreProgressCountsTheClustersPods(t *testing.T) {
	testenv.SkipShort(t)
	ctx := context.Background()
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	pod := func(name, cluster string, phase corev1.PodPhase) {
		t.Helper()
		p, err := admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{actions.RestoreLabel: cluster}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "x"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = phase
		if _, err := admin.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod("hactl-restore-etcd-0", "etcd", corev1.PodSucceeded)
	pod("hactl-restore-etcd-1", "etcd", corev1.PodRunning)
	pod("hactl-restore-other-0", "other", corev1.PodSucceeded)

	var w bytes.Buffer
	p := newRestoreProgress(admin, ns, "etcd", 1000, 2, &w, true)
	if n, ok := p.transferred(ctx); !ok || n != 1000 {
		t.Fatalf("transferred = %d, %v; want 1000 (one pod done, one running with no log)", n, ok)
	}
	p.observe(ctx, model.Receipt{Step: model.StepRunRestore})
	if p.bar != nil {
		t.Fatal("the bar started before every restore pod was created")
	}
	p.observe(ctx, model.Receipt{Step: model.StepRunRestore})
	if p.bar == nil {
		t.Fatal("the bar did not start once every restore pod was created")
	}
	p.observe(ctx, model.Receipt{Step: model.StepAwaitRestore})
	p.stop()
	out := w.String()
	if !strings.Contains(out, "restore") || !strings.Contains(out, "(50%)") || !strings.HasSuffix(out, "\n") {
		t.Fatalf("bar output %q: want the restore at 50%% and a finished line", out)
	}

	// Off (no terminal, or -o json): nothing is drawn.
	var quiet bytes.Buffer
	q := newRestoreProgress(admin, ns, "etcd", 1000, 2, &quiet, false)
	q.observe(ctx, model.Receipt{Step: model.StepRunRestore})
	q.observe(ctx, model.Receipt{Step: model.StepRunRestore})
	q.stop()
	if quiet.Len() != 0 {
		t.Fatalf("a restore progress that is off wrote %q", quiet.String())
	}
}
