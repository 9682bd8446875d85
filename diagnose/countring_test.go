package diagnose

import (
	"math"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// TestCountRingExact: windowed bucket rates from the compact count rings
// equal those of the full float64 counts, for small whole counts, counts
// that outgrow uint32 (rebased, then widened when one window spans more than
// uint32 holds), fractional counts and a bucket layout change, through ring
// wrap-around and growth (the ring starts smaller than the window needs).
// _count, kept as the rings' last column, comes out as the exposed _count
// (here above the +Inf bucket), not as a bucket.
func TestCountRingExact(t *testing.T) {
	cases := []struct {
		name      string
		start     float64
		step      func(i int) float64 // increase of the first bucket at step i
		width     int                 // bytes a count ends up stored in
		newLayout int                 // step at which the layout changes (0: never)
	}{
		{name: "small whole", start: 0, step: func(i int) float64 { return float64(7 * (i % 5)) }, width: 2},
		{name: "rebased past uint16", start: 1e9, step: func(int) float64 { return 300 }, width: 2},
		{name: "window beyond uint16", start: 0, step: func(int) float64 { return 1000 }, width: 4},
		{name: "rebased past uint32", start: 1e12, step: func(int) float64 { return 2e7 }, width: 4},
		{name: "window beyond uint32", start: 0, step: func(int) float64 { return 3e9 }, width: 8},
		{name: "fractional", start: 0.25, step: func(int) float64 { return 0.5 }, width: 8},
		{name: "layout change", start: 10, step: func(int) float64 { return 3 }, newLayout: 40, width: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newSubHistory(sources.SubKey{Model: "m"}, 8)
			bounds := []float64{0.1, 1, math.Inf(1)}
			wide := []float64{0.1, 0.5, 1, math.Inf(1)}
			var want [][]float64 // counts as stored, by step
			var wantCount []float64
			cur := c.start
			const step, w = time.Second, 20 * time.Second
			for i := range 100 {
				b := bounds
				if c.newLayout > 0 && i >= c.newLayout {
					b = wide
				}
				cur += c.step(i)
				counts := make([]float64, len(b))
				for k := range counts {
					counts[k] = cur * float64(k+1) // cumulative: non-decreasing
				}
				want = append(want, counts)
				wantCount = append(wantCount, counts[len(counts)-1]+float64(i))
				var s sources.Sub
				s.Hists[sources.HTTFT] = sources.Histogram{Bounds: b, Counts: counts, Sum: cur, Count: wantCount[i]}
				now := t0.Add(time.Duration(i) * step)
				h.add(now, &s, 0, 2*w, 512)
				a, bi, ok := h.window(now, w)
				if !ok {
					continue
				}
				var r histRate
				r.add(h, a, bi, tTTFT)
				// frame j of the ring is step i-(n-1-j)
				ia, ib := i-(h.n-1-a), i-(h.n-1-bi)
				for c.newLayout > 0 && ib >= c.newLayout && ia < c.newLayout {
					ia++
				}
				if ia >= ib {
					if r.rates != nil {
						t.Fatalf("step %d: rates across a layout change: %v", i, r.rates)
					}
					continue
				}
				secs := (time.Duration(ib-ia) * step).Seconds()
				if obs := wantCount[ib] - wantCount[ia]; r.obs != obs || r.count != obs/secs {
					t.Fatalf("step %d: %v observations (%v/s), want %v (%v/s)", i, r.obs, r.count, obs, obs/secs)
				}
				for k := range want[ib] {
					if exp := (want[ib][k] - want[ia][k]) / secs; r.rates[k] != exp {
						t.Fatalf("step %d bucket %d: rate %v, want %v", i, k, r.rates[k], exp)
					}
				}
			}
			if len(h.ring) <= 8 {
				t.Errorf("ring never grew: %d slots", len(h.ring))
			}
			if got := h.counts[tTTFT].width(); got != c.width {
				t.Errorf("counts stored in %d bytes, want %d", got, c.width)
			}
		})
	}
}
