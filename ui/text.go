package ui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Widths are measured the way the terminal libraries measure them (grapheme
// clusters, escape sequences skipped), never from the locale.

func width(s string) int { return ansi.StringWidth(s) }

// cut truncates a line (plain or painted) to w cells, ending in "…" when cut.
func cut(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if width(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// pad cuts or right-pads a line to exactly w cells.
func pad(s string, w int) string {
	s = cut(s, w)
	if n := w - width(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

// padOnly right-pads a line to w cells, never cutting it.
func padOnly(s string, w int) string {
	if n := w - width(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

// padLeft right-aligns a line in w cells.
func padLeft(s string, w int) string {
	s = cut(s, w)
	if n := w - width(s); n > 0 {
		return strings.Repeat(" ", n) + s
	}
	return s
}

// block fits lines to exactly n lines of at most w cells: cut below, padded
// with empty lines.
func block(lines []string, w, n int) []string {
	out := make([]string, 0, max(n, 0))
	for i := 0; i < n; i++ {
		if i < len(lines) {
			out = append(out, cut(lines[i], w))
		} else {
			out = append(out, "")
		}
	}
	return out
}

// beside joins two blocks column by column: left padded to lw cells, then
// the separator, then right.
func beside(left []string, lw int, sep string, right []string) []string {
	n := max(len(left), len(right))
	out := make([]string, n)
	for i := 0; i < n; i++ {
		var l, r string
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		out[i] = pad(l, lw) + sep + r
	}
	return out
}

// rule is a section title followed by a line to the width:
// "Findings (3) ─────────". The title is painted, the rule muted.
func (s *styles) rule(title string, focused bool, w int) string {
	t := title
	p := s.title
	if focused {
		t = symSel + " " + title
		p = s.focus
	}
	t = cut(t, w)
	rest := w - width(t) - 1
	if rest <= 0 {
		return p.s(t)
	}
	return p.s(t) + " " + s.muted.s(strings.Repeat("─", rest))
}

// wrap word-wraps plain text to w cells.
func wrap(text string, w int) []string {
	if w <= 0 {
		return nil
	}
	var out []string
	for _, para := range strings.Split(text, "\n") {
		if strings.TrimSpace(para) == "" {
			out = append(out, "")
			continue
		}
		out = append(out, wrapSpaces(para, w)...)
	}
	return out
}

// wrapSpaces breaks one paragraph at spaces only: a flag ("--kv-cache-dtype")
// or a negative number split at its hyphen reads as two words, and
// ansi.Wrap breaks at hyphens whatever breakpoints it is given. A word wider
// than w is cut hard.
func wrapSpaces(para string, w int) []string {
	var out []string
	line, lw := "", 0
	for _, word := range strings.Split(para, " ") {
		ww := width(word)
		switch {
		case lw > 0 && lw+1+ww <= w:
			line, lw = line+" "+word, lw+1+ww
			continue
		case lw > 0:
			out = append(out, line)
		}
		if ww > w {
			parts := strings.Split(ansi.Hardwrap(word, w, true), "\n")
			out = append(out, parts[:len(parts)-1]...)
			word = parts[len(parts)-1]
			ww = width(word)
		}
		line, lw = word, ww
	}
	return append(out, line)
}

// wrapLine wraps one line, painted or plain, to w cells at its spaces (a
// word wider than a line is cut hard), its continuation lines indented
// under its text: an overlay's long line is read whole, never cut with
// "…". The paint crosses the breaks (ansi.Cut keeps what each piece
// needs).
func wrapLine(l string, w int) []string {
	total := width(l)
	if total <= w || w < 16 {
		return []string{l}
	}
	plain := ansi.Strip(l)
	space := make([]bool, 0, total) // by cell: a space there
	for _, r := range plain {
		for k, n := 0, width(string(r)); k < max(1, n); k++ {
			space = append(space, r == ' ')
		}
	}
	total = min(total, len(space))
	lead := 0
	for lead < len(space) && space[lead] {
		lead++
	}
	indent := strings.Repeat(" ", min(lead+2, w/3))
	var out []string
	for start, prefix := 0, ""; start < total; prefix = indent {
		lim := w - width(prefix)
		if total-start <= lim {
			out = append(out, prefix+ansi.Cut(l, start, total))
			break
		}
		end := -1 // the last space that ends a piece within lim
		for c := start + 1; c <= start+lim && c < total; c++ {
			if space[c] && !space[c-1] {
				end = c
			}
		}
		if end < 0 {
			end = start + lim
		}
		out = append(out, prefix+ansi.Cut(l, start, end))
		for start = end; start < total && space[start]; start++ {
		}
	}
	return out
}
