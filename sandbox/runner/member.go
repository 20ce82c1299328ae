package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// member is one incarnation (one pod UID) of a cluster member.
type member struct {
	r             *Runner
	key, ns, name string
	uid           types.UID
	addrs         MemberAddrs
	prev          *member // the previous incarnation: its processes go first
	podDir        string

	changed     chan struct{} // the pod or a container changed
	terminating chan struct{} // closed once the pod is being deleted or gone
	done        chan struct{}
	termOnce    sync.Once

	mu            sync.Mutex
	pod           *corev1.Pod
	gone          bool // removed from the API
	volumes       map[string]string
	claimDirs     []string
	dataDirs      []string // hostPath directories holding an etcd data dir (wiped when there is no claim)
	writable      []string // host dirs of volumes the containers write (claims, emptyDirs)
	identityNoted bool
	containers    []*container
	logFiles      map[string][2]string
	patched       *corev1.PodStatus
}

func newMember(r *Runner, pod *corev1.Pod, addrs MemberAddrs, prev *member) *member {
	return &member{
		r: r, key: pod.Namespace + "/" + pod.Name, ns: pod.Namespace, name: pod.Name, uid: pod.UID,
		addrs: addrs, prev: prev,
		podDir:      filepath.Join(r.o.Dir, "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID)),
		changed:     make(chan struct{}, 1),
		terminating: make(chan struct{}),
		done:        make(chan struct{}),
		pod:         pod,
		logFiles:    map[string][2]string{},
	}
}

func (m *member) poke() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

func (m *member) update(pod *corev1.Pod) {
	m.mu.Lock()
	m.pod = pod
	m.mu.Unlock()
	if pod.DeletionTimestamp != nil {
		m.termOnce.Do(func() { close(m.terminating) })
	}
	m.poke()
}

func (m *member) removed() {
	m.mu.Lock()
	m.gone = true
	m.mu.Unlock()
	m.termOnce.Do(func() { close(m.terminating) })
	m.poke()
}

func (m *member) latest() *corev1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pod
}

func (m *member) logf(format string, args ...any) {
	m.r.o.Logf("runner: %s: "+format, append([]any{m.key}, args...)...)
}

// grace is how long a stopping container gets after SIGTERM.
func (m *member) grace() time.Duration {
	select {
	case <-m.r.shutdown:
		// The whole sandbox is going: no member needs a clean hand-over.
		return 2 * time.Second
	default:
	}
	pod := m.latest()
	g := int64(30)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.DeletionGracePeriodSeconds != nil {
		g = *pod.DeletionGracePeriodSeconds
	}
	if g > 30 {
		g = 30
	}
	return time.Duration(g) * time.Second
}

// stopping is closed when the member's processes must go: the pod is
// being deleted, or the runner stops.
func (m *member) stopping() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		select {
		case <-m.terminating:
		case <-m.r.shutdown:
		case <-m.done:
			return
		}
		close(ch)
	}()
	return ch
}

// run is the member's life: wait for the previous incarnation to be gone,
// for scheduling and volumes; run the containers; report status; on
// deletion stop everything and finish the delete.
func (m *member) run() {
	defer close(m.done)
	stop := m.stopping()
	if m.prev != nil {
		select {
		case <-m.prev.done:
		case <-stop:
		}
	}
	if !m.prepare(stop) {
		m.finish()
		return
	}
	pod := m.latest()
	for i := range pod.Spec.Containers {
		c := newContainer(m, pod.Spec.Containers[i])
		m.mu.Lock()
		m.containers = append(m.containers, c)
		m.mu.Unlock()
		go c.run(stop)
	}
	ensureTick := time.NewTicker(10 * time.Second)
	defer ensureTick.Stop()
	m.ensureKwokObjects()
	for {
		m.writeStatus()
		select {
		case <-stop:
			for _, c := range m.containers {
				<-c.done
			}
			m.finish()
			return
		case <-m.changed:
		case <-ensureTick.C:
			m.ensureKwokObjects()
		}
	}
}

