package detect

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/vtop-dev/vtop/diagnose"
)

// extremes lists the peers a stable sort by load puts first and last,
// ties (equal loads, NaN) in the pool's order.
func TestExtremesAsStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	loads := []float64{math.NaN(), 0, 0.5, 1, 1, 2, math.Inf(1)}
	for trial := 0; trial < 2000; trial++ {
		n := 11 + r.IntN(60)
		eps := make([]*diagnose.EndpointView, n)
		load := map[*diagnose.EndpointView]float64{}
		for i := range eps {
			eps[i] = &diagnose.EndpointView{Name: strconv.Itoa(i)}
			load[eps[i]] = loads[r.IntN(len(loads))]
			if r.IntN(3) == 0 {
				load[eps[i]] = r.Float64()
			}
		}
		key := func(ep *diagnose.EndpointView) float64 { return load[ep] }
		want := slices.Clone(eps)
		slices.SortStableFunc(want, func(a, b *diagnose.EndpointView) int { return cmp.Compare(key(a), key(b)) })
		k := 1 + r.IntN(5)
		want = append(want[:k], want[len(want)-k:]...)
		if got := extremes(eps, key, k); !slices.Equal(got, want) {
			t.Fatalf("trial %d, k %d: got %v, want %v", trial, k, names(got), names(want))
		}
	}
}

func names(eps []*diagnose.EndpointView) []string {
	var out []string
	for _, ep := range eps {
		out = append(out, ep.Name)
	}
	return out
}
