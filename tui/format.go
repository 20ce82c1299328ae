package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/model"
)

// shortID abbreviates a hex member or cluster ID to n characters.
func shortID(id string, n int) string {
	if len(id) <= n {
		return id
	}
	return id[:n]
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// reasonLine is "code member: detail".
func reasonLine(r model.Reason) string {
	s := r.Code.String()
	if r.Member != "" {
		s += " " + r.Member
	}
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// reasonTail is a reason without its code: "member: detail".
func reasonTail(r model.Reason) string {
	s := r.Member
	if r.Detail != "" {
		if s != "" {
			s += ": "
		}
		s += r.Detail
	}
	return s
}

// topReasons summarises the first reasons of a verdict for one cell.
func topReasons(v model.Verdict, n int) string {
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

// wrap word-wraps s to width and returns its lines, each prefixed.
func wrap(s string, width int, prefix string) []string {
	w := max(10, width-ansi.StringWidth(prefix))
	var out []string
	for _, l := range strings.Split(ansi.Wrap(s, w, ""), "\n") {
		out = append(out, prefix+l)
	}
	return out
}

// hang wraps s to width with a hanging indent of two cells.
func hang(s string, width int) []string {
	lines := strings.Split(ansi.Wrap(s, max(10, width), ""), "\n")
	if len(lines) == 1 {
		return lines
	}
	rest := strings.Join(lines[1:], " ")
	return append(lines[:1], wrap(rest, width, "  ")...)
}

// plural is "1 cluster", "2 clusters".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// cellWidth is the number of terminal cells s takes. Plain ASCII, and
// ASCII styled with CSI sequences (colours, bold), is measured by length
// (the sequences take none); anything else by ansi.StringWidth.
func cellWidth(s string) int {
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

// clip truncates every line to width and pads or cuts the block to
// exactly height lines.
func clip(lines []string, width, height int) []string {
	out := make([]string, 0, height)
	for _, l := range lines {
		if len(out) == height {
			break
		}
		if cellWidth(l) > width {
			l = ansi.Truncate(l, width, "…")
		}
		out = append(out, l)
	}
	for len(out) < height {
		out = append(out, "")
	}
	return out
}

// spread puts left and right on one line of width cells.
func spread(left, right string, width int) string {
	gap := width - cellWidth(left) - cellWidth(right)
	if gap < 1 {
		return ansi.Truncate(left, max(0, width-cellWidth(right)-1), "…") + " " + right
	}
	return left + strings.Repeat(" ", gap) + right
}

// sparkLevels are the bars of a sparkline, lowest first.
var sparkLevels = []rune("▁▂▃▄▅▆▇█")

// sparkline draws values (nil: unknown, shown as "·") scaled to scale,
// keeping the last width samples.
func sparkline(values []*int64, scale int64, width int) string {
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

// bar draws a fraction as a fixed-width bar.
func bar(frac float64, width int) string {
	if width <= 0 {
		return ""
	}
	frac = min(max(frac, 0), 1)
	n := int(frac*float64(width) + 0.5)
	return strings.Repeat("█", n) + strings.Repeat("░", width-n)
}
