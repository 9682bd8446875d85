package ui

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/vtop-dev/vtop/diagnose"
	f "github.com/vtop-dev/vtop/ui/format"
)

// rowRef names one table row: an endpoint, or one of its engines.
type rowRef struct {
	ep  int // index into Frame.Endpoints
	sub int // -1: the endpoint's own row
}

// cursorFleet is the cursor on the fleet summary line (Enter: the fleet's
// aggregated four rows).
const cursorFleet = -1

type sortKey uint8

// The default, the zero value, is severity: the sick endpoints first.
const (
	sortSeverity sortKey = iota
	sortName
	sortKV
	sortWaiting
	sortTTFT
	sortTok
	numSorts
)

var sortNames = [numSorts]string{"severity", "name", "KV", "waiting", "TTFT", "tok/s"}

// sortCol is the column that shows the sort key.
var sortCol = [numSorts]colID{colFinding, colName, colKV, colRunWait, colTTFT, colTok}

// fleetTable is the fleet view's table state: order, filter, selection, and
// the rendered rows of the current frame.
type fleetTable struct {
	sort      sortKey
	reverse   bool
	filter    string
	filtering bool // typing the filter
	expanded  map[int]bool
	expandAll bool

	rows   []rowRef
	prefix string // the parts every name shares, dropped in the table
	suffix string
	cursor int // index into rows, or cursorFleet
	offset int // first row shown (the departed rows follow rows)
	cache  map[rowRef]string
	roster roster

	c       *common
	cols    []col[*fleetRow]
	w, h    int                // the summary line, the column titles and the rows
	focused bool               // the table has the keys: the cursor is drawn
	finds   []diagnose.Finding // the view's findings, counted on the summary line
}

func newFleetTable(c *common) fleetTable {
	return fleetTable{c: c, expanded: map[int]bool{}, cache: map[rowRef]string{}}
}

// SetSize sets the table's size: the summary line, the column titles and
// h-2 rows.
func (t *fleetTable) SetSize(sz size) { t.w, t.h = sz.w, sz.h }

// page is how many rows the table shows.
func (t *fleetTable) page() int { return max(0, t.h-fleetHeadLines) }

func (t *fleetTable) selected() (rowRef, bool) {
	if t.cursor < 0 || t.cursor >= len(t.rows) {
		return rowRef{}, false
	}
	return t.rows[t.cursor], true
}

// rebuild recomputes the row order for a frame (filter, sort, expansion),
// keeping the cursor on the same row.
func (t *fleetTable) rebuild(fr *diagnose.Frame) {
	prev, had := t.selected()
	names := make([]string, len(fr.Endpoints), len(fr.Endpoints)+len(fr.Roster))
	for i := range fr.Endpoints {
		names[i] = fr.Endpoints[i].Name
	}
	for _, ev := range fr.Roster {
		if !ev.Joined { // a departed row is named like the live ones
			names = append(names, ev.Name)
		}
	}
	short, prefix, suffix := shortNames(names)
	t.prefix, t.suffix = prefix, suffix
	t.c.short = make(map[string]string, len(names))
	for i, n := range names {
		t.c.short[n] = short[i]
	}
	eps := make([]int, 0, len(fr.Endpoints))
	q := strings.ToLower(t.filter)
	for i := range fr.Endpoints {
		if q == "" || matches(&fr.Endpoints[i], q) {
			eps = append(eps, i)
		}
	}
	slices.SortStableFunc(eps, func(a, b int) int {
		return compareEndpoints(&fr.Endpoints[a], &fr.Endpoints[b], t.sort, t.reverse)
	})
	t.rows = t.rows[:0]
	for _, i := range eps {
		t.rows = append(t.rows, rowRef{ep: i, sub: -1})
		if subs := fr.Endpoints[i].Subs; len(subs) > 1 && t.isExpanded(i) {
			for k := range subs {
				t.rows = append(t.rows, rowRef{ep: i, sub: k})
			}
		}
	}
	clear(t.cache)
	t.roster.rebuild(fr, q)
	if t.cursor == cursorFleet {
		return
	}
	if had {
		for k, r := range t.rows {
			if r == prev {
				t.cursor = k
				return
			}
		}
		// An engine row that went away: stay on its endpoint.
		for k, r := range t.rows {
			if r.ep == prev.ep && r.sub < 0 {
				t.cursor = k
				return
			}
		}
	}
	t.cursor = min(max(t.cursor, 0), len(t.rows)-1)
	if len(t.rows) == 0 {
		t.cursor = cursorFleet
	}
}

