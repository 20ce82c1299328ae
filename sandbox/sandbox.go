package sandbox

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hactl-dev/hactl/internal/testbins"
	"github.com/hactl-dev/hactl/sandbox/cnpgstandin"
	"github.com/hactl-dev/hactl/sandbox/controlplane"
	"github.com/hactl-dev/hactl/sandbox/druidstandin"
	"github.com/hactl-dev/hactl/sandbox/fault"
	"github.com/hactl-dev/hactl/sandbox/internal/proc"
	"github.com/hactl-dev/hactl/sandbox/internal/reap"
	"github.com/hactl-dev/hactl/sandbox/scenario"
	"github.com/hactl-dev/hactl/sandbox/spilostandin"
)

// ServeCommand is the argument that makes a program run the supervisor:
// Start runs `<Executable> serve --dir DIR`, and the program must hand
// that to Serve (the hactl-sandbox command does; tests do in TestMain).
const ServeCommand = "serve"

// ServeIfAsked runs the supervisor and exits when the program was started
// as `<program> serve --dir DIR` (by Start); otherwise it returns at once.
// A test binary that starts sandboxes calls it first in TestMain.
func ServeIfAsked() {
	StandInIfAsked()
	if len(os.Args) < 2 || os.Args[1] != ServeCommand {
		return
	}
	fs := flag.NewFlagSet(ServeCommand, flag.ExitOnError)
	dir := fs.String("dir", "", "sandbox directory")
	_ = fs.Parse(os.Args[2:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Serve(ctx, *dir, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		stop()
		os.Exit(1)
	}
	stop()
	os.Exit(0)
}

// StandInIfAsked runs a stand-in for one of etcd-druid's images or for
// Spilo's entrypoint and exits when the program was started under a
// stand-in's name (druidstandin.Commands, spilostandin.Commands: the
// runner links the supervisor's program under those names for the
// containers of those images); otherwise it returns.
// ServeIfAsked calls it first.
func StandInIfAsked() {
	if len(os.Args) == 0 {
		return
	}
	if code, ok := druidstandin.Main(os.Args[0], os.Args[1:]); ok {
		os.Exit(code)
	}
	if code, ok := spilostandin.Main(os.Args[0], os.Args[1:]); ok {
		os.Exit(code)
	}
	if code, ok := cnpgstandin.Main(os.Args[0], os.Args[1:]); ok {
		os.Exit(code)
	}
}

// Options configures Start.
type Options struct {
	// Dir is the sandbox directory (default DefaultDir()). It must be
	// empty, missing, or hold an earlier sandbox (which is cleaned up).
	Dir string
	// Scenarios to set up (default scenario.Demo).
	Scenarios []string
	// Namespace for the scenarios' clusters (default "hactl-demo").
	Namespace string
	// BinDir holds the pinned binaries (default: internal/testbins, which
	// builds them on first use).
	BinDir string
	// Agent is the kubectl-hactl binary that pods of hactl's agent image
	// run (restore pods: command kubectl-hactl agent restore ...); capture
	// pods run the hactl-capture beside it (without one, they fail to start
	// and seed falls back to its port-forward). Default
	// $HACTL_AGENT, else the supervisor builds both once from the
	// repository (go build -o DIR/bin/NAME ./cmd/NAME); if that
	// fails the sandbox still starts, without an agent (State.AgentError).
	Agent string
	// Executable is the program run as `<Executable> serve --dir DIR`
	// (default: this program).
	Executable string
	// Progress receives one line per startup step (nil: none).
	Progress io.Writer
	// Timeout bounds the whole start (default 5 minutes).
	Timeout time.Duration
	// APIServerArgs are appended to kube-apiserver's flags (an audit
	// policy and log, for tests that check what was changed and by whom).
	APIServerArgs []string
}

// Sandbox is a running sandbox, seen from outside its supervisor.
type Sandbox struct {
	// Dir is the sandbox directory.
	Dir string
	// Kubeconfig is DIR/kubeconfig (admin, system:masters).
	Kubeconfig string
	// State is what the supervisor published when the sandbox was opened.
	State State

	l       layout
	control controlRecord
	sup     supervisorRecord
}

// Start starts a sandbox detached from the caller: a supervisor process
// in its own session (surviving the caller) that runs everything, logging
// to DIR/logs. It returns once every scenario's cluster is set up, or
// fails, in which case everything started is stopped again (the logs
// stay).
func Start(ctx context.Context, o Options) (*Sandbox, error) {
	dir := o.Dir
	var err error
	if dir == "" {
		if dir, err = DefaultDir(); err != nil {
			return nil, err
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if len(o.Scenarios) == 0 {
		o.Scenarios = scenario.Demo
	}
	for _, s := range o.Scenarios {
		if _, err := scenario.Get(s); err != nil {
			return nil, err
		}
	}
	if o.Namespace == "" {
		o.Namespace = scenario.DefaultNamespace
	}
	agent, err := agentPath(o.Agent)
	if err != nil {
		return nil, err
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	l := layout{dir: dir}

	if _, alive := supervisorAlive(l); alive {
		return nil, fmt.Errorf("%s: %w (use it, or run down first)", dir, ErrRunning)
	}
	if err := prepareDir(ctx, l); err != nil {
		return nil, err
	}
	if o.BinDir == "" {
		progress(o.Progress, "locating the pinned binaries (hack/testbins.sh; the first run builds them)")
		if o.BinDir, err = testbins.Dir(); err != nil {
			return nil, err
		}
	}
	exe := o.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	cfg := config{BinDir: o.BinDir, Namespace: o.Namespace, Scenarios: o.Scenarios, Nodes: 3, Agent: agent, APIServerArgs: o.APIServerArgs,
		ScenarioTimeout: Duration(o.Timeout)}
	if cfg.Agent == "" {
		// The supervisor builds it; it runs in dir, so find the
		// repository from here.
		cfg.RepoRoot, _ = testbins.RepoRoot()
	}
	if err := writeJSON(l.config(), cfg, 0o644); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(l.logs(), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(l.supervisorLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, ServeCommand, "--dir", dir)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return nil, fmt.Errorf("starting the sandbox supervisor: %w", err)
	}
	if st, err := reap.ReadStat(cmd.Process.Pid); err == nil {
		_ = writeJSON(l.supervisor(), supervisorRecord{Pid: st.Pid, Start: st.Start}, 0o644)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	fail := func(err error) (*Sandbox, error) {
		dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
		defer dcancel()
		if derr := Down(dctx, dir, DownOptions{KeepFiles: true}); derr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", derr))
		}
		return nil, fmt.Errorf("%w\n--- last lines of %s ---\n%s", err, l.supervisorLog(), proc.Tail(l.supervisorLog(), 30))
	}
	lastStep := ""
	for {
		var st State
		if err := readJSON(l.state(), &st); err == nil {
			if st.Step != "" && st.Step != lastStep {
				lastStep = st.Step
				progress(o.Progress, st.Step)
			}
			switch st.Phase {
			case PhaseReady:
				return Open(dir)
			case PhaseFailed:
				return fail(fmt.Errorf("the sandbox failed to start: %s", st.Error))
			}
		}
		select {
		case err := <-exited:
			return fail(fmt.Errorf("the sandbox supervisor exited while starting (%v)", err))
		case <-ctx.Done():
			return fail(fmt.Errorf("the sandbox did not start in time: %w", ctx.Err()))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// agentPath resolves the agent binary: given, else $HACTL_AGENT (either
// must be an executable file), else "" (to be built).
func agentPath(given string) (string, error) {
	what := "--agent"
	if given == "" {
		given, what = os.Getenv(EnvAgent), "$"+EnvAgent
	}
	if given == "" {
		return "", nil
	}
	abs, err := filepath.Abs(given)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("%s: the kubectl-hactl binary: %w", what, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s: %s is not an executable file", what, abs)
	}
	return abs, nil
}

func progress(w io.Writer, line string) {
	if w != nil {
		fmt.Fprintf(w, "%s %s\n", time.Now().Format("15:04:05"), line)
	}
}

// prepareDir makes dir ready for a new sandbox: created if missing; if it
// holds an earlier (dead) sandbox, cleaned up; if it holds anything else,
// refused.
func prepareDir(ctx context.Context, l layout) error {
	ents, err := os.ReadDir(l.dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case len(ents) == 0:
	default:
		if _, err := os.Stat(l.marker()); err != nil {
			return fmt.Errorf("%s is not empty and holds no sandbox: refusing to use it", l.dir)
		}
		if err := Down(ctx, l.dir, DownOptions{}); err != nil {
			return fmt.Errorf("cleaning up the earlier sandbox in %s: %w", l.dir, err)
		}
	}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(l.marker(), []byte("hactl sandbox directory: `hactl-sandbox down` removes it\n"), 0o644)
}

// supervisorAlive reads DIR/supervisor.json and reports whether that
// process still runs.
func supervisorAlive(l layout) (supervisorRecord, bool) {
	var rec supervisorRecord
	if err := readJSON(l.supervisor(), &rec); err != nil || rec.Pid <= 1 {
		return rec, false
	}
	return rec, reap.Same(reap.Stat{Pid: rec.Pid, Start: rec.Start})
}

// Open attaches to the sandbox running in dir.
func Open(dir string) (*Sandbox, error) {
	if dir == "" {
		var err error
		if dir, err = DefaultDir(); err != nil {
			return nil, err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	l := layout{dir: dir}
	sup, alive := supervisorAlive(l)
	if !alive {
		return nil, fmt.Errorf("%s: %w", dir, ErrNotRunning)
	}
	s := &Sandbox{Dir: dir, Kubeconfig: l.kubeconfig(), l: l, sup: sup}
	if err := readJSON(l.state(), &s.State); err != nil {
		return nil, err
	}
	if s.State.Phase != PhaseReady {
		return nil, fmt.Errorf("%s: the sandbox is %s, not ready", dir, s.State.Phase)
	}
	if err := readJSON(l.control(), &s.control); err != nil {
		return nil, err
	}
	return s, nil
}

// SupervisorPid is the pid of the sandbox's supervisor.
func (s *Sandbox) SupervisorPid() int { return s.sup.Pid }

// RESTConfig is an admin client configuration for the sandbox.
func (s *Sandbox) RESTConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
}

// S3 returns the artifact store's endpoint and credentials (read from
// DIR/s3.json, mode 0600).
func (s *Sandbox) S3() (S3, error) {
	var v S3
	err := readJSON(s.l.s3(), &v)
	return v, err
}

// splitMember parses "[namespace/]pod", defaulting to the sandbox's
// namespace.
func (s *Sandbox) splitMember(member string) (string, string) {
	if ns, pod, ok := strings.Cut(member, "/"); ok {
		return ns, pod
	}
	return s.State.Namespace, member
}

// Break injects a fault into member ("[namespace/]pod"); args are the
// flags of a Rebootstrap.
func (s *Sandbox) Break(ctx context.Context, member string, kind fault.Kind, args ...string) error {
	ns, pod := s.splitMember(member)
	return s.control.call(ctx, "POST", "/v1/break", breakRequest{Namespace: ns, Pod: pod, Fault: kind.String(), Args: args}, nil)
}

// Members lists the sandbox's running members.
func (s *Sandbox) Members(ctx context.Context) ([]Member, error) {
	var ms []Member
	err := s.control.call(ctx, "GET", "/v1/members", nil, &ms)
	return ms, err
}

// Member returns one member ("[namespace/]pod").
func (s *Sandbox) Member(ctx context.Context, member string) (Member, error) {
	ns, pod := s.splitMember(member)
	ms, err := s.Members(ctx)
	if err != nil {
		return Member{}, err
	}
	for _, m := range ms {
		if m.Namespace == ns && m.Name == pod {
			return m, nil
		}
	}
	return Member{}, fmt.Errorf("%s/%s is not a running sandbox member", ns, pod)
}

// Stop stops the sandbox and removes its directory (Down).
func (s *Sandbox) Stop(ctx context.Context) error { return Down(ctx, s.Dir, DownOptions{}) }

// DownOptions configures Down.
type DownOptions struct {
	// KeepFiles keeps the sandbox directory (logs, data); by default Down
	// removes it.
	KeepFiles bool
}

// Down stops the sandbox in dir and every process it started, also after
// its supervisor crashed: it asks the supervisor to stop (SIGTERM, waiting
// up to 30 s), then SIGKILLs whatever is left of the supervisor's session
// and every process recorded in a pid file under dir. It then removes dir
// (which must hold the sandbox marker) unless o.KeepFiles. Down on a dir
// with no sandbox does nothing.
func Down(ctx context.Context, dir string, o DownOptions) error {
	if dir == "" {
		var err error
		if dir, err = DefaultDir(); err != nil {
			return err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	l := layout{dir: dir}
	if _, err := os.Stat(l.marker()); err != nil {
		if _, serr := os.Stat(dir); errors.Is(serr, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("%s holds no sandbox (no %s): refusing to touch it", dir, filepath.Base(l.marker()))
	}
	var errs []error
	var rec supervisorRecord
	_ = readJSON(l.supervisor(), &rec)
	if rec.Pid > 1 {
		sup := reap.Stat{Pid: rec.Pid, Start: rec.Start}
		if reap.Same(sup) {
			_ = syscall.Kill(rec.Pid, syscall.SIGTERM)
			wait(ctx, 30*time.Second, func() bool { return !reap.Same(sup) })
		}
		// Whatever is left of its session: the supervisor crashed, or
		// did not finish stopping.
		if left := reap.Session(rec.Pid, rec.Start); len(left) > 0 {
			if err := reap.Kill(left, 30*time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// Recorded processes and all they started: the runner records
	// processes that left their container's session (a postmaster that
	// called setsid), whose own children left it too.
	if left, err := reap.Recorded(dir); err != nil {
		errs = append(errs, err)
	} else if err := reap.Kill(reap.Descendants(left), 30*time.Second); err != nil {
		errs = append(errs, err)
	}
	if err := controlplane.KillRecorded(dir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if o.KeepFiles {
		_ = os.Remove(l.supervisor())
		_ = os.Remove(l.control())
		return nil
	}
	return os.RemoveAll(dir)
}

// wait polls done every 50 ms for up to d (or until ctx ends).
func wait(ctx context.Context, d time.Duration, done func() bool) {
	deadline := time.Now().Add(d)
	for !done() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}
