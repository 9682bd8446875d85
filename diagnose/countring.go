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
// in the narrowest of 1, 2 and 4 bytes that holds the column's increases
// in the ring (a busy engine's inter-token buckets take from 1 to 4).
// Differences are sums of whole numbers, exact in float64, so windowed
// rates and quantiles are what full counts give. A fractional count, an
// increase beyond uint32 within the ring or a bucket below the one under it
// keeps the rest of the epoch's rows as they are, in float64.
//
// A sub-series holds thirteen of these: the sizes are int32, so that its
// history struct stays in the 3,456-byte size class, not 4,096.
type countRing struct {
	stride int32     // columns: the buckets kept (kept), then _count
	slots  int32     // rows: the frame ring's capacity
	base   []float64 // own count per column at the base; nil until the first row of the epoch
	cols   []column  // the columns stored, ascending; the others are at their base in every live row
	vals   []byte    // row s at vals[s*row:]: its stored columns' increases over base, in order, little-endian
	wide   []float64 // cumulative counts as they are, wide[s*stride+k], once they are not whole
	row    int32     // bytes a row takes: the stored columns' widths
	// flat: the columns are separate counters (a frame's counters, a
	// labeled family's), each kept as it is, not as a histogram's
	// cumulative buckets; they only grow too, and may be NaN (unknown:
	// the row is then kept in float64, as the others once not whole).
	flat bool
}

// column is a stored column and the bytes its increases take.
type column struct {
	k     uint16
	width uint8 // 1, 2 or 4
}

// reset starts a new layout of stride columns for a ring of slots frames.
func (c *countRing) reset(stride, slots int, flat bool) {
	*c = countRing{stride: int32(stride), slots: int32(slots), flat: flat}
}

// put stores the counts raw+offset at slot (offset nil: none); live lists
// the other slots holding rows of this epoch.
func (c *countRing) put(slot int, raw, offset []float64, live iter.Seq[int]) {
	st := int(c.stride)
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
			if !c.flat {
				prev = v
			}
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
	st := int(c.stride)
	row := c.wide[slot*st : (slot+1)*st]
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
	if slot == 0 || !c.fits(d) {
		// Once a turn of the ring, and whenever a row does not fit: store
		// the columns that move among the live rows and this one, each in
		// the narrowest width, from their lowest value.
		if !c.tidy(d, live) {
			return false
		}
	}
	off := slot * int(c.row)
	for _, col := range c.cols {
		putInc(c.vals[off:], col.width, uint32(d[col.k]))
		off += int(col.width)
	}
	return true
}

// fits reports whether a row of increases d fits the stored layout.
func (c *countRing) fits(d []float64) bool {
	j := 0
	for k, v := range d {
		if j < len(c.cols) && int(c.cols[j].k) == k {
			if v > top(c.cols[j].width) {
				return false
			}
			j++
		} else if v != 0 {
			return false
		}
	}
	return true
}

// tidy rewrites the live rows for the columns that move among them and the
// row d (which it rebases too), from each column's lowest value, each at
// the narrowest width; false when an increase outgrows uint32.
func (c *countRing) tidy(d []float64, live iter.Seq[int]) bool {
	st, oldRow := int(c.stride), int(c.row)
	lo, hi := slices.Clone(d), slices.Clone(d)
	anyLive := false
	for s := range live {
		anyLive = true
		off := s * oldRow
		for _, col := range c.cols {
			v := float64(getInc(c.vals[off:], col.width))
			off += int(col.width)
			lo[col.k], hi[col.k] = min(lo[col.k], v), max(hi[col.k], v)
		}
	}
	if anyLive { // the columns not stored are at their base (0) in every live row
		j := 0
		for k := range st {
			if j < len(c.cols) && int(c.cols[j].k) == k {
				j++
				continue
			}
			lo[k], hi[k] = min(lo[k], 0), max(hi[k], 0)
		}
	}
	var cols []column
	row := 0
	for k := range st {
		span := hi[k] - lo[k]
		switch {
		case span > math.MaxUint32:
			return false
		case span > 0:
			w := uint8(1)
			for span > top(w) {
				w *= 2
			}
			cols = append(cols, column{uint16(k), w})
			row += int(w)
		}
	}
	same := slices.Equal(cols, c.cols)
	if same && c.fits(d) {
		return true // nothing to gain: leave the base where it is
	}
	vals := c.vals // the same layout: rebased in place
	if !same {
		vals = make([]byte, int(c.slots)*row)
	}
	for s := range live {
		from, to, i := s*oldRow, s*row, 0
		for _, col := range cols {
			for i < len(c.cols) && c.cols[i].k < col.k {
				from += int(c.cols[i].width)
				i++
			}
			v := 0.0
			if i < len(c.cols) && c.cols[i].k == col.k {
				v = float64(getInc(c.vals[from:], c.cols[i].width))
			}
			putInc(vals[to:], col.width, uint32(v-lo[col.k]))
			to += int(col.width)
		}
	}
	c.cols, c.row, c.vals = cols, int32(row), vals
	for k := range st {
		c.base[k] += lo[k]
		d[k] -= lo[k]
	}
	return true
}

