package ui

import (
	"fmt"
	"math"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	f "github.com/vtop-dev/vtop/ui/format"
	"github.com/vtop-dev/vtop/ui/report"
)

// subject is what the four rows show: one endpoint, or the whole fleet
// aggregated (merged buckets, never averaged percentiles: diagnose did that).
type subject struct {
	stats      *diagnose.Stats
	hist       history
	maxNumSeqs int // 0: unknown
	window     time.Duration
	server     sources.Server // the endpoint's engine (the fleet: vLLM's rows)
	marks      []time.Time    // onsets (changes, restarts) marked above the sparklines
}

// lacks says why a value is missing when the engine has no family for it:
// "(not exposed by SGLang)"; "" when it has one (missing is then a gap in
// the data, shown as -- alone).
func (sj subject) lacks(r sources.Role, ids ...uint8) string {
	for _, id := range ids {
		if sources.Exposes(sj.server, r, id) {
			return ""
		}
	}
	return "(not exposed by " + sj.server.String() + ")"
}

// Thresholds that only color a value (the rules decide findings).
const (
	abortWarn = 0.05
	abortCrit = 0.20
)

// cell is one metric: a muted label, a value (with its unit) painted by its
// level and followed by the level's mark, a muted tail, and optionally a
// gauge before the value and a sparkline after it.
type cell struct {
	label string
	value string
	unit  string
	lv    level
	tail  string
	gauge *float64 // a 0..1 gauge drawn before the value
	spark *sparkSpec
}

type sparkSpec struct {
	which diagnose.Spark
	sc    sparkScale
	lv    level
}

var (
	ratioScale = sparkScale{max: 1}
	autoScale  = sparkScale{}
)

func latencyScale(target time.Duration) sparkScale {
	return sparkScale{floor: target.Seconds()}
}

// queueScale: the time a request waits is part of its TTFT, so the
// queue-time sparkline is drawn against the TTFT target; a queue that
// stays far below it stays low instead of filling an auto-scaled line.
func queueScale(slo diagnose.SLO) sparkScale { return latencyScale(slo.TTFT) }

// gaugeWidth is the width of a gauge inside a cell.
const gaugeWidth = 10

// cellText is the cell without its sparkline, plain and painted.
func (s *styles) cellText(c cell) (plain, painted string) {
	var pl, pa strings.Builder
	if c.label != "" {
		pl.WriteString(c.label + " ")
		pa.WriteString(s.muted.s(c.label) + " ")
	}
	vp := s.lv(c.lv)
	if c.value == f.Missing {
		vp = s.muted
	}
	if c.gauge != nil {
		fill, empty := bar(*c.gauge, gaugeWidth)
		gp := vp
		if c.lv == lvNone {
			gp = s.muted
		}
		pl.WriteString(fill + empty + " ")
		pa.WriteString(gp.s(fill) + s.barEmpty.s(empty) + " ")
	}
	v := c.value + c.lv.mark()
	if c.value != f.Missing {
		v = c.value + c.unit + c.lv.mark()
	}
	pl.WriteString(v)
	pa.WriteString(vp.s(v))
	if c.tail != "" {
		pl.WriteString(" " + c.tail)
		pa.WriteString(" " + s.muted.s(c.tail))
	}
	return pl.String(), pa.String()
}

// minSpark is the narrowest sparkline worth drawing.
const minSpark = 4

// sparkPaint is the paint of a sparkline at its level.
func (s *styles) sparkPaint(sp *sparkSpec) paint {
	if sp.lv == lvWarn || sp.lv == lvCrit {
		return s.lv(sp.lv)
	}
	return s.spark
}

// sparkFor renders a cell's sparkline, h rows tall, painted by its level.
func (s *styles) sparkFor(sp *sparkSpec, hs history, w, h int) []string {
	if sp == nil || w < minSpark || h <= 0 {
		return nil
	}
	pts := hs.at(w)
	p := s.sparkPaint(sp)
	rows := s.pad.rows(pts, sp.which, w, h, sp.sc)
	for i := range rows {
		rows[i] = p.s(rows[i])
	}
	return rows
}