// prepare waits until the pod is scheduled and every volume it mounts has
// a host directory. It reports false if the member must stop first.
func (m *member) prepare(stop <-chan struct{}) bool {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		pod := m.latest()
		if pod.Spec.NodeName != "" {
			vols, claims, writable, missing := m.resolveVolumes(pod)
			if missing == "" {
				m.mu.Lock()
				m.volumes, m.claimDirs, m.writable = vols, claims, writable
				m.dataDirs = dataDirs(pod, vols)
				m.mu.Unlock()
				return true
			}
			m.writeStatus()
		}
		select {
		case <-stop:
			return false
		case <-m.changed:
		case <-tick.C:
		}
	}
}

// resolveVolumes maps the pod's volumes to host directories: a claim to
// its volume's directory, a hostPath to its path under the node's
// directory (Options.NodeDir), everything else to a directory of the
// pod's own (ConfigMaps, Secrets and projected volumes filled with their
// files as volumeFiles lays them out; a projected volume's files with the
// mount paths of the container that mounts it substituted, see
// mountRewriter). writable are the directories of claims and of every
// other volume but ConfigMaps, Secrets, projected volumes and hostPaths
// (the node's files, which a kubelet does not make the pod's either).
// missing names a claim that is not bound yet, a hostPath whose type
// check fails, or a volume whose ConfigMap or Secret is missing.
func (m *member) resolveVolumes(pod *corev1.Pod) (vols map[string]string, claims, writable []string, missing string) {
	vols = map[string]string{}
	var filled []corev1.Volume
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			d := m.r.o.HostDir(pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			if d == "" {
				return nil, nil, nil, v.PersistentVolumeClaim.ClaimName
			}
			vols[v.Name] = d
			claims = append(claims, d)
			writable = append(writable, d)
			continue
		}
		if v.HostPath != nil && m.r.o.NodeDir != nil && pod.Spec.NodeName != "" {
			d, err := hostPathDir(m.r.o.NodeDir(pod.Spec.NodeName), v.HostPath)
			if err != nil {
				m.logf("volume %s: %v", v.Name, err)
				return nil, nil, nil, v.Name
			}
			vols[v.Name] = d
			continue
		}
		d := filepath.Join(m.podDir, "volumes", v.Name)
		_ = os.MkdirAll(d, 0o755)
		if v.ConfigMap != nil || v.Secret != nil || v.Projected != nil {
			filled = append(filled, v)
		} else {
			writable = append(writable, d)
		}
		vols[v.Name] = d
	}
	obj := objects{ctx: m.r.ctx, kc: m.r.o.Kube, ns: pod.Namespace}
	for _, v := range filled {
		files, err := volumeFiles(v, obj)
		if err != nil {
			m.logf("volume %s: %v", v.Name, err)
			return nil, nil, nil, v.Name
		}
		var rewrite func(string) string
		c := mounting(pod, v.Name)
		if v.Projected != nil && c != nil {
			rewrite = mountRewriter(c, vols)
		}
		var owner *identity
		if c != nil && os.Geteuid() == 0 {
			if id, ok := containerIdentity(pod, c); ok {
				owner = &id
			}
		}
		if err := writeVolumeFiles(vols[v.Name], files, rewrite, owner); err != nil {
			m.logf("volume %s: %v", v.Name, err)
			return nil, nil, nil, v.Name
		}
	}
	return vols, claims, writable, ""
}

// finish deletes the pod for good once its processes are gone (as the
// kubelet does after a graceful delete), unless it is already gone or the
// runner is only shutting down.
func (m *member) finish() {
	select {
	case <-m.r.shutdown:
		return
	default:
	}
	m.mu.Lock()
	gone := m.gone
	m.mu.Unlock()
	if gone {
		return
	}
	zero := int64(0)
	uid := m.uid
	ctx, cancel := context.WithTimeout(m.r.ctx, 30*time.Second)
	defer cancel()
	err := m.r.o.Kube.CoreV1().Pods(m.ns).Delete(ctx, m.name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		m.logf("finishing delete: %v", err)
	}
}

