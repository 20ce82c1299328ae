package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/model"
)

// restoreProgress draws, on a terminal, how far a restore's pods are while
// the CLI waits for them: the bytes each pod's agent reports in its log
// (AgentProgress lines), a pod that succeeded counting in full. Without
// permission to read pod logs it counts finished pods only.
type restoreProgress struct {
	client  kubernetes.Interface
	ns      string
	cluster string
	// perPod is the generation's size; pods how many restore pods run.
	perPod int64
	pods   int
	w      io.Writer
	on     bool
	every  time.Duration

	mu      sync.Mutex
	bar     *progressBar
	cancel  context.CancelFunc
	ended   chan struct{}
	noLogs  bool
	created int
	best    int64
}

// most keeps the bar from going back when a log read fails or a pod's
// last lines are its result document rather than a progress line.
func (p *restoreProgress) most(n int64) int64 {
	p.best = max(p.best, n)
	return p.best
}

func newRestoreProgress(client kubernetes.Interface, ns, cluster string, perPod int64, pods int, w io.Writer, on bool) *restoreProgress {
	return &restoreProgress{client: client, ns: ns, cluster: cluster, perPod: perPod, pods: pods, w: w, on: on && perPod > 0 && pods > 0, every: time.Second}
}

// observe starts the bar once the last restore pod is created and ends it
// with the next receipt (the executor saw them all succeed, or stopped).
func (p *restoreProgress) observe(ctx context.Context, rc model.Receipt) {
	if p == nil || !p.on || rc.DryRun != "" {
		return
	}
	if rc.Step != model.StepRunRestore {
		p.stop()
		return
	}
	// Once every restore pod exists (each has its receipt, "already"
	// on a rerun), the wait for them begins.
	p.mu.Lock()
	p.created++
	all := p.created >= p.pods
	p.mu.Unlock()
	if all {
		p.start(ctx)
	}
}

func (p *restoreProgress) start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		return
	}
	p.bar = newProgressBar(p.w, true, "restore", p.perPod*int64(p.pods))
	ctx, p.cancel = context.WithCancel(ctx)
	p.ended = make(chan struct{})
	go p.poll(ctx, p.bar, p.ended)
}

// stop ends the polling and the bar's line; safe to call more than once.
func (p *restoreProgress) stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	bar, cancel, ended := p.bar, p.cancel, p.ended
	p.cancel = nil
	p.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-ended
	// The last count: the pods as they ended.
	ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if n, ok := p.transferred(ctx); ok {
		bar.update(p.most(n))
	}
	bar.finish()
}

func (p *restoreProgress) poll(ctx context.Context, bar *progressBar, ended chan struct{}) {
	defer close(ended)
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		if n, ok := p.transferred(ctx); ok {
			bar.update(p.most(n))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// transferred sums what the cluster's restore pods report.
func (p *restoreProgress) transferred(ctx context.Context) (int64, bool) {
	list, err := p.client.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{LabelSelector: actions.RestoreLabel + "=" + p.cluster})
	if err != nil {
		return 0, false
	}
	var sum int64
	for i := range list.Items {
		pod := &list.Items[i]
		switch pod.Status.Phase {
		case corev1.PodSucceeded:
			sum += p.perPod
		case corev1.PodRunning:
			sum += min(p.fromLog(ctx, pod.Name), p.perPod)
		}
	}
	return sum, true
}

// fromLog is the last byte count in a restore pod's log (0 when there is
// none yet or logs may not be read).
func (p *restoreProgress) fromLog(ctx context.Context, pod string) int64 {
	if p.noLogs {
		return 0
	}
	tail := int64(20)
	b, err := p.client.CoreV1().Pods(p.ns).GetLogs(pod, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(ctx)
	if apierrors.IsForbidden(err) {
		p.noLogs = true
	}
	if err != nil {
		return 0
	}
	return lastAgentProgress(b)
}

// lastAgentProgress finds the last AgentProgress line in a log.
func lastAgentProgress(log []byte) int64 {
	var n int64
	sc := bufio.NewScanner(bytes.NewReader(log))
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte(`{"kind":"`+agentProgressKind)) {
			continue
		}
		var ap AgentProgress
		if json.Unmarshal(line, &ap) == nil {
			n = ap.Bytes
		}
	}
	return n
}

// restoreProgress is a restore's progress bar: on when stderr is a
// terminal and stdout carries no document (-o json|yaml), for a run that
// changes something.
func (o *ActionOptions) restoreProgress(d model.Decision, dry actions.DryRun) *restoreProgress {
	if o.Action != model.ActionRestore || dry != actions.DryRunNone {
		return nil
	}
	pods := 0
	for _, s := range d.Steps {
		if s.Kind == model.StepRunRestore {
			pods++
		}
	}
	return newRestoreProgress(o.client, o.Namespace, o.Cluster, o.restoreBytes, pods, o.ErrOut, o.errIsTTY && o.Output == "")
}
