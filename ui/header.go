package ui

import (
	"strings"
	"time"

	f "github.com/vtop-dev/vtop/diagnose/format"
)

// renderHeader: targets up/total, interval, window, SLO profile on the left;
// clock, data age and the paused indicator on the right.
func (m *Model) renderHeader() string {
	s := m.st
	w := m.w
	left := []string{"vtop"}
	var age time.Duration
	if m.fr != nil {
		fr := m.fr
		left = append(left, itoa(fr.Fleet.Up)+"/"+itoa(fr.Fleet.Total)+" up")
		left = append(left, "every "+f.Dur(fr.Interval))
		win := "window " + f.Dur(fr.Window)
		if m.wantWindow > 0 && m.wantWindow != fr.Window {
			win += "→" + f.Dur(m.wantWindow)
		}
		left = append(left, win)
		age = m.now.Sub(fr.Time)
	} else {
		left = append(left, "waiting for the first poll")
	}
	slo := "SLO " + m.slos[m.slo].Name
	// The findings say which profile they judged by; until the hub has
	// switched, show both.
	if m.fr != nil && m.fr.SLO.Name != "" && m.fr.SLO.Name != m.slos[m.slo].Name {
		slo = "SLO " + m.fr.SLO.Name + "→" + m.slos[m.slo].Name
	}
	left = append(left, slo)
	l := " " + strings.Join(left, "  ")

	var right []string
	warn := ""
	if m.paused {
		warn = "‖ PAUSED"
		if m.skipped > 0 {
			warn += " (" + itoa(m.skipped) + " new)"
		}
	}
	if !m.now.IsZero() {
		right = append(right, m.now.Format("15:04:05"))
	}
	if m.fr != nil {
		a := "0s"
		if age >= time.Second {
			a = f.Short(age)
		}
		right = append(right, "data "+a+" old")
		if m.fr.Interval > 0 && age > 3*m.fr.Interval && !m.paused {
			warn = symWarn + " no new frame"
		}
	}
	if m.closed {
		warn = symCrit + " polling stopped"
	}
	right = append(right, "? help ")
	r := strings.Join(right, "  ")
	if warn != "" {
		r = warn + "  " + r
	}
	gap := w - width(l) - width(r)
	if gap < 1 {
		l = cut(l, max(0, w-width(r)-1))
		gap = w - width(l) - width(r)
	}
	if gap < 0 {
		return s.hdr.s(cut(l+r, w))
	}
	if warn != "" {
		rest := strings.TrimPrefix(r, warn)
		return s.hdr.s(l+strings.Repeat(" ", gap)) + s.hdrWarn.s(warn) + s.hdr.s(rest)
	}
	return s.hdr.s(l + strings.Repeat(" ", gap) + r)
}

// renderFooter shows the keys that matter where the user is.
func (m *Model) renderFooter() string {
	s := m.st
	type hint struct{ k, d string }
	var hs []hint
	switch {
	case m.fleet.filtering:
		shown := 0
		for _, r := range m.fleet.rows {
			if r.sub < 0 {
				shown++
			}
		}
		line := s.key.s("/") + s.text.s(m.fleet.filter) + s.accent.s("█") +
			s.muted.s("  enter keep · esc clear · "+itoa(shown)+" of "+itoa(len(m.fr.Endpoints))+" endpoints")
		return cut(line, m.w)
	case m.overlay == overlayHelp:
		hs = []hint{{"esc ?", "close"}, {"↑↓", "scroll"}, {"q", "quit"}}
	case m.overlay == overlayFinding:
		hs = []hint{{"esc", "back"}, {"↑↓", "scroll"}, {"q", "quit"}}
	case m.mode == modeFleet:
		hs = []hint{{"↑↓", "select"}, {"enter", "open"}, {"/", "filter"}, {"s", "sort:" + sortNames[m.fleet.sort]},
			{"space", "engines"}, {"tab", "pane"}, {"p", "pause"}, {"?", "help"}, {"q", "quit"}}
		if m.fleet.filter != "" {
			hs = append([]hint{{"esc", "clear " + quote(m.fleet.filter)}}, hs...)
		}
	default:
		hs = []hint{{"esc", "back"}, {"tab", "pane"}, {"+/-", "window"}, {"o", "SLO"}, {"t", "theme"},
			{"p", "pause"}, {"r", "poll"}, {"?", "help"}, {"q", "quit"}}
	}
	// Hints that do not fit are left out, from the end of the list but
	// never help and quit (the last two).
	keep := make([]bool, len(hs))
	used := 0
	order := make([]int, 0, len(hs))
	if len(hs) >= 2 {
		order = append(order, len(hs)-2, len(hs)-1)
	}
	for i := 0; i < len(hs)-2; i++ {
		order = append(order, i)
	}
	for _, i := range order {
		wd := width(hs[i].k) + 1 + width(hs[i].d) + 2
		if used+wd-2 > m.w {
			continue
		}
		keep[i] = true
		used += wd
	}
	var b strings.Builder
	for i, h := range hs {
		if !keep[i] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("  ")
		}
		b.WriteString(s.key.s(h.k) + " " + s.muted.s(h.d))
	}
	return cut(b.String(), m.w)
}
