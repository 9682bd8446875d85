package diagnose

import (
	"math"
	"sort"
)

// smallDeltaTolerance matches Prometheus: relative differences this small
// between adjacent buckets are float noise, not data.
const smallDeltaTolerance = 1e-12

// bucketQuantile is Prometheus' histogram_quantile for classic buckets
// (promql.BucketQuantile, v3): linear interpolation inside the bucket, a
// natural lower bound of 0 for the first bucket when its bound is positive,
// the second-highest bound when the rank falls in the +Inf bucket, NaN with
// no observations or no +Inf bucket, and monotonicity forced over
// non-decreasing bounds. bounds must be sorted ascending (vtop's are) and end
// in +Inf; counts are cumulative (here: per-second rates over a window).
// It is written out rather than imported because promql drags ~280 packages
// into the binary; quantile_test.go checks it against promql.BucketQuantile.
func bucketQuantile(q float64, bounds, counts []float64) float64 {
	switch {
	case math.IsNaN(q):
		return math.NaN()
	case q < 0:
		return math.Inf(-1)
	case q > 1:
		return math.Inf(1)
	}
	n := len(bounds)
	if n == 0 || !math.IsInf(bounds[n-1], 1) {
		return math.NaN()
	}
	// Coalesce equal bounds and force monotonicity, into a small scratch copy
	// (the caller's slices are shared history).
	var bb, cc [64]float64
	b, c := bb[:0], cc[:0]
	if n > len(bb) {
		b, c = make([]float64, 0, n), make([]float64, 0, n)
	}
	for i := 0; i < n; i++ {
		if len(b) > 0 && bounds[i] == b[len(b)-1] {
			c[len(c)-1] += counts[i]
			continue
		}
		b = append(b, bounds[i])
		c = append(c, counts[i])
	}
	prev := c[0]
	for i := 1; i < len(c); i++ {
		cur := c[i]
		switch {
		case cur == prev:
		case almostEqual(prev, cur, smallDeltaTolerance), cur < prev:
			c[i] = prev
		default:
			prev = cur
		}
	}
	if len(b) < 2 {
		return math.NaN()
	}
	obs := c[len(c)-1]
	if obs == 0 || math.IsNaN(obs) {
		return math.NaN()
	}
	rank := q * obs
	i := sort.Search(len(b)-1, func(i int) bool { return c[i] >= rank })
	switch {
	case i == len(b)-1:
		return b[len(b)-2]
	case i == 0 && b[0] <= 0:
		return b[0]
	}
	var start float64
	end, count := b[i], c[i]
	if i > 0 {
		start = b[i-1]
		count -= c[i-1]
		rank -= c[i-1]
	}
	return start + (end-start)*(rank/count)
}

// almostEqual is Prometheus' util/almost.Equal.
func almostEqual(a, b, epsilon float64) bool {
	const minNormal = 2.2250738585072014e-308
	if a == b || (math.IsNaN(a) && math.IsNaN(b)) {
		return true
	}
	absSum := math.Abs(a) + math.Abs(b)
	diff := math.Abs(a - b)
	if a == 0 || b == 0 || absSum < minNormal {
		return diff < epsilon*minNormal
	}
	return diff/math.Min(absSum, math.MaxFloat64) < epsilon
}
