package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine/registry"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
)

func TestConfirm(t *testing.T) {
	for in, want := range map[string]bool{"y\n": true, "Y\n": true, "yes\n": true, " YES \n": true, "yes": true,
		"\n": false, "": false, "n\n": false, "no\n": false, "yep\n": false, "y es\n": false} {
		var w bytes.Buffer
		got, err := confirm(strings.NewReader(in), &w, "Replace etcd-1?")
		if err != nil || got != want {
			t.Errorf("confirm(%q) = %v, %v; want %v", in, got, err, want)
		}
		if w.String() != "Replace etcd-1? [y/N]: " {
			t.Errorf("prompt %q", w.String())
		}
	}
}

func TestActionErrorsMapToExitCodes(t *testing.T) {
	lock := model.Decision{Verb: model.VerbRefuse, Blockers: []model.Blocker{{Code: model.CodeLockHeld}}}
	quorum := model.Decision{Verb: model.VerbRefuse, Blockers: []model.Blocker{{Code: model.CodeQuorumWouldBreak}, {Code: model.CodeLockHeld}}}
	cases := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{&actions.RefusedError{Decision: quorum}, ExitRefused},
		{&actions.RefusedError{Decision: lock}, ExitLockHeld},
		{&actions.LockHeldError{Lease: "hactl-x", Holder: "h"}, ExitLockHeld},
		{fmt.Errorf("stopped: %w", actions.ErrLockLost), ExitLockHeld},
		{&actions.FenceConflictError{Detail: "x"}, ExitFenceConflict},
		{fmt.Errorf("wrapped: %w", &actions.FenceConflictError{Detail: "x"}), ExitFenceConflict},
		{actions.ErrTimeout, ExitError},
		{errors.New("boom"), ExitError},
	}
	for _, c := range cases {
		if got := codeOf(actionError(c.err)); got != c.want {
			t.Errorf("%v: exit %d, want %d", c.err, got, c.want)
		}
	}
	if codeOf(decisionError(lock)) != ExitLockHeld || codeOf(decisionError(quorum)) != ExitRefused {
		t.Error("decision refusals map to the wrong codes")
	}
}

func TestActionHelpDocumentsExitCodesAndExamples(t *testing.T) {
	for _, verb := range []string{"replace", "reseed", "explain"} {
		var out bytes.Buffer
		code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, []string{verb, "--help"})
		text := out.String()
		if code != 0 {
			t.Fatalf("%s --help exited %d", verb, code)
		}
		for _, want := range []string{"kubectl hactl " + verb + " CLUSTER MEMBER", "Exit codes:", "Examples:"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s --help lacks %q", verb, want)
			}
		}
		if verb != "explain" {
			for _, want := range []string{"5  refused", "6  fence conflict", "7  lock held", "--yes", "--dry-run", "--move-leader"} {
				if !strings.Contains(text, want) {
					t.Errorf("%s --help lacks %q", verb, want)
				}
			}
		}
	}
}

// TestSwitchoverHelpAndUsage: switchover documents its flag, exit codes
// and examples in the style of the other verbs, takes exactly CLUSTER
// (the candidate with --to), and replace and reseed take
// --switchover-first.
func TestSwitchoverHelpAndUsage(t *testing.T) {
	var out bytes.Buffer
	code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, []string{"switchover", "--help"})
	if code != 0 {
		t.Fatalf("switchover --help exited %d", code)
	}
	for _, want := range []string{"kubectl hactl switchover CLUSTER [--to MEMBER]", "Exit codes:", "Examples:", "--to", "--yes", "--dry-run",
		"5  refused", "6  fence conflict", "7  lock held", "kubectl hactl switchover pg-main -n db --to pg-main-2", "412"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("switchover --help lacks %q", want)
		}
	}
	for _, verb := range []string{"replace", "reseed"} {
		out.Reset()
		Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, []string{verb, "--help"})
		if !strings.Contains(out.String(), "--switchover-first") {
			t.Errorf("%s --help lacks --switchover-first", verb)
		}
	}
	for _, args := range [][]string{{"switchover"}, {"switchover", "c", "m"}, {"switchover", "c", "--dry-run=maybe"}, {"switchover", "c", "-o", "table"}} {
		out.Reset()
		if code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, args); code != ExitUsage {
			t.Errorf("%v: exit %d (%s), want %d", args, code, out.String(), ExitUsage)
		}
	}
}

