package kubeflags_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/hactl-dev/hactl/internal/kubeflags"
)

// TestTheSameFlagsAsKubectl: every connection flag kubectl's plugins are
// expected to take is bound with cli-runtime's name, shorthand, type,
// default and help, and no other.
func TestTheSameFlagsAsKubectl(t *testing.T) {
	want := pflag.NewFlagSet("want", pflag.ContinueOnError)
	genericclioptions.NewConfigFlags(true).AddFlags(want)
	got := pflag.NewFlagSet("got", pflag.ContinueOnError)
	kubeflags.NewConfigFlags(true).AddFlags(got)
	n := 0
	want.VisitAll(func(w *pflag.Flag) {
		n++
		g := got.Lookup(w.Name)
		switch {
		case g == nil:
			t.Errorf("--%s is not bound", w.Name)
		case g.Shorthand != w.Shorthand || g.Value.Type() != w.Value.Type() || g.DefValue != w.DefValue || g.Usage != w.Usage:
			t.Errorf("--%s: got -%s %s %q %q, kubectl's -%s %s %q %q", w.Name, g.Shorthand, g.Value.Type(), g.DefValue, g.Usage, w.Shorthand, w.Value.Type(), w.DefValue, w.Usage)
		}
	})
	got.VisitAll(func(g *pflag.Flag) {
		if want.Lookup(g.Name) == nil {
			t.Errorf("--%s is bound, kubectl's plugins do not take it", g.Name)
		}
	})
	if n < 15 {
		t.Fatalf("only %d flags compared", n)
	}
}

// TestTheSameConnectionAsKubectl: the same command line and kubeconfig
// give the same REST configuration, namespace and raw configuration.
func TestTheSameConnectionAsKubectl(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443", insecure-skip-tls-verify: true}
- name: b
  cluster: {server: "https://b.example:6443", insecure-skip-tls-verify: true}
contexts:
- name: ca
  context: {cluster: a, user: ua, namespace: na}
- name: cb
  context: {cluster: b, user: ub}
current-context: ca
users:
- name: ua
  user: {token: token-a}
- name: ub
  user: {token: token-b}
`
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--kubeconfig", kc},
		{"--kubeconfig", kc, "--context", "cb"},
		{"--kubeconfig", kc, "-n", "other", "--request-timeout", "7s"},
		{"--kubeconfig", kc, "--cluster", "b", "--user", "ub"},
		{"--kubeconfig", kc, "-s", "https://c.example:6443", "--token", "tok", "--tls-server-name", "x.example"},
		{"--kubeconfig", kc, "--as", "alice", "--as-group", "g1", "--as-group", "g2", "--as-uid", "42", "--as-user-extra", "k=v", "--as-user-extra", "k=w"},
		{"--kubeconfig", kc, "--disable-compression", "--proxy-url", "http://proxy.example:3128"},
	} {
		want := genericclioptions.NewConfigFlags(true)
		wfs := pflag.NewFlagSet("want", pflag.ContinueOnError)
		want.AddFlags(wfs)
		got := kubeflags.NewConfigFlags(true)
		gfs := pflag.NewFlagSet("got", pflag.ContinueOnError)
		got.AddFlags(gfs)
		if err := wfs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := gfs.Parse(args); err != nil {
			t.Fatal(err)
		}
		wc, werr := want.ToRESTConfig()
		gc, gerr := got.ToRESTConfig()
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%v: kubectl %v, here %v", args, werr, gerr)
		}
		wc.Proxy, gc.Proxy = nil, nil // functions
		// The one difference, on purpose: the warnings (TestQuietWarnings).
		if gerr == nil {
			gc.WarningHandlerWithContext = nil
		}
		if !reflect.DeepEqual(wc, gc) {
			t.Errorf("%v: REST configuration\n got %+v\nwant %+v", args, gc, wc)
		}
		wns, _, _ := want.ToRawKubeConfigLoader().Namespace()
		gns, _, _ := got.ToRawKubeConfigLoader().Namespace()
		if wns != gns {
			t.Errorf("%v: namespace %q, kubectl's %q", args, gns, wns)
		}
		wraw, _ := want.ToRawKubeConfigLoader().RawConfig()
		graw, _ := got.ToRawKubeConfigLoader().RawConfig()
		if wraw.CurrentContext != graw.CurrentContext || len(wraw.Contexts) != len(graw.Contexts) {
			t.Errorf("%v: raw configuration differs", args)
		}
	}
}

// recordWarnings keeps the warnings passed on to it.
type recordWarnings struct{ got *[]string }

func (r recordWarnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _, m string) {
	*r.got = append(*r.got, m)
}

// The configuration's warnings pass on every API server warning but the
// v1 Endpoints deprecation (Patroni's DCS is read there).
func TestQuietWarnings(t *testing.T) {
	var got []string
	q := kubeflags.QuietWarnings{Next: recordWarnings{&got}}
	q.HandleWarningHeaderWithContext(context.Background(), 299, "-", "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice")
	q.HandleWarningHeaderWithContext(context.Background(), 299, "-", "policy/v1beta1 PodDisruptionBudget is deprecated")
	if len(got) != 1 || !strings.Contains(got[0], "PodDisruptionBudget") {
		t.Errorf("passed on %q, want only the PodDisruptionBudget warning", got)
	}
	f := kubeflags.NewConfigFlags(false)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c}}]\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.KubeConfig = &kc
	cfg, err := f.ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.WarningHandlerWithContext.(kubeflags.QuietWarnings); !ok {
		t.Errorf("the configuration's warning handler is %T, want QuietWarnings", cfg.WarningHandlerWithContext)
	}
}