// cellsLine lays cells side by side in equal shares of w after the label
// column; each cell's sparkline takes the room its text leaves.
func (s *styles) cellsLine(label string, cells []cell, hs history, w int) string {
	var b strings.Builder
	b.WriteString(s.title.s(pad(label, labelWidth)))
	avail := w - labelWidth
	n := len(cells)
	for i, c := range cells {
		cw := avail / n
		if i == n-1 {
			cw = avail - (n-1)*(avail/n)
		}
		pl, pa := s.cellText(c)
		tw := width(pl)
		sw := cw - tw - 3 // a space before, two after
		if c.spark != nil && sw >= minSpark {
			b.WriteString(pa + " " + s.sparkFor(c.spark, hs, sw, 1)[0] + "  ")
			continue
		}
		if tw > cw-2 {
			b.WriteString(cut(pa, cw-2) + "  ")
			continue
		}
		b.WriteString(pa + strings.Repeat(" ", cw-tw))
	}
	return strings.TrimRight(b.String(), " ")
}

// Roomy rows: a name column and a value column of these widths, then the
// sparkline; the latency row's quantile columns end at the same place, so
// every sparkline starts in one column.
const (
	roomyName  = 13
	roomyValue = 24
)

// item is one metric of a roomy row; note follows the sparkline.
type item struct {
	label, name string
	c           cell
	note        string
}

// roomyItem renders an item: its text on the first line, its sparkline
// sparkH lines tall beside it.
func (s *styles) roomyItem(it item, hs history, w, sparkH int) []string {
	pl, pa := s.cellText(it.c)
	head := s.title.s(pad(it.label, labelWidth)) + s.muted.s(pad(it.name, roomyName))
	indent := strings.Repeat(" ", labelWidth+roomyName)
	valW := roomyValue
	if it.c.spark == nil || width(pl) >= roomyValue {
		line := head + cut(pa, w-labelWidth-roomyName)
		if it.note != "" {
			line += "  " + s.muted.s(it.note)
		}
		return []string{cut(line, w)}
	}
	// The note gives way to a sparkline of at least noteMinSpark cells;
	// it starts with the sparkline's scale: what a full column is.
	const noteMinSpark = 16
	const topW = 12 // "↑2.9k tok/s", right-aligned so the sparkline's width is known first
	note, noteW := it.note, 0
	if it.note != "" {
		noteW = width(it.note) + 2
	}
	if sw := w - labelWidth - roomyName - valW - noteW - topW - 1; sw >= noteMinSpark {
		top := sparkTop(hs.at(sw), it.c.spark.which, sw, it.c.spark.sc)
		note = padLeft(topLabel(it.c.spark.which, top), topW)
		if it.note != "" {
			note += "  " + it.note
		}
	}
	noteW = 0
	if note != "" {
		room := w - labelWidth - roomyName - valW - noteMinSpark - 2
		note = cut(note, max(0, room))
		noteW = width(note) + 2
	}
	sw := w - labelWidth - roomyName - valW - noteW
	spark := s.sparkFor(it.c.spark, hs, sw, sparkH)
	if spark == nil {
		line := head + pa
		if it.note != "" {
			line += "  " + s.muted.s(it.note)
		}
		return []string{cut(line, w)}
	}
	out := make([]string, len(spark))
	for i, sp := range spark {
		if i == 0 {
			out[0] = head + pa + strings.Repeat(" ", valW-width(pl)) + sp
			if note != "" {
				out[0] += "  " + s.muted.s(note)
			}
			continue
		}
		out[i] = indent + strings.Repeat(" ", valW) + sp
	}
	return out
}

// spanText says what the window covered: "1m", or "40s of 1m" while the
// history fills.
func spanText(st *diagnose.Stats, window time.Duration) string {
	if st.Span > 0 && st.Span < window-window/20 {
		return f.Dur(st.Span) + " of " + f.Dur(window)
	}
	return f.Dur(window)
}

// markOnsets puts ▼ in line (sw columns, over the sparklines) at the
// column of each onset the sparklines' points cover: the column of the
// first point at or after it, as series lays the newest on the right.
func markOnsets(line string, pts []diagnose.SparkPoint, sw int, marks []time.Time) string {
	if len(marks) == 0 || len(pts) == 0 {
		return line
	}
	cells := []rune(line)
	first := max(0, len(pts)-sw)
	pad := sw - (len(pts) - first)
	for _, m := range marks {
		ms := m.UnixMilli()
		if ms < pts[first].UnixMilli || ms > pts[len(pts)-1].UnixMilli {
			continue
		}
		for i := first; i < len(pts); i++ {
			if pts[i].UnixMilli >= ms {
				if c := pad + i - first; c >= 0 && c < len(cells) {
					cells[c] = '▼'
				}
				break
			}
		}
	}
	return string(cells)
}

