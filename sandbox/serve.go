package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/sandbox/controlplane"
	"github.com/hactl-dev/hactl/sandbox/egress"
	"github.com/hactl-dev/hactl/sandbox/fault"
	"github.com/hactl-dev/hactl/sandbox/internal/proc"
	"github.com/hactl-dev/hactl/sandbox/internal/reap"
	"github.com/hactl-dev/hactl/sandbox/kwok"
	"github.com/hactl-dev/hactl/sandbox/runner"
	"github.com/hactl-dev/hactl/sandbox/scenario"
	"github.com/hactl-dev/hactl/sandbox/volumes"
)

// defaultScenarioTimeout bounds each scenario's setup unless the start
// gave a timeout of its own.
const defaultScenarioTimeout = 4 * time.Minute

// supervisor runs one sandbox in the foreground.
type supervisor struct {
	l    layout
	cfg  config
	logw io.Writer
	logm sync.Mutex

	cp   *controlplane.ControlPlane
	kc   kubernetes.Interface
	dyn  dynamic.Interface
	kw   *kwok.Kwok
	vgw  *proc.Process
	s3   S3
	prov *volumes.Provisioner
	run  *runner.Runner
	// egress is the API server's "cluster" egress proxy (pod IPs).
	egress *egress.Proxy

	stateMu sync.Mutex
	state   State

	shutdown     chan struct{}
	shutdownOnce sync.Once
}

// Serve runs the sandbox described by dir/config.json in the foreground
// (the supervisor `up` starts detached): the control plane, kwok and its
// nodes, versitygw, the volume provisioner, the member runner and the
// scenarios. It publishes its progress in dir/state.json and serves the
// control API (faults, members, shutdown) on loopback, then runs until ctx
// ends or the control API asks it to stop, and stops everything it
// started. Its log goes to logw.
func Serve(ctx context.Context, dir string, logw io.Writer) (err error) {
	s := &supervisor{l: layout{dir: dir}, logw: logw, shutdown: make(chan struct{})}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := readJSON(s.l.config(), &s.cfg); err != nil {
		return fmt.Errorf("reading the sandbox's config (run `up`, not `serve`): %w", err)
	}
	if s.cfg.Nodes == 0 {
		s.cfg.Nodes = 3
	}
	me, err := reap.ReadStat(os.Getpid())
	if err != nil {
		return err
	}
	if err := writeJSON(s.l.supervisor(), supervisorRecord{Pid: me.Pid, Start: me.Start}, 0o644); err != nil {
		return err
	}
	begin := time.Now()
	s.setState(func(st *State) {
		*st = State{Phase: PhaseStarting, Step: "starting", Namespace: s.cfg.Namespace, Logs: s.l.logs(), BinDir: s.cfg.BinDir, StartedAt: begin}
	})
	defer func() {
		s.stop()
		if err != nil {
			s.setState(func(st *State) { st.Phase, st.Error = PhaseFailed, err.Error() })
		} else {
			s.setState(func(st *State) { st.Phase, st.Step = PhaseStopped, "" })
		}
		_ = os.Remove(s.l.supervisor())
		_ = os.Remove(s.l.control())
	}()

	if err := s.start(ctx); err != nil {
		s.logf("start failed: %v", err)
		return err
	}
	ready := time.Since(begin)
	s.setState(func(st *State) { st.Phase, st.Step, st.ReadyAfter = PhaseReady, "", Duration(ready) })
	s.logf("sandbox ready in %s", ready.Round(100*time.Millisecond))
	select {
	case <-ctx.Done():
		s.logf("stopping: %v", context.Cause(ctx))
	case <-s.shutdown:
		s.logf("stopping: asked to by the control API")
	}
	return nil
}

