package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/ui/report"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/vtop-dev/vtop/diagnose"
	f "github.com/vtop-dev/vtop/ui/format"
)

// sevLabel is a severity as symbol and word: "✖ crit".
func sevLabel(s diagnose.Severity) (string, level) {
	sym, lv := sevSymbol(s)
	return sym + " " + sevWord(s), lv
}

func sevWord(s diagnose.Severity) string { return [...]string{"info", "warn", "crit"}[min(int(s), 2)] }

// flagText is the recommended change in one line: "--max-num-seqs 256→96",
// else the action.
func flagText(x *diagnose.Finding) string {
	if len(x.Flags) == 0 {
		return f.Say(x.Action)
	}
	var b strings.Builder
	for i, fc := range x.Flags {
		switch {
		case i > 0 && fc.Alt:
			b.WriteString(" or ")
		case i > 0:
			b.WriteString(", ")
		}
		if fc.From.IsZero() {
			b.WriteString(fc.Flag + " → " + f.Value(fc.To))
			continue
		}
		b.WriteString(fc.Flag + " " + f.Value(fc.From) + "→" + f.Value(fc.To))
	}
	return b.String()
}

// findingsPane is the findings list as a component: it owns its size,
// selection and scroll, answers its own keys and says which keys it has.
// A finding's flag change is never cut: it wraps onto a line of its own.
type findingsPane struct {
	c          *common
	sel, off   int
	w, h       int
	focused    bool
	withTarget bool               // fleet views name the endpoint
	scope      int                // the endpoint shown, or -1: the fleet
	expanded   map[string]bool    // groups opened with Enter, by groupKey
	fs         []diagnose.Finding // what the pane lists in this view
	items      []findItem         // fs as the pane shows them (groups)
	// verdict is the assessment line of what the view shows (an endpoint,
	// or the fleet), heading the pane.
	verdict string
	// pools is the pools' assessment under it (configured pools, else
	// the models; "" when the view shows none apart from the verdict).
	pools string
	hit   []int // the item each line shown belongs to (-1: none), for the mouse
}

// itemAt is the item on the pane's line y, or -1.
func (p *findingsPane) itemAt(y int) int {
	if y < 0 || y >= len(p.hit) {
		return -1
	}
	return p.hit[y]
}

// findItem is one line of the list: a finding, or a group of the
// findings one rule raised on several endpoints (the first, worst one
// stands for them), or a member shown under its opened group.
type findItem struct {
	x      *diagnose.Finding
	n      int      // > 1: a group of n findings
	names  []string // a group's endpoints, as the table names them
	key    string   // a group's groupKey
	member bool     // shown under its opened group
	sym    bool     // a symptom, shown under its cause
}

// groupKey: findings of one rule, one title, one state and one lever
// group across endpoints. The title counts: binding_limit names a
// different limit on each endpoint ("KV transfer binds" on one, drafts on
// another), and one group titled by its first member said the transfer
// bound on all three. So does the lever (Finding.Lever): a group shows
// its first member's action.
func groupKey(x *diagnose.Finding) string {
	return x.Rule + "\x00" + x.Title + "\x00" + x.State.String() + "\x00" + x.Lever()
}

// underListedCause reports, for each of fs, whether it is a symptom whose
// cause is in fs too (IDs built once: a fleet can list hundreds).
func underListedCause(fs []diagnose.Finding) []bool {
	ids := make(map[string]bool, len(fs))
	for i := range fs {
		ids[fs[i].ID()] = true
	}
	out := make([]bool, len(fs))
	for i := range fs {
		out[i] = fs[i].Cause != "" && ids[fs[i].Cause]
	}
	return out
}

// set gives the pane the view's findings: in fleet views (withTarget), a
// rule raised on several endpoints is one group at the rank of its worst
// finding, with its members under it when opened.
func (p *findingsPane) set(fs []diagnose.Finding, withTarget bool, scope int) {
	p.fs, p.withTarget, p.scope = fs, withTarget, scope
	p.items = p.findItems(fs, withTarget)
}