func (t *fleetTable) isExpanded(ep int) bool {
	if v, ok := t.expanded[ep]; ok {
		return v
	}
	return t.expandAll
}

// matches: the filter finds an endpoint by name, model or state, or by
// any of its findings (matchesFinding).
func matches(e *diagnose.EndpointView, q string) bool {
	if matchesEndpoint(e, q) {
		return true
	}
	for i := range e.Findings {
		if matchesFinding(&e.Findings[i], q) {
			return true
		}
	}
	for i := range e.Pending {
		if matchesFinding(&e.Pending[i], q) {
			return true
		}
	}
	return false
}

func matchesEndpoint(e *diagnose.EndpointView, q string) bool {
	if strings.Contains(strings.ToLower(e.Name), q) || strings.Contains(e.State.String(), q) {
		return true
	}
	if e.NotVLLM && strings.Contains("not vllm", q) {
		return true
	}
	for _, m := range e.Models {
		if strings.Contains(strings.ToLower(m), q) {
			return true
		}
	}
	return !e.RestartedAt.IsZero() && strings.Contains("restarted", q)
}

// matchesFinding: by title ("thrash"), rule id ("kv_cache"), severity as
// written or as shown ("critical", "crit"), or state ("pending").
func matchesFinding(x *diagnose.Finding, q string) bool {
	for _, s := range []string{x.Title, x.Rule, x.Severity.String(), sevWord(x.Severity), x.State.String(), x.Target} {
		if strings.Contains(strings.ToLower(s), q) {
			return true
		}
	}
	return false
}

// worst is the severity rank of an endpoint: its worst finding, then its
// state (down before stale before restarted).
func worst(e *diagnose.EndpointView) int {
	r := 0
	switch {
	case len(e.Findings) > 0:
		r = 100 * (1 + int(e.Findings[0].Severity))
	case len(e.Pending) > 0:
		r = 10 * (1 + int(e.Pending[0].Severity))
	}
	switch {
	case e.State == diagnose.StateDown:
		r += 3
	case e.State == diagnose.StateStale:
		r += 2
	case !e.RestartedAt.IsZero():
		r++
	}
	return r
}

// compareEndpoints orders two endpoints by key: names A→Z, numbers largest
// (worst) first; reverse flips that, but unknown values always sort last.
func compareEndpoints(a, b *diagnose.EndpointView, k sortKey, reverse bool) int {
	num := func(x, y float64) int {
		xn, yn := math.IsNaN(x), math.IsNaN(y)
		switch {
		case xn && yn:
			return 0
		case xn:
			return 1
		case yn:
			return -1
		}
		c := 0
		if x > y {
			c = -1
		} else if x < y {
			c = 1
		}
		if reverse {
			c = -c
		}
		return c
	}
	c := 0
	switch k {
	case sortSeverity:
		c = num(float64(worst(a)), float64(worst(b)))
	case sortKV:
		c = num(a.Stats.KVUsage, b.Stats.KVUsage)
	case sortWaiting:
		c = num(a.Stats.Waiting, b.Stats.Waiting)
	case sortTTFT:
		c = num(a.Stats.TTFT.P95, b.Stats.TTFT.P95)
	case sortTok:
		c = num(a.Stats.GenTokRate, b.Stats.GenTokRate)
	}
	if c != 0 {
		return c
	}
	c = strings.Compare(a.Name, b.Name)
	if k == sortName && reverse {
		c = -c
	}
	return c
}

