package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strconv"
)

// Line delta: a scrape body is mostly the previous body of the same target
// with some numbers changed, in the same line order, and from one second to
// the next mostly the same lines change. So a body is encoded against the
// previous one as: its line count; a bitmap of the lines whose "changed"
// state differs from the previous delta's (few bits set, which zstd
// squeezes to a few bytes); then for each changed line either the change of
// its integer value (a counter or a bucket moving by a small number) or the
// length of the prefix it shares with the previous line and the rest as
// literal bytes. The encoder checks every numeric op by decoding it, so the
// body always comes back byte for byte.

// splitLines splits b at '\n'; joining the result with '\n' gives b back.
func splitLines(dst [][]byte, b []byte) [][]byte {
	dst = dst[:0]
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return append(dst, b)
		}
		dst = append(dst, b[:i])
		b = b[i+1:]
	}
}

// Per changed line, the op kind: the value's integer change printed as
// "123.0" (Python's float repr, vLLM's exporter) or "123" (Go's), or a
// literal after a prefix shared with the previous line. Since format 4 the
// kind is the low two bits of the op's first uvarint, above them the
// change zig-zag encoded (a change under 16, most of a busy engine's, in
// one byte) or the shared prefix's length; before, the first uvarint was
// the kind, or opLiteral plus the prefix, and a varint change followed.
const (
	opIntDotZero = 0
	opInt        = 1
	opLiteral    = 2
)

// appendNumOp appends a numeric op (format 4).
func appendNumOp(dst []byte, op uint64, diff int64) []byte {
	z := uint64(diff<<1) ^ uint64(diff>>63)
	return binary.AppendUvarint(dst, z<<2|op)
}

// appendLitOp appends a literal op: the first p bytes of the previous line,
// then lit (format 4).
func appendLitOp(dst []byte, p int, lit []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(p)<<2|opLiteral)
	dst = binary.AppendUvarint(dst, uint64(len(lit)))
	return append(dst, lit...)
}

// valueStart is where the sample value of a text-format line begins: after
// its last space. -1 when the line has none.
func valueStart(line []byte) int {
	i := bytes.LastIndexByte(line, ' ')
	if i < 0 {
		return -1
	}
	return i + 1
}