func (p *findingsPane) findItems(fs []diagnose.Finding, group bool) []findItem {
	items := make([]findItem, 0, len(fs))
	sym := underListedCause(fs)
	// Each finding's group key once, and a group's names deduplicated by
	// a set: at 1,000 endpoints (5,000 findings) the keys built per pair
	// and a list searched per name were 11 ms of every frame on the UI's
	// goroutine, where key presses wait (BENCHMARKS.md, issue 23).
	keys := make([]string, len(fs))
	for i := range fs {
		keys[i] = groupKey(&fs[i])
	}
	count := map[string]int{}
	if group {
		for i := range fs {
			if !sym[i] {
				count[keys[i]]++
			}
		}
	}
	done := map[string]bool{}
	for i := range fs {
		k := keys[i]
		if sym[i] {
			// underCauses put it after its cause: it stays there, alone.
			items = append(items, findItem{x: &fs[i], sym: true})
			continue
		}
		if count[k] < 2 {
			items = append(items, findItem{x: &fs[i]})
			continue
		}
		if done[k] {
			continue
		}
		done[k] = true
		g := findItem{x: &fs[i], n: count[k], key: k}
		var members []findItem
		named := map[string]bool{}
		for j := i; j < len(fs); j++ {
			if keys[j] == k && !sym[j] {
				n := p.c.name(fs[j].Target)
				if fs[j].Engine != "" {
					n += " e" + fs[j].Engine // one endpoint's engines stay apart
				}
				if !named[n] {
					named[n] = true
					g.names = append(g.names, n)
				}
				members = append(members, findItem{x: &fs[j], member: true})
			}
		}
		items = append(items, g)
		if p.expanded[k] {
			items = append(items, members...)
		}
	}
	return items
}

func (p *findingsPane) SetSize(sz size) { p.w, p.h = sz.w, sz.h }

// reset goes back to the top (another view's findings).
func (p *findingsPane) reset() { p.sel, p.off = 0, 0 }

// Update answers list keys: Enter opens the selected finding, or opens or
// closes a group (the list changes size).
func (p *findingsPane) Update(k tea.KeyMsg) action {
	km, items := &p.c.keys, p.items
	if i, ok := km.listMove(k, p.sel, len(items), 5); ok {
		p.sel = i
		return action{}
	}
	if !km.Open.matches(k) || p.sel >= len(items) {
		return action{}
	}
	it := items[p.sel]
	if it.n > 1 {
		if p.expanded == nil {
			p.expanded = map[string]bool{}
		}
		p.expanded[it.key] = !p.expanded[it.key]
		return action{relayout: true}
	}
	return action{open: it.x}
}

// ShortHelp is what the footer shows while the pane has the keys.
func (p *findingsPane) ShortHelp() []hint {
	km := &p.c.keys
	return []hint{{b: km.Down, key: "↑↓"}, {b: km.Open, desc: "details / open group"}}
}

// findingIndent lines a finding's second line up under its title.
const findingIndent = 9

// entry is one finding laid out at a width: its lines in the full form
// (title; change; evidence) or the compact one (title and change on one
// line when they fit).
type entry struct {
	detail, full, compact []string // detail: full and the evidence, a line each
}

// flagLines wraps a change to w cells, breaking between flags and at
// spaces, never inside a flag's value when it fits a line.
func flagLines(change string, w int) []string {
	if change == "" {
		return nil
	}
	if width(change) <= w {
		return []string{change}
	}
	var out []string
	cur := ""
	for _, part := range strings.SplitAfter(change, ", ") {
		if cur != "" && width(cur+part) > w {
			out = append(out, strings.TrimRight(cur, " "))
			cur = ""
		}
		cur += part
	}
	if cur != "" {
		out = append(out, cur)
	}
	var wrapped []string
	for _, l := range out {
		if width(l) > w {
			wrapped = append(wrapped, wrap(l, w)...)
			continue
		}
		wrapped = append(wrapped, l)
	}
	return wrapped
}

