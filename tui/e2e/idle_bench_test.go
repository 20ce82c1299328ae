package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/internal/tmuxtest"
)

// idleWindow is how long the idle TUI is measured.
const idleWindow = 30 * time.Second

// clockTicks is the kernel's USER_HZ (the unit of /proc/<pid>/stat times).
const clockTicks = 100

// BenchmarkTUIIdleCPU measures the CPU the TUI uses while the sandbox is
// idle: the TUI runs in tmux on the sandbox's clusters (every member
// probed every 5 s through the real port-forward), and its process's
// user+system time over 30 seconds is reported as a share of one core,
// next to `kubectl hactl status --watch` (the same probes, no screen) and
// the TUI with --no-probe (the view alone) measured the same way in the
// same run. Nothing is asserted.
//
//	go test ./tui/e2e -run '^$' -bench TUIIdleCPU -benchtime 1x
func BenchmarkTUIIdleCPU(b *testing.B) {
	suite := startSandbox(b, "healthy", "crashloop")
	measure := func(height int, ready string, args ...string) float64 {
		s := tmuxtest.Start(b, 120, height, []string{"HOME=" + b.TempDir(), "PATH=/usr/bin:/bin"},
			append([]string{filepath.Join(suite.Bin, "kubectl-hactl"), "--kubeconfig", suite.SB.Kubeconfig, "-n", suite.Namespace}, args...)...)
		// Wait for the first probes and the watch caches.
		s.WaitFor(2*time.Minute, "crashloop", "healthy", ready)
		pid := s.PID()
		before, err := cpuTicks(pid)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		time.Sleep(idleWindow) // the measurement window, not a wait for a condition
		after, err := cpuTicks(pid)
		if err != nil {
			b.Fatal(err)
		}
		wall := time.Since(start)
		s.Keys("C-c")
		return float64(after-before) / clockTicks / wall.Seconds() * 100
	}
	for i := 0; i < b.N; i++ {
		tui := measure(24, "probed", "tui")
		fmt.Printf("idle CPU over %s: TUI %.2f%% of one core\n", idleWindow, tui)
		watch := measure(80, "Ctrl-C to quit", "status", "--watch")
		// The view alone: watches and drawing, no member probes.
		noProbe := measure(24, "members not probed", "tui", "--no-probe")
		b.ReportMetric(tui, "%core-tui")
		b.ReportMetric(watch, "%core-status-watch")
		b.ReportMetric(noProbe, "%core-tui-no-probe")
		fmt.Printf("idle CPU over %s: TUI %.2f%% of one core, status --watch %.2f%%, TUI without probes %.2f%%\n", idleWindow, tui, watch, noProbe)
	}
}
