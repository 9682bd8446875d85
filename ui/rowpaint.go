package ui

import (
	"strings"

	f "github.com/vtop-dev/vtop/ui/format"
)

// A list's row is a set of cell functions, one per column, and one painter
// that owns widths, truncation, dimming and the selection bar (pug's
// RowRenderer): the fleet table, the GPU list and the findings' head lines
// are painted by paintRow, so a rule about how a row looks lives once.

// cellOut is one cell as its column renders it.
type cellOut struct {
	label   string // muted, before the text, inside the cell
	text    string // plain
	lv      level  // paints text
	painted string // text painted already (a gauge, a sparkline); "" paints text by lv
	keep    bool   // keeps its paint on a dimmed row (state, name, a finding)
	p       *paint // paints text exactly, instead of lv and the unknown rule
}

// noPaint leaves a cell's text as it is.
var noPaint = paint{}

// col is one column: where it sits (width, alignment) and how a row's
// value becomes its cell. A zero width is the text's own.
type col[V any] struct {
	column
	cell func(v V, w int) cellOut
}

// rowOpts are how a row is painted as a whole.
type rowOpts struct {
	lead, leadPainted string // before the first cell (cursor and markers)
	sep               string // between cells
	dim               bool   // old values: every cell muted unless it keeps its paint
	sel               bool   // the selection bar: the plain row, painted whole
	fill              int    // >0: the selected row is padded to this width
	w                 int    // >0: the row is cut to this width
}

// paintRow renders v through cols.
func paintRow[V any](s *styles, cols []col[V], v V, o rowOpts) string {
	var plain, painted strings.Builder
	plain.WriteString(o.lead)
	painted.WriteString(o.leadPainted)
	for i, c := range cols {
		if i > 0 {
			plain.WriteString(o.sep)
			painted.WriteString(o.sep)
		}
		out := c.cell(v, c.w)
		if out.label != "" {
			plain.WriteString(out.label)
			if strings.TrimSpace(out.label) == "" {
				painted.WriteString(out.label) // spacing: nothing to paint
			} else {
				painted.WriteString(s.muted.s(out.label))
			}
		}
		cw := c.w - width(out.label)
		text := out.text
		if c.w > 0 && width(text) > cw && strings.HasPrefix(text, "~") {
			text = text[1:] // a narrow column keeps the number whole; the endpoint view says "~"
		}
		cell := text
		if c.w > 0 && out.painted == "" {
			if c.right {
				cell = padLeft(text, cw)
			} else {
				cell = pad(text, cw)
			}
		}
		plain.WriteString(cell)
		if out.painted != "" {
			if o.dim && !out.keep {
				painted.WriteString(s.muted.s(cell))
			} else {
				painted.WriteString(out.painted)
			}
			continue
		}
		p := s.lv(out.lv)
		if text == f.Missing || strings.HasPrefix(text, f.Missing) {
			p = s.muted // unknown, never in a level's colour
		}
		if out.p != nil {
			p = *out.p
		}
		if o.dim && !out.keep {
			p = s.muted
		}
		painted.WriteString(p.s(cell))
	}
	if o.sel {
		pl := plain.String()
		if o.w > 0 {
			pl = cut(pl, o.w)
		}
		if o.fill > 0 {
			pl = pad(pl, o.fill)
		}
		return s.sel.s(pl)
	}
	if o.w > 0 {
		return cut(painted.String(), o.w)
	}
	return painted.String()
}