// findingLines lays finding x out at width w, painted (or plain when sel,
// for the selection bar).
func (c *common) findingLines(it findItem, withTarget, sel bool, w int) entry {
	s := c.st
	x := it.x
	mk := " "
	if sel {
		mk = symSel
	}
	sev, lv := sevLabel(x.Severity)
	now := c.fr.Time
	since := f.Short(now.Sub(x.FirstSeen))
	if x.FirstSeen.IsZero() {
		since = f.Missing
	}
	sinceTxt := "  since " + clock(x.FirstSeen) + " (" + since + ")"
	switch x.State {
	case diagnose.FindingPending:
		// Not fired yet: its own symbol and a muted severity, with how long
		// the condition has held of the hold it needs.
		sev, lv = symPending+" pending "+sevWord(x.Severity), lvInfo
		// Holds advance a poll at a time: "holding 0s", never "0ms".
		since = "holding " + f.Short(x.HeldFor.Truncate(time.Second)) + " of " + f.Short(x.Hold)
		sinceTxt = " · " + since
	case diagnose.FindingResolving:
		sev, lv = symOK+" resolving", lvOK
		since = "resolving " + f.Short(now.Sub(x.ResolvingSince))
		sinceTxt = "  since " + clock(x.FirstSeen) + " · " + since
	}
	where, title := "", x.Title
	if withTarget && it.n < 2 {
		where = c.name(x.Target)
		if x.Engine != "" {
			where += " engine " + x.Engine
		}
		where += ": "
	}
	if it.member {
		where = "└ " + where
	}
	if it.sym {
		where = "↳ " + where // a symptom of the finding above
	}
	change := flagText(x)
	if it.sym {
		change = "" // "follow the cause": the ↳ under the cause says it in one line
	}
	if it.n > 1 {
		// "KV cache thrashing ×8 · a, b, c, …": the change shown is the
		// worst endpoint's; each member has its own (Enter opens them).
		title += " ×" + itoa(it.n)
		sinceTxt = " · " + strings.Join(it.names, ", ")
		// The title and the change come first: a list that does not fit
		// the line is its count, not a cut name.
		if width(mk+" "+sev+"  "+where+title+sinceTxt) > w {
			sinceTxt = " · " + plural(len(it.names), "endpoint")
		}
		if change != "" {
			change += " (on " + it.names[0] + "; enter for each)"
		}
	}
	paintLine := func(plain, painted string) string {
		if sel {
			return s.sel.s(pad(plain, w))
		}
		return cut(painted, w)
	}
	// The head line through the one row painter: severity, where and
	// what, then a tail (since when, or the change).
	head := func(tail string, tp paint) string {
		cols := []col[string]{
			{cell: func(string, int) cellOut { return cellOut{text: sev, lv: lv} }},
			{cell: func(string, int) cellOut { return cellOut{label: "  ", text: where + title, p: &s.text} }},
			{cell: func(t string, _ int) cellOut { return cellOut{text: t, p: &tp} }},
		}
		return paintRow(s, cols, tail, rowOpts{lead: mk + " ", leadPainted: s.accent.s(mk) + " ", sep: "", sel: sel, fill: w, w: w})
	}
	headPl := mk + " " + sev + "  " + where + title
	var e entry
	e.full = append(e.full, head(sinceTxt, s.muted))
	indent := strings.Repeat(" ", findingIndent)
	fw := w - findingIndent - 2 // "→ "
	fl := flagLines(change, fw)
	if len(x.Flags) == 0 && width(change) > fw {
		fl = wrap(change, fw) // prose, not flags: break at words
	}
	shared := false
	summary := f.Say(x.Summary)
	for i, l := range fl {
		lead := "→ "
		if i > 0 {
			lead = "  "
		}
		pl, pa := indent+lead+l, indent+s.accent.s(lead+l)
		if i == len(fl)-1 && summary != "" && width(pl)+2+width(summary) <= w {
			// The evidence shares the change's line when both fit.
			pl += "  " + summary
			pa += "  " + s.muted.s(summary)
			shared = true
		}
		e.full = append(e.full, paintLine(pl, pa))
	}
	if !shared && summary != "" {
		// Wrapped, not cut: the evidence is why the change is advised.
		for _, l := range wrap(summary, w-findingIndent) {
			e.full = append(e.full, paintLine(indent+l, s.muted.s(indent+l)))
		}
	}
	e.detail = e.full
	if len(x.Evidence) > 0 {
		e.detail = append(slices.Clip(e.full), evidenceLines(x, w, paintLine, s)...)
	}
	// Compact: title and change on one line when they fit, else the change
	// below; the evidence and age give way.
	if change != "" && width(headPl)+4+width(change) <= w {
		e.compact = []string{head("  → "+change, s.accent)}
		return e
	}
	e.compact = []string{head(" · "+since, s.muted)}
	for i, l := range fl {
		lead := "→ "
		if i > 0 {
			lead = "  "
		}
		e.compact = append(e.compact, paintLine(indent+lead+l, indent+s.accent.s(lead+l)))
	}
	return e
}

