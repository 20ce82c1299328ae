package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/testbins"
	"github.com/hactl-dev/hactl/sandbox"
	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// env is the sandbox every test in this package shares.
var env struct {
	sb      *sandbox.Sandbox
	bins    string // pinned binaries (kubectl, etcdctl, ...)
	plugins string // the freshly built kubectl-hactl and hactl-sandbox
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() || os.Getenv("HACTL_SKIP_E2E") != "" {
		return m.Run() // tests skip themselves
	}
	var err error
	if env.bins, err = testbins.Dir(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "hactl-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	env.plugins = filepath.Join(tmp, "bin")
	for _, c := range []string{"kubectl-hactl", "hactl-sandbox"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(env.plugins, c), "../cmd/"+c).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: building %s: %v\n%s", c, err, out)
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	env.sb, err = sandbox.Start(ctx, sandbox.Options{
		Dir:        filepath.Join(tmp, "sandbox"),
		Scenarios:  scenario.Names(),
		BinDir:     env.bins,
		Executable: filepath.Join(env.plugins, "hactl-sandbox"),
		Progress:   os.Stderr,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the sandbox:", err)
		_ = sandbox.Down(context.Background(), filepath.Join(tmp, "sandbox"), sandbox.DownOptions{})
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: sandbox with %d clusters up in %s\n", len(env.sb.State.Clusters), time.Since(start).Round(time.Second))
	code := m.Run()
	if err := env.sb.Stop(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stopping the sandbox:", err)
		code = max(code, 1)
	}
	return code
}

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() || env.sb == nil {
		t.Skip("end-to-end: needs the sandbox; skipped under -short")
	}
}

// kubectl runs the real kubectl against the sandbox with the plugin dir
// first on PATH, and returns stdout, stderr and the exit code.
func kubectl(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(env.bins, "kubectl"), args...)
	cmd.Env = append(os.Environ(),
		"PATH="+env.plugins+":"+env.bins+":"+os.Getenv("PATH"),
		"KUBECONFIG="+env.sb.Kubeconfig)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kubectl %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}
