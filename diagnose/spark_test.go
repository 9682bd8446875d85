package diagnose

import (
	"math"
	"testing"
)

// A p95 inside the first bucket is only known to be under its bound: the
// sparkline draws it as 0 (the lowest block), a p95 above it as itself,
// an unknown one as unknown.
func TestSparkP95FirstBucket(t *testing.T) {
	queue := func(p95 float64) Stats {
		return Stats{Queue: Quantiles{P95: p95, Lowest: 0.3, Highest: 7680}}
	}
	for _, c := range []struct{ p95, want float64 }{
		{0.285, 0}, // an idle queue: 95% of its observations under 0.3 s
		{0.3, 0},
		{0.42, 0.42},
		{math.NaN(), math.NaN()},
	} {
		s := queue(c.p95)
		p := sparkPoint(t0, &s)
		got := float64(p.V[SpQueue])
		if !(got == float64(float32(c.want)) || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("queue p95 %v: spark %v, want %v", c.p95, got, c.want)
		}
	}
	s := Stats{TTFT: Quantiles{P95: 0.0009, Lowest: 0.001, Highest: 2560}}
	if p := sparkPoint(t0, &s); p.V[SpTTFT] != 0 {
		t.Errorf("TTFT under its 1 ms first bound: spark %v, want 0", p.V[SpTTFT])
	}
}
