package ui

import "github.com/charmbracelet/bubbles/key"

// keyMap is every key vtop answers to. The help overlay is generated from
// it, so a key that is not here does not exist.
type keyMap struct {
	Help, Quit, Pause, PollNow, WindowUp, WindowDown, Theme, SLO key.Binding
	NextPane, PrevPane, Back                                     key.Binding
	Up, Down, PageUp, PageDown, Top, Bottom, Open                key.Binding
	Filter, Sort, Reverse, Expand, ExpandAll                     key.Binding
}

func newKeyMap() keyMap {
	b := func(help string, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return keyMap{
		Help:       b("?", "help (this screen)", "?"),
		Quit:       b("q ctrl+c", "quit", "q", "ctrl+c"),
		Pause:      b("p", "pause: freeze the screen, polls go on", "p"),
		PollNow:    b("r", "poll every target now", "r"),
		WindowUp:   b("+", "longer window (percentiles, rates)", "+", "="),
		WindowDown: b("-", "shorter window", "-", "_"),
		Theme:      b("t", "next theme (dark, light, high-contrast, mono)", "t"),
		SLO:        b("o", "next SLO profile (chat, code, batch, rag, agent)", "o"),
		NextPane:   b("tab", "next pane", "tab"),
		PrevPane:   b("shift+tab", "previous pane", "shift+tab"),
		Back:       b("esc", "back: close, leave the endpoint, clear the filter", "esc"),
		Up:         b("↑ k", "select up", "up", "k"),
		Down:       b("↓ j", "select down", "down", "j"),
		PageUp:     b("pgup", "page up", "pgup", "ctrl+b"),
		PageDown:   b("pgdn", "page down", "pgdown", "ctrl+f"),
		Top:        b("g home", "first", "g", "home"),
		Bottom:     b("G end", "last", "G", "end"),
		Open:       b("enter", "open the endpoint, the fleet, or the finding", "enter"),
		Filter:     b("/", "filter endpoints by name, model or state", "/"),
		Sort:       b("s", "sort by name, severity, KV, waiting, TTFT, tok/s", "s"),
		Reverse:    b("S", "reverse the sort", "S"),
		Expand:     b("space", "show or hide a data-parallel endpoint's engines", " "),
		ExpandAll:  b("e", "show or hide every endpoint's engines", "e"),
	}
}

// helpGroups is the help overlay's content, in reading order.
func (k keyMap) helpGroups() []helpGroup {
	return []helpGroup{
		{"Anywhere", []key.Binding{k.Help, k.Quit, k.Pause, k.PollNow, k.WindowUp, k.WindowDown, k.Theme, k.SLO, k.NextPane, k.PrevPane, k.Back}},
		{"Lists (endpoints, findings, GPUs)", []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Open}},
		{"Fleet view", []key.Binding{k.Filter, k.Sort, k.Reverse, k.Expand, k.ExpandAll}},
	}
}

type helpGroup struct {
	title string
	keys  []key.Binding
}