// evidenceLines are the values behind a finding, a line each, for a pane
// with room to spare.
func evidenceLines(x *diagnose.Finding, w int, paintLine func(pl, pa string) string, s *styles) []string {
	nameW := 0
	for _, ev := range x.Evidence {
		nameW = max(nameW, min(28, width(ev.Name)))
	}
	indent := strings.Repeat(" ", findingIndent)
	out := make([]string, 0, len(x.Evidence))
	for _, ev := range x.Evidence {
		win := "now"
		if ev.Window > 0 {
			win = "over " + f.Dur(ev.Window)
		}
		val := report.EvidenceValue(ev)
		pl := indent + "· " + pad(ev.Name, nameW) + "  " + val + "  " + win
		pa := indent + s.muted.s("· "+pad(ev.Name, nameW)) + "  " + s.text.s(val) + "  " + s.muted.s(win)
		out = append(out, paintLine(pl, pa))
	}
	return out
}

// findingsWant is how many lines the pane wants for items at width w:
// every finding with its evidence (detail), in the full form (all), and
// at least (the title and the top finding, with a line saying how many
// more); lens are each item's line counts by form, for chooseForms. The
// sources' problems head the pane in every case.
func (c *common) findingsWant(items []findItem, withTarget bool, w int) (detail, all, least int, lens [][3]int) {
	head := 1 + len(c.sourceLines())
	if len(items) == 0 {
		return head + 1, head + 1, head + 1, nil
	}
	all, detail = head, head
	lens = make([][3]int, len(items))
	for i, it := range items {
		e := c.findingLines(it, withTarget, false, w)
		lens[i] = [3]int{len(e.detail), len(e.full), len(e.compact)}
		all += len(e.full)
		detail += len(e.detail)
	}
	least = head + lens[0][2]
	if len(items) > 1 {
		least++
	}
	return detail, all, min(all, least), lens
}

// The forms of a finding, as lens and entry order them.
const (
	formDetail  = iota // the full form and its evidence
	formFull           // title; change; the evidence's summary
	formCompact        // title and change, on one line when they fit
)

