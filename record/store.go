package record

import (
	"bytes"
	"slices"

	"github.com/vtop-dev/vtop/sources"
)

// lineStore is a target's latest body as lines, each a head (usually its
// series, which rarely changes) and a tail (the value after it), kept in
// two arenas. A scrape given by its changed lines mostly replaces tails:
// a few bytes a line are copied, never the body. When an arena is full, its
// live slices move to a second buffer twice their size and the two swap,
// so after warm-up nothing is allocated and an arena holds at most ~4× its
// live bytes.
type lineStore struct {
	// One entry per line, head, tail and value side by side: a scrape
	// touches a third of a fleet's lines, and the stores of 50 targets do
	// not fit a cache, so a changed line should cost one cache miss.
	ln           []storedLine
	heads, tails arena
	live         int // bytes of all lines
	split        bool
	// next holds, per changed line of pending (the BodyLines just encoded
	// and not yet applied), the new tail's lineVal for apply to keep.
	next    []lineVal
	pending *sources.BodyLines
}

type storedLine struct {
	head, tail []byte // the line is head+tail
	// val caches the integer the tail ends in, as the last delta read it,
	// so the next delta does not parse the old value again.
	val lineVal
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
	s.ln = s.ln[:0]
	for b := s.heads.buf; ; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.ln = append(s.ln, storedLine{head: b, val: unknownVal})
			break
		}
		s.ln = append(s.ln, storedLine{head: b[:i:i], val: unknownVal})
		b = b[i+1:]
	}
	s.tails.buf = s.tails.buf[:0]
	s.live, s.split = len(body)-len(s.ln)+1, false
	s.pending = nil
}

// fits reports whether d describes a body against the one the store holds.
func (s *lineStore) fits(d *sources.BodyLines) bool {
	if !s.fitsIndex(d) {
		return false
	}
	for i, k := range d.Index {
		if d.Keep[i] > 0 && !s.ln[k].keeps(d.Keep[i]) {
			return false
		}
	}
	return true
}

// fitsIndex is fits but for whether each line has the bytes d keeps of it,
// which appendLinesDelta checks where it reads the line anyway: the store
// is read once a scrape, and most of it is not in a cache.
func (s *lineStore) fitsIndex(d *sources.BodyLines) bool {
	if len(d.Keep) != len(d.Index) || len(d.Text) != len(d.Index) {
		return false
	}
	n := len(s.ln)
	for i, k := range d.Index {
		keep := int(d.Keep[i])
		if k < 0 || int(k) >= d.N || (i > 0 && k <= d.Index[i-1]) || keep < 0 || (keep > 0 && int(k) >= n) {
			return false
		}
	}
	// Every line beyond the store's is given.
	return d.N <= n || (len(d.Index) >= d.N-n && int(d.Index[len(d.Index)-d.N+n]) == n)
}

// keeps reports whether the line has keep bytes.
func (l *storedLine) keeps(keep int32) bool { return int(keep) <= len(l.head)+len(l.tail) }

// apply moves the store to the body d describes (d fits it).
func (s *lineStore) apply(d *sources.BodyLines) {
	for k := d.N; k < len(s.ln); k++ {
		s.live -= len(s.ln[k].head) + len(s.ln[k].tail)
	}
	for len(s.ln) < d.N {
		s.ln = append(s.ln, storedLine{val: unknownVal})
	}
	s.ln = s.ln[:d.N]
	encoded := s.pending == d
	s.pending = nil
	for i, k := range d.Index {
		l := &s.ln[k]
		was, val := len(l.head)+len(l.tail), unknownVal
		switch keep, text := int(d.Keep[i]), d.Text[i]; {
		case keep == 0:
			s.heads.reserve(s.ln, false, len(text))
			l.head, l.tail = s.heads.add(text), nil
		case keep > len(l.head):
			// The kept part runs into the old tail: it becomes the head.
			s.heads.reserve(s.ln, false, keep)
			start := len(s.heads.buf)
			s.heads.buf = append(s.heads.buf, l.head...)
			s.heads.buf = append(s.heads.buf, l.tail[:keep-len(l.head)]...)
			l.head = s.heads.buf[start:len(s.heads.buf):len(s.heads.buf)]
			s.tails.reserve(s.ln, true, len(text))
			l.tail = s.tails.add(text)
		default:
			if encoded && keep == len(l.head) {
				val = s.next[i] // the value appendLinesDelta read from the new tail
			}
			l.head = l.head[:keep:keep]
			s.tails.reserve(s.ln, true, len(text))
			l.tail = s.tails.add(text)
		}
		l.val = val
		s.live += len(l.head) + len(l.tail) - was
	}
	s.split = true
}

