package ui

import (
	"math"
	"strings"

	"github.com/vtop-dev/vtop/diagnose"
)

// Sparklines and gauges are drawn here rather than with ntcharts: a missing
// point must show as a gap (missing is not zero; ntcharts clamps it to the
// floor), gauges need fixed scales (KV 0–100 %, latency against its target),
// and its canvas renders each cell through lipgloss, which the per-frame
// budget cannot afford. The history is diagnose's bounded ring.

var sparkRunes = [...]rune{'▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'}

// sparkScale says how a series maps onto the eight block heights.
type sparkScale struct {
	max   float64 // fixed top (ratios: 1); 0 = the largest value shown
	floor float64 // the top is at least this (an SLO target), so a calm series stays low
}

// sparkline draws the newest w points of one series, one column each, newest
// on the right; a short history is padded on the left. Unknown points are
// gaps.
func sparkline(pts []diagnose.SparkPoint, which diagnose.Spark, w int, sc sparkScale) string {
	if w <= 0 {
		return ""
	}
	return sparkRows(pts, which, w, 1, sc)[0]
}

// sparkRows draws the sparkline h rows tall (8 levels per row), top row
// first.
func sparkRows(pts []diagnose.SparkPoint, which diagnose.Spark, w, h int, sc sparkScale) []string {
	return sparkSeries(len(pts), func(i int) float64 { return float64(pts[i].V[which]) }, w, h, sc)
}

// sparkSeries draws the newest w of n values read through at.
func sparkSeries(n int, at func(int) float64, w, h int, sc sparkScale) []string {
	first := max(0, n-w)
	top := sc.max
	if top <= 0 {
		top = sc.floor
		for i := first; i < n; i++ {
			if v := at(i); v > top && !math.IsInf(v, 0) {
				top = v
			}
		}
	}
	rows := make([]strings.Builder, h)
	for r := range rows {
		rows[r].Grow(w * 3)
		for i := n - first; i < w; i++ {
			rows[r].WriteByte(' ')
		}
	}
	for i := first; i < n; i++ {
		v := at(i)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			for r := range rows {
				rows[r].WriteByte(' ')
			}
			continue
		}
		lv := sparkLevel(v, top, h) // 0 .. 8h-1
		for r := range rows {
			fill := lv - 8*(h-1-r) // eighths of this row filled, minus one
			switch {
			case fill >= 7:
				rows[r].WriteRune('█')
			case fill >= 0:
				rows[r].WriteRune(sparkRunes[fill])
			default:
				rows[r].WriteByte(' ')
			}
		}
	}
	out := make([]string, h)
	for r := range rows {
		out[r] = rows[r].String()
	}
	return out
}

// sparkLevel maps v onto 0..8h-1: zero and tiny values are the lowest
// block, so a known zero never looks like a gap.
func sparkLevel(v, top float64, h int) int {
	n := 8 * h
	if v <= 0 || top <= 0 {
		return 0
	}
	i := int(math.Ceil(v/top*float64(n))) - 1
	return max(0, min(i, n-1))
}

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
