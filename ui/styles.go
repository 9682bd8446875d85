package ui

import (
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/vtop-dev/vtop/themes"
)

// paint is a lipgloss style reduced to the escape sequences around its text.
// Rows are painted cell by cell at every frame; concatenating a prefix and a
// suffix costs nothing next to a full lipgloss Render.
type paint struct{ pre, post string }

func newPaint(st lipgloss.Style) paint {
	const probe = "X"
	out := st.Render(probe)
	i := strings.Index(out, probe)
	if i < 0 {
		return paint{}
	}
	return paint{pre: out[:i], post: out[i+len(probe):]}
}

// s paints one line of text (no newlines).
func (p paint) s(text string) string {
	if p.pre == "" || text == "" {
		return text
	}
	return p.pre + text + p.post
}

// styles are built once from a theme and a renderer (whose color profile
// decides how colors degrade); nothing reads a theme after this.
type styles struct {
	theme themes.Theme

	text, muted, accent, title, key paint
	ok, warn, crit, info            paint
	spark, barEmpty                 paint
	pad                             *sparkPad // reused sparklines
	hdr, hdrWarn, hdrMuted          paint
	sel, focus                      paint
	bg                              string // the theme's background sequence; "" leaves the terminal's
}

// reset ends every painted segment; fill re-applies the background after it.
const reset = "\x1b[0m"

// fill paints a prepared line on the theme's background, padded to w
// cells, so the palette reads the same on a dark or a light terminal.
func (s *styles) fill(line string, w int) string {
	if s.bg == "" {
		return line
	}
	if n := w - width(line); n > 0 {
		line += strings.Repeat(" ", n)
	}
	return s.bg + strings.ReplaceAll(line, reset, reset+s.bg) + reset
}

func newStyles(th themes.Theme, r *lipgloss.Renderer) *styles {
	st := func() lipgloss.Style { return r.NewStyle() }
	fg := func(c string) lipgloss.Style {
		if c == "" {
			return st()
		}
		return st().Foreground(lipgloss.Color(c))
	}
	s := &styles{theme: th, pad: newSparkPad()}
	if !th.Color {
		// Monochrome: emphasis from attributes; meaning from symbols and text.
		s.text = paint{}
		s.muted = newPaint(st().Faint(true))
		s.accent = newPaint(st().Bold(true))
		s.title = newPaint(st().Bold(true))
		s.key = newPaint(st().Bold(true))
		s.crit = newPaint(st().Bold(true))
		s.warn = newPaint(st().Underline(true))
		s.hdr = newPaint(st().Reverse(true))
		s.hdrWarn = newPaint(st().Reverse(true).Bold(true))
		s.hdrMuted = s.hdr
		s.sel = newPaint(st().Reverse(true))
		s.focus = newPaint(st().Bold(true).Underline(true))
		return s
	}
	s.text = newPaint(fg(th.Text))
	s.muted = newPaint(fg(th.Muted))
	s.accent = newPaint(fg(th.Accent))
	s.title = newPaint(fg(th.Accent).Bold(true))
	s.key = newPaint(fg(th.Key).Bold(true))
	s.ok = newPaint(fg(th.OK))
	s.warn = newPaint(fg(th.Warn))
	s.crit = newPaint(fg(th.Crit).Bold(true))
	s.info = newPaint(fg(th.Info))
	s.spark = newPaint(fg(th.Spark))
	s.barEmpty = newPaint(fg(th.BarEmpty))
	hb := func() lipgloss.Style { return st().Background(lipgloss.Color(th.HeaderBg)) }
	s.hdr = newPaint(hb().Foreground(lipgloss.Color(th.HeaderFg)))
	s.hdrWarn = newPaint(hb().Foreground(lipgloss.Color(th.Warn)).Bold(true))
	s.hdrMuted = newPaint(hb().Foreground(lipgloss.Color(th.Muted)))
	s.sel = newPaint(st().Foreground(lipgloss.Color(th.SelFg)).Background(lipgloss.Color(th.SelBg)))
	s.focus = newPaint(fg(th.Accent).Bold(true).Underline(true))
	if th.Bg != "" {
		s.bg = newPaint(st().Background(lipgloss.Color(th.Bg))).pre
	}
	return s
}

// level is how a value stands against its thresholds. Every level has a
// symbol, so it reads without color.
type level uint8

const (
	lvNone level = iota // no threshold applies, or the value is unknown
	lvOK
	lvWarn
	lvCrit
	lvInfo
)

// mark is the level's symbol after a value: nothing when fine.
func (l level) mark() string {
	switch l {
	case lvWarn:
		return symWarn
	case lvCrit:
		return symCrit
	}
	return ""
}

func (s *styles) lv(l level) paint {
	switch l {
	case lvOK:
		return s.ok
	case lvWarn:
		return s.warn
	case lvCrit:
		return s.crit
	case lvInfo:
		return s.info
	}
	return s.text
}

// Symbols. Each is one cell wide in every width table vtop and the
// terminal libraries use (a test checks), and none is an emoji.
const (
	symUp       = "●"
	symDown     = "✗"
	symStale    = "◌"
	symRestart  = "↻"
	symPending  = "…"
	symNotVLLM  = "≠"
	symCrit     = "✖"
	symWarn     = "▲"
	symInfo     = "◇"
	symOK       = "✓"
	symSel      = "›"
	symExpand   = "▸"
	symCollapse = "▾"
	symSub      = "└"
)