// add copies b into the arena (which has room for it).
func (a *arena) add(b []byte) []byte {
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// reserve makes room for need more bytes, moving the live slices (the
// lines' tails, or heads) into the spare buffer with room for need more
// bytes and as many again when it is full, and swapping the buffers.
func (a *arena) reserve(lines []storedLine, tails bool, need int) {
	if len(a.buf)+need <= cap(a.buf) {
		return
	}
	part := func(l *storedLine) *[]byte {
		if tails {
			return &l.tail
		}
		return &l.head
	}
	n := 0
	for k := range lines {
		n += len(*part(&lines[k]))
	}
	// Four times the live bytes: a scrape replaces a third of a body's
	// tails, so a tighter arena would be compacted every other scrape.
	size := 4 * (n + need)
	dst := a.spare[:0]
	if cap(dst) < n+need || cap(dst) > 2*size+4096 {
		dst = make([]byte, 0, size)
	}
	for k := range lines {
		if p := part(&lines[k]); *p != nil {
			start := len(dst)
			dst = append(dst, *p...)
			*p = dst[start:len(dst):len(dst)]
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
	dst = dst[:0]
	if !s.split {
		for _, l := range s.ln {
			dst = append(dst, l.head)
		}
		return dst
	}
	b := slices.Grow((*buf)[:0], s.live)
	for _, l := range s.ln {
		start := len(b)
		b = append(append(b, l.head...), l.tail...)
		dst = append(dst, b[start:len(b):len(b)])
	}
	*buf = b
	return dst
}

// appendBody appends the body the store holds.
func (s *lineStore) appendBody(dst []byte) []byte {
	for k, l := range s.ln {
		if k > 0 {
			dst = append(dst, '\n')
		}
		dst = append(append(dst, l.head...), l.tail...)
	}
	return dst
}

// size is the length of the body the store holds.
func (s *lineStore) size() int { return s.live + max(len(s.ln)-1, 0) }

// appendLinesDelta is appendDelta for a body given by its changed lines
// (d, against the store, before it is applied; fitsIndex(d)): the other
// lines are not compared again, and a line whose head is kept is encoded
// from the tails. line is a buffer for one line. False, with dst and *last
// as they were, when d does not fit the store after all.
func (s *lineStore) appendLinesDelta(dst []byte, d *sources.BodyLines, last, spare *changedSet, line *[]byte) ([]byte, bool) {
	start := len(dst)
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
		has := int(k) < len(s.ln)
		l := &storedLine{}
		if has {
			l = &s.ln[k]
		}
		if !l.keeps(d.Keep[i]) {
			s.pending = nil
			return dst[:start], false
		}
		if keep > 0 && keep == len(l.head) {
			if out, v, ok := appendTail(dst, keep, l.tail, l.val, text); ok {
				dst, s.next[i] = out, v
				continue
			}
		}
		b := append(append((*line)[:0], l.head...), l.tail...)
		prev := b[:len(b):len(b)]
		b = append(append(b, prev[:keep]...), text...)
		dst = appendLine(dst, b[len(prev):], prev, has)
		*line = b
	}
	*last, *spare = now, *last
	return dst, true
}

// appendTail appends the op for a line head+tail against head+prev, as
// appendLine would from the whole lines, when the value follows a space in
// the tails; false when it does not. was is prev's value if known; the
// lineVal returned is tail's.
func appendTail(dst []byte, keep int, prev []byte, was lineVal, tail []byte) ([]byte, lineVal, bool) {
	i, j := -1, int(was.at)-1
	var v int64
	var op uint64
	ok := false
	if j >= 0 && j < len(tail) && tail[j] == ' ' {
		// Where the old value started: the last space still if canonInt
		// reads the rest (it reads no space), as it does for most lines.
		if v, op, ok = canonInt(tail[j+1:]); ok {
			i = j
		}
	}
	if i < 0 {
		i = bytes.LastIndexByte(tail, ' ')
		if i < 0 {
			return dst, unknownVal, false
		}
		// The new value must be printed as the decoder prints it: only
		// then is it worth reading the old one.
		v, op, ok = canonInt(tail[i+1:])
	}
	if was.at < 0 {
		if j = bytes.LastIndexByte(prev, ' '); j < 0 {
			return dst, unknownVal, false
		}
	}
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
			return appendNumOp(dst, op, v-old), now, true
		}
	}
	c := commonPrefix(tail, prev)
	return appendLitOp(dst, keep+c, tail[c:]), now, true
}
