// Package picker is the generation picker of a restore: a cluster's
// published seed generations, newest first, in a table whose cursor
// selects the one to restore.
package picker

import (
	"fmt"
	"sort"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/tui/components/table"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// Model is the generation picker of a restore: the cluster's
// published seed generations, newest first, in a table whose cursor
// selects the one to restore. Partial generations are never offered.
type Model struct {
	table table.Model
	// listed: a listing arrived; err is its error.
	listed bool
	err    error
	// unlisted: nothing lists generations here.
	unlisted bool
	// gens are the rows' generations; hidden counts the partial ones
	// left out.
	gens   []common.Generation
	hidden int
	now    func() time.Time
}

// New returns a picker waiting for a listing; unlisted: no listing will
// come (nothing lists generations here).
func New(th common.Theme, now func() time.Time, unlisted bool) Model {
	tb := table.New(th, common.DefaultKeyMap(),
		table.Column{Title: "GENERATION", Min: 8, Max: 34, Grow: true},
		table.Column{Title: "AGE", Max: 5},
		table.Column{Title: "SOURCE", Min: 6, Max: 20, Drop: 2},
		table.Column{Title: "REVISION", Short: "REV", Max: 12, Drop: 3},
		table.Column{Title: "SIZE", Max: 9, Drop: 1},
	)
	return Model{table: tb, unlisted: unlisted, now: now}
}

// SetGenerations takes a listing: the published generations, newest
// first (then by ID, descending), the cursor on the first.
func (p *Model) SetGenerations(gens []common.Generation, err error) {
	p.listed, p.err, p.gens, p.hidden = true, err, nil, 0
	for _, g := range gens {
		if g.Complete {
			p.gens = append(p.gens, g)
		} else {
			p.hidden++
		}
	}
	sort.SliceStable(p.gens, func(i, j int) bool {
		a, b := p.gens[i], p.gens[j]
		if !a.Created.Equal(b.Created) {
			return a.Created.After(b.Created)
		}
		return a.ID > b.ID
	})
	rows := make([][]table.Cell, 0, len(p.gens))
	for _, g := range p.gens {
		rows = append(rows, []table.Cell{
			table.Plain(g.ID), table.Plain(format.Age(g.Created, p.now())), table.Plain(format.Dash(g.SourceMember)),
			table.Plain(fmt.Sprint(g.Revision)), table.Plain(format.Size(g.Bytes)),
		})
	}
	p.table.SetRows(rows)
	p.table.SetCursor(0)
}

// Selected is the generation under the cursor.
func (p Model) Selected() (common.Generation, bool) {
	if p.table.Cursor() < 0 || p.table.Cursor() >= len(p.gens) {
		return common.Generation{}, false
	}
	return p.gens[p.table.Cursor()], true
}

// Update moves the cursor on the up and down keys.
func (p Model) Update(msg tea.KeyPressMsg) Model {
	p.table, _ = p.table.Update(msg)
	return p
}

// Lines draw the picker w cells wide in at most h lines: a question and
// the table, or why there is nothing to pick.
func (p Model) Lines(w, h int, cluster string) []string {
	t := p.table.Theme()
	switch {
	case p.unlisted:
		return common.Wrap("Seed generations are not listed here: restore from the CLI, kubectl hactl restore "+cluster+" --generation G.", w, "")
	case !p.listed:
		return []string{t.Dim.Render("listing the seed generations…")}
	case p.err != nil:
		return append([]string{t.Bad.Render("Cannot list the seed generations:")}, common.Wrap(p.err.Error(), w, "")...)
	case len(p.gens) == 0:
		out := common.Wrap(t.Warn.Render("No published seed generation of "+cluster+": there is nothing to restore from."), w, "")
		return append(out, common.Wrap("Create one with s here, or kubectl hactl seed "+cluster+" --generation G.", w, "")...)
	}
	out := common.Wrap("Restore every member of "+cluster+" from which published seed generation?", w, "")
	var tail []string
	if p.hidden > 0 {
		tail = []string{t.Dim.Render(fmt.Sprintf("%s not offered: never published", model.Plural(p.hidden, "partial generation")))}
	}
	tb := p.table
	tb.SetSize(w, max(2, min(len(p.gens)+1, h-len(out)-len(tail))))
	return append(append(out, tb.View()...), tail...)
}

// SetTheme sets the styles.
func (p *Model) SetTheme(th common.Theme) { p.table.SetTheme(th) }

// Offered are the generations offered, newest first.
func (p Model) Offered() []common.Generation { return p.gens }

// Listed reports whether a listing arrived.
func (p Model) Listed() bool { return p.listed }
