// Package themes holds vtop's semantic palettes: data only. The UI builds its
// styles from a Theme once, when the theme is chosen.
package themes

import (
	"fmt"
	"strings"
)

// Theme names colors by what they mean, never by where they are used, so a
// new view needs no new palette entry. Colors are "#rrggbb" (degraded by the
// terminal's profile) or "" for the terminal's default. A theme without
// Color carries no colors at all: states must read from symbols and text
// alone, with bold, faint and reverse for emphasis.
type Theme struct {
	Name  string
	Color bool

	Text   string // ordinary values
	Muted  string // labels, units, rules, unknown values
	Accent string // section titles, the selected pane
	Key    string // key names in the footer and help

	OK   string // healthy: within SLO, below the KV bands
	Warn string // warning: over target, KV ≥ 85 %
	Crit string // critical: far over target, KV ≥ 95 %, down
	Info string // advisories, stale data, restarts

	Spark    string // sparklines with no level to show
	BarEmpty string // the unfilled part of gauges

	HeaderFg, HeaderBg string // the header line
	SelFg, SelBg       string // the selected row

	// Bg is painted behind every cell: each palette is chosen against its
	// own background, so it reads the same on a dark or a light terminal.
	Bg string
}

// Mono is the theme without color: for NO_COLOR, TERM=dumb and --theme mono.
const Mono = "mono"

var all = []Theme{
	{
		Name: "dark", Color: true,
		Text: "#d0d0d0", Muted: "#808080", Accent: "#5fafff", Key: "#ffaf5f",
		OK: "#5fd75f", Warn: "#ffd700", Crit: "#ff5f5f", Info: "#87afd7",
		Spark: "#5fafaf", BarEmpty: "#444444",
		HeaderFg: "#ffffff", HeaderBg: "#303a52",
		SelFg: "#ffffff", SelBg: "#3a3a5a",
		Bg: "#1c1c1c",
	},
	{
		Name: "light", Color: true,
		Text: "#262626", Muted: "#6c6c6c", Accent: "#005fd7", Key: "#af5f00",
		OK: "#008700", Warn: "#8a6d00", Crit: "#d70000", Info: "#005f87",
		Spark: "#008787", BarEmpty: "#c6c6c6",
		HeaderFg: "#000000", HeaderBg: "#d7e3f4",
		SelFg: "#000000", SelBg: "#d0d0ff",
		Bg: "#ffffff",
	},
	{
		// Pure colors at full strength, for projectors, bright rooms and
		// weak eyes: every foreground is far from the background.
		Name: "high-contrast", Color: true,
		Text: "#ffffff", Muted: "#c0c0c0", Accent: "#00ffff", Key: "#ffff00",
		OK: "#00ff00", Warn: "#ffff00", Crit: "#ff0000", Info: "#00ffff",
		Spark: "#ffffff", BarEmpty: "#808080",
		HeaderFg: "#000000", HeaderBg: "#ffffff",
		SelFg: "#000000", SelBg: "#00ffff",
		Bg: "#000000",
	},
	{Name: Mono},
}

// Names lists the theme names.
func Names() []string {
	out := make([]string, len(all))
	for i, t := range all {
		out[i] = t.Name
	}
	return out
}

// ByName finds a theme; "high-contrast" may also be written "hc".
func ByName(name string) (Theme, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "hc" || n == "highcontrast" {
		n = "high-contrast"
	}
	if n == "monochrome" || n == "none" {
		n = Mono
	}
	for _, t := range all {
		if t.Name == n {
			return t, nil
		}
	}
	return Theme{}, fmt.Errorf("unknown theme %q (have %s)", name, strings.Join(Names(), ", "))
}

// Next is the theme after name in the cycle.
func Next(name string) Theme {
	for i, t := range all {
		if t.Name == name {
			return all[(i+1)%len(all)]
		}
	}
	return all[0]
}
