package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/internal/poll"
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

	path := fleetKubeconfig(t, ns1, ns2, "team,a")
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

	// Repeated, the names add up as with commas.
	if rout, rerr, rcode := run("--context", "a", "--context", "b"); rcode != code || !strings.Contains(rout, "context a\n") || !strings.Contains(rout, "context b\n") {
		t.Errorf("--context a --context b: exit %d, want %d and both contexts as --context a,b\n%s\n%s", rcode, code, rout, rerr)
	}

	out, errOut, code = run("--context", "team,a")
	if code != ExitNotFailoverReady || strings.Contains(out, "context ") || !strings.Contains(out, "etcd-a") {
		t.Errorf("the context named team,a is one context: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, args := range [][]string{{"--context", "a,b,dead"}, {"--context", "a,b,dead,a"}} {
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
	out, errOut, code = run("--all-contexts", "-o", "json")
	var all status.ClusterStatusList
	if err := json.Unmarshal([]byte(out), &all); err != nil || code != ExitError || len(all.Items) != 3 || len(all.Errors) != 1 ||
		!strings.Contains(errOut, "1 of 4 contexts could not be read") {
		t.Errorf("--all-contexts: exit %d, %d items, errors %+v (%v)\n%s", code, len(all.Items), all.Errors, err, errOut)
	}
	out, _, code = run("--context", "dead,a")
	if code != ExitError || !strings.Contains(out, "context dead\n  error:") || !strings.Contains(out, "etcd-a") {
		t.Errorf("exit %d; the failed context is printed in its place, the other all the same:\n%s", code, out)
	}
	// CLUSTER in one of the contexts: the other has none, which is no
	// failure; in none, an error.
	out, errOut, code = run("etcd-a", "--context", "a,b")
	if code != ExitNotFailoverReady || !strings.Contains(out, "context b\n  no HA cluster etcd-a") {
		t.Errorf("etcd-a in a only: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, code := run("nowhere", "--context", "a,b"); code != ExitError || !strings.Contains(errOut, `no HA cluster "nowhere" in any of the 2 contexts`) {
		t.Errorf("a cluster in no context: exit %d\n%s", code, errOut)
	}
	for _, bad := range [][]string{{"--context", "a,b", "--watch", "--probe-interval", "500ms"}, {"--context", "a,b", "-o", "name"}, {"--all-contexts", "--context", "a"},
		// credentials would go to every context's server
		{"--context", "a,b", "--token", "t0ken"}, {"--all-contexts", "--insecure-skip-tls-verify"}, {"--all-contexts", "--server", "https://x"}} {
		if _, errOut, code := run(bad...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2\n%s", bad, code, errOut)
		}
	}
	// Several contexts open the live view's fleet view: each context is
	// connected to when it is read, none before.
	ctxs := "a,b"
	flags := kubeflags.NewConfigFlags(true)
	flags.KubeConfig, flags.Context = &path, &ctxs
	o := NewTUIOptions(flags, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	if err := o.Complete(nil, nil); err != nil || !slices.Equal(o.status.fleet, []string{"a", "b"}) || o.status.client != nil {
		t.Errorf("the live view with --context a,b: %v, contexts %v", err, o.status.fleet)
	}
}

// TestFleetWatch: --watch over several contexts prints the list (one
// JSON document a line) when the contexts are first read and again when
// one of them changes (a cluster appears in context b), never the same
// document twice in a row; the context that cannot be read is in each
// document's errors and warned about once; cancelling ends it with exit
// 0.
func TestFleetWatch(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns1, ns2 := testenv.Namespace(t, cp), testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns1, fixtures.DefaultSpec("etcd-a"))
	path := fleetKubeconfig(t, ns1, ns2)
	out, errOut := &syncBuffer{}, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- RunContext(ctx, genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut},
			[]string{"status", "--kubeconfig", path, "--context", "a,b,dead", "--no-probe", "--request-timeout", "5s", "--watch", "--probe-interval", "1s", "-o", "json"})
	}()
	docs := func() []status.ClusterStatusList {
		var ls []status.ClusterStatusList
		for _, line := range out.lines() {
			if line == "" {
				continue
			}
			var l status.ClusterStatusList
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatalf("a line that is not one ClusterStatusList: %v\n%s", err, line)
			}
			ls = append(ls, l)
		}
		return ls
	}
	names := func(l status.ClusterStatusList) string {
		var n []string
		for _, it := range l.Items {
			n = append(n, it.Metadata.Context+"/"+it.Metadata.Name)
		}
		return strings.Join(n, ",")
	}
	poll.Until(t, time.Minute, "the first round", func() error {
		if ls := docs(); len(ls) == 0 || names(ls[0]) != "a/etcd-a" || len(ls[0].Errors) != 1 || ls[0].Errors[0].Context != "dead" {
			return fmt.Errorf("documents %d", len(ls))
		}
		return nil
	})
	fixtures.CreateCluster(t, admin, ns2, fixtures.DefaultSpec("etcd-b"))
	poll.Until(t, time.Minute, "a round with the new cluster", func() error {
		ls := docs()
		if n := names(ls[len(ls)-1]); n != "a/etcd-a,b/etcd-b" {
			return fmt.Errorf("last document holds %s", n)
		}
		return nil
	})
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after cancel", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch did not end after cancel")
	}
	ls := docs()
	for i := 1; i < len(ls); i++ {
		a, b := ls[i-1], ls[i]
		for j := range a.Items {
			a.Items[j].ObservedAt = time.Time{}
		}
		for j := range b.Items {
			b.Items[j].ObservedAt = time.Time{}
		}
		if x, y := mustJSON(t, a), mustJSON(t, b); x == y {
			t.Errorf("document %d repeats the one before it", i)
		}
	}
	if n := strings.Count(strings.Join(errOut.lines(), "\n"), "context dead: error:"); n != 1 {
		t.Errorf("the dead context was warned about %d times, want once:\n%s", n, strings.Join(errOut.lines(), "\n"))
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fleetKubeconfig writes a kubeconfig with contexts a (namespace ns1)
// and b (ns2) on the test's API server, dead on a server that refuses,
// and each of also (a real context name, with ns1), current context a.
func fleetKubeconfig(t *testing.T, ns1, ns2 string, also ...string) string {
	t.Helper()
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
	for _, n := range also {
		cfg.Contexts[n] = &clientcmdapi.Context{Cluster: cur.Cluster, AuthInfo: cur.AuthInfo, Namespace: ns1}
	}
	cfg.Clusters["dead"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	cfg.CurrentContext = "a"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFleetContextsThatCannotBeRead: each of a context whose user names an
// exec credential plugin that is not installed and one whose user may not
// list StatefulSets is a row with a clear error, the exit code is 1, and
// the readable context's cluster is there all the same, probed (its
// members do not answer here: each says so, and its verdict is not
// failover-ready).
func TestFleetContextsThatCannotBeRead(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-a"))
	restricted, _ := testenv.RestrictedUser(t, cp, ns, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
	})

	cfg, err := clientcmd.LoadFromFile(fleetKubeconfig(t, ns, ns))
	if err != nil {
		t.Fatal(err)
	}
	rcfg, err := clientcmd.LoadFromFile(restricted)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Contexts["a"]
	cfg.AuthInfos["restricted"] = rcfg.AuthInfos[rcfg.Contexts[rcfg.CurrentContext].AuthInfo]
	cfg.AuthInfos["sso"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: "hactl-test-no-such-plugin", InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}
	cfg.Contexts["forbidden"] = &clientcmdapi.Context{Cluster: a.Cluster, AuthInfo: "restricted", Namespace: ns}
	cfg.Contexts["sso"] = &clientcmdapi.Context{Cluster: a.Cluster, AuthInfo: "sso", Namespace: ns}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		[]string{"status", "--kubeconfig", path, "--context", "sso,a,forbidden", "--request-timeout", "10s", "--probe-timeout", "1s", "-o", "json"})
	var l status.ClusterStatusList
	if err := json.Unmarshal(out.Bytes(), &l); err != nil {
		t.Fatalf("not a ClusterStatusList: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	errs := map[string]string{}
	for _, e := range l.Errors {
		errs[e.Context] = e.Error
	}
	if code != ExitError || len(l.Items) != 1 || l.Items[0].Metadata.Context != "a" || l.Items[0].Verdict.FailoverReady {
		t.Errorf("exit %d, items %+v; want 1 and context a's etcd-a, not failover-ready\n%s", code, l.Items, errOut.String())
	}
	if !strings.Contains(errs["sso"], "hactl-test-no-such-plugin") {
		t.Errorf("the missing credential plugin is not named: %q", errs["sso"])
	}
	if !strings.Contains(errs["forbidden"], "forbidden") || !strings.Contains(errs["forbidden"], "statefulsets") {
		t.Errorf("the refusal to list StatefulSets is not said: %q", errs["forbidden"])
	}
	if len(l.Items) == 1 {
		unreachable := 0
		for _, r := range l.Items[0].Verdict.Reasons {
			if r.Code == "member_unreachable" {
				unreachable++
			}
		}
		if unreachable != 3 {
			t.Errorf("etcd-a's members were not each reported unreachable: %+v", l.Items[0].Verdict.Reasons)
		}
	}
	if !strings.Contains(errOut.String(), "2 of 3 contexts could not be read") {
		t.Errorf("stderr: %s", errOut.String())
	}
}
