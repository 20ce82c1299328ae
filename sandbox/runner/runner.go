package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/hactl-dev/hactl/sandbox/fault"
	"github.com/hactl-dev/hactl/sandbox/internal/reap"
)

// EngineLabel marks the pods (and StatefulSets) the runner runs.
const EngineLabel = "hactl.dev/engine"

// RunLabel marks other pods the runner runs as processes, which belong to
// no HA cluster: hactl's exporter Deployment, whose tests add it to the
// pod template of docs/exporter.yaml. kwok's stages skip them too.
const RunLabel = "sandbox.hactl.dev/run"

// HostIP is the host IP every member pod reports: the fake nodes'
// InternalIP, where kwok serves the kubelet API.
const HostIP = "127.0.0.1"

// AgentCommand is the command of hactl's agent image (kubectl-hactl
// agent restore ...): with Options.AgentPath set, containers find it on
// their PATH.
const AgentCommand = "kubectl-hactl"

// CaptureCommand is the agent image's capture binary (capture pods run
// it): the runner links the file of that name beside Options.AgentPath
// next to the agent, so containers find it on their PATH too.
const CaptureCommand = "hactl-capture"

// CaptureBuildTags are the build tags of hactl-capture
// (agent.CaptureBuildTags, which the runner's tests compare this with;
// the runner does not import the agent and its store drivers).
const CaptureBuildTags = "hactl_s3only"

// Options configures a Runner.
type Options struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	// BinDir holds etcd and etcdctl; it comes first on the containers'
	// PATH.
	BinDir string
	// AgentPath is the kubectl-hactl binary that containers of hactl's
	// agent image run. The runner links it as Dir/agent/kubectl-hactl (and
	// the hactl-capture beside it as Dir/agent/hactl-capture) and puts
	// that directory on the containers' PATH right after BinDir, so a
	// command of kubectl-hactl (or /usr/local/bin/kubectl-hactl, or a
	// script calling it) runs it whatever its file is called. It need not
	// exist yet when the runner starts. Empty, or missing when a
	// container starts: no agent (such a container fails to start,
	// executable not found, and is retried with back-off).
	AgentPath string
	// Dir holds the runner's state: logs/pods/<ns>_<pod>_<uid>/<container>/
	// <restart>.log, pods/<ns>_<pod>_<uid>/ (home and non-PVC volumes),
	// pids/ (one pid file per running container) and agent/ (see
	// AgentPath).
	Dir string
	// Block is the sandbox's address block (1…254): see Addresses.
	Block int
	// HostDir returns the host directory of the volume bound to claim
	// ns/name, or "" while it is not bound.
	HostDir func(ns, claim string) string
	// NodeDir returns the host directory standing for node's filesystem
	// root: a pod's hostPath volume /p on that node is NodeDir(node)/p
	// (created for DirectoryOrCreate). Nil: a hostPath volume is a
	// directory of the pod's own, like an emptyDir.
	NodeDir func(node string) string
	// Logf receives the runner's own log lines.
	Logf func(format string, args ...any)
	// Server and CA are the API server's URL and CA certificate (PEM).
	// With Server set, every container of a pod that automounts its
	// ServiceAccount token gets KUBECONFIG: a kubeconfig (context
	// KubeContext) with a token of the pod's ServiceAccount.
	Server string
	CA     []byte
	// StandIn is the program that runs the stand-ins for the images of
	// etcd-druid's member pods (etcd-wrapper, etcdbrctl: see package
	// druidstandin) and for Spilo's entrypoint (package spilostandin)
	// when started under their names: the runner links it as
	// Dir/standin/<name> and puts that directory on the containers'
	// PATH after BinDir. Empty: such containers fail to start.
	StandIn string
}

