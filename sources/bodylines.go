package sources

import (
	"bytes"
	"slices"
	"sync"
)

// BodyLines is a scrape body given by its changes against the target's
// previous body (the last one normalized without error), as the normalizer
// found them: what a recording needs, copied out of the poller's buffer
// without copying the body. Lines are the body split at '\n'.
type BodyLines struct {
	N     int      // lines of the body
	Index []int32  // the lines that changed or are new, ascending
	Keep  []int32  // per changed line: bytes kept from the previous line (its unchanged series), or 0
	Text  [][]byte // per changed line: the rest of it

	buf []byte // Text's bytes when Changes made d (Release gives them back)
}

// linesPool recycles what Changes makes: every scrape of a recorded target
// makes one, and the writer is done with it once it has encoded it.
var linesPool sync.Pool

// Release gives the memory of a d that Changes made back for reuse; d must
// not be used after. Others (a composition) are left to the collector.
func (d *BodyLines) Release() {
	if d == nil || d.buf == nil {
		return
	}
	clear(d.Text) // holds no body alive
	linesPool.Put(d)
}

// Changes returns the body n has just normalized as its changes against
// the previous one, copied; nil when n has no previous body to compare it
// with (the first, one after a failed scrape, one too large to fingerprint).
// From its first call on, n keeps what it needs after each body (a
// normalizer nobody asks gives it back as soon as it has read the body):
// a first call after bodies n read is nil too.
func (n *Normalizer) Changes(body []byte) *BodyLines {
	f := &n.fp
	n.keepLines = true
	if !f.have || f.prevN < 0 || !f.listed {
		return nil
	}
	d, _ := linesPool.Get().(*BodyLines)
	if d == nil {
		d = &BodyLines{}
	}
	m := len(f.changed)
	d.N, d.Index = len(f.hash), append(d.Index[:0], f.changed...)
	d.Keep, d.Text = slices.Grow(d.Keep[:0], m)[:m], slices.Grow(d.Text[:0], m)[:m]
	clear(d.Keep)
	size := 0
	for i := range f.changed {
		line := f.line(body, i)
		if f.sameOK {
			d.Keep[i] = f.ent[f.changed[i]].slen
		}
		size += len(line) - int(d.Keep[i])
	}
	buf := slices.Grow(d.buf[:0], size)
	for i := range f.changed {
		line := f.line(body, i)[d.Keep[i]:]
		start := len(buf)
		buf = append(buf, line...)
		d.Text[i] = buf[start:len(buf):len(buf)]
	}
	d.buf = buf
	return d
}

// KeepBody keeps in s what a recording needs of body, just normalized by n:
// its changed lines, or a copy of it when n had no body to compare it with.
func (s *Scrape) KeepBody(n *Normalizer, body []byte, contentType string) {
	s.ContentType = contentType
	if s.Lines = n.Changes(body); s.Lines == nil {
		s.Body = bytes.Clone(body)
	}
}

// absorb makes s, which replaces old in a mailbox before anyone took old,
// carry old's body changes too: a recording must see every body the
// normalizer compared the next one with.
func (s *Scrape) absorb(old *Scrape) {
	switch {
	case s.Body != nil || (old.Body == nil && old.Lines == nil):
		return // whole, or nothing to carry
	case s.Lines == nil:
		// A failed scrape: the body did not move; carry old's for the next.
		s.Body, s.Lines = old.Body, old.Lines
	case old.Body != nil:
		s.Body, s.Lines = s.Lines.Apply(old.Body), nil
	default:
		s.Lines = old.Lines.then(s.Lines)
	}
	if s.ContentType == "" {
		s.ContentType = old.ContentType
	}
}

// Apply returns the body d describes, given the body it was taken against.
func (d *BodyLines) Apply(prev []byte) []byte {
	lines := bytes.Split(prev, []byte{'\n'})
	out := make([]byte, 0, len(prev)+64)
	c := 0
	for k := 0; k < d.N; k++ {
		if k > 0 {
			out = append(out, '\n')
		}
		var old []byte
		if k < len(lines) {
			old = lines[k]
		}
		if c < len(d.Index) && int(d.Index[c]) == k {
			out = append(out, old[:min(int(d.Keep[c]), len(old))]...)
			out = append(out, d.Text[c]...)
			c++
			continue
		}
		out = append(out, old...)
	}
	return out
}

// then composes d (against some body A, giving B) with e (against B),
// giving one description against A.
func (d *BodyLines) then(e *BodyLines) *BodyLines {
	out := &BodyLines{N: e.N}
	i, j := 0, 0
	for i < len(d.Index) || j < len(e.Index) {
		switch {
		case j < len(e.Index) && (i == len(d.Index) || e.Index[j] < d.Index[i]):
			out.add(e.Index[j], e.Keep[j], e.Text[j])
			j++
		case j == len(e.Index) || d.Index[i] < e.Index[j]:
			if int(d.Index[i]) < e.N {
				out.add(d.Index[i], d.Keep[i], d.Text[i])
			}
			i++
		default: // changed in both: e keeps a prefix of B's line, which is A's prefix and d's text
			dk, ek := d.Keep[i], e.Keep[j]
			if ek <= dk {
				out.add(e.Index[j], ek, e.Text[j])
			} else {
				t := append(slices.Clip(d.Text[i][:min(int(ek-dk), len(d.Text[i]))]), e.Text[j]...)
				out.add(e.Index[j], dk, t)
			}
			i++
			j++
		}
	}
	return out
}

func (d *BodyLines) add(k, keep int32, text []byte) {
	d.Index, d.Keep, d.Text = append(d.Index, k), append(d.Keep, keep), append(d.Text, text)
}
