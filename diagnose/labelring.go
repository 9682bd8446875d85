package diagnose

import (
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
// snapshot lists them), NaN where a frame lacks the label. One array per
// sub-series instead of a list of (label, value, created) per frame: 8
// bytes a value instead of 32, and no allocation per scrape.
type labelRing struct {
	labels []string
	vals   []float64 // vals[slot*len(labels)+k]
	corr   []corr    // reset correction per column
}

// column returns label's column, adding it (for a ring of slots frames)
// while there is room; -1 when the family already has maxLabels.
func (r *labelRing) column(label string, slots int) int {
	k, found := slices.BinarySearch(r.labels, label)
	if found {
		return k
	}
	if len(r.labels) >= maxLabels {
		return -1
	}
	st := len(r.labels)
	vals := make([]float64, slots*(st+1))
	for s := range slots {
		row := vals[s*(st+1) : (s+1)*(st+1)]
		if st > 0 {
			copy(row, r.vals[s*st:s*st+k])
			copy(row[k+1:], r.vals[s*st+k:(s+1)*st])
		}
		row[k] = math.NaN()
	}
	r.vals = vals
	r.labels = slices.Insert(r.labels, k, label)
	r.corr = slices.Insert(r.corr, k, corr{})
	return k
}

// put stores a scrape's list at slot, correcting each counter for resets;
// it reports whether one reset.
func (r *labelRing) put(slot, slots int, list []sources.LabeledValue) bool {
	for _, lv := range list {
		if !math.IsNaN(lv.Value) {
			r.column(lv.Label, slots)
		}
	}
	st := len(r.labels)
	row := r.vals[slot*st : (slot+1)*st]
	for k := range row {
		row[k] = math.NaN()
	}
	reset := false
	for _, lv := range list {
		k, found := slices.BinarySearch(r.labels, lv.Label)
		if !found || math.IsNaN(lv.Value) {
			continue
		}
		v, rs := r.corr[k].step(lv.Value, lv.Created)
		row[k] = v
		reset = reset || rs
	}
	return reset
}

// remap moves the rows at slots (in frame order) to rows 0.. of a ring of
// capacity frames.
func (r *labelRing) remap(slots []int, capacity int) {
	if len(r.labels) == 0 {
		return
	}
	r.vals = remapRows(r.vals, len(r.labels), slots, capacity)
}

// addRates adds each label's increase from slot sa to slot sb, per second,
// into dst (labels in sorted order; a label missing at either end is
// skipped).
func (r *labelRing) addRates(dst []labeledRate, sa, sb int, secs float64) []labeledRate {
	if secs <= 0 {
		return dst
	}
	st := len(r.labels)
	for k, label := range r.labels {
		d := r.vals[sb*st+k] - r.vals[sa*st+k]
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
