package tui

import (
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// column describes one column of a table.
type column struct {
	title string
	// short is the title used when the table does not fit ("" keeps
	// title).
	short string
	// min and max bound the width (max 0: no bound).
	min, max int
	// drop is the order in which columns give way when the table is too
	// wide: higher drops first; 0 never drops.
	drop int
}

// cell is one table cell: its text and the style it is drawn with.
type cell struct {
	text  string
	style *lipgloss.Style
}

func plain(s string) cell { return cell{text: s} }

func styled(s string, st lipgloss.Style) cell { return cell{text: s, style: &st} }

// fitColumns returns each column's width (0: dropped) so that the row,
// with a one-cell marker and single spaces between columns, fits width.
// Too wide a table first switches to the short titles, then shrinks the
// columns that may be truncated toward their minimum, then drops columns
// in their drop order. It may change the columns' titles.
func fitColumns(cols []column, rows [][]cell, width int) []int {
	natural := func() []int {
		w := make([]int, len(cols))
		for i, c := range cols {
			w[i] = ansi.StringWidth(c.title)
			for _, r := range rows {
				if i < len(r) {
					w[i] = max(w[i], ansi.StringWidth(r[i].text))
				}
			}
			if c.max > 0 {
				w[i] = min(w[i], c.max)
			}
			w[i] = max(w[i], c.min)
		}
		return w
	}
	total := func(w []int) int {
		n := 1
		for _, x := range w {
			if x > 0 {
				n += x + 1
			}
		}
		return n - 1
	}
	w := natural()
	if total(w) <= width {
		return w
	}
	for i := range cols {
		if cols[i].short != "" {
			cols[i].title = cols[i].short
		}
	}
	w = natural()
	floor := func(i int) int { return max(cols[i].min, ansi.StringWidth(cols[i].title)) }
	for total(w) > width {
		best := -1
		for i := range cols {
			if w[i] > floor(i) && (best < 0 || w[i]-floor(i) > w[best]-floor(best)) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		w[best]--
	}
	for total(w) > width {
		best := -1
		for i, c := range cols {
			if w[i] > 0 && c.drop > 0 && (best < 0 || c.drop > cols[best].drop) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		w[best] = 0
	}
	return w
}

// renderRow draws one row with a marker cell in front.
func renderRow(cells []cell, widths []int, marker string, sel *lipgloss.Style) string {
	var b strings.Builder
	b.WriteString(marker)
	first := true
	for i, wd := range widths {
		if wd == 0 {
			continue
		}
		if !first {
			b.WriteByte(' ')
		}
		first = false
		var c cell
		if i < len(cells) {
			c = cells[i]
		}
		txt := fit(c.text, wd)
		if c.style != nil && sel == nil {
			txt = c.style.Render(txt)
		}
		b.WriteString(txt)
	}
	line := strings.TrimRight(b.String(), " ")
	if sel != nil {
		return sel.Render(line)
	}
	return line
}

// fit pads or truncates s (plain text) to exactly w cells.
func fit(s string, w int) string {
	if ansi.StringWidth(s) > w {
		s = ansi.Truncate(s, w, "…")
	}
	if pad := w - ansi.StringWidth(s); pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	return s
}

// table is the rendered header and rows of one table.
type table struct {
	cols   []column
	rows   [][]cell
	widths []int
}

func newTable(cols []column, rows [][]cell, width int) table {
	return table{cols: cols, rows: rows, widths: fitColumns(cols, rows, width)}
}

// header renders the column titles.
func (t table) header(th Theme) string {
	cells := make([]cell, len(t.cols))
	for i, c := range t.cols {
		cells[i] = plain(c.title)
	}
	return th.Header.Render(renderRow(cells, t.widths, " ", nil))
}

// lines renders rows [offset, offset+height) with the selected row marked.
func (t table) lines(th Theme, selected, offset, height int) []string {
	var out []string
	for i := offset; i < len(t.rows) && i < offset+height; i++ {
		if i == selected {
			out = append(out, renderRow(t.rows[i], t.widths, "›", &th.Selected))
			continue
		}
		out = append(out, renderRow(t.rows[i], t.widths, " ", nil))
	}
	return out
}

// windowStart is the first row of a window of height rows over n rows
// that shows the selected one.
func windowStart(selected, height, n int) int {
	if height <= 0 || selected < height {
		return 0
	}
	return max(0, min(selected-height+1, n-height))
}
