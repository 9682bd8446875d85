package diagnose

import (
	"math"
	"testing"
)

// TestTokenWeightedSteps: 100 small steps (1..8 tokens) and 10 large ones
// (512..1024). By step the median is small; by token it is large, which is
// what a token streaming through those steps experiences.
func TestTokenWeightedSteps(t *testing.T) {
	inf := math.Inf(1)
	h := histRate{bounds: []float64{1, 8, 16, 512, 1024, inf}, rates: []float64{0, 100, 100, 100, 110, 110},
		sum: 100*4.5 + 10*768, count: 110, obs: 110}
	byStep := h.quantiles()
	approx(t, "step p50", byStep.P50, 1+7*55.0/100)
	w := h.weighted()
	byToken := w.quantiles()
	// tokens: 450 in (1,8], 7,680 in (512,1024]; rank 4,065 lies 3,615 into the big bucket.
	approx(t, "token p50", byToken.P50, 512+512*3615.0/7680)
	approx(t, "token count keeps the observations", byToken.Count, 110)
	// The bucket midpoints are scaled to the exact _sum: with the same
	// buckets and a sum twice as large, the weights move to the big steps.
	h.sum = 2 * (100*4.5 + 10*768)
	w = h.weighted()
	if got := w.rates[len(w.rates)-1]; math.Abs(got-h.sum) > 1e-9 {
		t.Errorf("weights total %v, want the _sum %v", got, h.sum)
	}
	if e := (&histRate{}).weighted(); e.bounds != nil {
		t.Error("empty histogram weighted to something")
	}
}