// onsets are an endpoint's marks: its changes' onsets and its restarts.
func onsets(e *diagnose.EndpointView) []time.Time {
	var out []time.Time
	for _, s := range e.Shifts {
		out = append(out, s.Onset)
	}
	for _, r := range e.Restarts {
		out = append(out, r.At)
	}
	return out
}

// sparkSpan is the time the newest w points cover.
func sparkSpan(pts []diagnose.SparkPoint, w int) string {
	if len(pts) < 2 || w < 2 {
		return ""
	}
	first := max(0, len(pts)-w)
	d := time.Duration(pts[len(pts)-1].UnixMilli-pts[first].UnixMilli) * time.Millisecond
	return f.Dur(d)
}

// Latency columns: three quantiles of quantW, and the count when roomy, so
// that labelWidth + 3×quantW + countW + 2 = labelWidth + roomyName + roomyValue.
const (
	quantW  = 9
	countW  = 8
	targetW = 10
)

// latencyRow: TTFT, inter-token, E2E and queue time, p50/p95/p99 with the
// p95 sparkline, against the SLO profile.
func (c *common) latencyRow(sj subject, w int, roomy bool, sparkH int) []string {
	s, slo := c.st, c.profile
	cw := 0
	if roomy {
		cw = countW
	}
	sw := w - labelWidth - 3*quantW - cw - 2 - targetW
	var hb strings.Builder
	hb.WriteString(padLeft("p50", quantW) + padLeft("p95", quantW) + padLeft("p99", quantW))
	if roomy {
		hb.WriteString(padLeft("n", cw))
	}
	hb.WriteString("  ")
	span := "p95 over " + spanText(sj.stats, sj.window)
	if sw >= minSpark {
		if sp := sparkSpan(sj.hist.at(sw), sw); sp != "" {
			span += "; history " + sp
		}
		hb.WriteString(pad(span, sw))
	} else {
		sw = 0
	}
	hb.WriteString(padLeft("SLO "+slo.Name, targetW))
	out := []string{s.title.s(pad("Latency", labelWidth)) + s.muted.s(hb.String())}
	// The onsets of what changed, marked over the sparklines' columns on
	// a line of their own (only when one falls within them).
	if sw >= minSpark {
		if ml := markOnsets(strings.Repeat(" ", sw), sj.hist.at(sw), sw, sj.marks); strings.ContainsRune(ml, '▼') {
			out = append(out, strings.Repeat(" ", labelWidth+3*quantW+cw+2)+s.accent.s(strings.TrimRight(ml, " ")))
		}
	}
	rows := []struct {
		name   string
		q      diagnose.Quantiles
		target time.Duration
		sp     diagnose.Spark
		sc     sparkScale
	}{
		{"TTFT", sj.stats.TTFT, slo.TTFT, diagnose.SpTTFT, latencyScale(slo.TTFT)},
		{"inter-token", sj.stats.ITL, slo.ITL, diagnose.SpITL, latencyScale(slo.ITL)},
		{"E2E", sj.stats.E2E, slo.E2E, diagnose.SpE2E, latencyScale(slo.E2E)},
		{"queue time", sj.stats.Queue, 0, diagnose.SpQueue, queueScale(slo)}, // no target of its own
	}
	if !roomy {
		sparkH = 1
	}
	wide := "" // the first p95 interpolated inside a wide bucket, said in words
	for _, r := range rows {
		var b strings.Builder
		b.WriteString(s.muted.s(pad(r.name, labelWidth)))
		for i, v := range []float64{r.q.P50, r.q.P95, r.q.P99} {
			factor := 1.0
			if i == 2 {
				factor = 2 // p99 may reach twice the target (slo.go)
			}
			text, lv := latencyCell(r.q, v, r.target, factor)
			p := s.lv(lv)
			if math.IsNaN(v) {
				p = s.muted
			}
			b.WriteString(p.s(padLeft(text, quantW)))
		}
		if roomy {
			b.WriteString(s.muted.s(padLeft(f.Count(r.q.Count), cw)))
		}
		b.WriteString("  ")
		spark := s.sparkFor(&sparkSpec{r.sp, r.sc, sloLevel(r.q.P95, r.target, 1)}, sj.hist, sw, sparkH)
		if spark == nil {
			spark = []string{strings.Repeat(" ", max(0, sw))}
		}
		b.WriteString(spark[0])
		if r.target > 0 {
			b.WriteString(s.muted.s(padLeft("≤"+secs(r.target), targetW)))
		}
		out = append(out, strings.TrimRight(b.String(), " "))
		for _, sp := range spark[1:] {
			out = append(out, strings.Repeat(" ", w-sw-targetW)+sp)
		}
		if lo, hi, ok := wideBucket(&r.q, r.q.P95); ok && wide == "" {
			wide = "~ " + r.name + " p95 lies between " + f.Seconds(lo) + " and " + f.Seconds(hi) + " (one histogram bucket)"
		}
	}
	if wide != "" && roomy {
		out = append(out, s.muted.s(strings.Repeat(" ", labelWidth)+wide))
	}
	return out
}

