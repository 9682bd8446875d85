package record

import (
	"bytes"
	"io"
	"testing"
)

func BenchmarkRead(b *testing.B) {
	data := newFixture(b).bytes(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), "bench")
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
		r.Close()
	}
}
