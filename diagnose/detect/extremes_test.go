package detect

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// extremesBut lists the peers a stable sort by load puts first and
// last, ties (equal loads, NaN) in the pool's order, the replica itself
// (skip) left out, or none.
func TestExtremesAsStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	values := []float64{math.NaN(), 0, 0.5, 1, 1, 2, math.Inf(1)}
	for trial := 0; trial < 2000; trial++ {
		n := 12 + r.IntN(60)
		loads := make([]float64, n)
		for i := range loads {
			loads[i] = values[r.IntN(len(values))]
			if r.IntN(3) == 0 {
				loads[i] = r.Float64()
			}
		}
		skip := r.IntN(n+1) - 1 // -1: none
		var want []int
		for i := range loads {
			if i != skip {
				want = append(want, i)
			}
		}
		slices.SortStableFunc(want, func(a, b int) int { return cmp.Compare(loads[a], loads[b]) })
		k := 1 + r.IntN(5)
		want = append(want[:k], want[len(want)-k:]...)
		if got := extremesBut(rankLoads(loads), skip, k); !slices.Equal(got, want) {
			t.Fatalf("trial %d, k %d, skip %d: got %v, want %v", trial, k, skip, got, want)
		}
	}
}