// Runner runs the members of the sandbox's HA clusters.
type Runner struct {
	o     Options
	addrs *Addresses
	proxy *peerProxy
	fwd   *forwardProxy

	factory informers.SharedInformerFactory
	pods    cache.SharedIndexInformer
	sets    cache.SharedIndexInformer
	// others are the pods labelled RunLabel.
	othersFactory informers.SharedInformerFactory
	others        cache.SharedIndexInformer
	// static are the pods labelled tier=control-plane: the runner runs
	// those that are mirror pods (IsStaticControlPlane).
	staticFactory informers.SharedInformerFactory
	static        cache.SharedIndexInformer
	// operator are the pods labelled with the cozystack etcd-operator's
	// cluster label: the runner runs those an EtcdMember controls
	// (IsOperatorMember), playing the kubelet for the operator's pods.
	operatorFactory informers.SharedInformerFactory
	operator        cache.SharedIndexInformer
	// bitnami are the pods and StatefulSets selected by BitnamiSelector:
	// the runner runs the pods that are members of a Bitnami-style etcd
	// (IsBitnamiMember), which carry nothing of hactl's.
	bitnamiFactory informers.SharedInformerFactory
	bitnami        cache.SharedIndexInformer
	bitnamiSets    cache.SharedIndexInformer
	// druid are the pods and StatefulSets selected by DruidSelector: the
	// runner runs the pods of StatefulSets an Etcd of etcd-druid
	// controls (IsDruidMember, druidSet).
	druidFactory informers.SharedInformerFactory
	druid        cache.SharedIndexInformer
	druidSets    cache.SharedIndexInformer
	// spilo are the pods and StatefulSets selected by SpiloSelector: the
	// runner runs the Zalando postgres-operator's member pods
	// (IsSpiloMember), which carry nothing of hactl's.
	spiloFactory informers.SharedInformerFactory
	spilo        cache.SharedIndexInformer
	spiloSets    cache.SharedIndexInformer
	// pgo are the pods and StatefulSets selected by PGOSelector: the
	// runner runs Crunchy PGO v5's instance pods (IsPGOMember), which
	// carry nothing of hactl's.
	pgoFactory informers.SharedInformerFactory
	pgo        cache.SharedIndexInformer
	pgoSets    cache.SharedIndexInformer
	// cnpg are the pods selected by CNPGSelector: the runner runs
	// CloudNativePG's instance pods (IsCNPGInstance), which carry nothing
	// of hactl's.
	cnpgFactory informers.SharedInformerFactory
	cnpg        cache.SharedIndexInformer
	// podNet is the pod network proxy hactl's agent dials pod IPs
	// through (set by Start).
	podNet *PodNetwork

	ctx      context.Context
	shutdown chan struct{}

	// pathEnv is the containers' PATH.
	pathEnv string

	mu      sync.Mutex
	members map[types.UID]*member
	byName  map[string]*member // latest incarnation of ns/name
	wg      sync.WaitGroup
}

// New returns a Runner; Start starts it.
func New(o Options) *Runner {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	f := informers.NewSharedInformerFactoryWithOptions(o.Kube, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = EngineLabel }))
	of := informers.NewSharedInformerFactoryWithOptions(o.Kube, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = RunLabel }))
	sf := informers.NewSharedInformerFactoryWithOptions(o.Kube, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = controlPlaneSelector }))
	opf := informers.NewSharedInformerFactoryWithOptions(o.Kube, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = OperatorClusterLabel }))
	bf := informers.NewSharedInformerFactoryWithOptions(o.Kube, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = BitnamiSelector }))
	df := informers.NewSharedInformerFactoryWithOptions(o.Kube, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = DruidSelector }))
	zf := informers.NewSharedInformerFactoryWithOptions(o.Kube, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = SpiloSelector }))
	pf := informers.NewSharedInformerFactoryWithOptions(o.Kube, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = PGOSelector }))
	cf := informers.NewSharedInformerFactoryWithOptions(o.Kube, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = CNPGSelector }))
	r := &Runner{
		cnpgFactory:     cf,
		cnpg:            cf.Core().V1().Pods().Informer(),
		pgoFactory:      pf,
		pgo:             pf.Core().V1().Pods().Informer(),
		pgoSets:         pf.Apps().V1().StatefulSets().Informer(),
		spiloFactory:    zf,
		spilo:           zf.Core().V1().Pods().Informer(),
		spiloSets:       zf.Apps().V1().StatefulSets().Informer(),
		druidFactory:    df,
		druid:           df.Core().V1().Pods().Informer(),
		druidSets:       df.Apps().V1().StatefulSets().Informer(),
		operatorFactory: opf,
		operator:        opf.Core().V1().Pods().Informer(),
		bitnamiFactory:  bf,
		bitnami:         bf.Core().V1().Pods().Informer(),
		bitnamiSets:     bf.Apps().V1().StatefulSets().Informer(),
		othersFactory:   of,
		others:          of.Core().V1().Pods().Informer(),
		staticFactory:   sf,
		static:          sf.Core().V1().Pods().Informer(),
		o:               o,
		addrs:           NewAddresses(o.Block),
		proxy:           newPeerProxy(o.Logf),
		fwd:             newForwardProxy(o.Logf),
		factory:         f,
		pods:            f.Core().V1().Pods().Informer(),
		sets:            f.Apps().V1().StatefulSets().Informer(),
		shutdown:        make(chan struct{}),
		members:         map[types.UID]*member{},
		byName:          map[string]*member{},
	}
	r.proxy.owner = r.socketOwner
	return r
}