func (s *supervisor) logf(format string, args ...any) {
	s.logm.Lock()
	defer s.logm.Unlock()
	fmt.Fprintf(s.logw, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (s *supervisor) setState(f func(*State)) {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	f(&s.state)
	if err := writeJSON(s.l.state(), s.state, 0o644); err != nil {
		s.logf("writing state: %v", err)
	}
}

func (s *supervisor) step(what string) {
	s.logf("%s", what)
	s.setState(func(st *State) { st.Step = what })
}

func (s *supervisor) start(ctx context.Context) error {
	block, lock, err := claimBlock()
	if err != nil {
		return err
	}
	// The agent binary: given, or built while everything else starts (the
	// runner links it at once; it is there by the time the sandbox is
	// ready).
	agent := s.cfg.Agent
	if agent == "" && s.cfg.RepoRoot != "" {
		agent = s.l.agent()
	}
	var agentErr error
	agentDone := make(chan struct{})
	bctx, bcancel := context.WithCancel(ctx)
	defer func() { bcancel(); <-agentDone }()
	go func() {
		defer close(agentDone)
		agentErr = s.agent(bctx)
	}()
	go func() { <-s.shutdownDone(); lock.Close() }()
	s.setState(func(st *State) { st.Block = block })

	// The API server's way to pod IPs (pods/proxy, as `kubectl cnpg
	// status` reads an instance's /pg/status) and to kwok's kubelets: its
	// "cluster" egress, through the sandbox's CONNECT proxy.
	sock, err := egress.SocketPath(s.l.dir)
	if err != nil {
		return err
	}
	if s.egress, err = egress.Start("unix", sock, egress.BlockResolver(block), s.logf); err != nil {
		return err
	}
	s.step("starting the control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)")
	s.cp, err = controlplane.Start(ctx, controlplane.Options{
		BinDir: s.cfg.BinDir, Dir: s.l.controlplane(), ControllerManager: true, Scheduler: true,
		APIServerArgs: s.cfg.APIServerArgs, EgressConfig: egress.Config(sock),
	})
	if err != nil {
		return err
	}
	kubeconfig, err := os.ReadFile(s.cp.AdminKubeconfig)
	if err != nil {
		return err
	}
	if err := os.WriteFile(s.l.kubeconfig(), kubeconfig, 0o600); err != nil {
		return err
	}
	s.setState(func(st *State) { st.Kubeconfig, st.Server = s.l.kubeconfig(), s.cp.Server })
	if s.kc, err = kubernetes.NewForConfig(s.cp.Admin); err != nil {
		return err
	}
	if s.dyn, err = dynamic.NewForConfig(s.cp.Admin); err != nil {
		return err
	}
	if err := s.createNamespace(ctx); err != nil {
		return err
	}

	s.step("installing kwok's CRDs and stages; starting kwok and versitygw")
	m, err := kwok.LoadManifests(s.cfg.BinDir, runner.EngineLabel, runner.RunLabel)
	if err != nil {
		return err
	}
	// Mirror pods are the runner's (a kubelet's): kwok's stages leave
	// them alone.
	if err := m.SkipAnnotation(runner.MirrorAnnotation); err != nil {
		return err
	}
	// So are the cozystack etcd-operator's member pods, which carry no
	// label of the sandbox's: the runner knows them by their EtcdMember.
	if err := m.SkipController(runner.OperatorGroup, runner.OperatorMemberKind); err != nil {
		return err
	}
	// And Bitnami-style etcd members (the chart's name label and
	// ETCD_ON_K8S=yes), which carry nothing of hactl's either.
	if err := m.SkipQuery(runner.BitnamiMemberQuery); err != nil {
		return err
	}
	// And etcd-druid's member pods (druid's managed-by label, controlled
	// by a StatefulSet), which carry nothing of hactl's either.
	if err := m.SkipQuery(runner.DruidMemberQuery); err != nil {
		return err
	}
	// And the Zalando postgres-operator's member pods (application=spilo,
	// a Spilo image without a command), which carry nothing of hactl's
	// either.
	if err := m.SkipQuery(runner.SpiloMemberQuery); err != nil {
		return err
	}
	// And Crunchy PGO v5's instance pods (data=postgres, an instance
	// label, a database container with a command), likewise.
	if err := m.SkipQuery(runner.PGOMemberQuery); err != nil {
		return err
	}
	// And CloudNativePG's instance pods (cnpg.io/podRole=instance,
	// controlled by a Cluster, running the instance manager), likewise.
	if err := m.SkipQuery(runner.CNPGInstanceQuery); err != nil {
		return err
	}
	if err := kwok.Install(ctx, s.dyn, m); err != nil {
		return err
	}
	cert, key, err := s.cp.IssueServingCert("kwok", []net.IP{net.ParseIP(kwok.NodeIP)}, []string{"localhost"})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	var vgwErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.vgw, s.s3, vgwErr = startVersityGW(ctx, s.cfg.BinDir, s.l)
	}()
	s.kw, err = kwok.Start(ctx, kwok.Options{BinDir: s.cfg.BinDir, Dir: s.l.kwok(), Kubeconfig: s.cp.AdminKubeconfig, CertFile: cert, KeyFile: key})
	wg.Wait()
	if err != nil {
		return err
	}
	if vgwErr != nil {
		return vgwErr
	}
	if err := writeJSON(s.l.s3(), s.s3, 0o600); err != nil {
		return err
	}
	s.setState(func(st *State) { st.S3Endpoint, st.S3File = s.s3.Endpoint, s.l.s3() })
	if err := kwok.CreateNodes(ctx, s.kc, s.cfg.Nodes); err != nil {
		return err
	}

	s.prov = volumes.New(s.kc, s.l.volumes(), s.logf)
	provErr := make(chan error, 1)
	go func() { provErr <- s.prov.Run(ctx) }()
	// This program runs the stand-ins for etcd-druid's images when
	// started under their names (StandInIfAsked).
	standIn, err := os.Executable()
	if err != nil {
		return err
	}
	s.run = runner.New(runner.Options{
		Kube: s.kc, Dynamic: s.dyn, BinDir: s.cfg.BinDir, AgentPath: agent, Dir: s.l.runner(), Block: block,
		HostDir: s.prov.HostDir, NodeDir: s.l.node, Logf: s.logf, Server: s.cp.Server, CA: s.cp.CAData,
		StandIn: standIn,
	})
	if err := s.run.Start(ctx); err != nil {
		return err
	}
	if err := s.serveControl(); err != nil {
		return err
	}
	if err := kwok.WaitNodesReady(ctx, s.kc, s.cfg.Nodes); err != nil {
		return err
	}
	select {
	case err := <-provErr:
		return fmt.Errorf("volume provisioner: %w", err)
	default:
	}
	if err := s.runScenarios(ctx); err != nil {
		return err
	}
	select {
	case <-agentDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	if agentErr != nil {
		// Only agent pods need it: the sandbox runs on without.
		s.logf("no agent: %v", agentErr)
		s.setState(func(st *State) { st.AgentError = agentErr.Error() })
	} else {
		s.setState(func(st *State) { st.Agent = agent })
	}
	return nil
}

// agent makes sure the binaries for agent pods are there: the configured
// kubectl-hactl (and the hactl-capture beside it) are; else it builds both
// from the repository into DIR/bin (the build ends with ctx).
func (s *supervisor) agent(ctx context.Context) error {
	if s.cfg.Agent != "" {
		return nil
	}
	root := s.cfg.RepoRoot
	if root == "" {
		return fmt.Errorf("the repository was not found to build kubectl-hactl: pass --agent or set %s", EnvAgent)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building kubectl-hactl: %w (pass --agent or set %s)", err, EnvAgent)
	}
	// hactl-capture first: once kubectl-hactl is there, both are.
	for _, c := range []string{runner.CaptureCommand, runner.AgentCommand} {
		out := filepath.Join(filepath.Dir(s.l.agent()), c)
		// Built beside it and renamed, so that no pod ever starts a partly
		// written binary.
		tmp := filepath.Join(filepath.Dir(out), "."+c+".building")
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		begin := time.Now()
		var buf bytes.Buffer
		args := []string{"build", "-o", tmp}
		if c == runner.CaptureCommand {
			// What the agent image ships: the s3:// and file:// drivers.
			args = append(args, "-tags", runner.CaptureBuildTags)
		}
		cmd := exec.CommandContext(ctx, goBin, append(args, "./cmd/"+c)...)
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = &buf, &buf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		// Ending the build ends the compilers it started too.
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Run(); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("go build ./cmd/%s in %s: %v: %s (pass --agent or set %s)",
				c, root, err, lastLines(buf.String(), 10), EnvAgent)
		}
		if err := os.Rename(tmp, out); err != nil {
			return err
		}
		s.logf("built %s in %s", out, time.Since(begin).Round(100*time.Millisecond))
	}
	return nil
}

// lastLines returns the last n lines of s, trimmed.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (s *supervisor) runScenarios(ctx context.Context) error {
	if len(s.cfg.Scenarios) == 0 {
		return nil
	}
	ns := s.cfg.Namespace
	s.step("setting up " + strings.Join(s.cfg.Scenarios, ", ") + " in namespace " + ns)
	if err := s.waitNamespace(ctx, ns); err != nil {
		return err
	}
	env := scenario.Env{
		Kube:      s.kc,
		Dynamic:   s.dyn,
		Namespace: ns,
		Break: func(ctx context.Context, pod string, kind fault.Kind, args []string) error {
			return s.breakMember(ctx, ns, pod, kind, args)
		},
		Address: func(pod string) (string, error) {
			a, err := s.run.Addresses(ns, pod)
			return a.Address, err
		},
		AddressIn: func(podNS, pod string) (string, error) {
			a, err := s.run.Addresses(podNS, pod)
			return a.Address, err
		},
		NodeDir: s.l.node,
		Exec: func(ctx context.Context, pod string, argv []string) (string, error) {
			return s.run.Exec(ctx, ns, pod, "", argv)
		},
		Logf: s.logf,
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		errs     []error
		clusters []ClusterInfo
	)
	for _, name := range s.cfg.Scenarios {
		sc, err := scenario.Get(name)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			budget := time.Duration(s.cfg.ScenarioTimeout)
			if budget <= 0 {
				budget = defaultScenarioTimeout
			}
			sctx, cancel := context.WithTimeout(ctx, budget)
			defer cancel()
			begin := time.Now()
			err := sc.Run(sctx, env)
			mu.Lock()
			defer mu.Unlock()
			cns := sc.ClusterNamespace(ns)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w%s", err, s.logTails(cns, sc, 12)))
				return
			}
			ci := ClusterInfo{Scenario: sc.Name, Namespace: cns, Name: sc.ClusterName(), Shape: sc.Shape.String(), Summary: sc.Summary, Setup: Duration(time.Since(begin))}
			for _, r := range sc.Reasons {
				ci.Reasons = append(ci.Reasons, string(r))
			}
			for _, r := range sc.MayAlso {
				ci.MayAlso = append(ci.MayAlso, string(r))
			}
			if sc.Shape == scenario.KubeadmStacked {
				ci.ProbeArgs = scenario.KubeadmProbeArgs(s.l.node(scenario.KubeadmNodes[0]))
			}
			clusters = append(clusters, ci)
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	ordered := make([]ClusterInfo, 0, len(clusters))
	for _, name := range s.cfg.Scenarios {
		for _, c := range clusters {
			if c.Scenario == name {
				ordered = append(ordered, c)
			}
		}
	}
	s.setState(func(st *State) { st.Clusters = ordered })
	return nil
}