// Every verb reads --dry-run alike, as kubectl does: "true" is client,
// "false" is none; only verbs with a server dry run take "server".
func TestDryRunIsReadAlike(t *testing.T) {
	for _, c := range []struct {
		in     string
		server bool
		want   actions.DryRun
		ok     bool
	}{
		{"none", false, actions.DryRunNone, true}, {"client", false, actions.DryRunClient, true},
		{"true", false, actions.DryRunClient, true}, {"false", false, actions.DryRunNone, true},
		{"server", false, "", false}, {"server", true, actions.DryRunServer, true},
		{"true", true, actions.DryRunClient, true}, {"maybe", true, "", false},
	} {
		got, err := parseDryRun(c.in, c.server)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseDryRun(%q, server=%v) = %q, %v; want %q (ok %v)", c.in, c.server, got, err, c.want, c.ok)
		}
	}
	o := NewSeedOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	o.Cluster, o.Generation, o.DryRun = "c", "g", "true"
	if err := o.Validate(); err != nil || o.DryRun != string(actions.DryRunClient) {
		t.Errorf("seed --dry-run=true: %v (dry run %q), want a client dry run", err, o.DryRun)
	}
	// Every verb's Validate leaves --dry-run as "none", "client" or
	// "server", which is all the rest reads.
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
	ao := NewActionOptions(nil, model.ActionReplace, streams)
	ao.Cluster, ao.Member, ao.DryRun = "c", "c-1", "true"
	if err := ao.Validate(); err != nil || ao.DryRun != string(actions.DryRunClient) {
		t.Errorf("replace --dry-run=true: %v (dry run %q), want client", err, ao.DryRun)
	}
	ap := NewApplyOptions(nil, streams)
	ap.Filename, ap.DryRun = "/nonexistent/plan.json", "false"
	_ = ap.Validate() // the plan cannot be read; the flag is read first
	if ap.DryRun != string(actions.DryRunNone) {
		t.Errorf("apply --dry-run=false: dry run %q, want none", ap.DryRun)
	}
}

func TestActionUsageErrors(t *testing.T) {
	testenv.SkipShort(t)
	for _, args := range [][]string{
		{"replace"}, {"replace", "c"}, {"replace", "c", "m", "x"},
		{"replace", "c", "m", "--dry-run=maybe"}, {"reseed", "c", "m", "-o", "table"},
		{"explain", "c", "m", "--intent", "explode"}, {"explain", "c"}, {"explain", "c", "m", "--generation", "g"},
		{"seed", "c", "--generation", "g", "--dry-run=server"}, {"generations", "gc", "c", "--dry-run=server"},
		{"seed", "c", "--generation", "g", "--dry-run=maybe"},
	} {
		_, errOut, code := run(t, args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d (%s), want %d", args, code, errOut, ExitUsage)
		}
	}
}

// TestReplaceRefusesUnreachableCluster goes through the real command line:
// fixture pods no member answers for (no kubelet behind them) are refused
// with exit 5 and the reason, and nothing changes.
func TestReplaceRefusesUnreachableCluster(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd"))
	before, _ := admin.CoreV1().Pods(ns).Get(context.Background(), "etcd-1", metav1.GetOptions{})
	out, errOut, code := run(t, "-n", ns, "replace", "etcd", "etcd-1", "--yes", "--probe-timeout", "1s")
	if code != ExitRefused || !strings.Contains(errOut, "cluster_unreachable") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "REFUSED") || !strings.Contains(out, "refused cluster_unreachable") {
		t.Errorf("the plan is not printed with the refusal:\n%s", out)
	}
	after, _ := admin.CoreV1().Pods(ns).Get(context.Background(), "etcd-1", metav1.GetOptions{})
	if after.UID != before.UID || after.DeletionTimestamp != nil {
		t.Fatal("the pod was touched")
	}
	out, errOut, code = run(t, "-n", ns, "explain", "etcd", "etcd-1", "--probe-timeout", "1s", "-o", "json")
	var d model.Decision
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.Verb != model.VerbRefuse {
		t.Fatalf("explain -o json: exit %d, %v\n%s\n%s", code, d.Verb, out, errOut)
	}
	_, errOut, code = run(t, "-n", ns, "replace", "nope", "etcd-1", "--yes")
	if code != ExitError || !strings.Contains(errOut, `no HA cluster "nope"`) {
		t.Errorf("unknown cluster: exit %d: %s", code, errOut)
	}
}

