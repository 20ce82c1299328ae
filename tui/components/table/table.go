// Package table is the table component the TUI's lists share: rows under
// a header, the columns fitted to the width, and a cursor whose window of
// rows it shows.
package table

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/hactl-dev/hactl/tui/internal/common"
)

// Column describes one column of a table.
type Column struct {
	Title string
	// Short is the title used when the table does not fit ("" keeps
	// Title).
	Short string
	// Min and Max bound the width (Max 0: no bound).
	Min, Max int
	// Drop is the order in which columns give way when the table is too
	// wide: higher drops first; 0 never drops.
	Drop int
	// Grow: the column takes the width the others leave.
	Grow bool
}

// Cell is one table cell: its text and the style it is drawn with.
type Cell struct {
	text  string
	style *lipgloss.Style
}

// Plain is a cell drawn without a style.
func Plain(s string) Cell { return Cell{text: s} }

// Styled is a cell drawn with st.
func Styled(s string, st lipgloss.Style) Cell { return Cell{text: s, style: &st} }

// listState is a cursor in a list; the window shown follows it.
type listState struct{ cursor int }

func (l *listState) move(d, n int) {
	l.cursor = min(max(l.cursor+d, 0), max(n-1, 0))
}

// Model is the table component: rows under a header, the columns fitted
// to its width, and a cursor whose window of rows it shows. The views
// that list things (clusters, members, readiness, history, generations)
// hold one.
type Model struct {
	listState
	cols []Column
	rows [][]Cell
	// shown are the columns as fitted (short titles when narrow) and
	// widths their widths (0: dropped); SetSize and SetRows fit them.
	shown  []Column
	widths []int
	// width is the table's width in cells; height its lines, the header
	// included.
	width, height int
	// lines are the rows drawn unselected and head the header, as the
	// columns are fitted now: drawn when the rows, widths or theme
	// change, so that a frame only draws the selected row.
	lines []string
	head  string
	// static: no cursor (no row is marked and keys do nothing; SetStatic).
	static bool
	theme  common.Theme
	keys   common.KeyMap
}

// New returns a table of the columns cols.
func New(th common.Theme, keys common.KeyMap, cols ...Column) Model {
	t := Model{cols: cols, theme: th, keys: keys}
	t.fit()
	return t
}

// SetSize sets the width the columns are fitted to and the height: the
// header and height-1 rows.
func (t *Model) SetSize(w, h int) {
	t.width, t.height = w, h
	t.fit()
}

// SetColumns replaces the columns when they differ from the table's (the
// rows set next must match them).
func (t *Model) SetColumns(cols []Column) {
	if slices.Equal(cols, t.cols) {
		return
	}
	t.cols = cols
	t.fit()
}

// SetRows replaces the rows and fits the columns to them. The cursor is
// left where it is (Clamp keeps it on a row).
func (t *Model) SetRows(rows [][]Cell) {
	t.rows = rows
	t.fit()
}

// SetTheme sets the styles the table draws with.
func (t *Model) SetTheme(th common.Theme) {
	t.theme = th
	t.draw()
}

// draw renders the header and every row unselected (see lines).
func (t *Model) draw() {
	cells := make([]Cell, len(t.shown))
	for i, c := range t.shown {
		cells[i] = Plain(c.Title)
	}
	t.head = t.theme.Header.Render(renderRow(cells, t.widths, " ", nil))
	t.lines = make([]string, len(t.rows))
	for i, r := range t.rows {
		t.lines[i] = renderRow(r, t.widths, " ", nil)
	}
}

// Clamp keeps the cursor on a row.
func (t *Model) Clamp() { t.move(0, len(t.rows)) }

// fit computes the shown columns and their widths; a growing column then
// takes what the others leave.
func (t *Model) fit() {
	t.shown = append([]Column(nil), t.cols...)
	t.widths = fitColumns(t.shown, t.rows, t.width)
	for i, c := range t.shown {
		if !c.Grow || t.widths[i] == 0 {
			continue
		}
		used := 1
		for j, x := range t.widths {
			if x > 0 && j != i {
				used += x + 1
			}
		}
		t.widths[i] = max(t.widths[i], t.width-used)
	}
	t.draw()
}

