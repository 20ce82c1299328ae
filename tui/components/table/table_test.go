package table_test

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/tui/components/table"
	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/tui/internal/tuitest"
)

func testTable(cols ...table.Column) table.Model {
	return table.New(common.NewTheme(true), common.DefaultKeyMap(), cols...)
}

func TestTableSetSizeRefitsColumns(t *testing.T) {
	tb := testTable(
		table.Column{Title: "NAME", Min: 4, Max: 20},
		table.Column{Title: "RESTARTS", Short: "RST", Max: 8},
		table.Column{Title: "NODE", Min: 4, Max: 12, Drop: 1},
	)
	tb.SetRows([][]table.Cell{
		{table.Plain("etcd-main-0"), table.Plain("0"), table.Plain("node-a")},
		{table.Plain("etcd-main-1"), table.Plain("4"), table.Plain("node-b")},
	})
	header := func() string { return ansi.Strip(tb.View()[0]) }
	tb.SetSize(80, 5)
	if h := header(); h != " NAME        RESTARTS NODE" {
		t.Errorf("at 80 cells the header is %q", h)
	}
	tb.SetSize(24, 5)
	if h := header(); h != " NAME        RST NODE" {
		t.Errorf("at 24 cells the header is %q, want the short title", h)
	}
	tb.SetSize(12, 5)
	if h := header(); h != " NAME RST" {
		t.Errorf("at 12 cells the header is %q, want NODE dropped", h)
	}
	if row := ansi.Strip(tb.View()[1]); row != "›etc… 0" {
		t.Errorf("at 12 cells the first row is %q", row)
	}
	tb.SetSize(80, 5)
	if h := header(); h != " NAME        RESTARTS NODE" {
		t.Errorf("widened again, the header is %q: the short titles stuck", h)
	}
}

func TestTableCursorFollowsWindow(t *testing.T) {
	tb := testTable(table.Column{Title: "N"})
	var rs [][]table.Cell
	for _, s := range []string{"r0", "r1", "r2", "r3", "r4", "r5"} {
		rs = append(rs, []table.Cell{table.Plain(s)})
	}
	tb.SetRows(rs)
	tb.SetSize(20, 4) // the header and three rows
	for range 4 {
		tb, _ = tb.Update(tuitest.KeyMsg("down"))
	}
	if tb.Cursor() != 4 {
		t.Fatalf("cursor %d after four downs, want 4", tb.Cursor())
	}
	if got := ansi.Strip(strings.Join(tb.View(), "|")); got != " N| r2| r3|›r4" {
		t.Errorf("window %q, want rows 2 to 4 with 4 marked", got)
	}
	for range 5 {
		tb, _ = tb.Update(tuitest.KeyMsg("down"))
	}
	if tb.Cursor() != 5 {
		t.Errorf("cursor %d past the end, want 5", tb.Cursor())
	}
	tb.SetRows(rs[:2])
	tb.Clamp()
	if tb.Cursor() != 1 {
		t.Errorf("cursor %d after the rows shrank to 2, want 1", tb.Cursor())
	}
	tb.SetStatic(true)
	tb, _ = tb.Update(tuitest.KeyMsg("up"))
	if tb.Cursor() != 1 || strings.Contains(strings.Join(tb.View(), ""), "›") {
		t.Errorf("a static table moved (%d) or marked a row", tb.Cursor())
	}
}

func TestTableGrowColumnTakesTheRest(t *testing.T) {
	tb := testTable(table.Column{Title: "A", Max: 5}, table.Column{Title: "HIST", Min: 4, Grow: true})
	tb.SetRows([][]table.Cell{{table.Plain("abcde"), table.Plain("")}})
	for _, tc := range []struct{ width, want int }{{30, 23}, {20, 13}} {
		tb.SetSize(tc.width, 2)
		got := -1
		tb.Fill(1, func(_, w int) table.Cell { got = w; return table.Plain(strings.Repeat("x", w)) })
		if got != tc.want {
			t.Errorf("at %d cells the growing column got %d, want %d", tc.width, got, tc.want)
		}
		if w := ansi.StringWidth(tb.View()[1]); w != tc.width {
			t.Errorf("at %d cells the filled row is %d wide", tc.width, w)
		}
		tb.SetRows([][]table.Cell{{table.Plain("abcde"), table.Plain("")}})
	}
}