// cliEnv is a fixture cluster backed by real etcd members, with the
// command's options wired to a loopback dialer.
type cliEnv struct {
	t     *testing.T
	cs    kubernetes.Interface
	ns    string
	etcd  *etcdcluster.Cluster
	addrs map[string]string
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	testenv.SkipShort(t)
	e := &cliEnv{t: t, cs: testenv.Clientset(t, cp.Admin), ns: testenv.Namespace(t, cp), addrs: map[string]string{}}
	fixtures.CreateCluster(t, e.cs, e.ns, fixtures.DefaultSpec("etcd"))
	e.etcd = testenv.EtcdCluster(t, etcdcluster.Options{Members: 3})
	for _, m := range e.etcd.Members {
		u, _ := url.Parse(m.ClientURL)
		e.addrs[m.Name] = u.Host
	}
	ctx := context.Background()
	sts, err := e.cs.AppsV1().StatefulSets(e.ns).Get(ctx, "etcd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sts.Spec.Template.Spec.Containers[0].Command = []string{"etcd", "--name=$(POD_NAME)", "--initial-cluster-state=existing",
		"--initial-cluster=" + e.etcd.InitialCluster()}
	if _, err := e.cs.AppsV1().StatefulSets(e.ns).Update(ctx, sts, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *cliEnv) dial(ctx context.Context, ns, pod string, port int) (net.Conn, error) {
	addr, ok := e.addrs[pod]
	if !ok {
		return nil, fmt.Errorf("no member behind %s", pod)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// options returns replace options as Complete would fill them, with
// stdin in and a terminal or not.
func (e *cliEnv) options(in io.Reader, tty bool, member string) (*ActionOptions, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	o := NewActionOptions(nil, model.ActionReplace, genericiooptions.IOStreams{In: in, Out: &out, ErrOut: &errOut})
	o.Cluster, o.Member, o.Namespace = "etcd", member, e.ns
	o.client, o.dial, o.inIsTTY = e.cs, e.dial, tty
	o.Timeout = 30 * time.Second
	return o, &out, &errOut
}

// leaderAndFollower reads who leads.
func (e *cliEnv) leaderAndFollower() (leader, follower string) {
	e.t.Helper()
	obs := &actions.Observer{Engines: registry.Engines(), Client: e.cs, Dial: e.dial}
	res, _, err := obs.Observe(context.Background(), e.ns, "etcd")
	if err != nil {
		e.t.Fatal(err)
	}
	leader = res.Analysis.LeaderMember
	for _, m := range res.Observation.Members {
		if m.Name != leader {
			return leader, m.Name
		}
	}
	e.t.Fatal("no follower")
	return "", ""
}

func (e *cliEnv) unchanged(member string, uid string) {
	e.t.Helper()
	p, err := e.cs.CoreV1().Pods(e.ns).Get(context.Background(), member, metav1.GetOptions{})
	if err != nil || string(p.UID) != uid || p.DeletionTimestamp != nil {
		e.t.Fatalf("pod %s was touched", member)
	}
	c, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Get(context.Background(), "data-"+member, metav1.GetOptions{})
	if err != nil || c.DeletionTimestamp != nil {
		e.t.Fatalf("claim of %s was touched", member)
	}
	cli, err := etcdengine.Open(context.Background(), targetOf(e.ns, "etcd-0"), probeOpts(e.dial))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ps, err := cli.MemberList(ctx)
	if err != nil || len(ps) != 3 {
		e.t.Fatalf("members %v (%v): want 3, untouched", ps, err)
	}
}

func (e *cliEnv) podUID(name string) string {
	p, err := e.cs.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return string(p.UID)
}

// TestReplaceCommandRefusalsAndConfirmation exercises the command's
// decisions against real members: no terminal and no --yes, the leader
// without --move-leader, a held lock, declining the prompt, both dry runs
// and -o json; none of them changes anything.
func TestReplaceCommandRefusalsAndConfirmation(t *testing.T) {
	e := newCLIEnv(t)
	leader, follower := e.leaderAndFollower()
	uid := e.podUID(follower)
	ctx := context.Background()

	// No terminal, no --yes: the plan is printed, then refused.
	o, out, _ := e.options(strings.NewReader("y\n"), false, follower)
	err := o.Run(ctx)
	if err == nil || codeOf(err) != ExitError || !strings.Contains(err.Error(), "stdin is not a terminal") || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("no terminal: %v (exit %d)", err, codeOf(err))
	}
	for _, want := range []string{"fences", "Pod " + e.ns + "/" + follower + " uid=" + uid, "quorum: 3 voters, quorum 2", "plan:", "remove member"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, out.String())
		}
	}
	e.unchanged(follower, uid)

	// Declined at the prompt.
	o, out, _ = e.options(strings.NewReader("n\n"), true, follower)
	err = o.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "not confirmed") || !strings.Contains(out.String(), "[y/N]") {
		t.Fatalf("declined: %v\n%s", err, out.String())
	}
	e.unchanged(follower, uid)

	// The leader without --move-leader: exit 5, naming the flag.
	o, _, _ = e.options(strings.NewReader(""), false, leader)
	o.Yes = true
	err = o.Run(ctx)
	if codeOf(err) != ExitRefused || !strings.Contains(err.Error(), "target_is_leader") || !strings.Contains(err.Error(), "--move-leader") {
		t.Fatalf("leader: %v (exit %d)", err, codeOf(err))
	}
	e.unchanged(leader, e.podUID(leader))

	// Client and server dry runs change nothing; -o json prints receipts.
	for _, dry := range []string{"client", "server"} {
		o, out, errOut := e.options(strings.NewReader(""), false, follower)
		o.DryRun, o.Output = dry, "json"
		if err := o.Run(ctx); err != nil {
			t.Fatalf("--dry-run=%s: %v\n%s", dry, err, errOut.String())
		}
		var doc receiptsDoc
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("--dry-run=%s -o json: %v\n%s", dry, err, out.String())
		}
		// A client dry run prints the saved plan (apply -f), which keeps
		// the receipts document's fields.
		if doc.Kind != map[string]string{"client": PlanKind, "server": "ActionReceipts"}[dry] || doc.Result != "done" || len(doc.Receipts) == 0 {
			t.Fatalf("--dry-run=%s: %+v", dry, doc)
		}
		for _, r := range doc.Receipts {
			if r.DryRun != dry {
				t.Errorf("--dry-run=%s: receipt %+v", dry, r)
			}
		}
		suffix := map[string]string{"client": "(dry run)", "server": "(server dry run)"}[dry]
		if !strings.Contains(errOut.String(), suffix) {
			t.Errorf("--dry-run=%s: output lacks %q:\n%s", dry, suffix, errOut.String())
		}
		e.unchanged(follower, uid)
	}

	// Another live action holds the lock: exit 7, naming the holder.
	_, err = e.cs.CoordinationV1().Leases(e.ns).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "hactl-etcd"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("hactl/elsewhere/42/abcd"), LeaseDurationSeconds: ptr.To(int32(60)),
			RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o, _, _ = e.options(strings.NewReader(""), false, follower)
	o.Yes = true
	err = o.Run(ctx)
	if codeOf(err) != ExitLockHeld || !strings.Contains(err.Error(), "hactl/elsewhere/42/abcd") {
		t.Fatalf("lock held: %v (exit %d)", err, codeOf(err))
	}
	e.unchanged(follower, uid)
	_ = e.cs.CoordinationV1().Leases(e.ns).Delete(ctx, "hactl-etcd", metav1.DeleteOptions{})
}