// Start watches engine pods and runs their members until ctx ends or Stop
// is called. It returns once its caches are in sync.
func (r *Runner) Start(ctx context.Context) error {
	r.ctx = ctx
	for _, d := range []string{"logs", "pods", "pids"} {
		if err := os.MkdirAll(filepath.Join(r.o.Dir, d), 0o755); err != nil {
			return err
		}
	}
	head := r.o.BinDir
	if r.o.StandIn != "" {
		dir, err := linkStandIns(r.o.StandIn, filepath.Join(r.o.Dir, "standin"))
		if err != nil {
			return err
		}
		head += ":" + dir
	}
	r.pathEnv = head + ":/usr/local/bin:/usr/bin:/bin"
	if r.o.AgentPath != "" {
		dir, err := linkAgent(r.o.AgentPath, filepath.Join(r.o.Dir, "agent"))
		if err != nil {
			return err
		}
		r.pathEnv = head + ":" + dir + ":/usr/local/bin:/usr/bin:/bin"
	}
	pn, err := StartPodNetwork(fmt.Sprintf("127.%d.0.1:0", r.o.Block), r.addrs.ByPodIP, r.o.Logf)
	if err != nil {
		return err
	}
	r.podNet = pn
	handlers := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.observe(o) },
		UpdateFunc: func(_, o any) { r.observe(o) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				r.forget(p)
			}
		},
	}
	for _, inf := range []cache.SharedIndexInformer{r.pods, r.others, r.static, r.operator, r.bitnami, r.druid, r.spilo, r.pgo, r.cnpg} {
		if _, err := inf.AddEventHandler(handlers); err != nil {
			return err
		}
	}
	// Processes that escape their container's session (a postmaster
	// under Patroni) become the runner's children when their parent
	// dies, instead of init's: the runner reaps them (see trackLoop).
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		r.o.Logf("runner: cannot become a child subreaper: %v", err)
	}
	go r.trackLoop()
	r.factory.Start(r.shutdown)
	r.othersFactory.Start(r.shutdown)
	r.staticFactory.Start(r.shutdown)
	r.operatorFactory.Start(r.shutdown)
	r.bitnamiFactory.Start(r.shutdown)
	r.druidFactory.Start(r.shutdown)
	r.spiloFactory.Start(r.shutdown)
	r.pgoFactory.Start(r.shutdown)
	r.cnpgFactory.Start(r.shutdown)
	if !cache.WaitForCacheSync(ctx.Done(), r.pods.HasSynced, r.sets.HasSynced, r.others.HasSynced, r.static.HasSynced, r.operator.HasSynced,
		r.bitnami.HasSynced, r.bitnamiSets.HasSynced, r.druid.HasSynced, r.druidSets.HasSynced, r.spilo.HasSynced, r.spiloSets.HasSynced,
		r.pgo.HasSynced, r.pgoSets.HasSynced, r.cnpg.HasSynced) {
		return fmt.Errorf("runner: caches did not sync: %w", ctx.Err())
	}
	go func() {
		select {
		case <-ctx.Done():
			r.Stop()
		case <-r.shutdown:
		}
	}()
	return nil
}

