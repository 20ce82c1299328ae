package e2e

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/tmuxtest"
)

// firstFrameSamples is how many launches of each one op measures.
const firstFrameSamples = 5

// BenchmarkTUIFirstFrame measures the time from launching the real
// binary's TUI in tmux (`kubectl hactl tui -n NS healthy`, the cluster's
// members view) to the first screen that shows its members — watch caches
// synced and every member of every cluster in the namespace probed
// through the real port-forward — and to its first screen at all (the
// title over "reading clusters…"), against the wall time of `kubectl hactl
// status -n NS` on the same sandbox clusters (the same API reads and
// probes, printed once), launched alternately in the same run; and both
// again with --no-probe (the API reads alone). The screen
// is polled every 10 ms (each poll is a tmux capture-pane); tmux's own
// start is inside the TUI's time; the same status launched in tmux and
// polled the same way (until it has ended) is a third baseline.
//
//	go test ./tui/e2e -run '^$' -bench TUIFirstFrame -benchtime 1x
func BenchmarkTUIFirstFrame(b *testing.B) {
	suite := startSandbox(b, "healthy", "no-pdb")
	bin := filepath.Join(suite.Bin, "kubectl-hactl")
	base := []string{bin, "--kubeconfig", suite.SB.Kubeconfig, "-n", suite.Namespace}
	b.Run("2clusters", func(b *testing.B) {
		env := []string{"HOME=" + b.TempDir(), "PATH=/usr/bin:/bin"}
		var tuiTotal, paintTotal, statusTotal time.Duration
		var tuiMin, statusMin time.Duration
		var tuiNoProbe, statusNoProbe, tmuxStatus time.Duration
		for i := 0; i < b.N; i++ {
			for k := 0; k < firstFrameSamples; k++ {
				p, t := firstFrame(b, env, append(base, "tui", "healthy"), "healthy-0", "healthy-2")
				s := statusWall(b, env, append(base, "status"), "healthy-2", "no-pdb-2")
				tmuxStatus += statusInTmux(b, env, append(base, "status"))
				tuiTotal, paintTotal, statusTotal = tuiTotal+t, paintTotal+p, statusTotal+s
				if tuiMin == 0 || t < tuiMin {
					tuiMin = t
				}
				if statusMin == 0 || s < statusMin {
					statusMin = s
				}
				// The same without member probes: the API reads alone.
				_, t = firstFrame(b, env, append(base, "tui", "--no-probe", "healthy"), "healthy-0", "healthy-2")
				s = statusWall(b, env, append(base, "status", "--no-probe"), "healthy-2", "no-pdb-2")
				tuiNoProbe, statusNoProbe = tuiNoProbe+t, statusNoProbe+s
			}
		}
		n := float64(b.N * firstFrameSamples)
		b.ReportMetric(float64(tuiTotal.Milliseconds())/n, "tui-first-frame-ms")
		b.ReportMetric(float64(paintTotal.Milliseconds())/n, "tui-first-paint-ms")
		b.ReportMetric(float64(statusTotal.Milliseconds())/n, "status-ms")
		b.ReportMetric(float64(tuiMin.Milliseconds()), "tui-first-frame-min-ms")
		b.ReportMetric(float64(statusMin.Milliseconds()), "status-min-ms")
		b.ReportMetric(float64(tuiTotal)/float64(statusTotal), "first-frame-ratio")
		b.ReportMetric(float64(tmuxStatus.Milliseconds())/n, "status-in-tmux-ms")
		b.ReportMetric(float64(tuiTotal)/float64(tmuxStatus), "first-frame-ratio-in-tmux")
		b.ReportMetric(float64(tuiNoProbe.Milliseconds())/n, "tui-no-probe-first-frame-ms")
		b.ReportMetric(float64(statusNoProbe.Milliseconds())/n, "status-no-probe-ms")
		b.ReportMetric(float64(tuiNoProbe)/float64(statusNoProbe), "no-probe-first-frame-ratio")
	})
}

// firstFrame launches argv in tmux and returns the time until the TUI
// drew its first screen at all (its title) and until the screen shows
// every one of want; then it quits the TUI.
func firstFrame(b *testing.B, env, argv []string, want ...string) (paint, members time.Duration) {
	b.Helper()
	start := time.Now()
	s := tmuxtest.Start(b, 120, 40, env, argv...)
	deadline := start.Add(2 * time.Minute)
	for {
		scr := s.Screen()
		if paint == 0 && strings.Contains(scr, "kubectl hactl") {
			paint = time.Since(start)
		}
		if containsAll(scr, want) {
			members = time.Since(start)
			if paint == 0 {
				paint = members
			}
			s.Keys("q")
			if code := s.Exited(30 * time.Second); code != 0 {
				b.Fatalf("tui: exit %d after q", code)
			}
			return paint, members
		}
		if time.Now().After(deadline) {
			b.Fatalf("the TUI showed no members within 2 minutes:\n%s", scr)
		}
		time.Sleep(10 * time.Millisecond) // the polling resolution, not a wait for a condition
	}
}

// statusInTmux launches argv (status) in tmux, as firstFrame launches the
// TUI, and returns the time until it has ended, its output on the pane:
// the same tmux start and the same 10 ms polling as the TUI's time.
func statusInTmux(b *testing.B, env, argv []string) time.Duration {
	b.Helper()
	start := time.Now()
	s := tmuxtest.Start(b, 120, 40, env, argv...)
	deadline := start.Add(2 * time.Minute)
	for {
		if code, ok := s.Finished(); ok {
			if code != 0 && code != 3 && code != 4 {
				b.Fatalf("%s: exit %d", strings.Join(argv, " "), code)
			}
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			b.Fatalf("status did not end within 2 minutes:\n%s", s.Screen())
		}
		time.Sleep(10 * time.Millisecond) // the polling resolution, not a wait for a condition
	}
}

// statusWall runs argv to its end and returns its wall time; its output
// must name every one of want.
func statusWall(b *testing.B, env, argv []string, want ...string) time.Duration {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	// Exit 3 and 4 report a verdict, not a failure of the command.
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || (ee.ExitCode() != 3 && ee.ExitCode() != 4)) {
		b.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out.String())
	}
	if !containsAll(out.String(), want) {
		b.Fatalf("status does not show %v:\n%s", want, out.String())
	}
	return took
}

func containsAll(s string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}