// Update answers the table's keys: Enter asks to open the selected row;
// showing or hiding engines changes the table's size.
func (t *fleetTable) Update(k tea.KeyMsg) action {
	km, fr, page := &t.c.keys, t.c.fr, t.page()
	n := len(t.rows)
	switch {
	case km.Up.matches(k):
		t.move(-1)
	case km.Down.matches(k):
		t.move(1)
	case km.PageUp.matches(k):
		t.move(-max(1, page-1))
	case km.PageDown.matches(k):
		t.move(max(1, page-1))
	case km.Top.matches(k):
		t.cursor = cursorFleet
	case km.Bottom.matches(k):
		t.cursor = len(t.rows) - 1
	case km.Open.matches(k):
		return action{openRow: true}
	case km.Filter.matches(k):
		t.filtering = true
	case km.Sort.matches(k):
		t.sort = (t.sort + 1) % numSorts
		t.rebuild(fr)
	case km.Reverse.matches(k):
		t.reverse = !t.reverse
		t.rebuild(fr)
	case km.Expand.matches(k):
		// Collapsing from an engine row leaves the cursor on its endpoint.
		if r, ok := t.selected(); ok && len(fr.Endpoints[r.ep].Subs) > 1 {
			t.expanded[r.ep] = !t.isExpanded(r.ep)
			t.rebuild(fr)
		}
	case km.ExpandAll.matches(k):
		t.expandAll = !t.expandAll
		clear(t.expanded)
		t.rebuild(fr)
	}
	// Engines shown or hidden: the panels may grow or shrink.
	return action{relayout: len(t.rows) != n}
}

// ShortHelp is what the footer shows while the table has the keys.
func (t *fleetTable) ShortHelp() []hint {
	km := &t.c.keys
	hs := []hint{{b: km.Down, key: "↑↓"}, {b: km.Open}, {b: km.Filter}, {b: km.Sort, desc: "sort:" + sortNames[t.sort]}, {b: km.Expand}}
	if t.filter != "" {
		hs = append([]hint{{b: km.Back, desc: "clear " + quote(t.filter)}}, hs...)
	}
	return hs
}

// scroll keeps the cursor inside the n visible rows; on the last live row
// the departed rows below it come into view as well.
func (t *fleetTable) scroll(n int) {
	if n <= 0 {
		return
	}
	total := t.shown()
	if t.cursor >= 0 {
		if t.cursor < t.offset {
			t.offset = t.cursor
		}
		if t.cursor >= t.offset+n {
			t.offset = t.cursor - n + 1
		}
		if t.cursor == len(t.rows)-1 {
			t.offset = max(t.offset, min(t.cursor, total-n))
		}
	} else {
		t.offset = 0
	}
	t.offset = max(0, min(t.offset, total-n))
}

// shown is the rows the table has: live ones, then the departed.
func (t *fleetTable) shown() int { return len(t.rows) + len(t.roster.gone) }

// rowAt is the k-th row of the table, departed ones after the live.
func (t *fleetTable) rowAt(k int) rowRef {
	if k < len(t.rows) {
		return t.rows[k]
	}
	return goneRef(k - len(t.rows))
}

// move moves the cursor by d rows; the fleet summary line is above the first.
func (t *fleetTable) move(d int) {
	c := t.cursor + d
	t.cursor = max(cursorFleet, min(c, len(t.rows)-1))
}

// stateCell is an endpoint's state with its symbol and age.
func stateCell(e *diagnose.EndpointView, now time.Time) (string, level) {
	age := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		// Whole units only: "up 0s", not "up 227ms".
		return " " + f.Short(max(0, now.Sub(t)).Truncate(time.Second))
	}
	switch {
	case e.State == diagnose.StatePending:
		return symPending + " pending", lvNone
	case e.NotVLLM && e.State == diagnose.StateDown:
		// It answers, but not with vLLM metrics: not an outage.
		return symNotVLLM + " not vLLM", lvWarn
	}
	switch e.State {
	case diagnose.StateDown:
		return symDown + " down" + age(e.Since), lvCrit
	case diagnose.StateStale:
		return symStale + " stale" + age(e.Since), lvWarn
	}
	if !e.RestartedAt.IsZero() {
		return symRestart + " restart" + age(e.RestartedAt), lvInfo
	}
	return symUp + " up" + age(e.Since), lvOK
}

func sevSymbol(s diagnose.Severity) (string, level) {
	switch s {
	case diagnose.SevCritical:
		return symCrit, lvCrit
	case diagnose.SevWarning:
		return symWarn, lvWarn
	}
	return symInfo, lvInfo
}

// kvLevel: v's band. The bands are the thresholds of the rules that judge
// the cache (diagnose.KVBands), so the colour and the finding agree.
func kvLevel(v float64, b diagnose.KVBands) level {
	switch {
	case math.IsNaN(v):
		return lvNone
	case v >= b.Crit:
		return lvCrit
	case v >= b.Warn:
		return lvWarn
	}
	return lvOK
}

