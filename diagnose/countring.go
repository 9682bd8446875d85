package diagnose

import (
	"encoding/binary"
	"iter"
	"math"
	"slices"
)

// countRing holds one tracked histogram's cumulative bucket counts (and its
// _count, as a last column) for every frame slot of a sub-series' ring.
//
// While counts are whole numbers (vLLM's always are), a row is kept as each
// column's own count: a bucket's count less the bucket's below it, _count
// less the +Inf bucket's. Those only grow, and most of them do not move
// within a window (the buckets no request fell in: most of a latency
// layout, and _count, which equals the +Inf bucket): a column is stored only
// while its own count moves within the ring, as an increase over a base,
// in the narrowest of 1, 2 and 4 bytes that holds the ring's increases.
// Differences are sums of whole numbers, exact in float64, so windowed
// rates and quantiles are what full counts give. A fractional count, an
// increase beyond uint32 within the ring or a bucket below the one under it
// keeps the rest of the epoch's rows as they are, in float64.
type countRing struct {
	stride int       // columns: the buckets kept (kept), then _count
	slots  int       // rows: the frame ring's capacity
	base   []float64 // own count per column at the base; nil until the first row of the epoch
	cols   []uint16  // the columns stored, ascending; the others are at their base in every live row
	width  int       // bytes a stored increase takes: 1, 2 or 4
	vals   []byte    // little-endian increases over base: row s, stored column j at (s*len(cols)+j)*width
	wide   []float64 // cumulative counts as they are, wide[s*stride+k], once they are not whole
	puts   int       // rows written since the layout was last tidied
}

// reset starts a new layout of stride columns for a ring of slots frames.
func (c *countRing) reset(stride, slots int) {
	*c = countRing{stride: stride, slots: slots}
}

// put stores the counts raw+offset at slot (offset nil: none); live lists
// the other slots holding rows of this epoch.
func (c *countRing) put(slot int, raw, offset []float64, live iter.Seq[int]) {
	st := c.stride
	cum := func(k int) float64 {
		if offset == nil {
			return raw[k]
		}
		return raw[k] + offset[k]
	}
	if c.wide == nil {
		var buf [40]float64
		d := buf[:0]
		if st > len(buf) {
			d = make([]float64, 0, st)
		}
		prev := 0.0
		for k := range st {
			v := cum(k)
			d = append(d, v-prev)
			prev = v
		}
		if c.base == nil {
			if !whole(d) {
				c.toWide(nil)
				c.putWide(slot, cum)
				return
			}
			c.base = slices.Clone(d)
		}
		for k, b := range c.base {
			d[k] -= b // the row's increase over the base
		}
		if c.putOwn(slot, d, live) {
			return
		}
		c.toWide(live)
	}
	c.putWide(slot, cum)
}

func (c *countRing) putWide(slot int, cum func(int) float64) {
	row := c.wide[slot*c.stride : (slot+1)*c.stride]
	for k := range row {
		row[k] = cum(k)
	}
}