func (m *member) ensureKwokObjects() {
	pod := m.latest()
	ctx, cancel := context.WithTimeout(m.r.ctx, 10*time.Second)
	defer cancel()
	if err := ensureObject(ctx, m.r.o.Dynamic, portForwardGVR, portForwardObject(pod, m.addrs.ForwardAddress)); err != nil {
		m.logf("port-forward: %v", err)
	}
	m.mu.Lock()
	files := map[string][2]string{}
	for k, v := range m.logFiles {
		files[k] = v
	}
	m.mu.Unlock()
	if len(files) > 0 {
		if err := ensureObject(ctx, m.r.o.Dynamic, logsGVR, logsObject(pod, files)); err != nil {
			m.logf("logs: %v", err)
		}
	}
}

// writeStatus patches the pod's status if it changed.
func (m *member) writeStatus() {
	pod := m.latest()
	if pod.Spec.NodeName == "" {
		return
	}
	m.mu.Lock()
	views := make([]containerView, 0, len(pod.Spec.Containers))
	byName := map[string]*container{}
	for _, c := range m.containers {
		byName[c.spec.Name] = c
	}
	for _, cs := range pod.Spec.Containers {
		if c, ok := byName[cs.Name]; ok {
			views = append(views, c.view())
		} else {
			views = append(views, containerView{Name: cs.Name, Image: cs.Image})
		}
	}
	prev := m.patched
	m.mu.Unlock()
	base := pod.Status
	podIP, hostIP := m.ips(pod)
	st := podStatus(base, views, podIP, hostIP, time.Now())
	if prev != nil && reflect.DeepEqual(*prev, st) {
		return
	}
	body, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		m.logf("status: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(m.r.ctx, 10*time.Second)
	defer cancel()
	_, err = m.r.o.Kube.CoreV1().Pods(m.ns).Patch(ctx, m.name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if err != nil {
		if !apierrors.IsNotFound(err) {
			m.logf("status: %v", err)
		}
		return
	}
	m.mu.Lock()
	m.patched = &st
	m.mu.Unlock()
}

// ips are the pod IP and host IP the pod reports: a pod's own IP
// (10.244.x.n, never dialled) on kwok's node IP; a hostNetwork pod has its
// node's IP as both, for which the member's own address stands (what its
// flags name as the node's IP).
func (m *member) ips(pod *corev1.Pod) (podIP, hostIP string) {
	if pod.Spec.HostNetwork {
		return m.addrs.Address, m.addrs.Address
	}
	return m.addrs.PodIP, HostIP
}

// each sends msg to every container and waits for their replies: it
// fails if any container did.
func (m *member) each(ctx context.Context, msg ctlMsg) error { return m.send(ctx, msg, false) }

// any sends msg to every container and succeeds if one of them did.
func (m *member) any(ctx context.Context, msg ctlMsg) error { return m.send(ctx, msg, true) }

// send sends msg to every container in turn and waits for each reply;
// with firstOK it stops at the first container that succeeds.
func (m *member) send(ctx context.Context, msg ctlMsg, firstOK bool) error {
	m.mu.Lock()
	cs := append([]*container(nil), m.containers...)
	m.mu.Unlock()
	if len(cs) == 0 {
		return fmt.Errorf("%s has not started yet", m.key)
	}
	var errs []error
	for _, c := range cs {
		msg.reply = make(chan error, 1)
		select {
		case c.ctl <- msg:
		case <-c.done:
			errs = append(errs, fmt.Errorf("%s: container %s is gone", m.key, c.spec.Name))
			continue
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case err := <-msg.reply:
			switch {
			case err == nil && firstOK:
				return nil
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: container %s: %w", m.key, c.spec.Name, err))
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(errs...)
}

// wipe empties the directories of the pod's claims (they stay bound), or,
// with none, the hostPath directories holding its etcd data dir.
func (m *member) wipe() error {
	m.mu.Lock()
	dirs := append([]string(nil), m.claimDirs...)
	if len(dirs) == 0 {
		dirs = append(dirs, m.dataDirs...)
	}
	m.mu.Unlock()
	if len(dirs) == 0 {
		return fmt.Errorf("%s has no persistent volume (nor hostPath data dir) to wipe", m.key)
	}
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := os.RemoveAll(filepath.Join(d, e.Name())); err != nil {
				return err
			}
		}
	}
	m.logf("wiped %v", dirs)
	return nil
}

func (m *member) info() Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	in := Member{
		Namespace: m.ns, Name: m.name, UID: m.uid, MemberAddrs: m.addrs,
		ClientURL: clientScheme(m.pod) + "://" + hostPort(m.addrs.Address, 2379),
		DataDirs:  append(append([]string(nil), m.claimDirs...), m.dataDirs...),
	}
	in.PodIP, _ = m.ips(m.pod)
	for _, c := range m.containers {
		if pid := c.pid(); pid > 0 {
			in.Pids = append(in.Pids, pid)
		}
	}
	return in
}

// ctlOp is a request to a container's loop.
type ctlOp int

const (
	// opHold stops the process and keeps it stopped.
	opHold ctlOp = iota + 1
	// opPause freezes the process group (SIGSTOP).
	opPause
	// opResume thaws a paused group, or releases a hold.
	opResume
	// opKill SIGKILLs the group; the loop restarts it as after a crash.
	opKill
	// opRelease releases a hold (optionally setting flag overrides) and
	// starts at once.
	opRelease
	// opSignal sends sig to the container's processes that match (by
	// command line), or to its main process alone when match is nil; a
	// SIGSTOP counts as a pause (opResume thaws everything).
	opSignal
)

type ctlMsg struct {
	op          ctlOp
	setOverride bool
	override    *override
	// sig and match (opSignal); what names the processes in errors.
	sig   syscall.Signal
	match func(cmdline string) bool
	what  string
	reply chan error
}

// override replaces flags of the container's etcd until the pod is
// recreated: the given flags, or (seed) those that make the member
// bootstrap a new one-member cluster of itself.
type override struct {
	seed  bool
	flags []string
}

// container runs one container of a member, restarting it as a kubelet
// would under the pod's restartPolicy: after every exit (Always), after a
// non-zero exit (OnFailure), or never (Never: it runs once, and its last
// state stays terminated).
type container struct {
	m    *member
	spec corev1.Container
	ctl  chan ctlMsg
	done chan struct{}

	mu  sync.Mutex
	v   containerView
	cur *process
	// pe, launch: how the current process was started (for exec).
	pe     PodEnv
	launch Launch
}

func newContainer(m *member, spec corev1.Container) *container {
	return &container{
		m: m, spec: spec, ctl: make(chan ctlMsg), done: make(chan struct{}),
		v: containerView{Name: spec.Name, Image: spec.Image, Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
	}
}

func (c *container) view() containerView {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v
}

// ports are the TCP ports port-forwards reach in the container: those it
// declares and, in a hostNetwork pod, those it listens on (forwardPorts).
func (c *container) ports() []int { return forwardPorts(c.m.latest(), c.spec) }

func (c *container) pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil || c.cur.exited() {
		return 0
	}
	return c.cur.pid
}

func (c *container) set(f func(v *containerView)) {
	c.mu.Lock()
	f(&c.v)
	c.mu.Unlock()
	c.m.poke()
}

type probeResult struct {
	p   *process
	err error
}

// run is the container's loop; it returns once stop is closed and the
// process is gone.
func (c *container) run(stop <-chan struct{}) {
	defer close(c.done)
	var (
		p         *process
		held      bool
		paused    bool
		wait      time.Duration // back-off before the restart after the next exit
		restartAt time.Time
		restarts  int32
		started   bool
		ov        *override
		pr        *prober
		probeAt   <-chan time.Time
		probing   bool
		results   = make(chan probeResult, 1)
		policy    = c.m.latest().Spec.RestartPolicy
		finished  bool // exited for good: the restart policy does not restart it
	)
	defer func() {
		if p != nil {
			p.stop(c.m.grace())
		}
	}()
	for {
		if p == nil && !held && !finished && !time.Now().Before(restartAt) {
			select {
			case <-stop:
				return
			default:
			}
			next := restarts
			if started {
				next++
			}
			np, l, err := c.start(ov, next)
			if err != nil {
				c.m.logf("container %s: %v", c.spec.Name, err)
				c.set(func(v *containerView) {
					v.Running, v.Terminated = nil, nil
					v.Waiting = &corev1.ContainerStateWaiting{Reason: "CreateContainerError", Message: err.Error()}
					v.RestartCount = restarts
				})
				restartAt = time.Now().Add(nextBackoff(wait))
				wait = nextBackoff(wait)
			} else {
				p, started, paused, restarts = np, true, false, next
				c.mu.Lock()
				c.cur = np
				c.mu.Unlock()
				ready := l.Readiness == nil
				c.set(func(v *containerView) {
					v.Waiting, v.Terminated = nil, nil
					v.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(np.startedAt)}
					v.Ready = ready
					v.RestartCount = restarts
					v.EverStarted = true
					v.ContainerID = "hactl-sandbox://" + strconv.Itoa(np.pid)
				})
				pr, probeAt = nil, nil
				if l.Readiness != nil {
					pr = &prober{p: l.Readiness}
					probeAt = time.After(l.Readiness.InitialDelay)
				}
			}
		}
		var exited <-chan struct{}
		if p != nil {
			exited = p.done
		}
		var timer <-chan time.Time
		if p == nil && !held && !finished {
			timer = time.After(time.Until(restartAt))
		}
		select {
		case <-stop:
			if p != nil {
				p.stop(c.m.grace())
				c.exited(p, exitStopped, 0)
				p = nil
			}
			return
		case <-exited:
			if !restartsAfter(policy, p.exitCode) {
				finished = true
				c.exited(p, exitFinal, 0)
				p, paused, pr, probeAt = nil, false, nil, nil
				break
			}
			ranFor := p.finished.Sub(p.startedAt)
			if ranFor >= backoffReset {
				wait = 0
			}
			restartAt = time.Now().Add(wait)
			c.exited(p, exitRestart, wait)
			wait = nextBackoff(wait)
			p, paused, pr, probeAt = nil, false, nil, nil
		case <-probeAt:
			probeAt = nil
			if p != nil && pr != nil && !probing {
				probing = true
				go func(p *process, probe *Probe) {
					results <- probeResult{p: p, err: probe.check(c.m.r.ctx)}
				}(p, pr.p)
			}
		case res := <-results:
			probing = false
			if res.p == p && pr != nil {
				ready := pr.observe(res.err)
				c.set(func(v *containerView) { v.Ready = ready && v.Running != nil })
				probeAt = time.After(pr.p.Period)
			}
		case msg := <-c.ctl:
			var err error
			if finished {
				msg.reply <- fmt.Errorf("it has terminated (restartPolicy %s)", policy)
				break
			}
			switch msg.op {
			case opHold:
				held = true
				if p != nil {
					p.stop(c.m.grace())
					c.exited(p, exitHeld, 0)
					p, paused, pr, probeAt = nil, false, nil, nil
				}
			case opPause:
				if p == nil {
					err = errors.New("not running")
				} else {
					p.signalAll(syscall.SIGSTOP)
					paused = true
				}
			case opResume:
				if paused && p != nil {
					p.signalAll(syscall.SIGCONT)
					paused = false
				}
				if held {
					held, wait, restartAt = false, 0, time.Time{}
				}
			case opKill:
				if p == nil {
					err = errors.New("not running")
				} else {
					p.signalAll(syscall.SIGKILL)
					p.signalAll(syscall.SIGCONT)
				}
			case opSignal:
				switch {
				case p == nil:
					err = errors.New("not running")
				case msg.match == nil:
					p.signalMain(msg.sig)
				default:
					procs := p.find(msg.match)
					if len(procs) == 0 {
						err = fmt.Errorf("no %s process", msg.what)
					}
					for _, s := range procs {
						_ = syscall.Kill(s.Pid, msg.sig)
					}
				}
				if err == nil && msg.sig == syscall.SIGSTOP {
					paused = true
				}
			case opRelease:
				held, wait, restartAt = false, 0, time.Time{}
				if msg.setOverride {
					ov = msg.override
				}
			}
			msg.reply <- err
		case <-timer:
		}
	}
}

// exitHow says what follows a process's end.
type exitHow int

const (
	// exitRestart: it is started again after the back-off.
	exitRestart exitHow = iota + 1
	// exitHeld: the runner stopped it on purpose (break stop) and keeps
	// it stopped until resumed.
	exitHeld
	// exitFinal: the pod's restartPolicy does not restart it; it stays
	// terminated.
	exitFinal
	// exitStopped: the runner stopped it because the pod is going (or the
	// runner is).
	exitStopped
)

// exited records the end of p; wait is the back-off before the restart
// (exitRestart).
func (c *container) exited(p *process, how exitHow, wait time.Duration) {
	reason := "Error"
	if p.exitCode == 0 {
		reason = "Completed"
	}
	t := &corev1.ContainerStateTerminated{
		ExitCode:    int32(p.exitCode),
		Reason:      reason,
		StartedAt:   metav1.NewTime(p.startedAt),
		FinishedAt:  metav1.NewTime(p.finished),
		ContainerID: "hactl-sandbox://" + strconv.Itoa(p.pid),
	}
	if p.signal != 0 {
		t.Signal = int32(p.signal)
	}
	// The termination message: with FallbackToLogsOnError, the end of the
	// log of a failed run (a termination message file is not read).
	if c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError && p.exitCode != 0 {
		t.Message = logTail(p.logPath, logMessageLines, logMessageBytes)
	}
	c.mu.Lock()
	c.cur = nil
	c.mu.Unlock()
	c.m.r.fwd.drop(c.m.addrs.ForwardAddress, c.ports())
	c.set(func(v *containerView) {
		v.Ready = false
		v.Running = nil
		switch how {
		case exitFinal:
			// As with a kubelet, the state is the termination and the
			// last state keeps the run before it (if it was restarted).
			v.Waiting = nil
			v.Terminated = t
			v.Final = true
		case exitHeld:
			v.Last = t
			v.Waiting = nil
			held := *t
			held.Message = "stopped by hactl-sandbox (break stop); resume starts it again"
			v.Terminated = &held
		case exitRestart:
			v.Last = t
			if wait > 0 {
				v.Terminated = nil
				v.Waiting = &corev1.ContainerStateWaiting{
					Reason:  "CrashLoopBackOff",
					Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", wait, c.spec.Name, c.m.name, c.m.ns, c.m.uid),
				}
				break
			}
			fallthrough
		default:
			v.Last = t
			v.Terminated = nil
			v.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		}
	})
	c.m.logf("container %s exited with code %d", c.spec.Name, p.exitCode)
}

// start translates the container (afresh: its environment is resolved at
// each start, as a kubelet does), applies flag overrides, makes sure the
// peer proxy fronts it, and starts the process.
func (c *container) start(ov *override, restarts int32) (*process, Launch, error) {
	m := c.m
	pod := m.latest()
	m.mu.Lock()
	vols := m.volumes
	writable := append([]string(nil), m.writable...)
	m.mu.Unlock()
	home := filepath.Join(m.podDir, "home")
	tmp := filepath.Join(m.podDir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, Launch{}, err
		}
	}
	var kubeconfig string
	// A static pod has no ServiceAccount (the API server refuses a mirror
	// pod that names one): the kubelet mounts no token into it.
	if m.r.o.Server != "" && automounts(pod) && !IsMirror(pod) {
		kubeconfig = filepath.Join(m.podDir, "serviceaccount", "kubeconfig")
		if err := m.r.writeKubeconfig(m.r.ctx, pod, kubeconfig); err != nil {
			return nil, Launch{}, err
		}
	}
	podIP, hostIP := m.ips(pod)
	pe := PodEnv{
		Pod: pod, Address: m.addrs.Address, PeerAddress: m.addrs.PeerAddress,
		PodIP: podIP, HostIP: hostIP, Volumes: vols,
		Resolve:    m.r.resolve(pod.Namespace),
		Objects:    objects{ctx: m.r.ctx, kc: m.r.o.Kube, ns: pod.Namespace},
		PathEnv:    m.r.pathEnv,
		Home:       home,
		TmpDir:     tmp,
		Kubeconfig: kubeconfig,
	}
	if IsDruidMember(pod) {
		pe.Hosts = m.r.standInHosts(pod, m.addrs.Address)
	}
	if m.r.podNet != nil {
		pe.PodProxy = m.r.podNet.URL()
	}
	spec := c.spec
	l, err := Translate(pe, &spec)
	if err != nil {
		return nil, l, err
	}
	l.Env = append(l.Env, MarkerEnv+"="+m.key+"/"+string(m.uid)+"/"+c.spec.Name+"/"+strconv.Itoa(int(restarts)))
	if id, ok := containerIdentity(pod, &spec); ok && os.Geteuid() == 0 {
		own := append(writable, home, tmp)
		if kubeconfig != "" {
			own = append(own, filepath.Dir(kubeconfig))
		}
		if err := id.own(own...); err != nil {
			return nil, l, fmt.Errorf("making its directories uid %d's: %w", id.uid, err)
		}
		reach := append([]string{m.podDir}, own...)
		for _, d := range vols {
			reach = append(reach, d)
		}
		if note := launchAs(&l, id, reach...); note != "" {
			m.mu.Lock()
			first := !m.identityNoted
			m.identityNoted = true
			m.mu.Unlock()
			if first {
				m.logf("container %s runs as uid %d gid %d; %s", c.spec.Name, id.uid, id.gid, note)
			}
		}
	}
	if ov != nil {
		flags := ov.flags
		if ov.seed {
			flags, err = SeedFlags(l)
		} else {
			flags, err = Substitute(pe, &spec, flags)
		}
		if err != nil {
			return nil, l, err
		}
		l = WithFlags(l, flags)
	}
	if len(l.PeerPorts) > 0 {
		if err := m.r.proxy.ensure(m.addrs.Address, m.addrs.PeerAddress, l.PeerPorts); err != nil {
			return nil, l, fmt.Errorf("peer proxy: %w", err)
		}
	}
	logDir := filepath.Join(m.r.o.Dir, "logs", "pods", m.ns+"_"+m.name+"_"+string(m.uid), c.spec.Name)
	logPath := filepath.Join(logDir, strconv.Itoa(int(restarts))+".log")
	prevLog := ""
	if restarts > 0 {
		prevLog = filepath.Join(logDir, strconv.Itoa(int(restarts-1))+".log")
	}
	pidFile := filepath.Join(m.r.o.Dir, "pids", m.ns+"_"+m.name+"_"+c.spec.Name+".pid")
	p, err := startProcess(l, logPath, pidFile, m.key+"/"+c.spec.Name)
	if err != nil {
		return nil, l, err
	}
	m.mu.Lock()
	m.logFiles[c.spec.Name] = [2]string{logPath, prevLog}
	m.mu.Unlock()
	c.mu.Lock()
	c.pe, c.launch = pe, l
	c.mu.Unlock()
	if err := m.r.fwd.ensure(m.addrs.ForwardAddress, m.addrs.Address, c.ports()); err != nil {
		m.logf("container %s: port-forward proxy: %v", c.spec.Name, err)
	}
	go m.ensureKwokObjects()
	return p, l, nil
}