// kvCell is a gauge, the percentage and its band's mark: "███ 97%✖".
func (s *styles) kvCell(v float64, b diagnose.KVBands, barW int) (plain, painted string) {
	fill, empty := bar(v, barW)
	lv := kvLevel(v, b)
	pct := padLeft(f.Percent(v), 4)
	mark := pad(lv.mark(), 1)
	plain = fill + empty + " " + pct + mark
	p := s.lv(lv)
	if lv == lvNone {
		p = s.muted
	}
	painted = p.s(fill) + s.barEmpty.s(empty) + " " + p.s(pct+mark)
	return plain, painted
}

// fleetRow is what a table row's cells read: the endpoint (or its last
// values when it left), the stats shown (an engine's, or unknown when it
// never answered), and how it is drawn.
type fleetRow struct {
	c    *common
	t    *fleetTable
	r    rowRef
	e    *diagnose.EndpointView
	st   *diagnose.Stats
	sub  bool                  // an engine row
	gone *diagnose.RosterEvent // a departed row
	dim  bool                  // down, stale or gone: the last values, dimmed
}

// fleetCells are the table's cell functions, by column.
var fleetCells = map[colID]func(*fleetRow, int) cellOut{
	colName:  (*fleetRow).nameCell,
	colState: (*fleetRow).stateCell,
	colModel: (*fleetRow).modelCell,
	colEngine: func(r *fleetRow, _ int) cellOut {
		if r.sub || r.e.LastSuccess.IsZero() {
			return cellOut{keep: true} // an engine row is its endpoint's; never read: not known
		}
		return cellOut{text: r.e.Version.Server.String()}
	},
	colKV: (*fleetRow).kvCell,
	colRunWait: func(r *fleetRow, _ int) cellOut {
		return cellOut{text: f.Count(r.st.Running) + "/" + f.Count(r.st.Waiting)}
	},
	colTTFT: func(r *fleetRow, _ int) cellOut {
		t, lv := latencyCell(r.st.TTFT, r.st.TTFT.P95, r.c.profile.TTFT, 1)
		return cellOut{text: t, lv: lv}
	},
	colITL: func(r *fleetRow, _ int) cellOut {
		t, lv := latencyCell(r.st.ITL, r.st.ITL.P95, r.c.profile.ITL, 1)
		return cellOut{text: t, lv: lv}
	},
	colTok:     func(r *fleetRow, _ int) cellOut { return cellOut{text: f.Rate(r.st.GenTokRate)} },
	colTrend:   (*fleetRow).trendCell,
	colFinding: (*fleetRow).findingCell,
}

// tableCols binds the layout's columns to their cell functions.
func tableCols(cs []column) []col[*fleetRow] {
	out := make([]col[*fleetRow], len(cs))
	for i, c := range cs {
		out[i] = col[*fleetRow]{column: c, cell: fleetCells[c.id]}
	}
	return out
}

func (r *fleetRow) nameCell(w int) cellOut {
	e := r.e
	text := fitName(r.c.name(e.Name), w)
	if r.sub {
		text = symSub + " " + subLabel(e, r.r.sub)
		if width(text) > w && e.Subs[r.r.sub].Key.Engine != "" {
			// Narrow: "└ e3", so engine rows stay apart.
			text = symSub + " e" + e.Subs[r.r.sub].Key.Engine
		}
	}
	return cellOut{text: text, keep: true}
}

func (r *fleetRow) stateCell(int) cellOut {
	now := r.c.fr.Time
	switch {
	case r.gone != nil:
		return cellOut{text: symLeft + " left " + f.Short(max(0, now.Sub(r.gone.At)).Truncate(time.Second)), keep: true}
	case r.sub:
		return cellOut{keep: true}
	}
	text, lv := stateCell(r.e, now)
	if at, ok := r.t.roster.joined[r.e.Name]; ok && lv == lvOK {
		// Up and new to the fleet: how long ago it joined.
		text, lv = symJoined+" joined "+f.Short(max(0, now.Sub(at)).Truncate(time.Second)), lvInfo
	}
	return cellOut{text: text, lv: lv, keep: true}
}

