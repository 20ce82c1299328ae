package help_test

import (
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/tui/components/help"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// The help screen lists every binding, says why actions are off and
// names every action's CLI verb.
func TestViewListsKeysAndTheNote(t *testing.T) {
	v := help.New(common.NewTheme(true), common.DefaultKeyMap(), "Actions are disabled: --readonly.")
	v.SetSize(120, 40)
	f := ansi.Strip(strings.Join(v.View(), "\n"))
	for _, want := range []string{"Keys", "T restore", "Actions are disabled: --readonly.", "replace|reseed|seed|restore|switchover|explain"} {
		if !strings.Contains(f, want) {
			t.Errorf("the help screen lacks %q:\n%s", want, f)
		}
	}
}

// A help line too wide for its width leaves out the bindings it may do
// without and keeps every other.
func TestLineLeavesOutCompactBindingsWhenNarrow(t *testing.T) {
	k := common.DefaultKeyMap()
	v := help.New(common.NewTheme(true), k, "")
	bindings := []key.Binding{k.NextTab, k.Replace, k.Reseed, k.Back, k.Quit}
	v.SetSize(200, 1)
	if wide := ansi.Strip(v.Line(bindings, k.NextTab, k.Back)); !strings.Contains(wide, "next view") || !strings.Contains(wide, "esc back") {
		t.Errorf("a wide line left bindings out: %q", wide)
	}
	v.SetSize(40, 1)
	narrow := ansi.Strip(v.Line(bindings, k.NextTab, k.Back))
	if strings.Contains(narrow, "next view") || strings.Contains(narrow, "esc back") {
		t.Errorf("a narrow line kept what it may do without: %q", narrow)
	}
	for _, want := range []string{"r replace", "R reseed", "q quit"} {
		if !strings.Contains(narrow, want) {
			t.Errorf("a narrow line lacks %q: %q", want, narrow)
		}
	}
}
