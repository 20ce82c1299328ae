package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
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
	if code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, []string{"status", "--watch", "-o", "openmetrics"}); code != ExitUsage || !strings.Contains(errOut.String(), "one snapshot") {
		t.Errorf("status --watch -o openmetrics: exit %d, stderr %q; want 2", code, errOut.String())
	}
	errOut.Reset()
	if code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, []string{"status", "--cert-warn", "0s"}); code != ExitUsage || !strings.Contains(errOut.String(), "--cert-warn must be positive") {
		t.Errorf("status --cert-warn 0s: exit %d, stderr %q; want 2 naming --cert-warn", code, errOut.String())
	}
}

// TestKubeconfigErrorsSpeakPlainly: a file that is no kubeconfig, and one
// with a field of the wrong kind, are named with what is wrong in plain
// words, never the Go types client-go's loader names.
func TestKubeconfigErrorsSpeakPlainly(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		file, want string
	}{
		{write("passwd", "root:x:0:0:root:/root:/bin/bash\n"), "it is not a kubeconfig (YAML or JSON with apiVersion: v1 and kind: Config)"},
		{write("clusters.json", `{"apiVersion":"v1","kind":"Config","clusters":"prod"}`), "field clusters holds text, where a kubeconfig has a list"},
		{write("insecure.yaml", "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster:\n    server: https://x\n    insecure-skip-tls-verify: \"yes\"\n"),
			"field clusters.cluster.insecure-skip-tls-verify holds text, where a kubeconfig has true or false"},
	} {
		for _, args := range [][]string{{"status", "--kubeconfig", c.file}, {"replace", "etcd", "etcd-0", "--kubeconfig", c.file, "--yes"}} {
			var out, errOut bytes.Buffer
			code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
			msg := errOut.String()
			if code != ExitError || !strings.Contains(msg, c.want) || !strings.Contains(msg, strconv.Quote(c.file)) || strings.Contains(msg, "Go ") {
				t.Errorf("%v: exit %d, stderr %q; want %d naming the file and %q", args, code, msg, ExitError, c.want)
			}
		}
	}
}
