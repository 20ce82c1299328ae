package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/internal/tmuxtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// startSandbox starts a sandbox with the given scenarios for t (the
// supervisor is the real hactl-sandbox binary) and takes it down at the
// end; the suite's Bin holds the built kubectl-hactl.
func startSandbox(t testing.TB, scenarios ...string) *e2esuite.Suite {
	t.Helper()
	return e2esuite.StartTest(t, e2esuite.Options{Scenarios: scenarios, SandboxBinary: true, Timeout: 5 * time.Minute})
}

// memberClient dials one member on its own (no endpoint sync).
func memberClient(t testing.TB, url string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client for %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// titleVerdict is the verdict at the end of the TUI's first line.
var titleVerdict = regexp.MustCompile(`(?m)\A[^\n]*?(NOT control-ready|NOT failover-ready|failover-ready)\s*\n`)

// TestTUIOnSandbox drives the real binary's TUI in tmux against the
// sandbox: real etcd members behind kwok port-forwards, a real S3 store.
func TestTUIOnSandbox(t *testing.T) {
	suite := startSandbox(t, "crashloop", "healthy")
	t.Run("replace the crash-looping member", func(t *testing.T) { replaceOnSandbox(t, suite) })
	t.Run("seed a generation", func(t *testing.T) { seedOnSandbox(t, suite) })
}

// replaceOnSandbox is the end-to-end acceptance: open the TUI on
// the sandbox, go to the degraded cluster, see the reason, replace the
// broken member through the dialog (typing its name), watch it converge
// to failover-ready, quit; a sentinel key written before is on every
// member afterwards, each asked on its own.
func replaceOnSandbox(t *testing.T, suite *e2esuite.Suite) {
	sb, dir := suite.SB, suite.Bin
	ns, cluster, victim := suite.Namespace, "crashloop", "crashloop-2"

	// The sentinel, through a healthy member.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m0, err := sb.Member(ctx, cluster+"-0")
	if err != nil {
		t.Fatal(err)
	}
	sentinel := fmt.Sprintf("sentinel-%d", time.Now().UnixNano())
	if _, err := memberClient(t, m0.ClientURL).Put(ctx, "/hactl-e2e/sentinel", sentinel); err != nil {
		t.Fatalf("writing the sentinel: %v", err)
	}

	s := tmuxtest.Start(t, 80, 24, []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"},
		filepath.Join(dir, "kubectl-hactl"), "--kubeconfig", sb.Kubeconfig, "tui", "-n", ns, "--log-file", filepath.Join(t.TempDir(), "klog"))
	s.WaitFor(2*time.Minute, cluster, "NOT failover-ready", "pod_crashlooping")
	s.Keys("Enter")
	scr := s.WaitFor(time.Minute, "› "+cluster, "pod_crashlooping "+victim, "Remedies")
	if klogLine.MatchString(scr) {
		t.Fatalf("klog output on the screen:\n%s", scr)
	}
	// Select the broken member: the table is ordered by ordinal.
	s.Keys("Down")
	s.WaitFor(30*time.Second, "›1 ")
	s.Keys("Down")
	s.WaitFor(30*time.Second, "›2 "+victim)

	// The crash-looping pod's status changes on every restart, which may
	// move its resourceVersion between the decision and the execution:
	// then the executor stops with a fence conflict, deleting nothing, and
	// the operator decides again — as this test does.
	const attempts = 5
	finished := false
	for i := 0; i < attempts && !finished; i++ {
		s.Keys("r")
		s.WaitFor(2*time.Minute, "Type "+victim+" to confirm", "will proceed")
		s.Text(victim)
		s.WaitFor(30*time.Second, "> "+victim)
		s.Keys("Enter")
		scr = s.WaitMatch(10*time.Minute, regexp.MustCompile(`finished: ready|stopped in`))
		if strings.Contains(scr, "finished: ready") {
			finished = true
			break
		}
		if !strings.Contains(scr, "fence conflict") {
			t.Fatalf("the action stopped for another reason than a fence conflict:\n%s", scr)
		}
		t.Logf("attempt %d stopped on a fence conflict (nothing deleted); deciding again", i+1)
		s.Keys("1")
		s.WaitFor(30*time.Second, "›2 "+victim)
	}
	if !finished {
		t.Fatalf("replace did not finish in %d attempts", attempts)
	}
	// The view converges: the title's verdict turns failover-ready.
	poll.Until(t, 3*time.Minute, "the title's verdict to turn failover-ready", func() error {
		if m := titleVerdict.FindStringSubmatch(s.Screen()); m == nil || m[1] != "failover-ready" {
			return fmt.Errorf("title verdict %q", m)
		}
		return nil
	})
	s.Keys("1")
	s.WaitFor(time.Minute, "›2 "+victim, "failover-ready: losing any one member would be survivable")
	// The history tab holds the replace, read from the ledger.
	s.Keys("4")
	s.WaitFor(time.Minute, "TIME (UTC)", "replace-done")
	s.Keys("q")
	if code := s.Exited(30 * time.Second); code != 0 {
		t.Errorf("exit %d after q", code)
	}

	// The sentinel survives on every member, each asked on its own.
	members, err := sb.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, m := range members {
		if m.Namespace != ns || !strings.HasPrefix(m.Name, cluster+"-") {
			continue
		}
		seen++
		c := memberClient(t, m.ClientURL)
		poll.Until(t, time.Minute, m.Name+" to serve the sentinel", func() error {
			r, err := c.Get(ctx, "/hactl-e2e/sentinel", clientv3.WithSerializable())
			if err != nil {
				return err
			}
			if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != sentinel {
				return fmt.Errorf("%d values under the key, want %q alone", len(r.Kvs), sentinel)
			}
			return nil
		})
	}
	if seen != 3 {
		t.Errorf("checked the sentinel on %d members, want 3", seen)
	}
}

// seedOnSandbox takes a seed generation of the healthy cluster through
// the dialog into the sandbox's S3 store (named by the StatefulSet's
// annotations, credentials by Secret reference) and sees it listed as
// complete; no credential ever reaches the screen.
func seedOnSandbox(t *testing.T, suite *e2esuite.Suite) {
	sb, dir := suite.SB, suite.Bin
	ns, cluster := suite.Namespace, "healthy"
	s3, err := sb.S3()
	if err != nil {
		t.Fatal(err)
	}
	suite.SetupStore(t, cluster)

	s := tmuxtest.Start(t, 100, 30, []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"},
		filepath.Join(dir, "kubectl-hactl"), "--kubeconfig", sb.Kubeconfig, "tui", "-n", ns, cluster)
	var screens []string
	seen := func(scr string) string { screens = append(screens, scr); return scr }
	seen(s.WaitFor(2*time.Minute, "› "+cluster, "failover-ready"))
	s.Keys("2")
	seen(s.WaitFor(time.Minute, "Seed generations", "none yet"))
	s.Keys("s")
	seen(s.WaitFor(30*time.Second, "Generation ID for the new seed generation"))
	for range len("20060102-150405") {
		s.Keys("BSpace")
	}
	s.Text("tui-e2e")
	seen(s.WaitFor(30*time.Second, "> healthy-tui-e2e"))
	s.Keys("Enter")
	seen(s.WaitFor(2*time.Minute, "seed", "will proceed", "enter runs"))
	s.Keys("Enter")
	seen(s.WaitMatch(5*time.Minute, regexp.MustCompile(`finished: published|stopped in`)))
	scr := seen(s.WaitFor(time.Minute, "healthy-tui-e2e", "complete"))
	if strings.Contains(scr, "stopped in") {
		t.Fatalf("the seed stopped:\n%s", scr)
	}
	s.Keys("q")
	if code := s.Exited(30 * time.Second); code != 0 {
		t.Errorf("exit %d after q", code)
	}
	for _, scr := range screens {
		if strings.Contains(scr, s3.SecretKey) || strings.Contains(scr, s3.AccessKey) {
			t.Fatal("a store credential reached the screen")
		}
	}
}
