package ui

import (
	"strings"
	"time"

	f "github.com/vtop-dev/vtop/ui/format"
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
	if o := m.outageText(); o != "" {
		// A failing source comes first: it is why every row is stale.
		left = append([]string{left[0], o}, left[1:]...)
	}
	l := " " + strings.Join(left, "  ")

	var right []string
	warn := ""
	if m.paused {
		warn = "‖ PAUSED"
		if m.skipped > 0 {
			warn += " (" + plural(m.skipped, "new frame") + " held; p resumes)"
		} else {
			warn += " (p resumes)"
		}
	}
	if m.flash != "" && !m.now.After(m.flashUntil) && warn == "" {
		right = append(right, m.flash)
	}
	clockAt := -1
	if !m.now.IsZero() {
		clockAt = len(right)
		right = append(right, m.now.Format("15:04:05"))
	}
	if m.fr != nil {
		// The data's age: of the newest sample (--prometheus) or the
		// last answered scrape, not of the frame.
		data := age
		if !m.fr.Newest.IsZero() {
			data = max(0, m.now.Sub(m.fr.Newest))
		}
		a := "0s"
		if data >= time.Second {
			a = f.Short(data)
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
	if clockAt >= 0 && m.outageText() != "" && width(l)+width(strings.Join(right, "  "))+width(warn)+2 > w {
		// A failing source's age and error matter more than the clock.
		right = append(right[:clockAt], right[clockAt+1:]...)
	}
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

// shortHelp is the footer's keys where the user is, from the key map:
// the pane with the keys first, then what works anywhere.
func (m *Model) shortHelp() []hint {
	km := &m.keys
	switch {
	case m.overlay == overlayHelp:
		return []hint{{b: km.Help, key: "esc ?", desc: "close"}, {b: km.Down, key: "↑↓", desc: "scroll"}, {b: km.Help, key: "?"}, {b: km.Quit}}
	case m.overlay == overlayFinding:
		return []hint{{b: km.Back}, {b: km.Home}, {b: km.Down, key: "↑↓", desc: "scroll"}, {b: km.Help, key: "?"}, {b: km.Quit}}
	}
	hs := m.component(m.focus).ShortHelp()
	if m.mode == modeEndpoint {
		hs = append([]hint{{b: km.Back, desc: "fleet"}}, hs...)
	} else if m.focus != paneMain {
		hs = append([]hint{{b: km.Back}}, hs...)
	}
	hs = append(hs, hint{b: km.NextPane}, hint{b: km.WindowUp, key: "+/-"}, hint{b: km.SLO}, hint{b: km.Theme},
		hint{b: km.Pause}, hint{b: km.PollNow}, hint{b: km.Help, key: "?"}, hint{b: km.Quit})
	return hs
}

// renderFooter shows the keys that matter where the user is.
func (m *Model) renderFooter() string {
	s := m.st
	if m.fleet.filtering {
		shown := 0
		for _, r := range m.fleet.rows {
			if r.sub < 0 {
				shown++
			}
		}
		line := s.key.s("/") + s.text.s(m.fleet.filter) + s.accent.s("█") +
			s.muted.s("  enter keep · esc clear · "+itoa(shown)+" of "+itoa(len(m.fr.Endpoints))+" endpoints")
		return cut(line, m.w)
	}
	hs := m.shortHelp()
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
		k, d := hs[i].text()
		wd := width(k) + 1 + width(d) + 2
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
		k, d := h.text()
		b.WriteString(s.key.s(k) + " " + s.muted.s(d))
	}
	return cut(b.String(), m.w)
}
