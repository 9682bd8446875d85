package sources

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortPairs orders buckets as a stable sort by bound does, counts moving
// with their bounds (equal bounds, per-pid copies, keep their order).
func TestSortPairsStable(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	bounds := []float64{math.Inf(-1), 0, 0.1, 1, 2.5, 10, math.Inf(1)}
	for trial := 0; trial < 500; trial++ {
		n := r.IntN(40)
		les, counts := make([]float64, n), make([]float64, n)
		for i := range les {
			les[i], counts[i] = bounds[r.IntN(len(bounds))], float64(i)
		}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(les[a], les[b]) })
		wantL, wantC := make([]float64, n), make([]float64, n)
		for i, j := range idx {
			wantL[i], wantC[i] = les[j], counts[j]
		}
		sortPairs(les, counts)
		if !slices.Equal(les, wantL) || !slices.Equal(counts, wantC) {
			t.Fatalf("trial %d: got %v %v, want %v %v", trial, les, counts, wantL, wantC)
		}
	}
}
