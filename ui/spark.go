package ui

import (
	"math"
	"strings"

	"github.com/NimbleMarkets/ntcharts/canvas"
	ntspark "github.com/NimbleMarkets/ntcharts/sparkline"

	"github.com/vtop-dev/vtop/diagnose"
	f "github.com/vtop-dev/vtop/ui/format"
)

// Sparklines are ntcharts sparklines (columns on a fixed scale: no auto-max,
// which only ever grows) refilled each frame from diagnose's bounded ring,
// which is the history; ntcharts' own buffer never has to bound anything.
// One sparkline per size is reused, and its drawn cells are read straight
// from the ntcharts canvas: vtop paints the whole line itself, so rendering
// the canvas cell by cell through lipgloss would be wasted work.
// Two things ntcharts does not do are added on top: a missing point is a gap
// (missing is not zero), and a known value, zero included, shows at least
// the lowest block so it never looks like a gap.

// sparkScale says how a series maps onto the sparkline's height.
type sparkScale struct {
	max   float64 // fixed top (ratios: 1); 0 = the largest value shown
	floor float64 // the top is at least this (an SLO target), so a calm series stays low
}

// historySpan is the most a sparkline covers: diagnose's long history.
const historySpan = diagnose.LongStep * diagnose.LongPoints

// history is a series' per-poll points and its long history (one point
// per diagnose.LongStep, the step's largest values).
type history struct{ fine, long []diagnose.SparkPoint }

// at is what a w-column sparkline draws: the newest polls while they fill
// it; with more history than columns, the last historySpan (or all there
// is) downsampled to w columns of equal time, each the largest value of its
// slice, from the long history where the polls no longer reach. Columns
// are at least 1.5 points wide, so downsampling leaves no empty column.
func (hs history) at(w int) []diagnose.SparkPoint {
	fine := hs.fine
	if w <= 0 || len(fine) == 0 {
		return fine
	}
	end := fine[len(fine)-1].UnixMilli
	from := end - historySpan.Milliseconds()
	// The long points older than the first poll kept, within the span.
	lo, hi := len(hs.long), len(hs.long)
	for i, p := range hs.long {
		if p.UnixMilli > from {
			lo = i
			break
		}
	}
	for i := lo; i < len(hs.long); i++ {
		if hs.long[i].UnixMilli >= fine[0].UnixMilli {
			hi = i
			break
		}
	}
	older := hs.long[lo:hi]
	if len(older) > 0 {
		first := older[0].UnixMilli - diagnose.LongStep.Milliseconds()
		if span := end - first; span >= int64(w)*diagnose.LongStep.Milliseconds()*3/2 {
			return downsample(older, fine, first, end, w)
		}
	}
	if len(fine)*2 >= 3*w {
		first := fine[0].UnixMilli - (fine[1].UnixMilli - fine[0].UnixMilli)
		return downsample(nil, fine, first, end, w)
	}
	return fine
}

// downsample puts the points of a and b (oldest first, times in (first,
// end]) into w columns of equal time: the largest value of each series in
// each column; unknown stays unknown.
func downsample(a, b []diagnose.SparkPoint, first, end int64, w int) []diagnose.SparkPoint {
	out := make([]diagnose.SparkPoint, w)
	span := max(1, end-first)
	nan := float32(math.NaN())
	for c := range out {
		out[c].UnixMilli = first + span*int64(c+1)/int64(w)
		for k := range out[c].V {
			out[c].V[k] = nan
		}
	}
	add := func(p diagnose.SparkPoint) {
		c := int((p.UnixMilli - first - 1) * int64(w) / span)
		c = max(0, min(c, w-1))
		for k, v := range p.V {
			if cur := out[c].V[k]; cur != cur || v > cur { // NaN never wins over a value
				out[c].V[k] = v
			}
		}
	}
	for _, p := range a {
		add(p)
	}
	for _, p := range b {
		add(p)
	}
	return out
}

// sparkPad draws sparklines, keeping one ntcharts sparkline per size.
type sparkPad struct {
	lines map[[2]int]*ntspark.Model
	known []bool
}

func newSparkPad() *sparkPad { return &sparkPad{lines: map[[2]int]*ntspark.Model{}} }

// sparkline draws the newest w points of one series, one column each, newest
// on the right; a short history is padded on the left. Unknown points are
// gaps.
func (sp *sparkPad) sparkline(pts []diagnose.SparkPoint, which diagnose.Spark, w int, sc sparkScale) string {
	if w <= 0 {
		return ""
	}
	return sp.rows(pts, which, w, 1, sc)[0]
}

