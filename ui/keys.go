package ui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// binding is a key with its help line and the one word the footer shows.
type binding struct {
	key.Binding
	short string // the footer's word: "filter"
}

func (b binding) matches(k tea.KeyMsg) bool { return key.Matches(k, b.Binding) }

// keyMap is every key vtop answers to. The help overlay and the footer are
// generated from it, so a key that is not here does not exist.
type keyMap struct {
	Help, Quit, Pause, PollNow, WindowUp, WindowDown, Theme, SLO binding
	Changes                                                      binding
	NextPane, PrevPane, Back, Home                               binding
	Up, Down, PageUp, PageDown, Top, Bottom, Open                binding
	Filter, Sort, Reverse, Expand, ExpandAll                     binding
	Copy                                                         binding
}

func newKeyMap() keyMap {
	b := func(help, short, desc string, keys ...string) binding {
		return binding{key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc)), short}
	}
	return keyMap{
		Help:       b("? F1 h", "help", "help (this screen)", "?", "f1", "h"),
		Quit:       b("q", "quit", "quit (also ctrl+c)", "q", "ctrl+c"),
		Pause:      b("p", "pause", "pause: freeze the screen, polls go on", "p"),
		PollNow:    b("r", "poll", "poll every target now", "r"),
		WindowUp:   b("+", "window", "longer window (percentiles, rates)", "+", "="),
		WindowDown: b("-", "window", "shorter window", "-", "_"),
		Theme:      b("t", "theme", "next theme (dark, light, high-contrast, mono)", "t"),
		SLO:        b("o", "SLO", "next SLO profile (chat, code, batch, rag, agent)", "o"),
		Changes:    b("c", "changes", "timeline: what changed and when (this endpoint's, or the fleet's)", "c"),
		NextPane:   b("tab", "pane", "next pane", "tab"),
		PrevPane:   b("shift+tab", "pane", "previous pane", "shift+tab"),
		Back:       b("esc", "back", "back: close, leave the endpoint, clear the filter", "esc"),
		Home:       b("F", "fleet", "back to the fleet view from anywhere", "F"),
		Up:         b("↑ k", "up", "select up", "up", "k"),
		Down:       b("↓ j", "select", "select down", "down", "j"),
		PageUp:     b("pgup", "page", "page up", "pgup", "ctrl+b"),
		PageDown:   b("pgdn", "page", "page down", "pgdown", "ctrl+f"),
		Top:        b("g home", "first", "first", "g", "home"),
		Bottom:     b("G end", "last", "last", "G", "end"),
		Open:       b("enter", "open", "open the endpoint, the fleet, or the finding", "enter"),
		Filter:     b("/", "filter", "filter by endpoint, model, state, finding, rule id or severity", "/"),
		Sort:       b("s", "sort", "sort by severity, name, KV, waiting, TTFT, tok/s", "s"),
		Reverse:    b("S", "reverse", "reverse the sort", "S"),
		Expand:     b("space", "engines", "show or hide a data-parallel endpoint's engines", " "),
		ExpandAll:  b("e", "all engines", "show or hide every endpoint's engines", "e"),
		Copy:       b("y", "copy", "copy the finding (or the verdict) as Markdown for the incident channel (OSC 52)", "y"),
	}
}

// helpGroups is the help overlay's content, in reading order.
func (k keyMap) helpGroups() []helpGroup {
	return []helpGroup{
		{"Anywhere", []binding{k.Help, k.Quit, k.Pause, k.PollNow, k.WindowUp, k.WindowDown, k.Theme, k.SLO, k.Changes, k.NextPane, k.PrevPane, k.Back, k.Home, k.Copy}},
		{"Lists (endpoints, findings, GPUs)", []binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Open}},
		{"Fleet view", []binding{k.Filter, k.Sort, k.Reverse, k.Expand, k.ExpandAll}},
	}
}

type helpGroup struct {
	title string
	keys  []binding
}

// hint is one footer entry: a binding and, where the word depends on the
// state ("sort:severity"), what to say instead of its short word.
type hint struct {
	b         binding
	key, desc string // overrides: "↑↓" for Up and Down together
}

func (h hint) text() (k, d string) {
	k, d = h.key, h.desc
	if k == "" {
		k = h.b.Help().Key
	}
	if d == "" {
		d = h.b.short
	}
	return k, d
}