// chooseForms picks each item's form for room lines. When even the
// compact forms do not all fit (ok false), every item is compact and the
// list scrolls. Else the findings, top first, take their full form where
// it fits, then their evidence, and the first whose evidence does not fit
// whole shows what of it fits (take: the lines of its form shown): a row
// a finding could use is never left blank.
func chooseForms(lens [][3]int, room int) (forms, take []int, used int, ok bool) {
	forms, take = make([]int, len(lens)), make([]int, len(lens))
	for i, l := range lens {
		forms[i], take[i] = formCompact, l[formCompact]
		used += l[formCompact]
	}
	if used > room {
		return forms, take, used, false
	}
	for _, to := range []int{formFull, formDetail} {
		for i, l := range lens {
			if forms[i] != to+1 {
				continue
			}
			if d := l[to] - l[to+1]; used+d <= room {
				forms[i], take[i], used = to, l[to], used+d
			}
		}
	}
	for i, l := range lens {
		if used < room && forms[i] == formFull && l[formDetail] > l[formFull] {
			// Evidence is a list of values: its first ones stand alone.
			forms[i], take[i] = formDetail, l[formFull]+room-used
			used = room
		}
	}
	return forms, take, used, true
}

// View renders the findings in the pane's size, worst first: each in the
// longest form that leaves the others room (chooseForms), else compact
// with a line saying how many more; the selection kept in view. The
// sources' problems come first.
func (p *findingsPane) View() []string {
	p.hit = p.hit[:0]
	if p.h <= 0 {
		return nil
	}
	fs, items := p.fs, p.items
	s := p.c.st
	// One verdict first: which limit binds, then the findings' counts.
	title := "Findings"
	if p.verdict != "" {
		title += " · " + p.verdict
	}
	if len(fs) > 0 {
		title += " · " + strings.TrimPrefix(findingCounts(fs), "findings ")
	}
	out := []string{s.rule(title, p.focused, p.w)}
	out = append(out, p.c.sourceLines()...)
	if p.pools != "" {
		out = append(out, cut(p.pools, p.w))
	}
	for range out {
		p.hit = append(p.hit, -1) // the title, the sources, the pools
	}
	if len(fs) == 0 {
		out = append(out, p.c.noFindings(p.scope))
		return block(out, p.w, p.h)
	}
	head := len(out)
	room := p.h - head
	p.sel = max(0, min(p.sel, len(items)-1))
	es := make([]entry, len(items))
	lens := make([][3]int, len(items))
	for i := range items {
		es[i] = p.c.findingLines(items[i], p.withTarget, p.focused && i == p.sel, p.w)
		lens[i] = [3]int{len(es[i].detail), len(es[i].full), len(es[i].compact)}
	}
	forms, take, _, all := chooseForms(lens, room)
	lines := func(i int) []string {
		return [3][]string{es[i].detail, es[i].full, es[i].compact}[forms[i]][:take[i]]
	}
	if !all {
		room--
	}
	// fits is how many entries from off fit in room (at least one).
	fits := func(off int) int {
		used, n := 0, 0
		for i := off; i < len(items); i++ {
			if used+len(lines(i)) > room && n > 0 {
				break
			}
			used += len(lines(i))
			n++
		}
		return n
	}
	p.off = max(0, min(p.off, p.sel))
	for p.sel >= p.off+fits(p.off) {
		p.off++
	}
	n := fits(p.off)
	for i := p.off; i < p.off+n; i++ {
		out = append(out, lines(i)...)
		for range lines(i) {
			p.hit = append(p.hit, i)
		}
	}
	// Rows left over go to the next finding's first lines (its title and
	// change), never blank while findings are hidden.
	partial := 0
	if !all && p.off+n < len(items) {
		next := lines(p.off + n)
		for k := 0; k < len(next) && len(out) < head+room; k++ {
			out = append(out, next[k])
			p.hit = append(p.hit, p.off+n)
			partial = 1
		}
	}
	if !all {
		hint := "tab to this pane, ↑↓ to scroll, enter for details"
		if p.focused {
			hint = "↑↓ to scroll, enter for details"
		}
		more := fmt.Sprintf("  %d of %d shown", n, len(items))
		if rest := len(items) - p.off - n - partial; rest > 0 && p.off == 0 {
			more = "  ↓ " + itoa(rest) + " more"
		} else if rest == 0 && partial == 1 {
			more = "  ↓ the rest of the last one"
		}
		out = append(out[:min(len(out), p.h-1)], s.muted.s(more+" · "+hint))
	}
	return block(out, p.w, p.h)
}

