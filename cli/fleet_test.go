package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/status"
)

// TestStatusAcrossContexts: --context a,b,dead and --all-contexts read
// every context, print each one's clusters under its name (the JSON items
// name their context), print the context whose server refuses in its
// place without losing the others, and exit with the worst code: 1 when
// a context could not be read, else the worst verdict's.
func TestStatusAcrossContexts(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns1, ns2 := testenv.Namespace(t, cp), testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns1, fixtures.DefaultSpec("etcd-a"))
	fixtures.CreateCluster(t, admin, ns2, fixtures.DefaultSpec("etcd-b"))

	cfg, err := clientcmd.LoadFromFile(cp.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	cfg.Contexts = map[string]*clientcmdapi.Context{
		"a":    {Cluster: cur.Cluster, AuthInfo: cur.AuthInfo, Namespace: ns1},
		"b":    {Cluster: cur.Cluster, AuthInfo: cur.AuthInfo, Namespace: ns2},
		"dead": {Cluster: "dead", AuthInfo: cur.AuthInfo, Namespace: ns1},
	}
	cfg.Clusters["dead"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	cfg.CurrentContext = "a"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
			append([]string{"status", "--kubeconfig", path, "--no-probe", "--request-timeout", "5s"}, args...))
		return out.String(), errOut.String(), code
	}

	out, errOut, code := run("--context", "a,b")
	if code != ExitNotFailoverReady || !strings.Contains(out, "context a\n") || !strings.Contains(out, "context b\n") ||
		!strings.Contains(out, "etcd-a") || !strings.Contains(out, "etcd-b") {
		t.Errorf("--context a,b: exit %d, want 3 with both contexts' clusters\n%s\n%s", code, out, errOut)
	}

	for _, args := range [][]string{{"--context", "a,b,dead"}, {"--all-contexts"}} {
		out, errOut, code = run(append(args, "-o", "json")...)
		var l status.ClusterStatusList
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatalf("%v: not a ClusterStatusList: %v\n%s\n%s", args, err, out, errOut)
		}
		got := map[string]string{}
		for _, it := range l.Items {
			got[it.Metadata.Context] = it.Metadata.Name
		}
		if code != ExitError || got["a"] != "etcd-a" || got["b"] != "etcd-b" || len(l.Errors) != 1 || l.Errors[0].Context != "dead" ||
			!strings.Contains(errOut, "1 of 3 contexts could not be read") {
			t.Errorf("%v: exit %d, items by context %v, errors %+v; want 1, a and b read, dead failed\n%s", args, code, got, l.Errors, errOut)
		}
	}
	out, _, _ = run("--context", "dead,a")
	if !strings.Contains(out, "context dead\n  error:") || !strings.Contains(out, "etcd-a") {
		t.Errorf("the failed context is printed in its place, the other all the same:\n%s", out)
	}
	for _, bad := range [][]string{{"--context", "a,b", "--watch"}, {"--context", "a,b", "-o", "name"}, {"--all-contexts", "--context", "a"}} {
		if _, errOut, code := run(bad...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2\n%s", bad, code, errOut)
		}
	}
	// The live view shows one context: several are a usage error, not a
	// view without a client.
	ctxs := "a,b"
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig, flags.Context = &path, &ctxs
	o := NewTUIOptions(flags, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	if err := o.Complete(nil, nil); codeOf(err) != ExitUsage || !strings.Contains(err.Error(), "one context at a time") {
		t.Errorf("the live view with --context a,b: %v", err)
	}
}
