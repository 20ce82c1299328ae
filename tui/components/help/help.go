// Package help is the help component: the help screen (every binding, and
// why actions are off) and the one-line help under the screen.
package help

import (
	"slices"
	"strings"

	bubbleshelp "charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/tui/internal/common"
)

// Model is the help screen (every binding, and why actions are off) and
// the one-line help under the screen.
type Model struct {
	model bubbleshelp.Model
	keys  common.KeyMap
	theme common.Theme
	// note says why actions are disabled ("" when they are not).
	note string
}

// New returns the help of keys; note says why actions are disabled (""
// when they are not).
func New(th common.Theme, keys common.KeyMap, note string) Model {
	h := bubbleshelp.New()
	h.Styles = th.Help
	return Model{model: h, keys: keys, theme: th, note: note}
}

// SetSize sets the width the help line is cut to.
func (v *Model) SetSize(w, _ int) { v.model.SetWidth(w) }

// SetTheme sets the styles.
func (v *Model) SetTheme(th common.Theme) {
	v.theme = th
	v.model.Styles = th.Help
}

// View draws the help screen.
func (v Model) View() []string {
	hm := v.model
	hm.ShowAll = true
	lines := []string{"", "  " + v.theme.Section.Render("Keys"), ""}
	for _, l := range strings.Split(hm.FullHelpView(v.keys.FullHelp()), "\n") {
		lines = append(lines, "  "+l)
	}
	lines = append(lines, "")
	if v.note != "" {
		lines = append(lines, "  "+v.theme.Dim.Render(v.note))
	}
	lines = append(lines, "  "+v.theme.Dim.Render("Every action is a CLI verb:"),
		"  "+v.theme.Dim.Render("kubectl hactl replace|reseed|seed|restore|switchover|explain."))
	return append(lines, "  "+v.theme.Dim.Render("? or esc closes this help."))
}

// Line draws the one-line help of bindings. When they do not fit the
// width, the bindings a narrow line may do without (compact: navigation
// the header or help shows) are left out and the separators narrowed,
// so that every action key stays on the line.
func (v Model) Line(bindings []key.Binding, compact ...key.Binding) string {
	hm := v.model
	hm.ShowAll = false
	w := hm.Width()
	hm.SetWidth(0)
	full := hm.ShortHelpView(bindings)
	if w <= 0 || ansi.StringWidth(full) <= w || len(compact) == 0 {
		hm.SetWidth(w)
		return hm.ShortHelpView(bindings)
	}
	var kept []key.Binding
	for _, b := range bindings {
		if !slices.ContainsFunc(compact, func(c key.Binding) bool { return slices.Equal(c.Keys(), b.Keys()) }) {
			kept = append(kept, b)
		}
	}
	hm.ShortSeparator = "  "
	hm.SetWidth(w)
	return hm.ShortHelpView(kept)
}