func (r *fleetRow) modelCell(int) cellOut {
	var text string
	if r.sub {
		text = shortModel(r.e.Subs[r.r.sub].Key.Model)
	} else {
		ms := make([]string, len(r.e.Models))
		for i, x := range r.e.Models {
			ms[i] = shortModel(x)
		}
		text = strings.Join(ms, ",")
	}
	if text == "" {
		text = f.Missing
	}
	return cellOut{text: text}
}

func (r *fleetRow) kvCell(w int) cellOut {
	pl, pa := r.c.st.kvCell(r.st.KVUsage, r.c.fr.KV(), w-6)
	return cellOut{text: pl, painted: pa}
}

func (r *fleetRow) trendCell(w int) cellOut {
	if r.sub || w < minSpark {
		return cellOut{}
	}
	slo := r.c.profile
	spec := sparkSpec{diagnose.SpTTFT, latencyScale(slo.TTFT), sloLevel(r.st.TTFT.P95, slo.TTFT, 1)}
	raw := r.c.st.pad.sparkline(history{r.e.Spark, r.e.SparkLong}.at(w), spec.which, w, spec.sc)
	return cellOut{text: raw, painted: r.c.st.sparkPaint(&spec).s(raw)}
}

func (r *fleetRow) findingCell(w int) cellOut {
	e := r.e
	switch {
	case r.gone != nil:
		text := symLeft + " left " + clock(r.gone.At)
		if !e.LastSuccess.IsZero() {
			text += ", values as of " + clock(e.LastSuccess)
		}
		return cellOut{text: text}
	case r.sub:
		return cellOut{}
	}
	text, lv := worstCell(e, w)
	if text == "" && r.dim && !e.LastSuccess.IsZero() && w > 2 {
		text = "values as of " + clock(e.LastSuccess)
	}
	if text == "" && w > 2 {
		if text = r.t.roster.note(e.Name); text != "" {
			lv = lvInfo
		}
	}
	return cellOut{text: text, lv: lv, keep: lv != lvNone}
}

// row is the table's k-th row as its cells read it.
func (t *fleetTable) row(r rowRef) *fleetRow {
	fr := t.c.fr
	x := &fleetRow{c: t.c, t: t, r: r}
	if k, ok := goneIndex(r); ok {
		x.gone = &t.roster.gone[k]
		x.e = x.gone.Last
	} else {
		x.e = &fr.Endpoints[r.ep]
	}
	e := x.e
	x.st = &e.Stats
	x.sub = r.sub >= 0 && r.sub < len(e.Subs)
	if x.sub {
		x.st = &e.Subs[r.sub].Stats
	}
	if e.LastSuccess.IsZero() {
		// Never answered: its Stats are empty, not zero.
		u := unknownStats()
		x.st = &u
	}
	// Down or stale: the last values, dimmed, never in the healthy colour;
	// its engines' rows too.
	x.dim = lastValues(e) || x.gone != nil
	return x
}

// renderRow renders one table row: painted cell by cell, or plain under
// the selection bar.
func (t *fleetTable) renderRow(r rowRef, selected bool) string {
	x := t.row(r)
	s := t.c.st
	mark := " "
	if selected {
		mark = symSel
	}
	exp := " "
	if !x.sub && x.gone == nil && len(x.e.Subs) > 1 {
		exp = symExpand
		if t.isExpanded(r.ep) {
			exp = symCollapse
		}
	}
	return paintRow(s, t.cols, x, rowOpts{
		lead: mark + exp + " ", leadPainted: s.accent.s(mark) + s.muted.s(exp) + " ",
		sep: " ", dim: x.dim, sel: selected,
	})
}

// worstCell is the worst-finding column: the first firing cause (a
// finding that follows no other; diagnose lists causes before their
// symptoms), else a pending cause (a firing backlog whose thrashing is
// still holding shows the thrashing), else the first finding, firing
// before pending.
func worstCell(e *diagnose.EndpointView, w int) (string, level) {
	x, n := headFinding(e)
	if x == nil {
		return "", lvNone
	}
	sym, lv := sevSymbol(x.Severity)
	title := x.Title
	switch x.State {
	case diagnose.FindingPending:
		sym, lv, title = symPending, lvInfo, x.Title+" (pending)"
	case diagnose.FindingResolving:
		sym, lv, title = symOK, lvOK, x.Title+" (resolving)"
	}
	if w <= 2 {
		return sym, lv
	}
	text := sym + " " + title
	if n > 1 {
		text += " (+" + itoa(n-1) + ")"
	}
	return text, lv
}