// linkAgent makes dir/kubectl-hactl a link to the agent binary, and
// dir/hactl-capture one to the hactl-capture beside it, and returns dir.
func linkAgent(agent, dir string) (string, error) {
	abs, err := filepath.Abs(agent)
	if err != nil {
		return "", err
	}
	// It may not exist yet (the sandbox may still be building it).
	if fi, err := os.Stat(abs); err == nil && (fi.IsDir() || fi.Mode()&0o111 == 0) {
		return "", fmt.Errorf("runner: agent binary %s is not an executable file", abs)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for name, target := range map[string]string{AgentCommand: abs, CaptureCommand: filepath.Join(filepath.Dir(abs), CaptureCommand)} {
		link := filepath.Join(dir, name)
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if err := os.Symlink(target, link); err != nil {
			return "", fmt.Errorf("runner: linking the agent binary: %w", err)
		}
	}
	return dir, nil
}

// Stop stops every member's processes (the pods stay as they are) and
// waits for them.
func (r *Runner) Stop() {
	r.mu.Lock()
	select {
	case <-r.shutdown:
		r.mu.Unlock()
		r.wg.Wait()
		return
	default:
	}
	close(r.shutdown)
	r.mu.Unlock()
	r.wg.Wait()
	r.proxy.close()
	r.fwd.close()
	if r.podNet != nil {
		r.podNet.Close()
	}
	r.factory.Shutdown()
	r.othersFactory.Shutdown()
	r.staticFactory.Shutdown()
	r.operatorFactory.Shutdown()
	r.bitnamiFactory.Shutdown()
	r.druidFactory.Shutdown()
	r.spiloFactory.Shutdown()
	r.pgoFactory.Shutdown()
	r.cnpgFactory.Shutdown()
}

func (r *Runner) observe(o any) {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.shutdown:
		return
	default:
	}
	m := r.members[pod.UID]
	if m == nil {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || !runs(pod) {
			return
		}
		if IsDruidMember(pod) && !hasEngine(pod) {
			if _, ok := r.druidSet(pod); !ok {
				go r.druidPending(pod)
				return
			}
		}
		key := pod.Namespace + "/" + pod.Name
		addrs, err := r.addrs.For(pod.Namespace, pod.Name)
		if err != nil {
			r.o.Logf("runner: %s: %v", key, err)
			return
		}
		m = newMember(r, pod, addrs, r.byName[key])
		r.members[pod.UID] = m
		r.byName[key] = m
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			m.run()
			r.mu.Lock()
			delete(r.members, m.uid)
			if r.byName[m.key] == m {
				delete(r.byName, m.key)
			}
			r.mu.Unlock()
		}()
	}
	m.update(pod)
}

func (r *Runner) forget(pod *corev1.Pod) {
	r.mu.Lock()
	m := r.members[pod.UID]
	r.mu.Unlock()
	if m != nil {
		m.removed()
	}
}

// resolve maps a sandbox pod's DNS name, seen from namespace ns, to its
// address: a StatefulSet pod's <pod>.<service>... (ResolvePodDNS) or, for
// a pod the runner runs that sets spec.hostname and spec.subdomain (the
// cozystack etcd-operator's members), <hostname>.<subdomain>...
// (ResolveSubdomainDNS).
func (r *Runner) resolve(ns string) func(string) (string, bool) {
	return func(host string) (string, bool) {
		var govs []Governor
		sets := append(r.sets.GetStore().List(), r.bitnamiSets.GetStore().List()...)
		sets = append(sets, r.spiloSets.GetStore().List()...)
		sets = append(sets, r.pgoSets.GetStore().List()...)
		for _, o := range append(sets, r.druidSets.GetStore().List()...) {
			s := o.(*appsv1.StatefulSet)
			govs = append(govs, Governor{Namespace: s.Namespace, Name: s.Name, Service: s.Spec.ServiceName})
		}
		podNS, pod, ok := ResolvePodDNS(host, ns, govs)
		if !ok {
			podNS, pod, ok = ResolveSubdomainDNS(host, ns, r.subdomains())
		}
		if !ok {
			return "", false
		}
		a, err := r.addrs.For(podNS, pod)
		if err != nil {
			return "", false
		}
		return a.Address, true
	}
}

