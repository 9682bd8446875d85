package diagnose

import (
	"iter"
	"math"
)

// countRing holds one tracked histogram's cumulative bucket counts for every
// frame slot of a sub-series' ring. Counts are whole numbers that only grow
// within a layout epoch, so they are kept as uint32 increases over a base
// (4 bytes a bucket instead of 8, and no copy of each scrape's slice); a
// fractional count, or one that outgrows uint32 even after rebasing, turns
// the ring to float64 for the rest of the epoch. Differences come out exact
// either way, so windowed rates and quantiles are what full counts give.
type countRing struct {
	stride int       // buckets in the current layout
	base   []float64 // per bucket; nil until the first count of the epoch
	vals   []uint32  // vals[slot*stride+k] = count - base[k]
	wide   []float64 // non-nil: counts stored as they are, same indexing
}

// reset starts a new layout of stride buckets for a ring of slots frames.
func (c *countRing) reset(stride, slots int) {
	c.stride, c.base, c.wide = stride, nil, nil
	if n := stride * slots; cap(c.vals) >= n {
		c.vals = c.vals[:n]
	} else {
		c.vals = make([]uint32, n)
	}
}

// put stores raw+offset at slot; live lists the other slots holding counts
// of this epoch (rebasing shifts them).
func (c *countRing) put(slot int, raw, offset []float64, live iter.Seq[int]) {
	st := c.stride
	if c.wide == nil {
		if c.base == nil {
			c.base = make([]float64, st)
			for k := range c.base {
				c.base[k] = raw[k] + offset[k]
			}
		}
		if c.fits(raw, offset) || (c.rebase(live) && c.fits(raw, offset)) {
			row := c.vals[slot*st : (slot+1)*st]
			for k := range row {
				row[k] = uint32(raw[k] + offset[k] - c.base[k])
			}
			return
		}
		c.widen(live)
	}
	row := c.wide[slot*st : (slot+1)*st]
	for k := range row {
		row[k] = raw[k] + offset[k]
	}
}

func (c *countRing) fits(raw, offset []float64) bool {
	for k, b := range c.base {
		d := raw[k] + offset[k] - b
		if !(d >= 0 && d <= math.MaxUint32 && d == math.Trunc(d)) {
			return false
		}
	}
	return true
}

// rebase moves each bucket's base up to its smallest stored increase, so a
// long-running busy engine does not overflow uint32. It reports whether any
// base moved.
func (c *countRing) rebase(live iter.Seq[int]) bool {
	st := c.stride
	shift := make([]uint32, st)
	for k := range shift {
		shift[k] = math.MaxUint32
	}
	any := false
	for s := range live {
		any = true
		for k, v := range c.vals[s*st : (s+1)*st] {
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
			c.base[k] += float64(d)
		}
	}
	for s := range live {
		row := c.vals[s*st : (s+1)*st]
		for k := range row {
			row[k] -= shift[k]
		}
	}
	return moved
}

// widen turns the ring to float64 counts.
func (c *countRing) widen(live iter.Seq[int]) {
	st := c.stride
	c.wide = make([]float64, len(c.vals))
	for s := range live {
		for k, v := range c.vals[s*st : (s+1)*st] {
			c.wide[s*st+k] = c.base[k] + float64(v)
		}
	}
}

// diff is the increase of bucket k from slot sa to slot sb.
func (c *countRing) diff(sb, sa, k int) float64 {
	st := c.stride
	if c.wide != nil {
		return c.wide[sb*st+k] - c.wide[sa*st+k]
	}
	return float64(c.vals[sb*st+k]) - float64(c.vals[sa*st+k])
}

// remap moves the rows at slots (in frame order) to rows 0.. of a ring of
// capacity frames.
func (c *countRing) remap(slots []int, capacity int) {
	st := c.stride
	if st == 0 {
		return
	}
	vals := make([]uint32, capacity*st)
	for i, s := range slots {
		copy(vals[i*st:(i+1)*st], c.vals[s*st:(s+1)*st])
	}
	c.vals = vals
	if c.wide != nil {
		wide := make([]float64, capacity*st)
		for i, s := range slots {
			copy(wide[i*st:(i+1)*st], c.wide[s*st:(s+1)*st])
		}
		c.wide = wide
	}
}