// headFinding is the finding that names an endpoint's problem, and how
// many findings it stands for.
func headFinding(e *diagnose.EndpointView) (*diagnose.Finding, int) {
	n := len(e.Findings) + len(e.Pending)
	for _, l := range [][]diagnose.Finding{e.Findings, e.Pending} {
		for i := range l {
			if l[i].Cause == "" {
				return &l[i], n
			}
		}
	}
	switch {
	case len(e.Findings) > 0:
		return &e.Findings[0], n
	case len(e.Pending) > 0:
		return &e.Pending[0], n
	}
	return nil, 0
}

func subLabel(e *diagnose.EndpointView, k int) string {
	key := e.Subs[k].Key
	if key.Engine != "" {
		return "engine " + key.Engine
	}
	return key.Model
}

// latencyCell is percentile v of q with its SLO mark, at the resolution of
// q's buckets ("≤300ms" at the first bound, as the report writes it);
// factor scales the target (p99 is judged against twice the target).
func latencyCell(q diagnose.Quantiles, v float64, target time.Duration, factor float64) (string, level) {
	lv := sloLevel(v, target, factor)
	s := f.Quantile(v, q.Lowest, q.Highest)
	if _, _, ok := wideBucket(&q, v); ok {
		s = "~" + s // interpolated inside a bucket twice as wide as its start or more
	}
	if m := lv.mark(); m != "" {
		s += m
	} else {
		s += " "
	}
	return s, lv
}

// wideBucketRatio: a percentile interpolated inside a bucket whose upper
// bound is this many times its lower one is only known to that factor.
const wideBucketRatio = 2

// wideBucket returns the bucket (lo, hi] holding v when it is that wide;
// the first bucket and +Inf already read "≤" and "≥".
func wideBucket(q *diagnose.Quantiles, v float64) (lo, hi float64, ok bool) {
	b := q.Bounds
	if math.IsNaN(v) || len(b) < 2 || v <= b[0] || v >= b[len(b)-1] || v <= q.Lowest || v >= q.Highest {
		return 0, 0, false
	}
	i, _ := slices.BinarySearch(b, v)
	if i == 0 || i >= len(b) {
		return 0, 0, false
	}
	lo, hi = b[i-1], b[i]
	return lo, hi, lo > 0 && hi/lo >= wideBucketRatio
}

// sloLevel: within the target is fine, up to twice over is a warning, more
// is critical.
func sloLevel(v float64, target time.Duration, factor float64) level {
	if math.IsNaN(v) || target <= 0 {
		return lvNone
	}
	t := target.Seconds() * factor
	switch {
	case v > 2*t:
		return lvCrit
	case v > t:
		return lvWarn
	}
	return lvOK
}

// header renders the column titles, the sorted one marked.
func (t *fleetTable) header() string {
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", markWidth))
	for i, c := range t.cols {
		if i > 0 {
			b.WriteByte(' ')
		}
		title := c.title
		if c.id == colName && (t.prefix != "" || t.suffix != "") {
			// The parts the names share, dropped from the rows.
			if shared := t.prefix + "…" + t.suffix; width(shared) < c.w {
				title = shared
			}
		}
		if c.id == sortCol[t.sort] {
			// Arrows say which way values grow down the table.
			arrow := "↓"
			if t.reverse != (t.sort == sortName) {
				arrow = "↑"
			}
			title = cut(title, c.w-1) + arrow
		}
		if c.right {
			b.WriteString(padLeft(title, c.w))
		} else {
			b.WriteString(pad(title, c.w))
		}
	}
	return t.c.st.muted.s(b.String())
}

