package record

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/vtop-dev/vtop/sources"
)

// lineStore is a target's latest body as lines, each a head (usually its
// series, which rarely changes) and a tail (the value after it), kept in
// two arenas. A scrape given by its changed lines mostly replaces tails:
// a few bytes a line are copied, never the body. When an arena is full, its
// live slices move to a second buffer twice their size and the two swap,
// so after warm-up nothing is allocated and an arena holds at most ~2× its
// live bytes.
type lineStore struct {
	head, tail   [][]byte // per line; the line is head+tail
	heads, tails arena
	live         int // bytes of all lines
	split        bool
	// vals caches per line the integer its tail ends in, as the last delta
	// read it, so the next delta does not parse the old value again.
	vals []lineVal
	// next holds, per changed line of pending (the BodyLines just encoded
	// and not yet applied), the new tail's lineVal for apply to keep.
	next    []lineVal
	pending *sources.BodyLines
}

// lineVal is a line's value when known: at ≥ 0 says its tail, from at on,
// is v as appendInt prints it, after the tail's last space; -1: not known.
type lineVal struct {
	v  int64
	at int32
}

var unknownVal = lineVal{at: -1}

type arena struct {
	buf, spare []byte
	adopted    bool // buf is a caller's body: never reused as spare
}

// setWhole makes body the store's content; the store keeps body (the
// caller must not change it afterwards).
func (s *lineStore) setWhole(body []byte) {
	spare := s.heads.spare
	if !s.heads.adopted && cap(s.heads.buf) > cap(spare) {
		spare = s.heads.buf[:0] // no line points into it any more
	}
	s.heads = arena{buf: body[:len(body):len(body)], spare: spare, adopted: true}
	s.head = splitLines(s.head, s.heads.buf)
	s.tail = append(s.tail[:0], make([][]byte, len(s.head))...)
	s.tails.buf = s.tails.buf[:0]
	s.live, s.split = len(body)-len(s.head)+1, false
	s.vals = fillVals(s.vals[:0], len(s.head))
	s.pending = nil
}

// fillVals appends unknown values to vals up to n lines.
func fillVals(vals []lineVal, n int) []lineVal {
	for len(vals) < n {
		vals = append(vals, unknownVal)
	}
	return vals[:n]
}

// fits reports whether d describes a body against the one the store holds.
func (s *lineStore) fits(d *sources.BodyLines) bool {
	if len(d.Keep) != len(d.Index) || len(d.Text) != len(d.Index) {
		return false
	}
	for i, k := range d.Index {
		keep := int(d.Keep[i])
		if k < 0 || int(k) >= d.N || (i > 0 && k <= d.Index[i-1]) || keep < 0 || (keep > 0 && (int(k) >= len(s.head) || keep > len(s.head[k])+len(s.tail[k]))) {
			return false
		}
	}
	// Every line beyond the store's is given.
	return d.N <= len(s.head) || (len(d.Index) >= d.N-len(s.head) && int(d.Index[len(d.Index)-d.N+len(s.head)]) == len(s.head))
}

// apply moves the store to the body d describes (d fits it).
func (s *lineStore) apply(d *sources.BodyLines) {
	needH, needT := 0, 0
	for i, k := range d.Index {
		switch keep := int(d.Keep[i]); {
		case keep == 0:
			needH += len(d.Text[i])
		case keep > len(s.head[k]):
			needH += keep
			needT += len(d.Text[i])
		default:
			needT += len(d.Text[i])
		}
	}
	if len(s.heads.buf)+needH > cap(s.heads.buf) {
		s.heads.compact(s.head, needH)
	}
	if len(s.tails.buf)+needT > cap(s.tails.buf) {
		s.tails.compact(s.tail, needT)
	}
	for k := d.N; k < len(s.head); k++ {
		s.live -= len(s.head[k]) + len(s.tail[k])
	}
	for len(s.head) < d.N {
		s.head, s.tail = append(s.head, nil), append(s.tail, nil)
	}
	s.head, s.tail = s.head[:d.N], s.tail[:d.N]
	s.vals = fillVals(s.vals, d.N)
	encoded := s.pending == d
	s.pending = nil
	for i, k := range d.Index {
		was := len(s.head[k]) + len(s.tail[k])
		s.vals[k] = unknownVal
		switch keep := int(d.Keep[i]); {
		case keep == 0:
			s.head[k], s.tail[k] = s.heads.add(d.Text[i]), nil
		case keep > len(s.head[k]):
			// The kept part runs into the old tail: it becomes the head.
			start := len(s.heads.buf)
			s.heads.buf = append(s.heads.buf, s.head[k]...)
			s.heads.buf = append(s.heads.buf, s.tail[k][:keep-len(s.head[k])]...)
			s.head[k] = s.heads.buf[start:len(s.heads.buf):len(s.heads.buf)]
			s.tail[k] = s.tails.add(d.Text[i])
		default:
			if encoded && keep == len(s.head[k]) {
				s.vals[k] = s.next[i] // the value appendLinesDelta read from the new tail
			}
			s.head[k] = s.head[k][:keep:keep]
			s.tail[k] = s.tails.add(d.Text[i])
		}
		s.live += len(s.head[k]) + len(s.tail[k]) - was
	}
	s.split = true
}

