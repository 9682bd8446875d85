package diagnose

import (
	"iter"
	"math"
)

// countRing holds one tracked histogram's cumulative bucket counts (and its
// _count, as a last column) for every frame slot of a sub-series' ring.
// Counts are whole numbers that only grow
// within a layout epoch, so they are kept as increases over a base: uint16
// (2 bytes a bucket instead of 8, and no copy of each scrape's slice) while
// a window's increase fits, which it does for per-request histograms; uint32
// for per-token ones on busy engines; float64 for the rest of the epoch once
// a count is fractional or outgrows uint32 even after rebasing. Differences
// come out exact at every width, so windowed rates and quantiles are what
// full counts give.
type countRing struct {
	stride int       // buckets in the current layout
	base   []float64 // per bucket; nil until the first count of the epoch
	v16    []uint16  // v16[slot*stride+k] = count - base[k] (while it fits)
	v32    []uint32  // the same, once uint16 did not fit
	wide   []float64 // counts as they are, same indexing
}

// reset starts a new layout of stride buckets for a ring of slots frames.
func (c *countRing) reset(stride, slots int) {
	c.stride, c.base, c.v32, c.wide = stride, nil, nil, nil
	if n := stride * slots; cap(c.v16) >= n {
		c.v16 = c.v16[:n]
	} else {
		c.v16 = make([]uint16, n)
	}
}

// put stores raw+offset at slot; live lists the other slots holding counts
// of this epoch (rebasing shifts them).
func (c *countRing) put(slot int, raw, offset []float64, live iter.Seq[int]) {
	st := c.stride
	if c.base == nil {
		c.base = make([]float64, st)
		for k := range c.base {
			c.base[k] = raw[k] + offset[k]
		}
	}
	if c.v16 != nil {
		if c.fits(raw, offset, math.MaxUint16) || (rebase(c.v16, st, c.base, live) && c.fits(raw, offset, math.MaxUint16)) {
			putRow(c.v16[slot*st:(slot+1)*st], raw, offset, c.base)
			return
		}
		c.v32 = make([]uint32, len(c.v16))
		for i, v := range c.v16 {
			c.v32[i] = uint32(v)
		}
		c.v16 = nil
	}
	if c.v32 != nil {
		if c.fits(raw, offset, math.MaxUint32) || (rebase(c.v32, st, c.base, live) && c.fits(raw, offset, math.MaxUint32)) {
			putRow(c.v32[slot*st:(slot+1)*st], raw, offset, c.base)
			return
		}
		c.wide = make([]float64, len(c.v32))
		for s := range live {
			for k, v := range c.v32[s*st : (s+1)*st] {
				c.wide[s*st+k] = c.base[k] + float64(v)
			}
		}
		c.v32 = nil
	}
	row := c.wide[slot*st : (slot+1)*st]
	for k := range row {
		row[k] = raw[k] + offset[k]
	}
}

func putRow[T uint16 | uint32](row []T, raw, offset, base []float64) {
	for k := range row {
		row[k] = T(raw[k] + offset[k] - base[k])
	}
}

// fits reports whether every count is a whole number within top of its base.
func (c *countRing) fits(raw, offset []float64, top float64) bool {
	for k, b := range c.base {
		d := raw[k] + offset[k] - b
		if !(d >= 0 && d <= top && d == math.Trunc(d)) {
			return false
		}
	}
	return true
}

// rebase moves each bucket's base up to its smallest stored increase among
// the live rows, so a long-running busy engine does not overflow its width.
// It reports whether any base moved.
func rebase[T uint16 | uint32](vals []T, st int, base []float64, live iter.Seq[int]) bool {
	shift := make([]T, st)
	for k := range shift {
		shift[k] = ^T(0)
	}
	any := false
	for s := range live {
		any = true
		for k, v := range vals[s*st : (s+1)*st] {
			shift[k] = min(shift[k], v)
		}
	}
	if !any {
		return false
	}
	moved := false
	for k, d := range shift {
		if d > 0 {
			moved = true
			base[k] += float64(d)
		}
	}
	for s := range live {
		row := vals[s*st : (s+1)*st]
		for k := range row {
			row[k] -= shift[k]
		}
	}
	return moved
}

// diff is the increase of bucket k from slot sa to slot sb.
func (c *countRing) diff(sb, sa, k int) float64 {
	i, j := sb*c.stride+k, sa*c.stride+k
	switch {
	case c.v16 != nil:
		return float64(c.v16[i]) - float64(c.v16[j])
	case c.v32 != nil:
		return float64(c.v32[i]) - float64(c.v32[j])
	}
	return c.wide[i] - c.wide[j]
}

// remap moves the rows at slots (in frame order) to rows 0.. of a ring of
// capacity frames.
func (c *countRing) remap(slots []int, capacity int) {
	if c.stride == 0 {
		return
	}
	c.v16 = remapRows(c.v16, c.stride, slots, capacity)
	c.v32 = remapRows(c.v32, c.stride, slots, capacity)
	c.wide = remapRows(c.wide, c.stride, slots, capacity)
}

func remapRows[T any](vals []T, st int, slots []int, capacity int) []T {
	if vals == nil {
		return nil
	}
	out := make([]T, capacity*st)
	for i, s := range slots {
		copy(out[i*st:(i+1)*st], vals[s*st:(s+1)*st])
	}
	return out
}

// width is the bytes a stored count takes (for tests).
func (c *countRing) width() int {
	switch {
	case c.v16 != nil:
		return 2
	case c.v32 != nil:
		return 4
	}
	return 8
}