// rows draws the sparkline h rows tall, top row first.
func (sp *sparkPad) rows(pts []diagnose.SparkPoint, which diagnose.Spark, w, h int, sc sparkScale) []string {
	return sp.series(len(pts), func(i int) float64 { return float64(pts[i].V[which]) }, w, h, sc)
}

// series draws the newest w of n values read through at.
func (sp *sparkPad) series(n int, at func(int) float64, w, h int, sc sparkScale) []string {
	out := make([]string, h)
	if w <= 0 || h <= 0 {
		return out
	}
	first := max(0, n-w)
	top := scaleTop(n, at, w, sc)
	sl := sp.lines[[2]int{w, h}]
	if sl == nil {
		m := ntspark.New(w, h, ntspark.WithNoAutoMaxValue())
		sl = &m
		sp.lines[[2]int{w, h}] = sl
	}
	// Exactly w values are pushed below, which refills the w-wide buffer,
	// and drawing clears the canvas: no Clear (it reallocates the canvas).
	sl.SetMax(top)
	if cap(sp.known) < w {
		sp.known = make([]bool, w)
	}
	known := sp.known[:w]
	clear(known)
	pad := w - (n - first)
	for i := 0; i < pad; i++ {
		sl.Push(0) // the buffer is w wide: pad so the newest sits on the right
	}
	for i := first; i < n; i++ {
		v := at(i)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			sl.Push(0)
			continue
		}
		known[pad+i-first] = true
		sl.Push(min(v, top)) // above the fixed top: a full column
	}
	sl.DrawColumnsOnly()
	row := make([]rune, w)
	for r := 0; r < h; r++ {
		for c := range row {
			cell := sl.Canvas.Cell(canvas.Point{X: c, Y: r}).Rune
			switch {
			case known[c] && cell != 0 && cell != ' ':
				row[c] = cell
			case known[c] && r == h-1:
				row[c] = sparkRunes[0] // a known value, however small, is not a gap
			default:
				row[c] = ' '
			}
		}
		out[r] = string(row)
	}
	return out
}

// scaleTop is the value a full column stands for when the newest w of n
// values are drawn on scale sc.
func scaleTop(n int, at func(int) float64, w int, sc sparkScale) float64 {
	top := sc.max
	if top <= 0 {
		top = sc.floor
		for i := max(0, n-w); i < n; i++ {
			if v := at(i); v > top && !math.IsInf(v, 0) {
				top = v
			}
		}
	}
	if !(top > 0) {
		top = 1 // all zero: any scale draws the floor
	}
	return top
}

// sparkTop is scaleTop for one series of points.
func sparkTop(pts []diagnose.SparkPoint, which diagnose.Spark, w int, sc sparkScale) float64 {
	return scaleTop(len(pts), func(i int) float64 { return float64(pts[i].V[which]) }, w, sc)
}

// topLabel says what a full column of a series is, in the series' unit:
// "↑100%", "↑2.9k tok/s", "↑1.4s".
func topLabel(which diagnose.Spark, top float64) string {
	var v string
	switch which {
	case diagnose.SpKV, diagnose.SpPrefixHit, diagnose.SpAbort:
		v = f.Percent(top)
	case diagnose.SpPreempt:
		v = f.Rate(top) + "/s"
	case diagnose.SpSwapped, diagnose.SpRunning, diagnose.SpWaiting:
		v = f.Count(top)
	case diagnose.SpPromptTok, diagnose.SpGenTok:
		v = f.Rate(top) + " tok/s"
	case diagnose.SpReq:
		v = f.Rate(top) + " req/s"
	default:
		v = f.Seconds(top)
	}
	return "↑" + v
}

var sparkRunes = [...]rune{'▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'}

var eighths = [...]string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// bar splits a w-cell gauge of ratio v (0..1) into its filled and empty
// parts, to the eighth of a cell. An unknown v gives an empty filled part
// and a dotted track.
func bar(v float64, w int) (filled, empty string) {
	if w <= 0 {
		return "", ""
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "", strings.Repeat("·", w)
	}
	v = max(0, min(v, 1))
	n := int(math.Round(v * float64(w) * 8))
	full, part := n/8, n%8
	filled = strings.Repeat("█", full) + eighths[part]
	cells := full
	if part > 0 {
		cells++
	}
	return filled, strings.Repeat("░", w-cells)
}
