package tui

import (
	"fmt"
	"sort"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/hactl-dev/hactl/internal/format"
)

// genPicker is the generation picker of a restore: the cluster's
// published seed generations, newest first, in a table whose cursor
// selects the one to restore. Partial generations are never offered.
type genPicker struct {
	table
	// listed: a listing arrived; err is its error.
	listed bool
	err    error
	// unlisted: nothing lists generations here.
	unlisted bool
	// gens are the rows' generations; hidden counts the partial ones
	// left out.
	gens   []Generation
	hidden int
	now    func() time.Time
}

func newGenPicker(th Theme, now func() time.Time, unlisted bool) genPicker {
	tb := newTable(th, DefaultKeyMap(),
		column{title: "GENERATION", min: 8, max: 34, grow: true},
		column{title: "AGE", max: 5},
		column{title: "SOURCE", min: 6, max: 20, drop: 2},
		column{title: "REVISION", short: "REV", max: 12, drop: 3},
		column{title: "SIZE", max: 9, drop: 1},
	)
	return genPicker{table: tb, unlisted: unlisted, now: now}
}

// setGenerations takes a listing: the published generations, newest
// first (then by ID, descending), the cursor on the first.
func (p *genPicker) setGenerations(gens []Generation, err error) {
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
	rows := make([][]cell, 0, len(p.gens))
	for _, g := range p.gens {
		rows = append(rows, []cell{
			plain(g.ID), plain(format.Age(g.Created, p.now())), plain(format.Dash(g.SourceMember)),
			plain(fmt.Sprint(g.Revision)), plain(format.Size(g.Bytes)),
		})
	}
	p.SetRows(rows)
	p.cursor = 0
}

// selected is the generation under the cursor.
func (p genPicker) selected() (Generation, bool) {
	if p.cursor < 0 || p.cursor >= len(p.gens) {
		return Generation{}, false
	}
	return p.gens[p.cursor], true
}

// Update moves the cursor on the up and down keys.
func (p genPicker) Update(msg tea.KeyPressMsg) genPicker {
	p.table, _ = p.table.Update(msg)
	return p
}

// lines draw the picker w cells wide in at most h lines: a question and
// the table, or why there is nothing to pick.
func (p genPicker) lines(w, h int, cluster string) []string {
	t := p.theme
	switch {
	case p.unlisted:
		return wrap("Seed generations are not listed here: restore from the CLI, kubectl hactl restore "+cluster+" --generation G.", w, "")
	case !p.listed:
		return []string{t.Dim.Render("listing the seed generations…")}
	case p.err != nil:
		return append([]string{t.Bad.Render("Cannot list the seed generations:")}, wrap(p.err.Error(), w, "")...)
	case len(p.gens) == 0:
		out := wrap(t.Warn.Render("No published seed generation of "+cluster+": there is nothing to restore from."), w, "")
		return append(out, wrap("Create one with s here, or kubectl hactl seed "+cluster+" --generation G.", w, "")...)
	}
	out := wrap("Restore every member of "+cluster+" from which published seed generation?", w, "")
	var tail []string
	if p.hidden > 0 {
		tail = []string{t.Dim.Render(fmt.Sprintf("%s not offered: never published", plural(p.hidden, "partial generation")))}
	}
	tb := p.table
	tb.SetSize(w, max(2, min(len(p.gens)+1, h-len(out)-len(tail))))
	return append(append(out, tb.View()...), tail...)
}
