package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	f "github.com/vtop-dev/vtop/diagnose/format"
)

// sevLabel is a severity as symbol and word: "✖ crit".
func sevLabel(s diagnose.Severity) (string, level) {
	sym, lv := sevSymbol(s)
	word := [...]string{"info", "warn", "crit"}[min(int(s), 2)]
	return sym + " " + word, lv
}

// flagText is the recommended change in one line: "--max-num-seqs 256→96",
// else the action.
func flagText(x *diagnose.Finding) string {
	if len(x.Flags) == 0 {
		return x.Action
	}
	parts := make([]string, len(x.Flags))
	for i, fc := range x.Flags {
		if fc.From == "" {
			parts[i] = fc.Flag + " → " + fc.To
			continue
		}
		parts[i] = fc.Flag + " " + fc.From + "→" + fc.To
	}
	return strings.Join(parts, ", ")
}

// findingsPanel renders the findings in sz: worst first, each on two lines
// when there is room (what, where, since; evidence and the change), one line
// otherwise. withTarget adds the endpoint name (fleet views).
func (m *Model) findingsPanel(fs []diagnose.Finding, withTarget bool, sz size) []string {
	if sz.h <= 0 {
		return nil
	}
	s := m.st
	focused := m.focus == paneFindings
	title := "Findings"
	if len(fs) > 0 {
		title += " · " + strings.TrimPrefix(findingCounts(fs), "findings ")
	}
	out := []string{s.rule(title, focused, sz.w)}
	if len(fs) == 0 {
		out = append(out, s.ok.s(symOK)+" "+s.muted.s("no findings"))
		return block(out, sz.w, sz.h)
	}
	room := sz.h - 1
	two := room >= 2*len(fs)
	per := 1
	if two {
		per = 2
	}
	fit := room / per
	if fit < len(fs) {
		fit = max(1, room-1) // one line says how many more
	}
	m.findSel = max(0, min(m.findSel, len(fs)-1))
	if m.findSel < m.findOff {
		m.findOff = m.findSel
	}
	if m.findSel >= m.findOff+fit {
		m.findOff = m.findSel - fit + 1
	}
	m.findOff = max(0, min(m.findOff, len(fs)-fit))
	now := m.fr.Time
	for i := m.findOff; i < min(len(fs), m.findOff+fit); i++ {
		x := &fs[i]
		sel := focused && i == m.findSel
		mk := " "
		if sel {
			mk = symSel
		}
		sev, lv := sevLabel(x.Severity)
		since := f.Short(now.Sub(x.FirstSeen))
		if x.FirstSeen.IsZero() {
			since = f.Missing
		}
		where := ""
		if withTarget {
			where = x.Target
			if x.Engine != "" {
				where += " engine " + x.Engine
			}
			where += ": "
		}
		change := flagText(x)
		if two {
			l1 := mk + " " + sev + "  " + where + x.Title + "  since " + clock(x.FirstSeen) + " (" + since + ")"
			l2 := "         " + x.Summary
			if change != "" {
				l2 += "  → " + change
			}
			if sel {
				out = append(out, s.sel.s(pad(l1, sz.w)), s.sel.s(pad(l2, sz.w)))
				continue
			}
			out = append(out,
				cut(s.accent.s(mk)+" "+s.lv(lv).s(sev)+"  "+s.text.s(where+x.Title)+s.muted.s("  since "+clock(x.FirstSeen)+" ("+since+")"), sz.w),
				cut(s.muted.s("         "+x.Summary)+s.accent.s(arrowed(change)), sz.w))
			continue
		}
		line := mk + " " + sev + " " + where + x.Title + " · " + since + " · " + x.Summary + arrowed(change)
		if sel {
			out = append(out, s.sel.s(pad(line, sz.w)))
			continue
		}
		out = append(out, cut(s.accent.s(mk)+" "+s.lv(lv).s(sev)+" "+s.text.s(where+x.Title)+
			s.muted.s(" · "+since+" · "+x.Summary)+s.accent.s(arrowed(change)), sz.w))
	}
	if shown := min(len(fs), m.findOff+fit) - m.findOff; shown < len(fs) {
		hint := "tab to this pane, ↑↓ to scroll, enter for details"
		if focused {
			hint = "↑↓ to scroll, enter for details"
		}
		out = append(out, s.muted.s(fmt.Sprintf("  %d of %d shown · %s", shown, len(fs), hint)))
	}
	return block(out, sz.w, sz.h)
}

// detailMaxWidth keeps explanations readable on wide terminals.
const detailMaxWidth = 100

func arrowed(change string) string {
	if change == "" {
		return ""
	}
	return "  → " + change
}

func clock(t time.Time) string {
	if t.IsZero() {
		return f.Missing
	}
	return t.Format("15:04:05")
}

// detailLines is a finding in full: the explanation and every flag change.
func (m *Model) detailLines(x *diagnose.Finding, w int) []string {
	s := m.st
	w = min(w, detailMaxWidth)
	now := m.fr.Time
	sev, lv := sevLabel(x.Severity)
	out := []string{s.lv(lv).s(sev) + "  " + s.title.s(x.Title)}
	where := "target " + x.Target
	if x.Model != "" {
		where += " · model " + x.Model
	}
	if x.Engine != "" {
		where += " · engine " + x.Engine
	}
	out = append(out, s.text.s(where))
	out = append(out, s.muted.s(fmt.Sprintf("since %s (%s ago) · last seen %s · rule %s",
		clock(x.FirstSeen), f.Dur(now.Sub(x.FirstSeen)), clock(x.LastSeen), x.Rule)))
	out = append(out, "", s.title.s("Evidence"))
	if x.Summary != "" {
		out = append(out, "  "+x.Summary)
	}
	nameW, valW := 8, 8
	for _, ev := range x.Evidence {
		nameW = max(nameW, min(28, width(ev.Name)))
		valW = max(valW, min(36, width(ev.Value)))
	}
	for _, ev := range x.Evidence {
		win := "now"
		if ev.Window > 0 {
			win = "over " + f.Dur(ev.Window)
		}
		out = append(out, "  "+s.muted.s(pad(ev.Name, nameW))+"  "+pad(ev.Value, valW)+"  "+s.muted.s(win))
	}
	if x.Explain != "" {
		out = append(out, "", s.title.s("What it means"))
		for _, l := range wrap(x.Explain, w-2) {
			out = append(out, "  "+l)
		}
	}
	out = append(out, "", s.title.s("What to change"))
	if x.Action != "" {
		for _, l := range wrap(x.Action, w-2) {
			out = append(out, "  "+s.accent.s(l))
		}
	}
	for _, fc := range x.Flags {
		from := fc.From
		if from == "" {
			from = "(current value unknown)"
		}
		out = append(out, "  "+s.key.s(fc.Flag)+"  "+from+" → "+s.accent.s(fc.To))
		for _, l := range wrap(fc.Why, w-6) {
			out = append(out, "      "+s.muted.s(l))
		}
	}
	if x.Action == "" && len(x.Flags) == 0 {
		out = append(out, "  "+s.muted.s("no change recommended"))
	}
	return out
}