// summary is the fleet line: endpoints up, throughput, the worst TTFT
// p95 and where, findings by severity.
func (t *fleetTable) summary(selected bool) string {
	c := t.c
	fr, st, w := c.fr, c.st, t.w
	fs := &fr.Fleet.Stats
	worst, worstName := diagnose.Quantiles{P95: math.NaN()}, ""
	for i := range fr.Endpoints {
		e := &fr.Endpoints[i]
		if e.State == diagnose.StateUp && !math.IsNaN(e.Stats.TTFT.P95) && (math.IsNaN(worst.P95) || e.Stats.TTFT.P95 > worst.P95) {
			worst, worstName = e.Stats.TTFT, c.name(e.Name)
		}
	}
	slo := c.profile
	type part struct {
		text string
		p    paint
	}
	upLv := st.ok
	if fr.Fleet.Up < fr.Fleet.Total {
		upLv = st.warn
	}
	if fr.Fleet.Up == 0 {
		upLv = st.crit
	}
	parts := []part{
		{"Fleet", st.title},
		{itoa(fr.Fleet.Up) + "/" + itoa(fr.Fleet.Total) + " up", upLv},
	}
	// The findings come first: they are what to read in an incident.
	list := t.finds
	fc := findingCounts(list)
	if w < tierMedium {
		fc = shortCounts(list)
	}
	if len(list) == 0 && c.notClear(-1) == "" {
		fc += " " + symOK
	}
	parts = append(parts, part{fc, st.text})
	parts = append(parts, part{"gen " + f.Rate(fs.GenTokRate) + " tok/s", st.text})
	if w >= tierMedium {
		parts = append(parts, part{"prompt " + f.Rate(fs.PromptTokRate) + " tok/s", st.text},
			part{f.Rate(fs.ReqRate) + " req/s", st.text})
	}
	wt, lv := latencyCell(worst, worst.P95, slo.TTFT, 1)
	wt = strings.TrimSpace(wt)
	if worstName != "" {
		wt += " " + worstName
	}
	parts = append(parts, part{"worst TTFT p95 " + wt, st.lv(lv)})

	mark := " "
	if selected {
		mark = symSel
	}
	var plain, painted strings.Builder
	plain.WriteString(mark + " ")
	painted.WriteString(st.accent.s(mark) + " ")
	for i, p := range parts {
		if i > 0 {
			plain.WriteString(" · ")
			painted.WriteString(st.muted.s(" · "))
		}
		plain.WriteString(p.text)
		painted.WriteString(p.p.s(p.text))
	}
	if selected {
		return st.sel.s(pad(plain.String(), w))
	}
	return cut(painted.String(), w)
}

// countFindings counts fs by severity; pending ones apart.
func countFindings(fs []diagnose.Finding) (n [3]int, pending int) {
	for _, x := range fs {
		if x.State == diagnose.FindingPending {
			pending++
			continue
		}
		n[min(int(x.Severity), 2)]++
	}
	return n, pending
}

// findingCounts: "findings ✖ 1 ▲ 2 ◇ 0 · … 2 pending", or "no findings".
// The fleet line adds its ✓ only where no value is over its limit.
func findingCounts(fs []diagnose.Finding) string {
	if len(fs) == 0 {
		return "no findings"
	}
	n, pend := countFindings(fs)
	var parts []string
	for _, sv := range []diagnose.Severity{diagnose.SevCritical, diagnose.SevWarning, diagnose.SevInfo} {
		if n[sv] > 0 {
			sym, _ := sevSymbol(sv)
			parts = append(parts, sym+" "+itoa(n[sv]))
		}
	}
	out := "findings"
	if len(parts) > 0 {
		out += " " + strings.Join(parts, " ")
	}
	if pend > 0 {
		if len(parts) > 0 {
			out += " ·"
		}
		out += " " + symPending + " " + itoa(pend) + " pending"
		if len(parts) == 0 {
			out += ", none fired yet"
		}
	}
	return out
}

// noFindings is the findings pane with nothing to list: a ✓ only when
// nothing on screen says otherwise, else what does.
func (c *common) noFindings(ep int) string {
	if why := c.notClear(ep); why != "" {
		return c.st.warn.s(symWarn) + " " + c.st.muted.s("no finding yet, but "+why)
	}
	return c.st.ok.s(symOK) + " " + c.st.muted.s("no findings")
}

