package record

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"unicode"
)

// FuzzReader: whatever the bytes, reading a recording never panics, never
// loops, and every string it hands out is printable. The seeds are a real
// recording, whole, cut and with a byte flipped. Run
// `go test ./record -fuzz FuzzReader -fuzztime 5m` to search further.
func FuzzReader(f *testing.F) {
	data := newFixture(f).bytes(f)
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add(data[:40])
	flip := bytes.Clone(data)
	flip[len(flip)/3] ^= 1
	f.Add(flip)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b), "fuzz.vtop")
		if err != nil {
			printable(t, err.Error())
			return
		}
		for _, tg := range r.Header().Targets {
			printable(t, tg.Name+tg.URL)
		}
		for n := 0; ; n++ {
			if n > len(b) {
				t.Fatalf("%d events from %d bytes", n, len(b))
			}
			ev, err := r.Next()
			if err != nil {
				var d *Damage
				if err != io.EOF && !errors.As(err, &d) {
					t.Fatalf("error %T %v", err, err)
				}
				printable(t, err.Error())
				return
			}
			printable(t, ev.Err)
			printable(t, ev.GPU.Source+ev.GPU.Unavailable+ev.Procs.RootName+ev.Procs.Note+ev.Procs.MemLimitFrom)
			for _, g := range ev.GPU.GPUs {
				printable(t, g.Name+g.Problem)
				for _, p := range g.Processes {
					printable(t, p.Name)
				}
			}
			for _, e := range ev.GPU.Events {
				printable(t, e.Text)
			}
		}
	})
}

// FuzzDelta: a body encoded against any previous body decodes to itself.
func FuzzDelta(f *testing.F) {
	f.Add([]byte("a 1\nb 2\nc 3\n"), []byte("a 1\nb 5\nc 3\nd 4"))
	f.Add([]byte(""), []byte("x\n\n"))
	f.Add([]byte("a{x=\"1\"} 10.0\nb 7\nc 1e+20"), []byte("a{x=\"1\"} 15.0\nb -3\nc 2e+20\nd 1"))
	f.Fuzz(func(t *testing.T, prev, cur []byte) {
		pl, cl := splitLines(nil, prev), splitLines(nil, cur)
		var wlast, wspare, rlast changedSet
		for i := 0; i < 2; i++ { // twice: against the first delta's changed set too
			enc := appendDelta(nil, pl, cl, &wlast, &wspare)
			got, err := applyDelta(nil, pl, enc, len(cur)+1, &rlast, Version)
			if err != nil || !bytes.Equal(got, cur) {
				t.Fatalf("delta of %q against %q: %q, %v", cur, prev, got, err)
			}
		}
		// Decoding arbitrary bytes against prev never panics.
		_, _ = applyDelta(nil, pl, cur, 1<<16, &rlast, Version)
		_, _ = applyDelta(nil, pl, cur, 1<<16, &rlast, packedOps-1)
	})
}

func printable(t *testing.T, s string) {
	t.Helper()
	for _, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			t.Fatalf("unprintable %U in %q", r, s)
		}
	}
}
