package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/internal/tmuxtest"
	"github.com/hactl-dev/hactl/sandbox/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { testenv.Main(m, controlplane.Options{}, &cp) }

// TestTUIOnFixtures drives the real binary through the real kubectl in
// tmux against a real API server holding fixture clusters (no members
// answer: every probe fails through the real port-forward path).
func TestTUIOnFixtures(t *testing.T) {
	testenv.SkipShort(t)
	dir := e2esuite.PluginDir(t)
	bins := testenv.BinDir(t)
	admin := testenv.Clientset(t, cp.Admin)
	ns := testenv.Namespace(t, cp)
	fixtures.CreateCluster(t, admin, ns, fixtures.DefaultSpec("etcd-good"))
	broken := fixtures.DefaultSpec("etcd-broken")
	broken.Ready = 0
	fixtures.CreateCluster(t, admin, ns, broken)
	home := t.TempDir()
	env := []string{"PATH=" + dir + ":" + bins + ":/usr/bin:/bin", "HOME=" + home, "KUBECONFIG=" + cp.AdminKubeconfig}

	t.Run("kubectl hactl opens the TUI on a terminal", func(t *testing.T) {
		s := tmuxtest.Start(t, 80, 24, env, filepath.Join(bins, "kubectl"), "hactl", "-n", ns)
		scr := s.WaitFor(60*time.Second, "etcd-broken", "etcd-good", "NOT control-ready", "2 clusters")
		if klogLine.MatchString(scr) {
			t.Fatalf("klog output on the screen:\n%s", scr)
		}
		// Navigate to the degraded cluster and see the reason.
		// The list is sorted by name: etcd-broken is first.
		s.Keys("Enter")
		s.WaitFor(30*time.Second, "› etcd-broken", "client_endpoints_missing", "Remedies")
		// Every member is probed through the real port-forward and fails:
		// the reason says so, and nothing from client-go's log leaks.
		scr = s.WaitMatch(60*time.Second, regexp.MustCompile(`member_unreachable|credentials_unavailable`))
		if klogLine.MatchString(scr) {
			t.Fatalf("klog output on the screen:\n%s", scr)
		}
		s.Keys("3")
		s.WaitFor(30*time.Second, "frontier unknown", "Learners")
		s.Keys("2")
		s.WaitFor(30*time.Second, "Seed generations", "Member phases")
		s.Keys("?")
		s.WaitFor(30*time.Second, "Keys", "probe now")
		// One escape at a time: ESC followed at once by another byte reads
		// as alt+key, in any terminal program.
		s.Keys("Escape")
		s.WaitGone(30*time.Second, "probe now")
		s.Keys("Escape")
		s.WaitFor(30*time.Second, "2 clusters")
		s.Keys("/")
		s.Text("good")
		s.Keys("Enter")
		scr = s.WaitFor(30*time.Second, "filter: good")
		if strings.Contains(scr, "etcd-broken") {
			t.Errorf("the filter left etcd-broken on screen:\n%s", scr)
		}
		// r decides through the real executor's observation: no member
		// answers, so the classifier refuses and nothing can run.
		s.Keys("Escape")
		s.WaitGone(30*time.Second, "filter: good")
		s.Keys("Enter")
		s.WaitFor(30*time.Second, "1:members")
		s.Keys("r")
		s.WaitFor(time.Minute, "replace etcd-broken-0 in "+ns, "REFUSED", "Refused: nothing will be done")
		s.Keys("Enter")
		s.WaitFor(30*time.Second, "this decision cannot run")
		s.Keys("Escape")
		s.WaitFor(30*time.Second, "cancelled: nothing was changed")
		s.Keys("q")
		if code := s.Exited(30 * time.Second); code != 0 {
			t.Errorf("exit %d after q", code)
		}
	})

	t.Run("resizes cleanly", func(t *testing.T) {
		s := tmuxtest.Start(t, 80, 24, env, filepath.Join(dir, "kubectl-hactl"), "tui", "etcd-broken", "-n", ns, "--no-probe")
		s.WaitFor(60*time.Second, "› etcd-broken", "members not probed")
		s.Resize(120, 40)
		scr := s.WaitFor(30*time.Second, "MEMBER ID", "RESTARTS")
		for i, l := range strings.Split(strings.TrimRight(scr, "\n"), "\n") {
			if len([]rune(l)) > 120 {
				t.Errorf("line %d wider than the pane: %q", i, l)
			}
		}
		s.Resize(60, 16)
		s.WaitFor(30*time.Second, "etcd-broken")
		s.Keys("q")
		if code := s.Exited(30 * time.Second); code != 0 {
			t.Errorf("exit %d", code)
		}
	})

	t.Run("readonly context setting", func(t *testing.T) {
		kc, err := os.ReadFile(cp.AdminKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		ro := filepath.Join(t.TempDir(), "kubeconfig")
		// Add the hactl.dev extension to the admin context.
		cfg := strings.Replace(string(kc), "\n- context:\n", "\n- context:\n    extensions:\n    - name: hactl.dev\n      extension:\n        readonly: true\n", 1)
		if cfg == string(kc) {
			t.Fatal("the admin kubeconfig has no context block to extend")
		}
		if err := os.WriteFile(ro, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		s := tmuxtest.Start(t, 80, 24, append(env[:2:2], "KUBECONFIG="+ro), filepath.Join(dir, "kubectl-hactl"), "tui", "-n", ns, "--no-probe")
		s.WaitFor(60*time.Second, "[read-only]", "etcd-broken")
		s.Keys("Enter", "r")
		s.WaitFor(30*time.Second, "read-only: actions are disabled (context")
		s.Keys("q")
		s.Exited(30 * time.Second)
	})

	t.Run("the fleet of several contexts", func(t *testing.T) {
		// alpha and beta reach this API server, gone a port where
		// nothing listens; alpha's hactl.dev extension makes it
		// read-only.
		multi := fleetKubeconfig(t, cp.AdminKubeconfig, "alpha", "beta", "gone")
		fenv := append(slices.Clone(env[:2]), "KUBECONFIG="+multi)
		s := tmuxtest.Start(t, 120, 30, fenv, filepath.Join(bins, "kubectl"), "hactl", "--context", "alpha,gone,beta", "-n", ns)
		s.WaitFor(60*time.Second, "hactl fleet", "3 contexts · 4 clusters", "1 unreadable", "UNREADABLE", "etcd-broken")
		// Worst first: the unreadable context on top (the cursor stays on
		// the cluster it was on), its error under the table.
		s.Keys("s")
		s.WaitFor(30*time.Second, "sort by context")
		s.Keys("Up")
		s.WaitFor(30*time.Second, "context gone could not be read")
		s.Keys("/")
		s.Text("beta")
		s.Keys("Enter")
		s.WaitFor(30*time.Second, "filter: beta")
		// beta's etcd-broken (not control-ready) is first: open it, in
		// its own context.
		s.Keys("Enter")
		s.WaitFor(60*time.Second, "kubectl hactl beta", "etcd-broken-0", "client_endpoints_missing")
		s.Keys("r")
		s.WaitFor(time.Minute, "context beta)", "REFUSED")
		s.Keys("Escape")
		s.WaitFor(30*time.Second, "cancelled: nothing was changed")
		// q comes back to the fleet, sorted and filtered as it was.
		s.Keys("q")
		scr := s.WaitFor(60*time.Second, "hactl fleet", "filter: beta", "sort by context")
		if strings.Contains(scr, "alpha") {
			t.Errorf("back from the cluster, the filter is gone:\n%s", scr)
		}
		// alpha's cluster opens with alpha's own settings: read-only.
		s.Keys("Escape")
		s.WaitGone(30*time.Second, "filter: beta")
		s.Keys("/")
		s.Text("alpha")
		s.Keys("Enter")
		s.WaitFor(30*time.Second, "filter: alpha")
		s.Keys("Enter")
		s.WaitFor(60*time.Second, "kubectl hactl alpha", "etcd-broken-0", "client_endpoints_missing")
		s.Keys("r")
		s.WaitFor(30*time.Second, "context alpha is read-only")
		s.Keys("q")
		s.WaitFor(60*time.Second, "hactl fleet", "filter: alpha")
		s.Keys("q")
		if code := s.Exited(30 * time.Second); code != 0 {
			t.Errorf("exit %d after q in the fleet", code)
		}
	})

	t.Run("without a terminal it prints status", func(t *testing.T) {
		out, err := testenvCommand(filepath.Join(dir, "kubectl-hactl"), env, "-n", ns)
		if !strings.Contains(out, "etcd-broken") || !strings.Contains(out, "client_endpoints_missing") {
			t.Errorf("status not printed (%v):\n%s", err, out)
		}
		out, err = testenvCommand(filepath.Join(dir, "kubectl-hactl"), env, "tui", "-n", ns)
		if err == nil || !strings.Contains(out, "needs a terminal") {
			t.Errorf("tui without a terminal: %v\n%s", err, out)
		}
	})
}

// fleetKubeconfig writes a kubeconfig with the contexts named: all but the
// last reach the server admin names, as its user; the last a port where
// nothing listens. The first is read-only (its hactl.dev extension).
func fleetKubeconfig(t *testing.T, admin string, names ...string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	if cur == nil {
		t.Fatalf("%s has no current context", admin)
	}
	dead := clientcmdapi.NewCluster()
	dead.Server = "https://127.0.0.1:1"
	dead.InsecureSkipTLSVerify = true
	cfg.Clusters["dead"] = dead
	for i, n := range names {
		c := clientcmdapi.NewContext()
		c.Cluster, c.AuthInfo = cur.Cluster, cur.AuthInfo
		switch i {
		case 0:
			c.Extensions["hactl.dev"] = &runtime.Unknown{Raw: []byte(`{"readonly": true}`), ContentType: "application/json"}
		case len(names) - 1:
			c.Cluster = "dead"
		}
		cfg.Contexts[n] = c
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