// Fill sets column c of every row to draw(row, width), width being what
// the column got; the columns are not fitted again (for cells drawn to
// the width they get, such as a sparkline).
func (t *Model) Fill(c int, draw func(row, width int) Cell) {
	if c >= len(t.widths) || t.widths[c] == 0 {
		return
	}
	rows := make([][]Cell, len(t.rows))
	for i, r := range t.rows {
		r = append([]Cell(nil), r...)
		if c < len(r) {
			r[c] = draw(i, t.widths[c])
		}
		rows[i] = r
	}
	t.rows = rows
	t.draw()
}

// Update moves the cursor on the up and down keys.
func (t Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok || t.static {
		return t, nil
	}
	switch {
	case key.Matches(k, t.keys.Up):
		t.move(-1, len(t.rows))
	case key.Matches(k, t.keys.Down):
		t.move(1, len(t.rows))
	}
	return t, nil
}

// View draws the header and the window of rows that holds the cursor,
// the selected row marked.
func (t Model) View() []string {
	n := max(1, t.height-1)
	sel := t.cursor
	if t.static {
		sel = -1
	}
	out := []string{t.head}
	start := windowStart(sel, n, len(t.rows))
	for i := start; i < len(t.rows) && i < start+n; i++ {
		if i == sel {
			out = append(out, renderRow(t.rows[i], t.widths, "›", &t.theme.Selected))
			continue
		}
		out = append(out, t.lines[i])
	}
	return out
}

// fitColumns returns each column's width (0: dropped) so that the row,
// with a one-cell marker and single spaces between columns, fits width.
// Too wide a table first switches to the short titles, then shrinks the
// columns that may be truncated toward their minimum, then drops columns
// in their drop order. It may change the columns' titles.
func fitColumns(cols []Column, rows [][]Cell, width int) []int {
	w := naturalWidths(cols, rows)
	if tableWidth(w) <= width {
		return w
	}
	for i := range cols {
		if cols[i].Short != "" {
			cols[i].Title = cols[i].Short
		}
	}
	w = naturalWidths(cols, rows)
	floor := func(i int) int { return max(cols[i].Min, common.CellWidth(cols[i].Title)) }
	for tableWidth(w) > width {
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
	for tableWidth(w) > width {
		best := -1
		for i, c := range cols {
			if w[i] > 0 && c.Drop > 0 && (best < 0 || c.Drop > cols[best].Drop) {
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

// naturalWidths are the columns' widths that fit their titles and cells
// within their bounds.
func naturalWidths(cols []Column, rows [][]Cell) []int {
	w := make([]int, len(cols))
	for i, c := range cols {
		w[i] = common.CellWidth(c.Title)
		for _, r := range rows {
			if i < len(r) {
				w[i] = max(w[i], common.CellWidth(r[i].text))
			}
		}
		if c.Max > 0 {
			w[i] = min(w[i], c.Max)
		}
		w[i] = max(w[i], c.Min)
	}
	return w
}

// tableWidth is the width of a row: the marker cell and the columns not
// dropped, with a space between them.
func tableWidth(w []int) int {
	n := 1
	for _, x := range w {
		if x > 0 {
			n += x + 1
		}
	}
	return n - 1
}

// renderRow draws one row with a marker cell in front.
func renderRow(cells []Cell, widths []int, marker string, sel *lipgloss.Style) string {
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
		var c Cell
		if i < len(cells) {
			c = cells[i]
		}
		txt := common.Fit(c.text, wd)
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

// windowStart is the first row of a window of height rows over n rows
// that shows the selected one.
func windowStart(selected, height, n int) int {
	if height <= 0 || selected < height {
		return 0
	}
	return max(0, min(selected-height+1, n-height))
}

// Cursor is the row under the cursor.
func (t Model) Cursor() int { return t.cursor }

// SetCursor puts the cursor on row i.
func (t *Model) SetCursor(i int) { t.cursor = i }

// SetStatic makes a table without a cursor: no row is marked and keys do
// nothing.
func (t *Model) SetStatic(static bool) { t.static = static }

// Theme is the theme the table draws with (SetTheme).
func (t Model) Theme() common.Theme { return t.theme }

// Keys are the bindings the table moves its cursor with.
func (t Model) Keys() common.KeyMap { return t.keys }

// Width is the table's width in cells (SetSize).
func (t Model) Width() int { return t.width }