// whole reports whether every value is a finite whole number.
func whole(vals []float64) bool {
	for _, v := range vals {
		if v != math.Trunc(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// putOwn stores a row of own-count increases over the base; false when
// they are not whole numbers within uint32 of the live rows'.
func (c *countRing) putOwn(slot int, d []float64, live iter.Seq[int]) bool {
	for _, v := range d {
		if !(v >= 0 && v == math.Trunc(v)) {
			return false
		}
	}
	c.puts++
	if c.puts >= c.slots || !c.fits(d) {
		// Once a ring's worth of rows, and whenever a row does not fit:
		// store the columns that move among the live rows and this one, in
		// the narrowest width, from their lowest value.
		if !c.tidy(d, live) {
			return false
		}
		c.puts = 0
	}
	n := len(c.cols)
	for j, k := range c.cols {
		c.set(slot*n+j, uint32(d[k]))
	}
	return true
}

// fits reports whether a row of increases d fits the stored layout.
func (c *countRing) fits(d []float64) bool {
	top := float64(uint64(1)<<(8*c.width) - 1)
	j := 0
	for k, v := range d {
		if j < len(c.cols) && int(c.cols[j]) == k {
			j++
			if v > top {
				return false
			}
		} else if v != 0 {
			return false
		}
	}
	return true
}

// tidy rewrites the live rows for the columns that move among them and the
// row d (which it rebases too), from each column's lowest value, at the
// narrowest width; false when an increase outgrows uint32.
func (c *countRing) tidy(d []float64, live iter.Seq[int]) bool {
	st, n := c.stride, len(c.cols)
	lo, hi := slices.Clone(d), slices.Clone(d)
	anyLive := false
	for s := range live {
		anyLive = true
		for j, k := range c.cols {
			v := float64(c.get(s*n + j))
			lo[k], hi[k] = min(lo[k], v), max(hi[k], v)
		}
	}
	if anyLive { // the columns not stored are at their base (0) in every live row
		j := 0
		for k := range st {
			if j < n && int(c.cols[j]) == k {
				j++
				continue
			}
			lo[k], hi[k] = min(lo[k], 0), max(hi[k], 0)
		}
	}
	var cols []uint16
	span := 0.0
	for k := range st {
		if hi[k] > lo[k] {
			cols = append(cols, uint16(k))
			span = max(span, hi[k]-lo[k])
		}
	}
	if span > math.MaxUint32 {
		return false
	}
	width := 1
	for span > float64(uint64(1)<<(8*width)-1) {
		width *= 2
	}
	same := slices.Equal(cols, c.cols) && width == c.width
	if same && c.fits(d) {
		return true // nothing to gain: leave the base where it is
	}
	vals := c.vals
	if !same {
		vals = make([]byte, c.slots*len(cols)*width)
	}
	for s := range live {
		for j, k := range cols {
			v := 0.0
			if i, ok := slices.BinarySearch(c.cols, k); ok {
				v = float64(c.get(s*n + i))
			}
			putWidth(vals, width, s*len(cols)+j, uint32(v-lo[k]))
		}
	}
	c.cols, c.width, c.vals = cols, width, vals
	for k := range st {
		c.base[k] += lo[k]
		d[k] -= lo[k]
	}
	return true
}

// toWide turns the live rows into cumulative counts in float64.
func (c *countRing) toWide(live iter.Seq[int]) {
	st := c.stride
	c.wide = make([]float64, c.slots*st)
	if live == nil {
		return
	}
	for s := range live {
		row := c.wide[s*st : (s+1)*st]
		c.ownRow(s, row)
		for k := 1; k < st; k++ {
			row[k] += row[k-1]
		}
	}
	c.base, c.cols, c.vals = nil, nil, nil
}

// ownRow writes the own counts of slot s into row.
func (c *countRing) ownRow(s int, row []float64) {
	copy(row, c.base)
	for j, k := range c.cols {
		row[k] += float64(c.get(s*len(c.cols) + j))
	}
}

func (c *countRing) get(i int) uint32 {
	switch c.width {
	case 1:
		return uint32(c.vals[i])
	case 2:
		return uint32(binary.LittleEndian.Uint16(c.vals[2*i:]))
	}
	return binary.LittleEndian.Uint32(c.vals[4*i:])
}

func (c *countRing) set(i int, v uint32) { putWidth(c.vals, c.width, i, v) }

func putWidth(vals []byte, width, i int, v uint32) {
	switch width {
	case 1:
		vals[i] = uint8(v)
	case 2:
		binary.LittleEndian.PutUint16(vals[2*i:], uint16(v))
	default:
		binary.LittleEndian.PutUint32(vals[4*i:], v)
	}
}

// diffs writes each bucket's increase from slot sa to slot sb into buckets
// (cumulative, as exposed; len(buckets) = stride-1) and returns _count's.
func (c *countRing) diffs(sb, sa int, buckets []float64) float64 {
	st := c.stride
	if c.wide != nil {
		for k := range buckets {
			buckets[k] = c.wide[sb*st+k] - c.wide[sa*st+k]
		}
		return c.wide[sb*st+st-1] - c.wide[sa*st+st-1]
	}
	n, run, j := len(c.cols), 0.0, 0
	for k := range st {
		if j < n && int(c.cols[j]) == k {
			run += float64(c.get(sb*n+j)) - float64(c.get(sa*n+j))
			j++
		}
		if k < len(buckets) {
			buckets[k] = run
		}
	}
	return run
}

// remap moves the rows at slots (in frame order) to rows 0.. of a ring of
// capacity frames.
func (c *countRing) remap(slots []int, capacity int) {
	if c.stride == 0 {
		return
	}
	if c.vals != nil {
		c.vals = remapRows(c.vals, len(c.cols)*c.width, slots, capacity)
	}
	c.wide = remapRows(c.wide, c.stride, slots, capacity)
	c.slots = capacity
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

// bytesPerCount is the bytes a stored count takes (for tests): 0 while no
// column moves, 8 once counts are kept as they are.
func (c *countRing) bytesPerCount() int {
	switch {
	case c.wide != nil:
		return 8
	case len(c.cols) == 0:
		return 0
	}
	return c.width
}
