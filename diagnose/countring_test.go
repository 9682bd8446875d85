package diagnose

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// TestCountRingExact: windowed bucket rates from the compact count rings
// equal those of the full float64 counts, for small whole counts, counts
// that outgrow uint32 (rebased, then widened when one window spans more than
// uint32 holds), fractional counts and a bucket layout change, through ring
// wrap-around and growth (the ring starts smaller than the window needs).
// Each bucket's own count (here each moves by the step) sets the width.
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
		{name: "window beyond uint16", start: 0, step: func(int) float64 { return 2000 }, width: 4},
		{name: "rebased past uint32", start: 1e12, step: func(int) float64 { return 2e7 }, width: 4},
		{name: "window beyond uint32", start: 0, step: func(int) float64 { return 3e9 }, width: 8},
		{name: "fractional", start: 0.25, step: func(int) float64 { return 0.5 }, width: 8},
		{name: "layout change", start: 10, step: func(int) float64 { return 3 }, newLayout: 40, width: 1},
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
			if got := h.counts[tTTFT].bytesPerCount(); got != c.width {
				t.Errorf("counts stored in %d bytes, want %d", got, c.width)
			}
		})
	}
}

// TestCountRingSparse: of a latency layout, only the buckets requests fall
// in within the ring are stored, each in the narrowest width its increases
// fit; a burst into a far bucket adds its column, wider than the others,
// and once the burst has left the ring the column goes again.
// Windowed rates stay those of the full counts throughout.
func TestCountRingSparse(t *testing.T) {
	bounds := []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 50, math.Inf(1)}
	own := make([]float64, len(bounds)) // observations per bucket so far
	h := newSubHistory(sources.SubKey{Model: "m"}, 32)
	const w = 20 * time.Second
	var want [][]float64 // cumulative counts by step
	check := func(i int, now time.Time) {
		t.Helper()
		a, b, ok := h.window(now, w)
		if !ok {
			return
		}
		var r histRate
		r.add(h, a, b, tTTFT)
		ia, ib := i-(h.n-1-a), i-(h.n-1-b)
		secs := float64(ib - ia)
		for k := range bounds {
			if exp := (want[ib][k] - want[ia][k]) / secs; r.rates[k] != exp {
				t.Fatalf("step %d bucket %d: rate %v, want %v", i, k, r.rates[k], exp)
			}
		}
		if exp := want[ib][len(bounds)-1] - want[ia][len(bounds)-1]; r.obs != exp {
			t.Fatalf("step %d: %v observations, want %v", i, r.obs, exp)
		}
	}
	stored := func(when string, want ...column) {
		t.Helper()
		if c := &h.counts[tTTFT]; !slices.Equal(c.cols, want) {
			t.Errorf("%s: columns stored (column, bytes) %v, want %v", when, c.cols, want)
		}
	}
	for i := range 200 {
		own[1] += 3 // (0.01, 0.05]
		own[3] += 1 // (0.1, 0.5]
		if i >= 100 && i < 105 {
			own[7] += 400 // a burst in (10, 50]
		}
		cum := make([]float64, len(bounds))
		run := 0.0
		for k, v := range own {
			run += v
			cum[k] = run
		}
		want = append(want, cum)
		var s sources.Sub
		s.Hists[sources.HTTFT] = sources.Histogram{Bounds: bounds, Counts: cum, Sum: run, Count: run}
		now := t0.Add(time.Duration(i) * time.Second)
		h.add(now, &s, 0, w+time.Second, 512)
		check(i, now)
		switch i {
		case 99:
			stored("steady", column{1, 1}, column{3, 1})
		case 104:
			stored("in the burst", column{1, 1}, column{3, 1}, column{7, 2})
		case 199:
			stored("after the burst", column{1, 1}, column{3, 1})
		}
	}
}

// TestLabelRingExact: finish-reason rates from a label ring are those of
// the values themselves: a window reaching back before the first frame
// with reasons gives none, labels present from then on are kept in a byte,
// and once a label appears later (unknown before) or one is missing from a
// scrape the ring keeps float64 values; a label missing at either end of a
// window is skipped.
func TestLabelRingExact(t *testing.T) {
	h := newSubHistory(sources.SubKey{Model: "m"}, 32)
	const w = 20 * time.Second
	var seen []map[string]float64 // the values by step
	for i := range 120 {
		m := map[string]float64{}
		if i >= 3 {
			m["length"], m["stop"] = float64(i), float64(5*i)
		}
		if i >= 60 {
			m["abort"] = float64(i - 59) // created at its first abort
		}
		if i == 90 {
			delete(m, "length")
		}
		seen = append(seen, m)
		var s sources.Sub
		for _, l := range slices.Sorted(maps.Keys(m)) {
			s.Labeled[sources.LFinished] = append(s.Labeled[sources.LFinished], sources.LabeledValue{Label: l, Value: m[l], Created: math.NaN()})
		}
		now := t0.Add(time.Duration(i) * time.Second)
		h.add(now, &s, 0, w+time.Second, 512)
		switch i {
		case 59:
			if got := h.finished.vals.bytesPerCount(); got != 1 {
				t.Errorf("step %d: values kept in %d bytes, want 1", i, got)
			}
		case 60:
			if got := h.finished.vals.bytesPerCount(); got != 8 {
				t.Errorf("step %d: values kept in %d bytes after a new label, want 8", i, got)
			}
		}
		a, b, ok := h.window(now, w)
		if !ok {
			continue
		}
		ia, ib := i-(h.n-1-a), i-(h.n-1-b)
		secs := float64(ib - ia)
		var want []labeledRate
		for _, l := range slices.Sorted(maps.Keys(seen[ib])) {
			if va, ok := seen[ia][l]; ok {
				want = append(want, labeledRate{label: l, rate: (seen[ib][l] - va) / secs})
				continue
			}
			// Missing at a: born after it (its whole value is the
			// window's), unless an earlier frame had it (a gap: unknown)
			// or the family had no row at a (nothing says it was alive).
			if len(seen[ia]) > 0 && !slices.ContainsFunc(seen[:ia], func(m map[string]float64) bool { _, ok := m[l]; return ok }) {
				want = append(want, labeledRate{label: l, rate: seen[ib][l] / secs})
			}
		}
		if got := h.finished.addRates(nil, &h.frameRing, a, b, secs); !slices.Equal(got, want) {
			t.Fatalf("step %d: rates %v, want %v", i, got, want)
		}
	}
}