// add copies b into the arena (which has room for it).
func (a *arena) add(b []byte) []byte {
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// compact moves the live slices into the spare buffer, with room for need
// more bytes and as many again, and swaps the buffers.
func (a *arena) compact(live [][]byte, need int) {
	n := 0
	for _, l := range live {
		n += len(l)
	}
	size := 2 * (n + need)
	dst := a.spare[:0]
	if cap(dst) < n+need || cap(dst) > 4*size+4096 {
		dst = make([]byte, 0, size)
	}
	for k, l := range live {
		if l != nil {
			start := len(dst)
			dst = append(dst, l...)
			live[k] = dst[start:len(dst):len(dst)]
		}
	}
	if a.adopted {
		a.buf = nil
	}
	a.buf, a.spare, a.adopted = dst, a.buf[:0], false
}

// lines returns the lines as slices, joined into buf only where a line is
// in two parts.
func (s *lineStore) lines(dst [][]byte, buf *[]byte) [][]byte {
	if !s.split {
		return append(dst[:0], s.head...)
	}
	dst, b := dst[:0], slices.Grow((*buf)[:0], s.live)
	for k, h := range s.head {
		start := len(b)
		b = append(append(b, h...), s.tail[k]...)
		dst = append(dst, b[start:len(b):len(b)])
	}
	*buf = b
	return dst
}

// appendBody appends the body the store holds.
func (s *lineStore) appendBody(dst []byte) []byte {
	for k, h := range s.head {
		if k > 0 {
			dst = append(dst, '\n')
		}
		dst = append(append(dst, h...), s.tail[k]...)
	}
	return dst
}

// size is the length of the body the store holds.
func (s *lineStore) size() int { return s.live + max(len(s.head)-1, 0) }

// appendLinesDelta is appendDelta for a body given by its changed lines
// (d, against the store, before it is applied): the other lines are not
// compared again, and a line whose head is kept is encoded from the tails.
// line is a buffer for one line.
func (s *lineStore) appendLinesDelta(dst []byte, d *sources.BodyLines, last, spare *changedSet, scratch []byte, line *[]byte) []byte {
	now := newChangedSet(spare, d.N)
	for _, k := range d.Index {
		now[k/8] |= 1 << (k % 8)
	}
	dst = appendChangedSet(dst, d.N, now, *last)
	s.next = slices.Grow(s.next[:0], len(d.Index))[:len(d.Index)]
	s.pending = d
	for i, k := range d.Index {
		keep, text := int(d.Keep[i]), d.Text[i]
		s.next[i] = unknownVal
		if keep > 0 && keep == len(s.head[k]) {
			if out, v, ok := appendTail(dst, keep, s.tail[k], s.vals[k], text); ok {
				dst, s.next[i] = out, v
				continue
			}
		}
		l := (*line)[:0]
		has := int(k) < len(s.head)
		if has {
			l = append(append(l, s.head[k]...), s.tail[k]...)
		}
		prev := l[:len(l):len(l)]
		l = append(append(l, prev[:keep]...), text...)
		dst, scratch = appendLine(dst, l[len(prev):], prev, has, scratch)
		*line = l
	}
	*last, *spare = now, *last
	return dst
}

// appendTail appends the op for a line head+tail against head+prev, as
// appendLine would from the whole lines, when the value follows a space in
// the tails; false when it does not. was is prev's value if known; the
// lineVal returned is tail's.
func appendTail(dst []byte, keep int, prev []byte, was lineVal, tail []byte) ([]byte, lineVal, bool) {
	i, j := bytes.LastIndexByte(tail, ' '), int(was.at)-1
	if was.at < 0 {
		j = bytes.LastIndexByte(prev, ' ')
	}
	if i < 0 || j < 0 {
		return dst, unknownVal, false
	}
	// The new value must be printed as the decoder prints it: only then is
	// it worth reading the old one (from the cache when known).
	v, op, ok := canonInt(tail[i+1:])
	now := unknownVal
	if ok {
		now = lineVal{v: v, at: int32(i + 1)}
	}
	if ok && i == j && bytes.Equal(tail[:i], prev[:i]) {
		old, ok := was.v, was.at >= 0
		if !ok {
			old, ok = intValue(prev[i+1:])
		}
		if ok && v-old <= 1<<53 && v-old >= -(1<<53) {
			dst = binary.AppendUvarint(dst, op)
			return binary.AppendVarint(dst, v-old), now, true
		}
	}
	c := commonPrefix(tail, prev)
	dst = binary.AppendUvarint(dst, uint64(opLiteral+keep+c))
	dst = binary.AppendUvarint(dst, uint64(len(tail)-c))
	return append(dst, tail[c:]...), now, true
}
