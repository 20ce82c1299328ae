package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/status"
)

// TestBareCommandTakesTheViewsFlags: `kubectl hactl` without a terminal
// prints status and accepts what tui and status accept (-A, --readonly,
// --probe-interval, -o, --color).
func TestBareCommandTakesTheViewsFlags(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns1, ns2 := testenv.Namespace(t, cp), testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns1, fixtures.DefaultSpec("etcd-a"))
	fixtures.CreateCluster(t, admin, ns2, fixtures.DefaultSpec("etcd-b"))

	out, errOut, code := run(t, "-A", "--no-probe", "--readonly", "--probe-interval", "10s", "--color", "never")
	if code != ExitNotFailoverReady || !strings.Contains(out, ns1+"/etcd-a") || !strings.Contains(out, ns2+"/etcd-b") {
		t.Fatalf("kubectl hactl -A: exit %d, want 3 and both clusters\n%s\n%s", code, out, errOut)
	}
	out, errOut, _ = run(t, "-n", ns1, "--no-probe", "-o", "json")
	var doc status.ClusterStatusList
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Items) != 1 || doc.Items[0].Metadata.Name != "etcd-a" {
		t.Fatalf("kubectl hactl -o json: %v\n%s\n%s", err, out, errOut)
	}
	if _, errOut, code := run(t, "--no-such-flag"); code != ExitUsage || !strings.Contains(errOut, "unknown flag") {
		t.Fatalf("an unknown flag: exit %d, %s", code, errOut)
	}
}

// TestNoKubeconfigSaysWhatToSet: without any kubeconfig, every command says
// that no configuration was found and what to set, instead of dialling
// localhost:8080.
func TestNoKubeconfigSaysWhatToSet(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, args := range [][]string{{"status"}, {}, {"-A"}, {"replace", "etcd", "etcd-0", "--yes"}, {"generations", "list", "etcd"}} {
		var out, errOut bytes.Buffer
		code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
		msg := errOut.String()
		if code != ExitError || !strings.Contains(msg, "no configuration has been provided") || !strings.Contains(msg, "KUBECONFIG") || strings.Contains(msg, "8080") {
			t.Errorf("%v: exit %d, stderr %q", args, code, msg)
		}
	}
	// A wrong command line is still a usage error (exit 2).
	var out, errOut bytes.Buffer
	if code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, []string{"status", "--color", "purple"}); code != ExitUsage || !strings.Contains(errOut.String(), "--color") {
		t.Errorf("status --color purple without a kubeconfig: exit %d, stderr %q; want 2 naming --color", code, errOut.String())
	}
	errOut.Reset()
	if code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, []string{"status", "--cert-warn", "0s"}); code != ExitUsage || !strings.Contains(errOut.String(), "--cert-warn must be positive") {
		t.Errorf("status --cert-warn 0s: exit %d, stderr %q; want 2 naming --cert-warn", code, errOut.String())
	}
}