// statCell is number id of st with the word and unit diagnose.StatFields
// gives it: a number added there shows as the others of its unit do.
func statCell(st *diagnose.Stats, id diagnose.StatID) cell {
	c := cell{label: diagnose.StatFields[id].Label}
	c.value, c.unit = report.StatValue(st, id)
	return c
}

type rowCells struct {
	kv, capacity, hit, pre, swapped cell
	run, wait, reasons, qt          cell
	prompt, gen, req, finish, avg   cell
	finishNote                      string
	hasSwapped, hasReasons          bool
}

func (c *common) cells(sj subject) rowCells {
	var rc rowCells
	st := sj.stats
	kvLv := kvLevel(st.KVUsage, c.fr.KV())
	kv := st.KVUsage
	rc.kv = statCell(st, diagnose.StatKVUsage)
	rc.kv.lv, rc.kv.gauge, rc.kv.spark = kvLv, &kv, &sparkSpec{diagnose.SpKV, ratioScale, kvLv}
	var capParts []string
	if !math.IsNaN(st.KVCapacityTokens) {
		c := f.Tokens(st.KVCapacityTokens) + " tokens"
		if !math.IsNaN(st.NumGPUBlocks) && !math.IsNaN(st.BlockSize) {
			c += " (" + f.Tokens(st.NumGPUBlocks) + " blocks × " + f.Count(st.BlockSize) + ")"
		}
		capParts = append(capParts, c)
	} else {
		capParts = append(capParts, f.Missing+" tokens")
	}
	if st.Engines > 1 && !math.IsNaN(st.KVUsageMax) {
		capParts = append(capParts, "fullest engine "+f.Percent(st.KVUsageMax)+kvLevel(st.KVUsageMax, c.fr.KV()).mark())
	}
	rc.capacity = cell{value: strings.Join(capParts, " · ")}
	if st.PrefixCaching == sources.TriNo {
		rc.hit = cell{label: "prefix cache", value: "off"}
	} else {
		rc.hit = statCell(st, diagnose.StatPrefixHitRatio)
		rc.hit.spark = &sparkSpec{diagnose.SpPrefixHit, ratioScale, lvNone}
	}
	plv := lvNone
	if st.PreemptionsRate > 0 {
		plv = lvWarn
	}
	rc.pre = statCell(st, diagnose.StatPreemptions)
	rc.pre.lv, rc.pre.spark = plv, &sparkSpec{diagnose.SpPreempt, autoScale, plv}
	rc.hasSwapped = !math.IsNaN(st.Swapped)
	if rc.hasSwapped {
		slv := lvNone
		if st.Swapped > 0 {
			slv = lvWarn
		}
		rc.swapped = statCell(st, diagnose.StatSwapped)
		rc.swapped.lv, rc.swapped.spark = slv, &sparkSpec{diagnose.SpSwapped, autoScale, slv}
	} else {
		rc.swapped = cell{label: "swapped", value: f.Missing, tail: "(V0 engines only)"}
		if why := sj.lacks(sources.RoleGauge, uint8(sources.GSwapped)); why != "" {
			rc.swapped.tail = why
		}
	}

	rc.run = statCell(st, diagnose.StatRunning)
	rc.run.spark = &sparkSpec{diagnose.SpRunning, autoScale, lvNone}
	if sj.maxNumSeqs > 0 {
		rc.run.tail = "of " + itoa(sj.maxNumSeqs)
		rc.run.spark.sc = sparkScale{max: float64(sj.maxNumSeqs)}
		if st.Running >= float64(sj.maxNumSeqs) {
			rc.run.lv = lvWarn
		}
	} else {
		rc.run.tail = "of " + f.Missing
	}
	wlv := lvNone
	if st.Waiting > 0 {
		wlv = lvWarn
	}
	rc.wait = statCell(st, diagnose.StatWaiting)
	rc.wait.lv, rc.wait.spark = wlv, &sparkSpec{diagnose.SpWaiting, autoScale, wlv}
	rc.hasReasons = !math.IsNaN(st.WaitingCapacity) || !math.IsNaN(st.WaitingDeferred)
	rc.reasons = cell{label: "waiting for", value: "capacity " + f.Count(st.WaitingCapacity), tail: "· deferred " + f.Count(st.WaitingDeferred)}
	if !rc.hasReasons {
		rc.reasons = cell{label: "waiting for", value: f.Missing, tail: "(reasons from vLLM 0.20)"}
		if why := sj.lacks(sources.RoleLabeled, uint8(sources.LWaitingReason)); why != "" {
			rc.reasons.tail = why
		}
	}
	rc.qt = cell{label: "queue p95", value: f.Quantile(st.Queue.P95, st.Queue.Lowest, st.Queue.Highest), spark: &sparkSpec{diagnose.SpQueue, queueScale(c.profile), lvNone}}

	rc.prompt = statCell(st, diagnose.StatPromptTokRate)
	rc.prompt.spark = &sparkSpec{diagnose.SpPromptTok, autoScale, lvNone}
	rc.gen = statCell(st, diagnose.StatGenTokRate)
	rc.gen.spark = &sparkSpec{diagnose.SpGenTok, autoScale, lvNone}
	rc.req = statCell(st, diagnose.StatReqRate)
	rc.req.spark = &sparkSpec{diagnose.SpReq, autoScale, lvNone}
	alv := lvNone
	switch {
	case st.AbortShare >= abortCrit:
		alv = lvCrit
	case st.AbortShare >= abortWarn:
		alv = lvWarn
	}
	// Abort goes first and carries the level: it is the share to watch.
	rc.finish = statCell(st, diagnose.StatAbortShare)
	rc.finish.lv, rc.finish.spark = alv, &sparkSpec{diagnose.SpAbort, ratioScale, alv}
	var parts []string
	for _, x := range st.Finish {
		if x.Reason != "abort" {
			parts = append(parts, x.Reason+" "+f.Percent(x.Share))
		}
	}
	rc.finishNote = strings.Join(parts, " · ")
	if math.IsNaN(st.AbortShare) {
		if why := sj.lacks(sources.RoleLabeled, uint8(sources.LFinished)); why != "" {
			rc.finishNote = "finish reasons " + why
		}
	}
	rc.avg = cell{label: "avg", value: "prompt " + f.Tokens(st.AvgPromptLen) + " · gen " + f.Tokens(st.AvgGenLen), unit: " tokens"}
	if math.IsNaN(st.AvgPromptLen) {
		rc.avg.tail = sj.lacks(sources.RoleHist, uint8(sources.HPromptLen))
	}
	return rc
}

