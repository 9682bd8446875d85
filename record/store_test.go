package record

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vtop-dev/vtop/sources"
)

// The line store and the delta encoded from changed lines against a
// reference: random bodies edited line by line (values moved, lines added
// and removed, heads kept at any length), each step applied to the store
// and encoded, decoded and compared with the body it stands for.
func TestLineStoreAndLinesDelta(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for run := 0; run < 200; run++ {
		var cur [][]byte
		for k := 0; k < 1+r.IntN(30); k++ {
			cur = append(cur, randLine(r))
		}
		st := &lineStore{}
		st.setWhole(bytes.Join(cur, []byte("\n")))
		var last, spare, dlast changedSet
		var line []byte
		for step := 0; step < 40; step++ {
			next := make([][]byte, 0, len(cur)+2)
			for _, l := range cur {
				if r.IntN(10) > 0 || len(cur) == 1 {
					next = append(next, l)
				}
			}
			for r.IntN(4) == 0 {
				next = append(next, randLine(r))
			}
			d := &sources.BodyLines{N: len(next)}
			for k := range next {
				switch {
				case k >= len(cur):
					d.Index, d.Keep, d.Text = append(d.Index, int32(k)), append(d.Keep, 0), append(d.Text, next[k])
				case r.IntN(3) == 0 || !bytes.Equal(next[k], cur[k]):
					nl := next[k]
					if r.IntN(2) == 0 { // a new value after the same head
						i := bytes.LastIndexByte(cur[k], ' ') + 1
						nl = fmt.Appendf(append([]byte(nil), cur[k][:i]...), "%d%s", r.IntN(1000), []string{"", ".0", ".5"}[r.IntN(3)])
					}
					next[k] = nl
					keep := r.IntN(commonPrefix(nl, cur[k]) + 1)
					d.Index, d.Keep, d.Text = append(d.Index, int32(k)), append(d.Keep, int32(keep)), append(d.Text, bytes.Clone(nl[keep:]))
				}
			}
			if !st.fits(d) {
				t.Fatalf("run %d step %d: a delta of the store's own body does not fit", run, step)
			}
			prev := bytes.Join(cur, []byte("\n"))
			prevLines := splitLines(nil, prev)
			enc, ok := st.appendLinesDelta(nil, d, &last, &spare, &line)
			if !ok {
				t.Fatalf("run %d step %d: the delta of a body that fits is refused", run, step)
			}
			st.apply(d)
			want := bytes.Join(next, []byte("\n"))
			if got := st.appendBody(nil); !bytes.Equal(got, want) || st.size() != len(want) {
				t.Fatalf("run %d step %d: store holds %q (size %d), want %q", run, step, got, st.size(), want)
			}
			got, err := applyDelta(nil, prevLines, enc, 1<<20, &dlast, Version)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("run %d step %d: delta decodes to %q, %v; want %q", run, step, got, err, want)
			}
			cur = next
		}
	}
}

func randLine(r *rand.Rand) []byte {
	switch r.IntN(5) {
	case 0:
		return nil
	case 1:
		return []byte("# HELP x y")
	}
	return fmt.Appendf(nil, "m%d{a=\"%d\"} %d.0", r.IntN(5), r.IntN(100), r.IntN(10000))
}

// canonInt accepts exactly what appendInt prints.
func TestCanonInt(t *testing.T) {
	for _, s := range []string{"0", "0.0", "7", "7.0", "-7", "-7.0", "123456789012345", "-123456789012345.0",
		"", "-", "-0", "-0.0", "00", "07", "1.5", "1.00", "1e3", "+1", "1234567890123456", "9007199254740993", ".0", "1.", "x", "1 "} {
		v, op, ok := canonInt([]byte(s))
		printed := ok && string(appendInt(nil, v, op)) == s
		if ok != printed {
			t.Errorf("canonInt(%q) = %d, %d, %v; appendInt prints %q", s, v, op, ok, appendInt(nil, v, op))
		}
		if !ok {
			for _, op := range []uint64{opIntDotZero, opInt} {
				if iv, ok := intValue([]byte(s)); ok && string(appendInt(nil, iv, op)) == s {
					t.Errorf("canonInt(%q) refused what appendInt prints", s)
				}
			}
		}
	}
}

// One delta in both op layouts: format 4's packed ops are what the writer
// writes, and a format-3 file's ops still decode.
func TestDeltaOpLayouts(t *testing.T) {
	prev, cur := splitLines(nil, []byte("a 1\nb x")), []byte("a 5\nb y")
	for _, c := range []struct {
		version byte
		enc     []byte
	}{
		// 2 lines, both changed; "a": +4 printed as an integer; "b": the
		// first 2 bytes of the old line and "y".
		{3, []byte{2, 0b11, opInt, 4 << 1, opLiteral + 2, 1, 'y'}},
		{4, []byte{2, 0b11, 4<<1<<2 | opInt, 2<<2 | opLiteral, 1, 'y'}},
	} {
		var last changedSet
		got, err := applyDelta(nil, prev, c.enc, 100, &last, c.version)
		if err != nil || !bytes.Equal(got, cur) {
			t.Errorf("format %d: %q decodes to %q, %v; want %q", c.version, c.enc, got, err, cur)
		}
	}
	var last, spare changedSet
	if enc := appendDelta(nil, prev, splitLines(nil, cur), &last, &spare); !bytes.Equal(enc, []byte{2, 0b11, 0x21, 0x0a, 1, 'y'}) {
		t.Errorf("the writer encodes % x", enc)
	}
}

// A description that does not fit the store (a bug upstream) is refused
// whole, by fits and by fitsIndex then appendLinesDelta alike, and leaves
// the store and the changed set as they were.
func TestLinesThatDoNotFit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	refused := 0
	for run := 0; run < 2000; run++ {
		var lines [][]byte
		for range 1 + r.IntN(8) {
			lines = append(lines, randLine(r))
		}
		body := bytes.Join(lines, []byte("\n"))
		st := &lineStore{}
		st.setWhole(bytes.Clone(body))
		d := &sources.BodyLines{N: len(lines) + r.IntN(3) - 1}
		for k := range d.N {
			if r.IntN(3) == 0 || k >= len(lines) {
				keep := 0
				if k < len(lines) {
					keep = r.IntN(len(lines[k]) + 3) // sometimes past the line
				} else if r.IntN(4) == 0 {
					keep = 1 // a line the store does not have
				}
				d.Index, d.Keep, d.Text = append(d.Index, int32(k)), append(d.Keep, int32(keep)), append(d.Text, []byte("7"))
			}
		}
		if r.IntN(10) == 0 && len(d.Index) > 1 {
			d.Index[0], d.Index[1] = d.Index[1], d.Index[0]
		}
		last := changedSet{0xff}
		var spare changedSet
		var line []byte
		enc, ok := []byte("x"), st.fitsIndex(d)
		if ok {
			enc, ok = st.appendLinesDelta(enc, d, &last, &spare, &line)
		}
		if ok != st.fits(d) {
			t.Fatalf("run %d: fits says %v, fitsIndex and appendLinesDelta %v for %+v against %q", run, st.fits(d), ok, d, body)
		}
		if !ok {
			refused++
			if string(enc) != "x" || !bytes.Equal(last, changedSet{0xff}) || !bytes.Equal(st.appendBody(nil), body) {
				t.Fatalf("run %d: a refused description left %q, %v, store %q", run, enc, last, st.appendBody(nil))
			}
		}
	}
	if refused < 200 {
		t.Fatalf("only %d of 2000 refused: the test does not reach the refusal", refused)
	}
}