// TestCountRingRandom: windowed bucket rates, _count and counter rates
// from the compact rings equal those of the counts themselves, over random
// fleets of observations: quiet buckets, bursts (some beyond uint16 and
// uint32 within a window), fractional counts now and then, jittered polls
// that the history thins, and the ring growing from its first size.
func TestCountRingRandom(t *testing.T) {
	bounds := []float64{0.01, 0.1, 0.5, 1, 5, 10, 60, math.Inf(1)}
	widths := map[int]bool{} // bytes per count seen: every width is exercised
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		h := newSubHistory(sources.SubKey{Model: "m"}, 16)
		const w = 20 * time.Second
		own := make([]float64, len(bounds))
		var prompt, above float64
		seen := map[int64][]float64{} // counts by frame time: buckets, _count, prompt tokens
		now := t0
		for i := range 300 {
			now = now.Add(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
			for k := range own {
				switch r := rng.IntN(100); {
				case r < 50 || k >= 5: // most buckets stay quiet
				case r < 90:
					own[k] += float64(rng.IntN(20))
				case r < 98:
					own[k] += float64(rng.IntN(5000))
				case r < 99 && seed%4 == 0:
					own[k] += float64(rng.IntN(1 << 30))
				case seed%8 == 1:
					own[k] += 0.5
				}
			}
			prompt += float64(rng.IntN(100000))
			cum := make([]float64, len(bounds))
			run := 0.0
			for k, v := range own {
				run += v
				cum[k] = run
			}
			above += float64(rng.IntN(2))
			count := run + above // _count may run above +Inf
			var s sources.Sub
			for c := range s.Counters {
				s.Counters[c], s.Created[c] = math.NaN(), math.NaN()
			}
			s.Counters[sources.CPromptTokens] = prompt
			s.Hists[sources.HTTFT] = sources.Histogram{Bounds: bounds, Counts: cum, Sum: run, Count: count, Created: math.NaN()}
			h.add(now, &s, 600*time.Millisecond, w+time.Second, 512)
			seen[now.UnixNano()] = append(slices.Clone(cum), count, prompt)
			widths[h.counts[tTTFT].bytesPerCount()] = true
			a, b, ok := h.window(now, w)
			if !ok {
				continue
			}
			fa, fb := h.at(a), h.at(b)
			va, vb := seen[fa.ns], seen[fb.ns]
			secs := time.Duration(fb.ns - fa.ns).Seconds()
			var r histRate
			r.add(h, a, b, tTTFT)
			for k := range bounds {
				if exp := (vb[k] - va[k]) / secs; r.rates[k] != exp {
					t.Fatalf("seed %d step %d bucket %d: rate %v, want %v", seed, i, k, r.rates[k], exp)
				}
			}
			if exp := vb[len(bounds)] - va[len(bounds)]; r.obs != exp {
				t.Fatalf("seed %d step %d: %v observations, want %v", seed, i, r.obs, exp)
			}
			x := newAcc()
			x.addSub(h, a, b, nil, 0)
			if got, exp := x.rates[sources.CPromptTokens], (vb[len(bounds)+1]-va[len(bounds)+1])/secs; got != exp {
				t.Fatalf("seed %d step %d: prompt tokens %v/s, want %v/s", seed, i, got, exp)
			}
		}
		if len(h.ring) <= 16 {
			t.Errorf("seed %d: the ring never grew (%d slots)", seed, len(h.ring))
		}
	}
	for _, w := range []int{1, 2, 4, 8} {
		if !widths[w] {
			t.Errorf("no count kept in %d bytes: %v", w, widths)
		}
	}
}

// bytesPerCount is the bytes the widest stored count takes (for tests): 0
// while no column moves, 8 once counts are kept as they are.
func (c *countRing) bytesPerCount() int {
	if c.wide != nil {
		return 8
	}
	w := 0
	for _, col := range c.cols {
		w = max(w, int(col.width))
	}
	return w
}