// rowsPanel is the endpoint view's four rows (latency, cache, queue,
// throughput) as a component: it owns its size and its form, compact or
// roomy (a metric a line with a sparkline sparkH tall), set from the one
// resize handler. It never has the focus, so it answers no keys and adds
// no footer hints.
type rowsPanel struct {
	c      *common
	w, h   int
	roomy  bool
	sparkH int
	e      *diagnose.EndpointView // the shown endpoint; nil for the fleet aggregate
	sj     subject
}

func (p *rowsPanel) SetSize(sz size) { p.w, p.h = sz.w, sz.h }

// setForm chooses compact or roomy rows, with sparklines sparkH tall.
func (p *rowsPanel) setForm(roomy bool, sparkH int) { p.roomy, p.sparkH = roomy, sparkH }

// show sets what the rows show: sj, for endpoint e (nil: the fleet).
func (p *rowsPanel) show(e *diagnose.EndpointView, sj subject) { p.e, p.sj = e, sj }

// Update: the rows take no keys.
func (p *rowsPanel) Update(tea.KeyMsg) action { return action{} }

// ShortHelp: the rows add no footer hints.
func (p *rowsPanel) ShortHelp() []hint { return nil }

// View renders the rows; the endpoint's state may replace them with why
// there are none.
func (p *rowsPanel) View() []string {
	c, e, sj := p.c, p.e, p.sj
	msg := func(s string) []string { return block([]string{s}, p.w, p.h) }
	switch {
	case e != nil && e.NotVLLM && e.State == diagnose.StateDown:
		return block([]string{c.st.warn.s(symNotVLLM + " this address answers, but not with vLLM's metrics: point vtop at the vLLM API server's port"),
			c.st.muted.s(e.LastError)}, p.w, p.h)
	case e != nil && e.LastSuccess.IsZero():
		why := "no data yet: waiting for the first answer"
		if e.LastError != "" {
			why = "no data: every poll failed (" + e.LastError + ")"
		}
		return msg(c.st.muted.s(why))
	case e != nil && e.Kind == sources.KindRouter:
		out := []string{c.st.warn.s(symWarn + " this is a router (production-stack's, Dynamo's frontend), not an engine: point vtop at the engines behind it")}
		for _, l := range report.RouterLines(c.fr, e) {
			out = append(out, c.st.muted.s(l))
		}
		return block(out, p.w, p.h)
	case e != nil && e.Kind == sources.KindNoSamples:
		return msg(c.st.warn.s(symWarn + " vllm:* families are declared but carry no samples (V0 multiprocess registry not collected?)"))
	}
	rows := p.fourRows(sj)
	if e != nil && lastValues(e) {
		// The last values, dimmed: the title says how old they are.
		for i, r := range rows {
			rows[i] = c.st.muted.s(ansi.Strip(r))
		}
	}
	return rows
}

