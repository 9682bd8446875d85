package diagnose

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/promql"
)

// TestBucketQuantileMatchesPromQL compares bucketQuantile with Prometheus'
// own promql.BucketQuantile (imported only here, in a test) over random
// cumulative histograms, including empty ones, non-monotonic ones and
// duplicate bounds.
func TestBucketQuantileMatchesPromQL(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	qs := []float64{0, 0.01, 0.5, 0.9, 0.95, 0.99, 1, -0.1, 1.1, math.NaN()}
	for iter := 0; iter < 20000; iter++ {
		n := 1 + rng.IntN(25)
		bounds := make([]float64, n)
		v := 0.0
		if rng.IntN(10) == 0 {
			v = -1 // a histogram whose first bound is ≤ 0
		}
		for i := 0; i < n-1; i++ {
			if rng.IntN(15) != 0 { // sometimes repeat a bound
				v += rng.Float64() * 3
			}
			bounds[i] = v
		}
		bounds[n-1] = math.Inf(1)
		if rng.IntN(30) == 0 {
			bounds[n-1] = v + 1 // no +Inf bucket
		}
		counts := make([]float64, n)
		c := 0.0
		for i := range counts {
			switch rng.IntN(6) {
			case 0: // flat
			case 1: // a decrease: broken monotonicity
				c -= rng.Float64() * 5
			default:
				c += rng.Float64() * 50
			}
			if rng.IntN(40) == 0 {
				c = 0
			}
			counts[i] = c
		}
		if rng.IntN(20) == 0 {
			clear(counts) // no observations
		}
		for _, q := range qs {
			got := bucketQuantile(q, bounds, counts)
			bs := make(promql.Buckets, n)
			for i := range bs {
				bs[i] = promql.Bucket{UpperBound: bounds[i], Count: counts[i]}
			}
			want, _, _, _, _, _ := promql.BucketQuantile(q, bs)
			if !(got == want || (math.IsNaN(got) && math.IsNaN(want)) || math.Abs(got-want) <= 1e-12*math.Abs(want)) {
				t.Fatalf("q=%v bounds=%v counts=%v: got %v, promql %v", q, bounds, counts, got, want)
			}
		}
	}
}

// TestBucketQuantileByHand pins the semantics with cases worked on paper.
func TestBucketQuantileByHand(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name          string
		q             float64
		bounds, count []float64
		want          float64
	}{
		// 10 in (0,0.1], 30 in (0.1,0.5], 60 in (0.5,1]: p50 has rank 50,
		// 10 below 0.5... rank 50 lies in (0.5,1] at (50-40)/60 of the way.
		{"interpolate", 0.5, []float64{0.1, 0.5, 1, inf}, []float64{10, 40, 100, 100}, 0.5 + 0.5*(10.0/60)},
		// rank 95 in (0.5,1]: 0.5 + 0.5*(55/60).
		{"p95", 0.95, []float64{0.1, 0.5, 1, inf}, []float64{10, 40, 100, 100}, 0.5 + 0.5*(55.0/60)},
		// The lowest bucket interpolates from 0.
		{"first bucket from zero", 0.05, []float64{0.1, 0.5, 1, inf}, []float64{10, 40, 100, 100}, 0.05},
		// A rank in the +Inf bucket returns the highest finite bound.
		{"+Inf bucket", 0.99, []float64{0.1, 0.5, inf}, []float64{10, 40, 100}, 0.5},
		{"no observations", 0.5, []float64{0.1, inf}, []float64{0, 0}, math.NaN()},
		{"no +Inf", 0.5, []float64{0.1, 0.5}, []float64{1, 2}, math.NaN()},
		{"one bucket", 0.5, []float64{inf}, []float64{5}, math.NaN()},
	}
	for _, c := range cases {
		got := bucketQuantile(c.q, c.bounds, c.count)
		if !(got == c.want || (math.IsNaN(got) && math.IsNaN(c.want)) || math.Abs(got-c.want) < 1e-12) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func BenchmarkBucketQuantile(b *testing.B) {
	bounds := []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560, math.Inf(1)}
	counts := make([]float64, len(bounds))
	for i := range counts {
		counts[i] = float64(i * i * 3)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		bucketQuantile(0.95, bounds, counts)
	}
}