// subdomains lists the pods the runner watches that set spec.hostname and
// spec.subdomain.
func (r *Runner) subdomains() []Subdomain {
	var out []Subdomain
	for _, inf := range []cache.SharedIndexInformer{r.pods, r.others, r.static, r.operator, r.bitnami, r.druid, r.spilo, r.pgo, r.cnpg} {
		for _, o := range inf.GetStore().List() {
			p, ok := o.(*corev1.Pod)
			if !ok || p.Spec.Hostname == "" || p.Spec.Subdomain == "" || !runs(p) {
				continue
			}
			out = append(out, Subdomain{Namespace: p.Namespace, Pod: p.Name, Hostname: p.Spec.Hostname, Subdomain: p.Spec.Subdomain})
		}
	}
	return out
}

// objects reads ConfigMaps and Secrets of one namespace from the API.
type objects struct {
	ctx context.Context
	kc  kubernetes.Interface
	ns  string
}

func (o objects) ConfigMap(name string) (map[string]string, bool, error) {
	ctx, cancel := context.WithTimeout(o.ctx, 10*time.Second)
	defer cancel()
	cm, err := o.kc.CoreV1().ConfigMaps(o.ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	data := map[string]string{}
	for k, v := range cm.Data {
		data[k] = v
	}
	for k, v := range cm.BinaryData {
		data[k] = string(v)
	}
	return data, true, nil
}

func (o objects) Secret(name string) (map[string]string, bool, error) {
	ctx, cancel := context.WithTimeout(o.ctx, 10*time.Second)
	defer cancel()
	s, err := o.kc.CoreV1().Secrets(o.ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	data := map[string]string{}
	for k, v := range s.Data {
		data[k] = string(v)
	}
	for k, v := range s.StringData {
		data[k] = v
	}
	return data, true, nil
}

// Member describes a running member, for fault injection and tests.
type Member struct {
	Namespace, Name string
	UID             types.UID
	MemberAddrs
	// ClientURL is http://<Address>:2379.
	ClientURL string
	// DataDirs are the host directories of the pod's PVCs.
	DataDirs []string
	// Pids are the pids of the member's running container processes.
	Pids []int
}

// Member returns the current incarnation of pod ns/name.
func (r *Runner) Member(ns, name string) (Member, bool) {
	r.mu.Lock()
	m := r.byName[ns+"/"+name]
	r.mu.Unlock()
	if m == nil {
		return Member{}, false
	}
	return m.info(), true
}

// Members lists the current incarnation of every member, by namespace and
// name.
func (r *Runner) Members() []Member {
	r.mu.Lock()
	ms := make([]*member, 0, len(r.byName))
	for _, m := range r.byName {
		ms = append(ms, m)
	}
	r.mu.Unlock()
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.info())
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out
}

// LogTail returns the last lines (at most 4 KiB) of the current run's log
// of each container of pod ns/name, by container name: what a failed
// setup reports, since the sandbox's files may be gone by the time
// anyone reads them.
func (r *Runner) LogTail(ns, name string, lines int) map[string]string {
	r.mu.Lock()
	m := r.byName[ns+"/"+name]
	r.mu.Unlock()
	if m == nil {
		return nil
	}
	m.mu.Lock()
	files := map[string]string{}
	for c, f := range m.logFiles {
		files[c] = f[0]
	}
	m.mu.Unlock()
	out := map[string]string{}
	for c, f := range files {
		out[c] = logTail(f, lines, 4096)
	}
	return out
}

// Addresses returns the addresses of pod ns/name (allocating them if the
// pod does not exist yet, as for a member about to be added).
func (r *Runner) Addresses(ns, name string) (MemberAddrs, error) { return r.addrs.For(ns, name) }

// ErrNoMember says the named pod is not a running sandbox member.
var ErrNoMember = errors.New("no such sandbox member")

// trackPeriod is how often the runner looks for processes that escaped
// their container's session.
const trackPeriod = time.Second

// trackLoop records, once a trackPeriod, the processes that escaped each
// running container's session, and reaps those (and their descendants)
// that died as the runner's children.
func (r *Runner) trackLoop() {
	t := time.NewTicker(trackPeriod)
	defer t.Stop()
	adopted := map[int]uint64{} // pid → start time of every escapee tree process seen
	self := os.Getpid()
	for {
		select {
		case <-r.shutdown:
			return
		case <-t.C:
		}
		all := reap.All()
		r.mu.Lock()
		var procs []*process
		for _, m := range r.members {
			m.mu.Lock()
			for _, c := range m.containers {
				c.mu.Lock()
				if c.cur != nil {
					procs = append(procs, c.cur)
				}
				c.mu.Unlock()
			}
			m.mu.Unlock()
		}
		r.mu.Unlock()
		live := map[int]uint64{}
		for _, p := range procs {
			p.track(all)
			p.escMu.Lock()
			var roots []reap.Stat
			for _, e := range p.escaped {
				roots = append(roots, e)
			}
			p.escMu.Unlock()
			for _, s := range reap.DescendantsIn(all, roots) {
				adopted[s.Pid] = s.Start
			}
		}
		for _, s := range all {
			live[s.Pid] = s.Start
			if s.PPid == self && !s.Alive() {
				if st, ok := adopted[s.Pid]; ok && st == s.Start {
					var ws unix.WaitStatus
					_, _ = unix.Wait4(s.Pid, &ws, unix.WNOHANG, nil)
				}
			}
		}
		for pid, st := range adopted {
			if live[pid] != st {
				delete(adopted, pid)
			}
		}
	}
}

// Break injects a member fault into pod ns/name. Stop, Wipe and
// Rebootstrap return once the member's process has stopped (and, for the
// last two, its data is gone and a new process was asked to start); Pause,
// Resume, Kill, FreezePatroni, StallReplay, StallReceive and CrashPostgres
// once the signal is sent; Promote once pg_ctl promote returned; Isolate
// and Heal at once. Pause, Kill and Stop reach every process of the
// member's containers, those that left their session (a postmaster) too;
// Resume thaws them all. args
// are the flags a Rebootstrap starts etcd with (default: the seed 000
// flags, a new one-member cluster of the member itself).
func (r *Runner) Break(ctx context.Context, ns, name string, kind fault.Kind, args []string) error {
	r.mu.Lock()
	m := r.byName[ns+"/"+name]
	r.mu.Unlock()
	if m == nil {
		return fmt.Errorf("%s/%s: %w", ns, name, ErrNoMember)
	}
	switch kind {
	case fault.Isolate:
		r.proxy.isolate(m.addrs.Address)
		return nil
	case fault.Heal:
		r.proxy.heal(m.addrs.Address)
		return nil
	case fault.Stop:
		return m.each(ctx, ctlMsg{op: opHold})
	case fault.Pause:
		return m.each(ctx, ctlMsg{op: opPause})
	case fault.Resume:
		return m.each(ctx, ctlMsg{op: opResume})
	case fault.Kill:
		return m.each(ctx, ctlMsg{op: opKill})
	case fault.FreezePatroni:
		return m.any(ctx, ctlMsg{op: opSignal, sig: syscall.SIGSTOP, what: "main"})
	case fault.StallReplay:
		return m.any(ctx, ctlMsg{op: opSignal, sig: syscall.SIGSTOP, what: "PostgreSQL startup (replay)", match: postgresTitle("startup")})
	case fault.StallReceive:
		return m.any(ctx, ctlMsg{op: opSignal, sig: syscall.SIGSTOP, what: "PostgreSQL walreceiver", match: postgresTitle("walreceiver")})
	case fault.CrashPostgres:
		return m.any(ctx, ctlMsg{op: opSignal, sig: syscall.SIGKILL, what: "PostgreSQL postmaster", match: isPostmaster})
	case fault.Promote:
		return r.promote(ctx, m)
	case fault.Wipe, fault.Rebootstrap:
		if err := m.each(ctx, ctlMsg{op: opHold}); err != nil {
			return err
		}
		if err := m.wipe(); err != nil {
			return err
		}
		var ov *override
		if kind == fault.Rebootstrap {
			ov = &override{seed: len(args) == 0, flags: args}
		}
		return m.each(ctx, ctlMsg{op: opRelease, setOverride: true, override: ov})
	}
	return fmt.Errorf("fault %v is not a member fault the runner carries out", kind)
}