// top is the largest increase width bytes hold.
func top(width uint8) float64 { return float64(uint64(1)<<(8*width) - 1) }

// toWide turns the live rows into counts as they are, in float64.
func (c *countRing) toWide(live iter.Seq[int]) {
	st := int(c.stride)
	c.wide = make([]float64, int(c.slots)*st)
	if live == nil {
		return
	}
	for s := range live {
		row := c.wide[s*st : (s+1)*st]
		c.ownRow(s, row)
		for k := 1; k < st && !c.flat; k++ {
			row[k] += row[k-1]
		}
	}
	c.base, c.cols, c.vals = nil, nil, nil
}

// ownRow writes the own counts of slot s into row.
func (c *countRing) ownRow(s int, row []float64) {
	copy(row, c.base)
	off := s * int(c.row)
	for _, col := range c.cols {
		row[col.k] += float64(getInc(c.vals[off:], col.width))
		off += int(col.width)
	}
}

func getInc(b []byte, width uint8) uint32 {
	switch width {
	case 1:
		return uint32(b[0])
	case 2:
		return uint32(binary.LittleEndian.Uint16(b))
	}
	return binary.LittleEndian.Uint32(b)
}

func putInc(b []byte, width uint8, v uint32) {
	switch width {
	case 1:
		b[0] = uint8(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	default:
		binary.LittleEndian.PutUint32(b, v)
	}
}

// diffs writes each bucket's increase from slot sa to slot sb into buckets
// (cumulative, as exposed; len(buckets) = stride-1) and returns _count's.
func (c *countRing) diffs(sb, sa int, buckets []float64) float64 {
	st := int(c.stride)
	if c.wide != nil {
		for k := range buckets {
			buckets[k] = c.wide[sb*st+k] - c.wide[sa*st+k]
		}
		return c.wide[sb*st+st-1] - c.wide[sa*st+st-1]
	}
	ob, oa, run, j := sb*int(c.row), sa*int(c.row), 0.0, 0
	for k := range st {
		if j < len(c.cols) && int(c.cols[j].k) == k {
			w := c.cols[j].width
			run += float64(getInc(c.vals[ob:], w)) - float64(getInc(c.vals[oa:], w))
			ob, oa, j = ob+int(w), oa+int(w), j+1
		}
		if k < len(buckets) {
			buckets[k] = run
		}
	}
	return run
}

// flatDiffs writes each column's increase from slot sa to slot sb into
// out (len(out) = stride; NaN: unknown at either end) of a flat ring.
func (c *countRing) flatDiffs(sb, sa int, out []float64) {
	st := int(c.stride)
	if c.wide != nil {
		for k := range out {
			out[k] = c.wide[sb*st+k] - c.wide[sa*st+k]
		}
		return
	}
	clear(out)
	ob, oa := sb*int(c.row), sa*int(c.row)
	for _, col := range c.cols {
		out[col.k] = float64(getInc(c.vals[ob:], col.width)) - float64(getInc(c.vals[oa:], col.width))
		ob, oa = ob+int(col.width), oa+int(col.width)
	}
}

// insert adds a column at k to a flat ring, unknown (NaN) in the rows
// already kept: they are kept in float64 from then on.
func (c *countRing) insert(k int, live iter.Seq[int]) {
	if c.base == nil && c.wide == nil { // no row yet
		c.stride++
		return
	}
	if c.wide == nil {
		c.toWide(live)
	}
	st := int(c.stride)
	wide := make([]float64, int(c.slots)*(st+1))
	for s := range int(c.slots) {
		row := wide[s*(st+1) : (s+1)*(st+1)]
		copy(row, c.wide[s*st:s*st+k])
		row[k] = math.NaN()
		copy(row[k+1:], c.wide[s*st+k:(s+1)*st])
	}
	c.wide, c.stride = wide, int32(st+1)
}

// remap moves the rows at slots (in frame order) to rows 0.. of a ring of
// capacity frames.
func (c *countRing) remap(slots []int, capacity int) {
	if c.stride == 0 {
		return
	}
	if c.vals != nil {
		c.vals = remapRows(c.vals, int(c.row), slots, capacity)
	}
	c.wide = remapRows(c.wide, int(c.stride), slots, capacity)
	c.slots = int32(capacity)
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
