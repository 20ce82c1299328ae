package tui

import (
	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/status"
)

// timelineView is a cluster's history tab: what `kubectl hactl history`
// prints (status.History), newest first: the engine's record of leader
// changes, hactl's actions and the Events the view holds, each row with
// its source.
type timelineView struct {
	table
	syncState
	// details are each row's full detail, shown for the selected row.
	details []string
	notes   []string
}

func newTimelineView(th Theme, keys KeyMap) timelineView {
	return timelineView{table: newTable(th, keys,
		column{title: "TIME (UTC)", min: 8, max: 19},
		column{title: "SOURCE", max: 8},
		column{title: "MEMBER", max: 20, drop: 2},
		column{title: "EVENT", max: 20},
		column{title: "DETAIL", min: 10, grow: true},
	)}
}

// setData builds the rows from the cluster shown and the leaders this
// view saw it change to.
func (v *timelineView) setData(r status.Result, seen []status.LeaderSeen) {
	h := status.History(r, r.Observation.Events, seen...)
	rows := make([][]cell, 0, len(h.Rows))
	v.details = v.details[:0]
	for i := len(h.Rows) - 1; i >= 0; i-- {
		x := h.Rows[i]
		src := plain(x.Source)
		if x.Source == status.SourceDCS {
			src = styled(x.Source, v.theme.Warn)
		}
		rows = append(rows, []cell{plain(x.When()), src, plain(format.Dash(x.Member)), plain(x.Event), plain(x.Detail)})
		v.details = append(v.details, x.Source+" · "+x.Event+": "+x.Detail)
	}
	v.notes = h.Notes
	v.SetRows(rows)
}

// SetSize gives the table what the selected row's detail and the notes
// below it leave.
func (v *timelineView) SetSize(w, h int) { v.table.SetSize(w, max(1, h-8)) }

// Update moves the cursor.
func (v timelineView) Update(msg tea.Msg) (timelineView, tea.Cmd) {
	var cmd tea.Cmd
	v.table, cmd = v.table.Update(msg)
	return v, cmd
}

// View draws the table, newest first, and what it cannot hold.
func (v timelineView) View() []string {
	lines := v.table.View()
	lines = append(lines, "")
	if v.cursor < len(v.details) {
		lines = append(lines, wrap(v.details[v.cursor], v.width, "  ")...)
		lines = append(lines, "")
	}
	for _, n := range v.notes {
		for _, l := range wrap(n, v.width, "  ") {
			lines = append(lines, v.theme.Dim.Render(l))
		}
	}
	return lines
}
