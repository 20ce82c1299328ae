package common

import (
	"image/color"

	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"

	"github.com/hactl-dev/hactl/model"
)

// Theme holds every style the TUI draws with. It is built by NewTheme
// from the terminal's background (adaptive colours); the program's colour
// profile then downsamples or drops the colours (NO_COLOR, a 16-colour
// terminal), so every style also reads without colour: badges carry
// words, the selected row carries a marker.
type Theme struct {
	Title     lipgloss.Style
	Crumb     lipgloss.Style
	Dim       lipgloss.Style
	Bold      lipgloss.Style
	Header    lipgloss.Style
	Selected  lipgloss.Style
	Tab       lipgloss.Style
	TabActive lipgloss.Style
	Section   lipgloss.Style

	Good, Warn, Bad, Unknown lipgloss.Style

	StatusInfo  lipgloss.Style
	StatusError lipgloss.Style

	Dialog      lipgloss.Style
	DialogTitle lipgloss.Style
	Danger      lipgloss.Style

	Help help.Styles
}

// NewTheme returns the theme for a dark or light terminal background.
func NewTheme(dark bool) Theme {
	ld := lipgloss.LightDark(dark)
	c := func(light, darkc string) color.Color { return ld(lipgloss.Color(light), lipgloss.Color(darkc)) }
	var (
		accent = c("#5A4FCF", "#A8A2FF")
		dim    = c("#707070", "#8A8A8A")
		green  = c("#1E7A1E", "#5FD75F")
		yellow = c("#946200", "#FFD75F")
		red    = c("#B3001B", "#FF5F5F")
		grey   = c("#5C5C5C", "#A0A0A0")
	)
	t := Theme{
		Title:       lipgloss.NewStyle().Bold(true).Foreground(accent),
		Crumb:       lipgloss.NewStyle().Foreground(dim),
		Dim:         lipgloss.NewStyle().Foreground(dim),
		Bold:        lipgloss.NewStyle().Bold(true),
		Header:      lipgloss.NewStyle().Bold(true).Foreground(dim),
		Selected:    lipgloss.NewStyle().Bold(true).Reverse(true),
		Tab:         lipgloss.NewStyle().Foreground(dim),
		TabActive:   lipgloss.NewStyle().Bold(true).Underline(true).Foreground(accent),
		Section:     lipgloss.NewStyle().Bold(true).Foreground(accent),
		Good:        lipgloss.NewStyle().Bold(true).Foreground(green),
		Warn:        lipgloss.NewStyle().Bold(true).Foreground(yellow),
		Bad:         lipgloss.NewStyle().Bold(true).Foreground(red),
		Unknown:     lipgloss.NewStyle().Foreground(grey),
		StatusInfo:  lipgloss.NewStyle().Foreground(dim),
		StatusError: lipgloss.NewStyle().Bold(true).Foreground(red),
		Dialog:      lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(accent).Padding(0, 1),
		DialogTitle: lipgloss.NewStyle().Bold(true).Foreground(accent),
		Danger:      lipgloss.NewStyle().Bold(true).Foreground(red),
		Help:        help.DefaultStyles(dark),
	}
	return t
}

// VerdictBadge renders the verdict as a word and a colour.
func (t Theme) VerdictBadge(v model.Verdict) string {
	switch {
	case !v.ControlReady:
		return t.Bad.Render("NOT control-ready")
	case !v.FailoverReady:
		return t.Warn.Render("NOT failover-ready")
	}
	return t.Good.Render("failover-ready")
}

// Impact colours a reason code by the verdict it defeats.
func (t Theme) Impact(c model.ReasonCode) lipgloss.Style {
	switch c.Impact() {
	case model.ImpactControl:
		return t.Bad
	case model.ImpactFailover:
		return t.Warn
	}
	return t.Dim
}

// ImpactMark is a one-cell sign of a reason's impact that reads without
// colour.
func ImpactMark(c model.ReasonCode) string {
	switch c.Impact() {
	case model.ImpactControl:
		return "✖"
	case model.ImpactFailover:
		return "▲"
	}
	return "·"
}

// Phase colours a member phase.
func (t Theme) Phase(p model.Phase) lipgloss.Style {
	switch p {
	case model.PhaseMember:
		return t.Good
	case model.PhaseJoining, model.PhaseCatchingUp, model.PhaseBootstrapping, model.PhasePending, model.PhaseTerminating:
		return t.Warn
	case model.PhaseDiverged, model.PhaseAbsent:
		return t.Bad
	}
	return t.Unknown
}