// detailMaxWidth keeps explanations readable on wide terminals.
const detailMaxWidth = 100

func clock(t time.Time) string {
	if t.IsZero() {
		return f.Missing
	}
	return t.Format("15:04:05")
}

// timelineLines is the timeline of one endpoint (target its name) or of
// the fleet (""), newest last, painted by kind.
func (c *common) timelineLines(target string) []string {
	evs := diagnose.Timeline(c.fr, target)
	if len(evs) == 0 {
		return []string{c.st.muted.s("no change, restart or finding yet: the baselines need about 30 scrapes")}
	}
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, c.timelineLine(e, target == ""))
	}
	return out
}

// timelineLine is one event: its time and kind painted, then what.
func (c *common) timelineLine(e diagnose.Event, withTarget bool) string {
	s := c.st
	p := s.text
	switch e.Kind {
	case diagnose.EventWorkload:
		p = s.info
	case diagnose.EventCapacity, diagnose.EventRestart, diagnose.EventLeft:
		p = s.lv(lvWarn)
	case diagnose.EventFiring:
		_, lv := sevLabel(e.Severity)
		p = s.lv(lv)
	case diagnose.EventBack, diagnose.EventResolving, diagnose.EventJoined:
		p = s.ok
	}
	what := e.Kind.String()
	if e.Kind == diagnose.EventFiring || e.Kind == diagnose.EventResolving {
		what += " " + sevWord(e.Severity)
	}
	line := s.muted.s(clock(e.Time.UTC())) + "  "
	if withTarget {
		line += e.Target + "  "
	}
	// Whole: the overlays wrap what is wider than the screen.
	return line + p.s(pad(what, 14)) + f.Say(e.Text)
}

// detailLines is a finding in full: the explanation and every flag change.
func (c *common) detailLines(x *diagnose.Finding, w int) []string {
	s := c.st
	w = min(w, detailMaxWidth)
	now := c.fr.Time
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
	switch x.State {
	case diagnose.FindingPending:
		out = append(out, s.info.s(symPending+" pending: the condition has held "+f.Dur(x.HeldFor)+" of the "+f.Dur(x.Hold)+" it needs to fire"))
	case diagnose.FindingResolving:
		out = append(out, s.ok.s(symOK+" resolving for "+f.Dur(now.Sub(x.ResolvingSince))+": its premise no longer holds, so no change is advised"))
	}
	out = append(out, "", s.title.s("Evidence"))
	if summary := f.Say(x.Summary); summary != "" {
		out = append(out, "  "+summary)
	}
	nameW, valW := 8, 8
	vals := make([]string, len(x.Evidence))
	for i, ev := range x.Evidence {
		vals[i] = report.EvidenceValue(ev)
		nameW = max(nameW, min(28, width(ev.Name)))
		valW = max(valW, min(36, width(vals[i])))
	}
	for i, ev := range x.Evidence {
		win := "now"
		if ev.Window > 0 {
			win = "over " + f.Dur(ev.Window)
		}
		// A name or value longer than its column stays whole (the
		// overlay wraps the line), only the shorter ones are padded.
		out = append(out, "  "+s.muted.s(padOnly(ev.Name, nameW))+"  "+padOnly(vals[i], valW)+"  "+s.muted.s(win))
	}
	if explain := f.Say(x.Explain); explain != "" {
		out = append(out, "", s.title.s("What it means"))
		for _, l := range wrap(explain, w-2) {
			out = append(out, "  "+l)
		}
	}
	out = append(out, "", s.title.s("What to change"))
	action := f.Say(x.Action)
	if action != "" {
		for _, l := range wrap(action, w-2) {
			out = append(out, "  "+s.accent.s(l))
		}
	}
	for i, fc := range x.Flags {
		from := f.Value(fc.From)
		if from == "" {
			from = "(current value unknown)"
		}
		or := ""
		if i > 0 && fc.Alt {
			or = "or "
		}
		out = append(out, "  "+or+s.key.s(fc.Flag)+"  "+from+" → "+s.accent.s(f.Value(fc.To)))
		for _, l := range wrap(f.Say(fc.Why), w-6) {
			out = append(out, "      "+s.muted.s(l))
		}
	}
	if action == "" && len(x.Flags) == 0 {
		out = append(out, "  "+s.muted.s("no change recommended"))
	}
	// What changed on its endpoint before and since: the first question
	// of an incident call, beside the finding it is asked about.
	if evs := diagnose.Timeline(c.fr, x.Target); len(evs) > 0 {
		out = append(out, "", s.title.s("What changed and when")+s.muted.s("  (c: the whole timeline)"))
		for _, e := range evs[max(0, len(evs)-detailEvents):] {
			out = append(out, "  "+c.timelineLine(e, false))
		}
	}
	return out
}

