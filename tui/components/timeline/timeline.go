// Package timeline is a cluster's history tab: what `kubectl hactl
// history` prints, newest first, each row with its source and the
// selected row's whole detail.
package timeline

import (
	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/components/table"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// Model is a cluster's history tab: what `kubectl hactl history`
// prints (status.History), newest first: the engine's record of leader
// changes, hactl's actions and the Events the view holds, each row with
// its source.
type Model struct {
	table table.Model
	common.SyncState
	// details are each row's full detail, shown for the selected row.
	details []string
	notes   []string
}

// New returns the history tab.
func New(th common.Theme, keys common.KeyMap) Model {
	return Model{table: table.New(th, keys,
		table.Column{Title: "TIME (UTC)", Min: 8, Max: 19},
		table.Column{Title: "SOURCE", Max: 8},
		table.Column{Title: "MEMBER", Max: 20, Drop: 2},
		table.Column{Title: "EVENT", Max: 20},
		table.Column{Title: "DETAIL", Min: 10, Grow: true},
	)}
}

// SetData builds the rows from the cluster shown and the leaders this
// view saw it change to.
func (v *Model) SetData(r status.Result, seen []status.LeaderSeen) {
	h := status.History(r, r.Observation.Events, seen...)
	rows := make([][]table.Cell, 0, len(h.Rows))
	v.details = v.details[:0]
	for i := len(h.Rows) - 1; i >= 0; i-- {
		x := h.Rows[i]
		src := table.Plain(x.Source)
		if x.Source == status.SourceDCS {
			src = table.Styled(x.Source, v.table.Theme().Warn)
		}
		rows = append(rows, []table.Cell{table.Plain(x.When()), src, table.Plain(format.Dash(x.Member)), table.Plain(x.Event), table.Plain(x.Detail)})
		v.details = append(v.details, x.Source+" · "+x.Event+": "+x.Detail)
	}
	v.notes = h.Notes
	v.table.SetRows(rows)
}

// SetSize gives the table what the selected row's detail and the notes
// below it leave.
func (v *Model) SetSize(w, h int) { v.table.SetSize(w, max(1, h-8)) }

// Update moves the cursor.
func (v Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	var cmd tea.Cmd
	v.table, cmd = v.table.Update(msg)
	return v, cmd
}

// View draws the table, newest first, and what it cannot hold.
func (v Model) View() []string {
	lines := v.table.View()
	lines = append(lines, "")
	if v.table.Cursor() < len(v.details) {
		lines = append(lines, common.Wrap(v.details[v.table.Cursor()], v.table.Width(), "  ")...)
		lines = append(lines, "")
	}
	for _, n := range v.notes {
		for _, l := range common.Wrap(n, v.table.Width(), "  ") {
			lines = append(lines, v.table.Theme().Dim.Render(l))
		}
	}
	return lines
}

// Cursor is the row under the cursor.
func (v Model) Cursor() int { return v.table.Cursor() }

// SetCursor puts the cursor on row i.
func (v *Model) SetCursor(i int) { v.table.SetCursor(i) }

// Clamp keeps the cursor on a row.
func (v *Model) Clamp() { v.table.Clamp() }

// SetTheme sets the styles.
func (v *Model) SetTheme(th common.Theme) { v.table.SetTheme(th) }

// Details are each row's full detail, newest first.
func (v Model) Details() []string { return v.details }
