package common_test

import (
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/tui/internal/common"
)

// CellWidth measures what ansi.StringWidth measures, by length where it
// may (ASCII, with or without CSI styling).
func TestCellWidth(t *testing.T) {
	th := common.NewTheme(true)
	for _, s := range []string{
		"", "etcd-main-0", "  12 ms", th.Warn.Render("no"), th.Bold.Render("leader") + " x",
		"\x1b[38;2;1;2;3mrgb\x1b[0m", "▁▂▃█ lag", "naïve", "日本語", "a\tb", "\x1b]8;;http://x\x07link\x1b]8;;\x07",
		"\x1b[", "trailing \x1b", "\x1b[1", "emoji 👍",
	} {
		if got, want := common.CellWidth(s), ansi.StringWidth(s); got != want {
			t.Errorf("CellWidth(%q) = %d, ansi.StringWidth = %d", s, got, want)
		}
	}
}

func TestSparklineAndBar(t *testing.T) {
	v := func(n int64) *int64 { return &n }
	if got := common.Sparkline([]*int64{v(0), nil, v(500), v(1000), v(5000)}, 1000, 10); got != "▁·▅██" {
		t.Errorf("sparkline = %q", got)
	}
	if got := common.Sparkline([]*int64{v(1), v(2), v(3)}, 10, 2); got != "▃▄" {
		t.Errorf("sparkline keeps the last samples: %q", got)
	}
	if got := common.Bar(0.5, 4); got != "██░░" {
		t.Errorf("bar = %q", got)
	}
	if got := common.Bar(3, 2); got != "██" {
		t.Errorf("bar clamps: %q", got)
	}
}
