package record

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// Line delta: a scrape body is mostly the previous body of the same target
// with some numbers changed, in the same line order. A body is encoded as
// its line count, then alternating runs: the number of lines equal to the
// previous body's lines at the same index, and one changed line as the
// length of the prefix it shares with the previous line at its index plus
// the rest as literal bytes. zstd then compresses the changed numbers.
// (zstd with the previous body as a raw dictionary compresses as well but
// costs an encoder per target per scrape.)

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

// appendDelta appends the encoding of cur against prev (both split lines).
func appendDelta(dst []byte, prev, cur [][]byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(cur)))
	k := 0
	for k < len(cur) {
		same := 0
		for k+same < len(cur) && k+same < len(prev) && bytes.Equal(cur[k+same], prev[k+same]) {
			same++
		}
		dst = binary.AppendUvarint(dst, uint64(same))
		k += same
		if k == len(cur) {
			break
		}
		line := cur[k]
		p := 0
		if k < len(prev) {
			p = commonPrefix(line, prev[k])
		}
		dst = binary.AppendUvarint(dst, uint64(p))
		dst = binary.AppendUvarint(dst, uint64(len(line)-p))
		dst = append(dst, line[p:]...)
		k++
	}
	return dst
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

// applyDelta decodes enc against prev into dst (reset first). The output is
// bounded by limit, so a hostile file cannot make it grow without bound.
func applyDelta(dst []byte, prev [][]byte, enc []byte, limit int) ([]byte, error) {
	dst = dst[:0]
	r := bytes.NewReader(enc)
	n, err := binary.ReadUvarint(r)
	if err != nil || n > uint64(limit)+1 {
		return nil, errDelta
	}
	k := uint64(0)
	emit := func(line []byte) error {
		if k > 0 {
			dst = append(dst, '\n')
		}
		if len(dst)+len(line) > limit {
			return errDelta
		}
		dst = append(dst, line...)
		k++
		return nil
	}
	for k < n {
		same, err := binary.ReadUvarint(r)
		if err != nil || same > n-k || (same > 0 && k+same > uint64(len(prev))) {
			return nil, errDelta
		}
		for end := k + same; k < end; {
			if err := emit(prev[k]); err != nil {
				return nil, err
			}
		}
		if k == n {
			break
		}
		p, err1 := binary.ReadUvarint(r)
		l, err2 := binary.ReadUvarint(r)
		if err1 != nil || err2 != nil || l > uint64(r.Len()) {
			return nil, errDelta
		}
		var head []byte
		if p > 0 {
			if k >= uint64(len(prev)) || p > uint64(len(prev[k])) {
				return nil, errDelta
			}
			head = prev[k][:p]
		}
		lit := enc[len(enc)-r.Len():][:l]
		r.Seek(int64(l), 1) //nolint:errcheck // l ≤ r.Len(), checked above
		if k > 0 {
			dst = append(dst, '\n')
		}
		if len(dst)+len(head)+len(lit) > limit {
			return nil, errDelta
		}
		dst = append(dst, head...)
		dst = append(dst, lit...)
		k++
	}
	if r.Len() != 0 {
		return nil, errDelta
	}
	return dst, nil
}