// fourRows renders latency, cache, queue and throughput for one subject.
func (p *rowsPanel) fourRows(sj subject) []string {
	c := p.c
	s, w, roomy, sparkH := c.st, p.w, p.roomy, p.sparkH
	out := c.latencyRow(sj, w, roomy, sparkH)
	rc := c.cells(sj)
	if !roomy {
		out = append(out, c.kvLine(rc, sj, w))
		second := []cell{rc.hit, rc.pre}
		if rc.hasSwapped {
			second = append(second, rc.swapped)
		}
		out = append(out, s.cellsLine("", second, sj.hist, w))
		out = append(out, s.cellsLine("Queue", []cell{rc.run, rc.wait}, sj.hist, w))
		out = append(out, s.cellsLine("", []cell{rc.qt, rc.reasons}, sj.hist, w))
		out = append(out, s.cellsLine("Throughput", []cell{rc.prompt, rc.gen}, sj.hist, w))
		fin := rc.finish
		fin.tail = rc.finishNote
		out = append(out, s.cellsLine("", []cell{rc.req, fin}, sj.hist, w))
		out = append(out, s.cellsLine("", []cell{rc.avg}, sj.hist, w))
		return block(out, w, p.h)
	}
	strip := func(c cell) cell { c.label = ""; return c }
	items := []item{
		{"Cache", "KV usage", strip(rc.kv), ""},
		{"", "KV capacity", rc.capacity, ""},
		{"", "prefix hit", strip(rc.hit), ""},
		{"", "preemptions", strip(rc.pre), ""},
		{"", "swapped", strip(rc.swapped), ""},
		{"Queue", "running", strip(rc.run), ""},
		{"", "waiting", strip(rc.wait), ""},
		{"", "waiting for", strip(rc.reasons), ""},
		{"", "queue p95", strip(rc.qt), ""},
		{"Throughput", "prompt", strip(rc.prompt), ""},
		{"", "generation", strip(rc.gen), ""},
		{"", "requests", strip(rc.req), ""},
		{"", "aborted", strip(rc.finish), rc.finishNote},
		{"", "avg length", strip(rc.avg), ""},
	}
	if rc.hit.label == "prefix cache" {
		items[2] = item{"", "prefix cache", cell{value: "off"}, ""}
	}
	for _, it := range items {
		out = append(out, s.roomyItem(it, sj.hist, w, sparkH)...)
	}
	return block(out, w, p.h)
}

// kvLine is the compact KV line: gauge, percentage and band mark, the KV
// sparkline, the capacity.
func (c *common) kvLine(rc rowCells, sj subject, w int) string {
	s := c.st
	pl, pa := s.cellText(rc.kv)
	var b strings.Builder
	b.WriteString(s.title.s(pad("Cache", labelWidth)) + s.muted.s("KV ") + pa)
	rest := w - labelWidth - 3 - width(pl)
	capText := "of " + rc.capacity.value
	sw := min(rest-2-min(width(capText)+2, 28), 60)
	if sw >= minSpark {
		b.WriteString("  " + s.sparkFor(rc.kv.spark, sj.hist, sw, 1)[0])
		rest -= sw + 2
	}
	if rest > 4 {
		b.WriteString("  " + s.muted.s(cut(capText, rest-2)))
	}
	return b.String()
}

