package diagnose

import (
	"iter"
	"math"
	"slices"

	"github.com/vtop-dev/vtop/sources"
)

// maxLabels bounds the labels a labeled counter family keeps per sub-series
// (finish reasons, rejection reasons): a target inventing reasons must not
// grow history.
const maxLabels = 64

// labelRing holds a labeled counter family's corrected values for every
// frame slot of a sub-series' ring, one column per label (sorted, as the
// snapshot lists them), NaN where a frame lacks the label: whole numbers
// in a flat count ring (a byte or two a value while they are; float64 once
// a value is not, or a label appears after the first row).
type labelRing struct {
	labels []string
	vals   countRing
	corr   []corr // reset correction per column
	// first is 1 + the sequence number (subHistory.seq0 + index) of the
	// first frame with a row, 0 before: frames before it lack every label.
	first uint64
}

// column returns label's column, adding it (unknown in the rows already
// kept) while there is room; -1 when the family already has maxLabels.
func (r *labelRing) column(label string, slots int, live iter.Seq[int]) int {
	k, found := slices.BinarySearch(r.labels, label)
	if found {
		return k
	}
	if len(r.labels) >= maxLabels {
		return -1
	}
	if len(r.labels) == 0 {
		r.vals.reset(0, slots, true)
	}
	r.vals.insert(k, live)
	r.labels = slices.Insert(r.labels, k, label)
	r.corr = slices.Insert(r.corr, k, corr{})
	return k
}

// put stores a scrape's list at slot, frame number seq (live: the other
// slots holding rows), correcting each counter for resets; it reports
// whether one reset (one absent since the history's last reset, resetAt,
// restarted with it: see corr.step).
func (r *labelRing) put(slot, slots int, seq, resetAt uint64, list []sources.LabeledValue, live iter.Seq[int]) bool {
	for _, lv := range list {
		if !math.IsNaN(lv.Value) {
			r.column(lv.Label, slots, live)
		}
	}
	st := len(r.labels)
	if st == 0 {
		return false
	}
	var buf [maxLabels]float64
	row := buf[:st]
	for k := range row {
		row[k] = math.NaN()
	}
	reset := false
	for _, lv := range list {
		k, found := slices.BinarySearch(r.labels, lv.Label)
		if !found || math.IsNaN(lv.Value) {
			continue
		}
		v, rs := r.corr[k].step(lv.Value, lv.Created, seq, resetAt)
		row[k] = v
		reset = reset || rs
	}
	if r.first == 0 {
		r.first = seq + 1
	}
	r.vals.put(slot, row, nil, live)
	return reset
}

// remap moves the rows at slots (in frame order) to rows 0.. of a ring of
// capacity frames.
func (r *labelRing) remap(slots []int, capacity int) {
	r.vals.remap(slots, capacity)
}

// addRates adds each label's increase from frame a to frame b of h, per
// second, into dst (labels in sorted order; a label missing at b, or
// missing at a after a frame that had it, is skipped). A label the family
// first shows after frame a was born there: exporters create a label's
// series at its first event (prometheus-fastapi-instrumentator a status's
// at its first response, V0 a finish reason's at its first finish), so it
// counted from zero, and its whole value is the window's increase. Skipped,
// a wave of 400s from a client release stayed invisible for a window.
func (r *labelRing) addRates(dst []labeledRate, h *frameRing, a, b int, secs float64) []labeledRate {
	if secs <= 0 || len(r.labels) == 0 || !r.has(h, a) {
		return dst
	}
	var buf [maxLabels]float64
	diffs := buf[:len(r.labels)]
	r.vals.flatDiffs(h.slot(b), h.slot(a), diffs)
	for k, label := range r.labels {
		d := diffs[k]
		if math.IsNaN(d) {
			d = r.bornAfter(h, k, a, b)
		}
		if math.IsNaN(d) {
			continue
		}
		i := slices.IndexFunc(dst, func(l labeledRate) bool { return l.label == label })
		if i < 0 {
			dst = append(dst, labeledRate{label: label})
			i = len(dst) - 1
		}
		dst[i].rate += d / secs
	}
	return dst
}

// bornAfter is column k's value at frame b when the label is missing from
// every frame of the family up to a (NaN otherwise): only a float64 ring
// holds a missing value.
func (r *labelRing) bornAfter(h *frameRing, k, a, b int) float64 {
	c := &r.vals
	if c.wide == nil {
		return math.NaN()
	}
	st := int(c.stride)
	for j := 0; j <= a; j++ {
		if r.has(h, j) && !math.IsNaN(c.wide[h.slot(j)*st+k]) {
			return math.NaN()
		}
	}
	return c.wide[h.slot(b)*st+k]
}

// has reports whether frame j of h has a row.
func (r *labelRing) has(h *frameRing, j int) bool {
	return r.first != 0 && h.seq0+uint64(j)+1 >= r.first
}

// live lists the slots of h's frames before the newest that have a row.
func (r *labelRing) live(h *frameRing) iter.Seq[int] {
	return func(yield func(int) bool) {
		for j := range h.n - 1 {
			if r.has(h, j) && !yield(h.slot(j)) {
				return
			}
		}
	}
}