// editingReader edits the target pod when the prompt reads the answer,
// then answers yes: the world changes between decision and action.
type editingReader struct {
	e    *cliEnv
	pod  string
	done bool
}

func (r *editingReader) Read(p []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	r.done = true
	ctx := context.Background()
	pod, err := r.e.cs.CoreV1().Pods(r.e.ns).Get(ctx, r.pod, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	pod.Labels["edited-while-confirming"] = "true"
	if _, err := r.e.cs.CoreV1().Pods(r.e.ns).Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return 0, err
	}
	return copy(p, "y\n"), nil
}

// TestReplaceCommandFenceConflict: the pod is edited while the operator
// reads the plan; after "y" the command stops with exit 6 and deletes
// nothing.
func TestReplaceCommandFenceConflict(t *testing.T) {
	e := newCLIEnv(t)
	_, follower := e.leaderAndFollower()
	uid := e.podUID(follower)
	o, out, _ := e.options(&editingReader{e: e, pod: follower}, true, follower)
	o.Output = "json"
	err := o.Run(context.Background())
	if codeOf(err) != ExitFenceConflict {
		t.Fatalf("exit %d: %v", codeOf(err), err)
	}
	var doc receiptsDoc
	if json.Unmarshal(out.Bytes(), &doc) != nil || doc.Result != "fence-conflict" {
		t.Fatalf("receipts document: %s", out.String())
	}
	e.unchanged(follower, uid)
}