// endpointTitle is the identity line: name, state, version, models, engines.
func (c *common) endpointTitle(e *diagnose.EndpointView, w int) string {
	s := c.st
	now := c.fr.Time
	state, lv := stateCell(e, now)
	parts := []string{s.title.s(e.Name), s.lv(lv).s(state)}
	if e.State != diagnose.StateUp && !e.LastSuccess.IsZero() {
		parts = append(parts, s.warn.s("values as of "+clock(e.LastSuccess)+" ("+f.Age(now, e.LastSuccess)+" old)"))
	}
	switch {
	case e.State == diagnose.StatePending:
		parts = append(parts, s.muted.s("not polled yet"))
	case e.Blind:
		parts = append(parts, s.warn.s("unseen: the source it is read through fails (header)"))
	case e.LastError != "":
		parts = append(parts, s.crit.s(e.LastError))
	}
	if !e.RestartedAt.IsZero() {
		parts = append(parts, s.info.s(symRestart+" restarted "+f.Age(now, e.RestartedAt)+" ago"))
	}
	if !e.LastSuccess.IsZero() {
		ver := e.Version.String() // another engine's names itself
		if e.Version.Server == sources.ServerVLLM {
			ver = "vLLM " + ver
		}
		parts = append(parts, s.text.s(ver))
		models := strings.Join(e.Models, ", ")
		if models == "" {
			models = f.Missing
		}
		parts = append(parts, s.text.s(models))
		parts = append(parts, s.muted.s(engines(e.Stats.Engines)))
		if e.MaxNumSeqs > 0 {
			mns := "max_num_seqs " + itoa(e.MaxNumSeqs)
			if e.Version.Server == sources.ServerSGLang {
				mns = "max-running-requests " + itoa(e.MaxNumSeqs) // the config's max_num_seqs, in SGLang's word
			}
			if e.Stats.Engines > 1 {
				mns += " per engine"
			}
			parts = append(parts, s.muted.s(mns))
		}
		parts = append(parts, s.muted.s("scrape "+f.Dur(e.ScrapeDuration)))
	}
	return cut(strings.Join(parts, s.muted.s(" · ")), w)
}

func engines(n int) string {
	if n == 1 {
		return "1 engine"
	}
	return fmt.Sprintf("%d engines", n)
}

// fleetTitle is the aggregate's identity line.
func (c *common) fleetTitle(w int) string {
	s := c.st
	fr := c.fr
	what := "aggregate of all " + itoa(fr.Fleet.Total) + " endpoints"
	if fr.Fleet.Up < fr.Fleet.Total {
		what = "aggregate of the " + itoa(fr.Fleet.Up) + " endpoints up (of " + itoa(fr.Fleet.Total) + ")"
	}
	parts := []string{
		s.title.s("Fleet"),
		s.text.s(what),
		s.muted.s("percentiles from merged buckets"),
		s.text.s(itoa(len(fr.Fleet.Models)) + " models"),
		s.muted.s(engines(fr.Fleet.Stats.Engines)),
	}
	return cut(strings.Join(parts, s.muted.s(" · ")), w)
}

// lastValues: what e shows is its last answer's, not live (down or
// stale): dimmed wherever it is shown.
func lastValues(e *diagnose.EndpointView) bool {
	return e.State == diagnose.StateDown || e.State == diagnose.StateStale
}

