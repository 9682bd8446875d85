package sources

import (
	"io"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// The floor: prometheus textparse reading every entry of the full v0.10.1
// dump and the value of every sample, nothing else.
func BenchmarkTextparseBare(b *testing.B) {
	body := v010Dump(b)
	st := labels.NewSymbolTable()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p, _ := textparse.New(body, textCT, st, textparse.ParserOptions{})
		for {
			e, err := p.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if e == textparse.EntrySeries {
				p.Series()
			}
		}
	}
}

// The floor for a consumer that also decodes every sample's labels.
func BenchmarkTextparseLabels(b *testing.B) {
	body := v010Dump(b)
	st := labels.NewSymbolTable()
	var ls labels.Labels
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p, _ := textparse.New(body, textCT, st, textparse.ParserOptions{})
		for {
			e, err := p.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if e == textparse.EntrySeries {
				p.Series()
				p.Labels(&ls)
			}
		}
	}
}

// vtop's full parse for a steady endpoint: parse + normalize with the
// per-target series cache warm. (The same body again would take the
// incremental path and parse nothing: BenchmarkNormalizeSimSteady measures
// that path on bodies that move.)
func BenchmarkNormalize(b *testing.B) {
	body := v010Dump(b)
	n := NewFullNormalizer()
	if _, err := n.Normalize(body, textCT); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := n.Normalize(body, textCT); err != nil {
			b.Fatal(err)
		}
	}
}

// The first scrape of a target: every series is classified.
func BenchmarkNormalizeCold(b *testing.B) {
	body := v010Dump(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := NewNormalizer().Normalize(body, textCT); err != nil {
			b.Fatal(err)
		}
	}
}
