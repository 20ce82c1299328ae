package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/internal/testenv"
)

const kubeconfigWithSettings = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: prod
  context:
    cluster: c
    user: u
    extensions:
    - name: hactl.dev
      extension:
        readonly: true
- name: dev
  context:
    cluster: c
    user: u
- name: broken
  context:
    cluster: c
    user: u
    extensions:
    - name: hactl.dev
      extension:
        readonly: "maybe"
current-context: dev
users:
- name: u
  user:
    token: not-a-real-token
`

func tuiOptionsFor(t *testing.T, kubeconfig, context string, args ...string) (*TUIOptions, error) {
	t.Helper()
	flags := kubeflags.NewConfigFlags(true)
	flags.KubeConfig = &kubeconfig
	if context != "" {
		flags.Context = &context
	}
	o := NewTUIOptions(flags, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}})
	cmd := &cobra.Command{}
	o.AddFlags(cmd)
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	return o, o.Complete(cmd, nil)
}

func TestTUIContextReadOnly(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(kubeconfigWithSettings), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		context string
		args    []string
		ro      bool
		why     string
	}{
		{context: "prod", ro: true, why: "context prod is read-only"},
		{context: "", ro: false},
		{context: "dev", ro: false},
		{context: "dev", args: []string{"--readonly"}, ro: true, why: "--readonly"},
		{context: "prod", args: []string{"--readonly"}, ro: true, why: "--readonly"},
	} {
		o, err := tuiOptionsFor(t, kc, c.context, c.args...)
		if err != nil {
			t.Fatalf("context %q: %v", c.context, err)
		}
		ro, why := o.readOnly(o.contextName, o.contextReadOnly)
		if ro != c.ro || why != c.why {
			t.Errorf("context %q %v: read-only %v (%q), want %v (%q)", c.context, c.args, ro, why, c.ro, c.why)
		}
	}
	_, err := tuiOptionsFor(t, kc, "broken")
	if err == nil || !strings.Contains(err.Error(), `context "broken"`) || !strings.Contains(err.Error(), "readonly") {
		t.Errorf("a malformed extension: %v, want an error naming the context", err)
	}
	if err != nil && strings.Contains(err.Error(), "not-a-real-token") {
		t.Error("the error carries the kubeconfig's token")
	}
}

func TestTUIValidation(t *testing.T) {
	testenv.SkipShort(t)
	_, errOut, code := run(t, "tui", "--probe-interval", "10ms")
	if code != ExitUsage || !strings.Contains(errOut, "--probe-interval") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	_, errOut, code = run(t, "tui", "a", "b")
	if code != ExitUsage {
		t.Errorf("two clusters: exit %d: %s", code, errOut)
	}
	// The test's streams are not terminals.
	_, errOut, code = run(t, "tui")
	if code != ExitError || !strings.Contains(errOut, "needs a terminal") || !strings.Contains(errOut, "kubectl hactl status") {
		t.Errorf("without a terminal: exit %d: %s", code, errOut)
	}
}

// lockedWriter is a strings.Builder safe for the program and the test.
type lockedWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestTUISaysWhichSignalEndedIt: SIGHUP (the terminal went away) ends the
// view with an error naming the signal, not silently.
func TestTUISaysWhichSignalEndedIt(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-sig"))
	kc := cp.AdminKubeconfig
	flags := kubeflags.NewConfigFlags(true)
	flags.KubeConfig, flags.Namespace = &kc, &ns
	in, inW := io.Pipe()
	defer inW.Close()
	var out lockedWriter
	o := NewTUIOptions(flags, genericiooptions.IOStreams{In: in, Out: &out, ErrOut: io.Discard})
	cmd := &cobra.Command{}
	o.AddFlags(cmd)
	if err := cmd.Flags().Parse([]string{"--no-probe"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(cmd, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- o.Run(context.Background()) }()
	// Once the program switched to the alternate screen, the signal
	// handler is in place.
	testenv.Poll(t, 30*time.Second, func() (bool, error) { return strings.Contains(out.String(), "\x1b[?1049h"), nil })
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrTUIInterrupted) || !strings.Contains(err.Error(), "hangup") {
			t.Errorf("Run after SIGHUP: %v, want the view interrupted by hangup", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("SIGHUP did not end the view")
	}
}