// subsPanel lists an endpoint's data-parallel engines (or, for the fleet,
// its models): one line each.
func (c *common) subsPanel(e *diagnose.EndpointView, sz size) []string {
	if sz.h <= 0 {
		return nil
	}
	s := c.st
	type line struct {
		name string
		st   *diagnose.Stats
		n    int
	}
	var ls []line
	title := "Engines"
	if e != nil {
		for k := range e.Subs {
			ls = append(ls, line{name: subLabel(e, k), st: &e.Subs[k].Stats})
		}
	} else {
		title = "Models"
		for k := range c.fr.Fleet.Models {
			mv := &c.fr.Fleet.Models[k]
			ls = append(ls, line{name: mv.Model, st: &mv.Stats, n: mv.Endpoints})
		}
	}
	out := []string{s.rule(fmt.Sprintf("%s (%d)", title, len(ls)), false, sz.w)}
	slo := c.profile
	barW := kvBarSmall
	if sz.w >= 100 {
		barW = kvBarMedium
	}
	nameW := 12
	for _, l := range ls {
		nameW = max(nameW, min(40, width(l.name)+1))
	}
	for i, l := range ls {
		if len(out) == sz.h-1 && i < len(ls)-1 {
			out = append(out, s.muted.s(fmt.Sprintf("  +%d more", len(ls)-i)))
			break
		}
		_, kvp := s.kvCell(l.st.KVUsage, c.fr.KV(), barW)
		ttft, tl := latencyCell(l.st.TTFT, l.st.TTFT.P95, slo.TTFT, 1)
		var b strings.Builder
		b.WriteString("  " + pad(l.name, nameW) + " ")
		if e == nil {
			b.WriteString(s.muted.s(pad(itoa(l.n)+" endpoints", 13)) + " ")
		}
		b.WriteString(s.muted.s("KV ") + kvp)
		b.WriteString(s.muted.s("  run/wait ") + padLeft(f.Count(l.st.Running)+"/"+f.Count(l.st.Waiting), 9))
		b.WriteString(s.muted.s("  TTFT p95 ") + s.lv(tl).s(padLeft(ttft, 7)))
		b.WriteString(s.muted.s("  gen ") + padLeft(f.Rate(l.st.GenTokRate), 4) + s.muted.s(" tok/s"))
		row := b.String()
		if e != nil && lastValues(e) {
			row = s.muted.s(ansi.Strip(row)) // its engines' last values, as its rows
		}
		out = append(out, cut(row, sz.w))
	}
	return block(out, sz.w, sz.h)
}

// endpointSubject is what the endpoint view shows: the endpoint (nil: the
// fleet aggregate), its rows' subject and its GPUs.
func (m *Model) endpointSubject() (*diagnose.EndpointView, subject, *diagnose.EndpointGPU) {
	fr := m.fr
	if m.ep >= 0 && m.ep < len(fr.Endpoints) {
		e := &fr.Endpoints[m.ep]
		return e, subject{stats: &e.Stats, hist: history{e.Spark, e.SparkLong}, maxNumSeqs: batchCapacity(e), window: fr.Window, server: e.Version.Server,
			marks: onsets(e)}, &e.GPU
	}
	return nil, subject{stats: &fr.Fleet.Stats, hist: history{fr.Fleet.Spark, fr.Fleet.SparkLong}, window: fr.Window, maxNumSeqs: fleetMaxNumSeqs(fr)}, nil
}

// endpointBody renders the endpoint view (or the fleet aggregate) between
// header and footer.
func (m *Model) endpointBody() []string {
	l := &m.lay
	e, sj, mine := m.endpointSubject()
	out := make([]string, 0, l.body)
	if e != nil {
		out = append(out, m.endpointTitle(e, l.w))
	} else {
		out = append(out, m.fleetTitle(l.w))
	}
	m.rows.show(e, sj)
	m.feat.show(e, sj)
	m.gpu.mine = mine
	rows := m.rows.View()
	feat := m.feat.View()
	gpu := m.gpu.View()
	out = append(out, m.find.View()...)
	if l.wide {
		rows = append(rows, m.subsPanel(e, l.subs)...)
		right := append(feat, gpu...)
		out = append(out, beside(block(rows, l.left, len(right)), l.left, m.st.muted.s(columnSep), right)...)
	} else {
		out = append(out, rows...)
		out = append(out, feat...)
		out = append(out, m.subsPanel(e, l.subs)...)
		out = append(out, gpu...)
	}
	return out
}

// fleetMaxNumSeqs is the fleet's batch capacity when every endpoint up
// says its max_num_seqs, else unknown (0).
func fleetMaxNumSeqs(fr *diagnose.Frame) int {
	n := 0
	for i := range fr.Endpoints {
		e := &fr.Endpoints[i]
		if e.State != diagnose.StateUp {
			continue
		}
		if e.MaxNumSeqs <= 0 {
			return 0
		}
		n += batchCapacity(e)
	}
	return n
}

// batchCapacity is how many sequences an endpoint can run at once; 0
// when unknown.
func batchCapacity(e *diagnose.EndpointView) int { return diagnose.BatchSlots(e.MaxNumSeqs, &e.Stats) }