func targetOf(ns, pod string) engine.Target {
	return engine.Target{Member: pod, Namespace: ns, Pod: pod, Port: 2379}
}

func probeOpts(d engine.DialFunc) engine.ProbeOptions {
	return engine.ProbeOptions{Dial: d, Timeout: 5 * time.Second}
}

// TestActionsNeverPrintSecrets: a cluster whose client TLS Secret holds
// recognisable bytes; nothing replace, reseed or explain prints (plan,
// refusal, JSON) contains them.
func TestActionsNeverPrintSecrets(t *testing.T) {
	testenv.SkipShort(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd"))
	const marker = "SECRET-MARKER-7f3a9c"
	ctx := context.Background()
	_, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-client-tls"},
		Data: map[string][]byte{"tls.crt": []byte("-----BEGIN CERTIFICATE-----\n" + marker + "\n-----END CERTIFICATE-----\n"),
			"tls.key": []byte(marker), "ca.crt": []byte(marker)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sts, err := admin.AppsV1().StatefulSets(ns).Get(ctx, "etcd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sts.Annotations = map[string]string{"hactl.dev/client-tls-secret": "etcd-client-tls"}
	if _, err := admin.AppsV1().StatefulSets(ns).Update(ctx, sts, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"replace", "etcd", "etcd-1", "--yes"},
		{"reseed", "etcd", "etcd-1", "--yes", "-o", "json"},
		{"replace", "etcd", "etcd-1", "--dry-run=server", "-o", "yaml"},
		{"explain", "etcd", "etcd-1", "-o", "json"},
		{"explain", "etcd", "etcd-1"},
	} {
		out, errOut, code := run(t, append([]string{"-n", ns, "--request-timeout", "10s"}, args...)...)
		t.Logf("%v: exit %d\n%s%s", args, code, out, errOut)
		if strings.Contains(out+errOut, marker) {
			t.Fatalf("%v printed the Secret's contents (exit %d):\n%s\n%s", args, code, out, errOut)
		}
		if code == ExitOK && args[0] != "explain" {
			t.Errorf("%v acted on a cluster whose members cannot be reached: exit 0", args)
		}
		if !strings.Contains(out+errOut, "credentials") && !strings.Contains(out+errOut, "etcd-client-tls") {
			t.Errorf("%v (exit %d) does not say the credentials are the problem:\n%s\n%s", args, code, out, errOut)
		}
	}
	evs, _ := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	for _, ev := range evs.Items {
		if strings.Contains(ev.Message, marker) {
			t.Fatalf("event %s carries the Secret's contents", ev.Name)
		}
	}
}