// intValue parses an integral value exactly representable as a float64.
// Plain digits (with vLLM's ".0") are read directly: most changed values
// are such counters, and this runs for every one of them.
func intValue(b []byte) (int64, bool) {
	if v, ok := plainInt(b); ok {
		return v, true
	}
	if fractional(b) {
		return 0, false // a sum or a gauge: most values that are not counts
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// fractional reports whether b is a plain decimal with a non-zero digit
// after its point, so no integer (without parsing it).
func fractional(b []byte) bool {
	dot := bytes.IndexByte(b, '.')
	if dot < 0 {
		return false
	}
	nonzero := false
	for _, c := range b[dot+1:] {
		switch {
		case c >= '1' && c <= '9':
			nonzero = true
		case c != '0':
			return false // an exponent, or not a number: ParseFloat decides
		}
	}
	return nonzero
}

// canonInt reads b when it is exactly what appendInt prints for some v
// (-?[1-9][0-9]*|0 within ±2⁵³, then ".0" or nothing), and says which op
// prints it.
func canonInt(b []byte) (v int64, op uint64, ok bool) {
	op = opInt
	if n := len(b); n > 2 && b[n-2] == '.' && b[n-1] == '0' {
		b, op = b[:n-2], opIntDotZero
	}
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 16 || (b[0] == '0' && (len(b) > 1 || neg)) {
		return 0, 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if v > 1<<53 {
		return 0, 0, false
	}
	if neg {
		v = -v
	}
	return v, op, true
}

// plainInt reads -?[0-9]{1,15}(\.0)?.
func plainInt(b []byte) (int64, bool) {
	b = bytes.TrimSuffix(b, []byte(".0"))
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// appendInt prints v as op says.
func appendInt(dst []byte, v int64, op uint64) []byte {
	dst = strconv.AppendInt(dst, v, 10)
	if op == opIntDotZero {
		dst = append(dst, ".0"...)
	}
	return dst
}

// numericLine rebuilds a line from the previous one and a value change.
func numericLine(dst, prev []byte, op uint64, diff int64) ([]byte, bool) {
	s := valueStart(prev)
	if s < 0 {
		return dst, false
	}
	old, ok := intValue(prev[s:])
	if !ok {
		return dst, false
	}
	v := old + diff
	if v > 1<<53 || v < -(1<<53) {
		return dst, false
	}
	dst = append(dst, prev[:s]...)
	return appendInt(dst, v, op), true
}

// changedSet is which lines changed in the last delta, as a bitmap.
type changedSet []byte

func (c changedSet) has(k int) bool { return k/8 < len(c) && c[k/8]&(1<<(k%8)) != 0 }

// appendDelta appends the encoding of cur against prev (both split lines)
// and sets *last to cur's changed set.
// spare is a buffer for the new set, swapped with *last after.
func appendDelta(dst []byte, prev, cur [][]byte, last, spare *changedSet) []byte {
	now := newChangedSet(spare, len(cur))
	for k := range cur {
		if k >= len(prev) || !bytes.Equal(cur[k], prev[k]) {
			now[k/8] |= 1 << (k % 8)
		}
	}
	dst = appendChangedSet(dst, len(cur), now, *last)
	for k, line := range cur {
		if now.has(k) {
			var pl []byte
			if k < len(prev) {
				pl = prev[k]
			}
			dst = appendLine(dst, line, pl, k < len(prev))
		}
	}
	*last, *spare = now, *last
	return dst
}

// newChangedSet returns an empty set for n lines in spare's memory.
func newChangedSet(spare *changedSet, n int) changedSet {
	nb := (n + 7) / 8
	now := changedSet(slices.Grow((*spare)[:0], nb)[:nb])
	clear(now)
	return now
}

// appendChangedSet appends the line count and the set's change from last.
func appendChangedSet(dst []byte, n int, now, last changedSet) []byte {
	dst = binary.AppendUvarint(dst, uint64(n))
	for i := range now {
		var was byte
		if i < len(last) {
			was = last[i]
		}
		dst = append(dst, now[i]^was)
	}
	return dst
}

// appendLine appends the op that rebuilds line from prev (the previous
// line at its place, if has): an integer change when only the value moved,
// else a literal after a shared prefix.
func appendLine(dst, line, prev []byte, has bool) []byte {
	if has {
		if s := valueStart(line); s >= 0 && s == valueStart(prev) && bytes.Equal(line[:s], prev[:s]) {
			// The line's head equals the previous one's, and the new value
			// is printed as the decoder prints it (canonInt reads nothing
			// else): only then is the old value read. Most lines that are
			// not counters (a sum, a JSON field) stop at the first test.
			if v, op, ok := canonInt(line[s:]); ok {
				if old, ok := intValue(prev[s:]); ok && v-old <= 1<<53 && v-old >= -(1<<53) {
					return appendNumOp(dst, op, v-old)
				}
			}
		}
	}
	p := 0
	if has {
		p = commonPrefix(line, prev)
	}
	return appendLitOp(dst, p, line[p:])
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

var errDelta = errors.New("bad delta encoding")

// applyDelta decodes enc, of format version, against prev into dst (reset
// first) and updates *last. The output is bounded by limit, so a hostile
// file cannot make it grow without bound.
func applyDelta(dst []byte, prev [][]byte, enc []byte, limit int, last *changedSet, version byte) ([]byte, error) {
	dst = dst[:0]
	n, w := binary.Uvarint(enc)
	if w <= 0 || n > uint64(limit)+1 {
		return nil, errDelta
	}
	enc = enc[w:]
	nb := int((n + 7) / 8)
	if len(enc) < nb {
		return nil, errDelta
	}
	var now changedSet = make([]byte, nb)
	for i := 0; i < nb; i++ {
		var was byte
		if i < len(*last) {
			was = (*last)[i]
		}
		now[i] = enc[i] ^ was
	}
	enc = enc[nb:]
	for k := 0; k < int(n); k++ {
		if k > 0 {
			dst = append(dst, '\n')
		}
		var ok bool
		switch {
		case !now.has(k):
			if k >= len(prev) {
				return nil, errDelta
			}
			dst = append(dst, prev[k]...)
		default:
			op, w := binary.Uvarint(enc)
			if w <= 0 {
				return nil, errDelta
			}
			enc = enc[w:]
			arg := op - opLiteral // an old literal's prefix
			if version >= packedOps {
				op, arg = op&3, op>>2
				if op > opLiteral {
					return nil, errDelta
				}
			}
			if op < opLiteral {
				var diff int64
				if version >= packedOps {
					diff = int64(arg>>1) ^ -int64(arg&1)
				} else if diff, w = binary.Varint(enc); w > 0 {
					enc = enc[w:]
				} else {
					return nil, errDelta
				}
				if k >= len(prev) {
					return nil, errDelta
				}
				if dst, ok = numericLine(dst, prev[k], op, diff); !ok {
					return nil, errDelta
				}
				break
			}
			p := arg
			l, w := binary.Uvarint(enc)
			if w <= 0 || l > uint64(len(enc)-w) {
				return nil, errDelta
			}
			enc = enc[w:]
			if p > 0 && (k >= len(prev) || p > uint64(len(prev[k]))) {
				return nil, errDelta
			}
			if p > 0 {
				dst = append(dst, prev[k][:p]...)
			}
			dst = append(dst, enc[:l]...)
			enc = enc[l:]
		}
		if len(dst) > limit {
			return nil, errDelta
		}
	}
	if len(enc) != 0 || (n%8 != 0 && now[nb-1]>>(n%8) != 0) {
		return nil, errDelta
	}
	*last = now
	return dst, nil
}
