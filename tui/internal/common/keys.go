package common

import "charm.land/bubbles/v2/key"

// KeyMap is every binding of the TUI. It implements help.KeyMap.
type KeyMap struct {
	Up, Down         key.Binding
	Open, Back       key.Binding
	NextTab, PrevTab key.Binding
	ScrollUp         key.Binding
	ScrollDown       key.Binding
	Filter           key.Binding
	Help             key.Binding
	Quit             key.Binding
	Probe            key.Binding

	Replace key.Binding
	Reseed  key.Binding
	Seed    key.Binding
	Restore key.Binding
	// Switchover hands a Patroni cluster's primary role over.
	Switchover key.Binding
	Explain    key.Binding
}

// DefaultKeyMap returns the standard bindings.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:         key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:       key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Open:       key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		Back:       key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		NextTab:    key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next view")),
		PrevTab:    key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous view")),
		ScrollUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "scroll reasons up")),
		ScrollDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "scroll reasons down")),
		Filter:     key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Help:       key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:       key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Probe:      key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "probe now")),
		Replace:    key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "replace")),
		Reseed:     key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "reseed")),
		Seed:       key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "seed")),
		Restore:    key.NewBinding(key.WithKeys("T"), key.WithHelp("T", "restore")),
		Switchover: key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "switchover")),
		Explain:    key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "explain")),
	}
}

// ShortHelp implements help.KeyMap.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Open, k.Back, k.Filter, k.Help, k.Quit}
}

// FullHelp implements help.KeyMap.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.Open, k.Back, k.NextTab, k.PrevTab},
		{k.ScrollUp, k.ScrollDown, k.Filter, k.Probe, k.Help, k.Quit},
		{k.Replace, k.Reseed, k.Seed, k.Restore, k.Switchover, k.Explain},
	}
}

// WithReadOnly disables every action binding (explain stays: it only
// shows a decision).
func (k KeyMap) WithReadOnly(ro bool) KeyMap {
	for _, b := range []*key.Binding{&k.Replace, &k.Reseed, &k.Seed, &k.Restore, &k.Switchover} {
		b.SetEnabled(!ro)
	}
	return k
}