// notClear says why a screen without findings is still not all clear: an
// endpoint shown down or stale, or a value at its critical mark (KV, TTFT,
// inter-token or E2E p95 against the SLO, judged as the table judges
// them). In an endpoint's view (ep ≥ 0) only that endpoint counts.
func (c *common) notClear(ep int) string {
	if c.fr == nil {
		return ""
	}
	slo := c.profile
	down, crit := 0, false
	for i := range c.fr.Endpoints {
		e := &c.fr.Endpoints[i]
		if ep >= 0 && ep != i {
			continue
		}
		if e.State == diagnose.StateDown || e.State == diagnose.StateStale {
			down++
			continue
		}
		st := &e.Stats
		if e.State == diagnose.StateUp && (kvLevel(st.KVUsage, c.fr.KV()) == lvCrit || sloLevel(st.TTFT.P95, slo.TTFT, 1) == lvCrit ||
			sloLevel(st.ITL.P95, slo.ITL, 1) == lvCrit || sloLevel(st.E2E.P95, slo.E2E, 1) == lvCrit) {
			crit = true
		}
	}
	switch {
	case crit:
		return "values marked " + symCrit + " are over their limits"
	case down > 0 && ep >= 0:
		return "the endpoint is down or stale: its values are old"
	case down == 1:
		return "1 endpoint is down or stale"
	case down > 1:
		return itoa(down) + " endpoints are down or stale"
	}
	return ""
}

// View renders the summary line, the column titles and the rows that fit,
// with a line saying how many are above and below when not all do.
func (t *fleetTable) View() []string {
	st := t.c.st
	out := make([]string, 0, t.h)
	out = append(out, t.summary(t.cursor == cursorFleet && t.focused))
	out = append(out, t.header())
	n := t.page()
	more := t.shown() > n && n >= 2
	if more {
		n-- // the last line says how many rows are above and below
	}
	t.scroll(n)
	for k := t.offset; k < t.offset+n; k++ {
		if k >= t.shown() {
			if k == 0 {
				msg := "no endpoint matches the filter " + quote(t.filter)
				if t.filter == "" {
					msg = "no endpoints"
				}
				out = append(out, st.muted.s("  "+msg))
				continue
			}
			out = append(out, "")
			continue
		}
		r := t.rowAt(k)
		if k == t.cursor && t.focused {
			out = append(out, t.renderRow(r, true))
			continue
		}
		line, ok := t.cache[r]
		if !ok {
			line = t.renderRow(r, false)
			t.cache[r] = line
		}
		out = append(out, line)
	}
	if more {
		var parts []string
		if t.offset > 0 {
			parts = append(parts, "↑ "+itoa(t.offset)+" above")
		}
		if below := t.shown() - t.offset - n; below > 0 {
			parts = append(parts, "↓ "+itoa(below)+" more")
		}
		// Joins and departures may be off screen: count them.
		if rs := t.roster.summary(); rs != "" {
			parts = append(parts, rs)
		}
		out = append(out, cut(st.muted.s("   "+strings.Join(parts, " · ")+" · ↑↓ pgup pgdn to scroll"), t.w))
	}
	return out
}

// shortCounts: "✖1 ▲2 ◇0 …2", or "no findings".
func shortCounts(fs []diagnose.Finding) string {
	if len(fs) == 0 {
		return "no findings"
	}
	n, pend := countFindings(fs)
	var parts []string
	for _, sv := range []diagnose.Severity{diagnose.SevCritical, diagnose.SevWarning, diagnose.SevInfo} {
		if n[sv] > 0 {
			sym, _ := sevSymbol(sv)
			parts = append(parts, sym+itoa(n[sv]))
		}
	}
	if pend > 0 {
		parts = append(parts, symPending+itoa(pend)+" pending")
	}
	return strings.Join(parts, " ")
}

// fitName shortens an endpoint name to w cells keeping what tells
// endpoints apart: the port of host:port ("127.0…:33269"), else both ends.
func fitName(name string, w int) string {
	if width(name) <= w || w < 5 {
		return name
	}
	if i := strings.LastIndexByte(name, ':'); i > 0 {
		port := name[i:]
		if _, err := strconv.Atoi(port[1:]); err == nil && width(port)+3 <= w {
			return cut(name[:i], w-width(port)) + port
		}
	}
	head := (w - 1) / 2
	r := []rune(name)
	tail := string(r[len(r)-(w-1-head):])
	return cut(name, head+1)[:len(cut(name, head+1))-len("…")] + "…" + tail
}

// shortModel drops the organization: "meta-llama/Llama-3.1-8B" → "Llama-3.1-8B".
func shortModel(m string) string {
	if i := strings.LastIndexByte(m, '/'); i >= 0 && i < len(m)-1 {
		return m[i+1:]
	}
	return m
}

func quote(s string) string { return "\"" + s + "\"" }

// unknownStats is Stats with every number unknown (diagnose owns it).
func unknownStats() diagnose.Stats { return diagnose.UnknownStats() }