// verdictLine is the assessment of what the view shows: the endpoint's in
// its view, else the fleet's.
func (m *Model) verdictLine() string {
	if m.fr == nil {
		return ""
	}
	if m.mode == modeEndpoint && m.ep >= 0 && m.ep < len(m.fr.Endpoints) {
		return report.VerdictLine(&m.fr.Endpoints[m.ep].Verdict, false)
	}
	return report.VerdictLine(&m.fr.Fleet.Verdict, true)
}

// poolsLine is the assessment of the pools the view shows, under the
// verdict, when it says more than the verdict does: the pools the
// configuration names (targets' pool:), else the model pools; in an
// endpoint's view its own pool (when others are in it), in the fleet's
// every pool (when there is more than one). A line only when some pool's
// limit differs from the view's verdict: else it would repeat it.
func (m *Model) poolsLine() string {
	if m.fr == nil {
		return ""
	}
	type pool struct {
		name    string
		members int
		mine    bool
		v       *diagnose.Verdict
	}
	var e *diagnose.EndpointView
	head := &m.fr.Fleet.Verdict
	if m.mode == modeEndpoint && m.ep >= 0 && m.ep < len(m.fr.Endpoints) {
		e = &m.fr.Endpoints[m.ep]
		head = &e.Verdict
	}
	var ps []pool
	if fl := &m.fr.Fleet; len(fl.Pools) > 0 {
		for i := range fl.Pools {
			pv := &fl.Pools[i]
			ps = append(ps, pool{pv.Pool, pv.Endpoints, e != nil && e.Pool == pv.Pool, &pv.Verdict})
		}
	} else {
		for i := range fl.Models {
			mv := &fl.Models[i]
			ps = append(ps, pool{shortModel(mv.Model), mv.Endpoints, e != nil && slices.Contains(e.Models, mv.Model), &mv.Verdict})
		}
	}
	if e == nil && len(ps) < 2 {
		return ""
	}
	s := m.st
	// Pools with a symptom first: a narrow screen cuts the line's end.
	var sick, rest []string
	differs := false
	for _, p := range ps {
		if e != nil && (p.members < 2 || !p.mine) {
			continue
		}
		differs = differs || p.v.Limit != head.Limit
		if l := report.VerdictLine(p.v, true); l != "" {
			part := s.text.s(p.name+": ") + s.muted.s(strings.TrimPrefix(l, "bottleneck: "))
			if p.v.Limit.Symptom() {
				sick = append(sick, part)
			} else {
				rest = append(rest, part)
			}
		}
	}
	parts := append(sick, rest...)
	if len(parts) == 0 || !differs {
		return ""
	}
	label := "pool "
	if len(parts) > 1 {
		label = "pools "
	}
	return "  " + s.muted.s(label) + strings.Join(parts, s.muted.s(" · "))
}

// detailEvents is how much of the timeline a finding's detail shows.
const detailEvents = 8