// logTails is the end of each container log of the members of sc's
// cluster (in ns), for a setup that failed: the sandbox's files may be
// gone before anyone reads them (a test run cleans up).
func (s *supervisor) logTails(ns string, sc *scenario.Scenario, lines int) string {
	var b strings.Builder
	for _, m := range s.run.Members() {
		if m.Namespace != ns || !sc.Owns(m.Name) {
			continue
		}
		tails := s.run.LogTail(ns, m.Name, lines)
		containers := make([]string, 0, len(tails))
		for c := range tails {
			containers = append(containers, c)
		}
		sort.Strings(containers)
		for _, c := range containers {
			fmt.Fprintf(&b, "\n--- last lines of %s/%s (container %s) ---\n%s", ns, m.Name, c, strings.TrimRight(tails[c], "\n"))
		}
	}
	return b.String()
}

// createNamespace creates the scenarios' namespace early: its default
// ServiceAccount (without which no pod can be created) takes the
// controller-manager a few seconds at start, which then overlaps with
// starting kwok.
func (s *supervisor) createNamespace(ctx context.Context) error {
	if len(s.cfg.Scenarios) == 0 {
		return nil
	}
	_, err := s.kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.cfg.Namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// waitNamespace waits for the namespace's default ServiceAccount: pods
// cannot be created before it exists, and waiting spares the StatefulSet
// controller its back-off.
func (s *supervisor) waitNamespace(ctx context.Context, ns string) error {
	for {
		if _, err := s.kc.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for namespace %s's default ServiceAccount: %w", ns, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// requestShutdown makes Serve return.
func (s *supervisor) requestShutdown() {
	s.shutdownOnce.Do(func() { close(s.shutdown) })
}

func (s *supervisor) shutdownDone() <-chan struct{} { return s.shutdown }

// stop stops everything start started, members first.
func (s *supervisor) stop() {
	s.setState(func(st *State) { st.Phase, st.Step = PhaseStopping, "stopping" })
	if s.run != nil {
		s.run.Stop()
	}
	if s.kw != nil {
		if err := s.kw.Stop(); err != nil {
			s.logf("stopping kwok: %v", err)
		}
	}
	if s.vgw != nil {
		if err := s.vgw.Stop(5 * time.Second); err != nil {
			s.logf("stopping versitygw: %v", err)
		}
	}
	if s.cp != nil {
		if err := s.cp.Stop(); err != nil {
			s.logf("stopping the control plane: %v", err)
		}
	}
	if s.egress != nil {
		s.egress.Close()
	}
	s.requestShutdown()
}
