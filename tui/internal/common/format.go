package common

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/model"
)

// ShortID abbreviates a hex member or cluster ID to n characters.
func ShortID(id string, n int) string {
	if len(id) <= n {
		return id
	}
	return id[:n]
}

// YesNo is "yes" or "no".
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ReasonLine is "code member: detail".
func ReasonLine(r model.Reason) string {
	s := r.Code.String()
	if r.Member != "" {
		s += " " + r.Member
	}
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// ReasonTail is a reason without its code: "member: detail".
func ReasonTail(r model.Reason) string {
	s := r.Member
	if r.Detail != "" {
		if s != "" {
			s += ": "
		}
		s += r.Detail
	}
	return s
}

// TopReasons summarises the first reasons of a verdict for one cell.
func TopReasons(v model.Verdict, n int) string {
	if len(v.Reasons) == 0 {
		return "-"
	}
	var parts []string
	seen := map[model.ReasonCode]int{}
	var order []model.ReasonCode
	for _, r := range v.Reasons {
		if seen[r.Code] == 0 {
			order = append(order, r.Code)
		}
		seen[r.Code]++
	}
	for i, c := range order {
		if i == n {
			parts = append(parts, fmt.Sprintf("+%d more", len(order)-n))
			break
		}
		if seen[c] > 1 {
			parts = append(parts, fmt.Sprintf("%s×%d", c, seen[c]))
		} else {
			parts = append(parts, c.String())
		}
	}
	return strings.Join(parts, ", ")
}

// Wrap word-wraps s to width and returns its lines, each prefixed.
func Wrap(s string, width int, prefix string) []string {
	w := max(10, width-ansi.StringWidth(prefix))
	var out []string
	for _, l := range strings.Split(ansi.Wrap(s, w, ""), "\n") {
		out = append(out, prefix+l)
	}
	return out
}

// Hang wraps s to width with a hanging indent of two cells.
func Hang(s string, width int) []string {
	lines := strings.Split(ansi.Wrap(s, max(10, width), ""), "\n")
	if len(lines) == 1 {
		return lines
	}
	rest := strings.Join(lines[1:], " ")
	return append(lines[:1], Wrap(rest, width, "  ")...)
}

// CellWidth is the number of terminal cells s takes. Plain ASCII, and
// ASCII styled with CSI sequences (colours, bold), is measured by length
// (the sequences take none); anything else by ansi.StringWidth.
func CellWidth(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b >= 0x20 && b < 0x7f:
			n++
		case b == 0x1b && i+1 < len(s) && s[i+1] == '[':
			// CSI: parameters and intermediates, then one final byte.
			k := i + 2
			for k < len(s) && s[k] >= 0x20 && s[k] < 0x40 {
				k++
			}
			if k >= len(s) || s[k] < 0x40 || s[k] > 0x7e {
				return ansi.StringWidth(s)
			}
			i = k
		default:
			return ansi.StringWidth(s)
		}
	}
	return n
}

// Clip truncates every line to width and pads or cuts the block to
// exactly height lines.
func Clip(lines []string, width, height int) []string {
	out := make([]string, 0, height)
	for _, l := range lines {
		if len(out) == height {
			break
		}
		if CellWidth(l) > width {
			l = ansi.Truncate(l, width, "…")
		}
		out = append(out, l)
	}
	for len(out) < height {
		out = append(out, "")
	}
	return out
}

// Spread puts left and right on one line of width cells.
func Spread(left, right string, width int) string {
	gap := width - CellWidth(left) - CellWidth(right)
	if gap < 1 {
		return ansi.Truncate(left, max(0, width-CellWidth(right)-1), "…") + " " + right
	}
	return left + strings.Repeat(" ", gap) + right
}

// Fit pads or truncates s (plain text) to exactly w cells.
func Fit(s string, w int) string {
	if CellWidth(s) > w {
		s = ansi.Truncate(s, w, "…")
	}
	if pad := w - CellWidth(s); pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	return s
}

// sparkLevels are the bars of a sparkline, lowest first.
var sparkLevels = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws values (nil: unknown, shown as "·") scaled to scale,
// keeping the last width samples.
func Sparkline(values []*int64, scale int64, width int) string {
	if width <= 0 {
		return ""
	}
	if len(values) > width {
		values = values[len(values)-width:]
	}
	var b strings.Builder
	for _, v := range values {
		if v == nil {
			b.WriteRune('·')
			continue
		}
		lvl := 0
		if scale > 0 && *v > 0 {
			lvl = int((*v*int64(len(sparkLevels)-1) + scale - 1) / scale)
		}
		b.WriteRune(sparkLevels[min(max(lvl, 0), len(sparkLevels)-1)])
	}
	return b.String()
}

// Bar draws a fraction as a fixed-width bar.
func Bar(frac float64, width int) string {
	if width <= 0 {
		return ""
	}
	frac = min(max(frac, 0), 1)
	n := int(frac*float64(width) + 0.5)
	return strings.Repeat("█", n) + strings.Repeat("░", width-n)
}

// TimeOfDay formats t as a time of day in now's location.
func TimeOfDay(t, now time.Time) string { return t.In(now.Location()).Format("15:04:05") }

// ClusterKey identifies a cluster across observations.
func ClusterKey(c model.ClusterFacts) string { return c.Namespace + "/" + c.Name }
