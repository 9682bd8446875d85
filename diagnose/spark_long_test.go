package diagnose

import (
	"math"
	"testing"
	"time"
)

// The long history keeps one point per LongStep, the largest value of the
// step (a one-poll spike survives), and no more than LongPoints of them.
func TestSparkLong(t *testing.T) {
	var r sparkRing
	r.max = 240
	for i := 0; i < 3600; i++ { // an hour of one-second polls
		p := SparkPoint{UnixMilli: t0.Add(time.Duration(i) * time.Second).UnixMilli()}
		for k := range p.V {
			p.V[k] = float32(math.NaN())
		}
		p.V[SpTTFT] = 0.1
		if i == 3585 {
			p.V[SpTTFT] = 9 // one poll's spike, in the newest complete step
		}
		r.push(p)
	}
	long := r.longView()
	if len(long) != LongPoints {
		t.Fatalf("%d long points", len(long))
	}
	span := time.Duration(long[len(long)-1].UnixMilli-long[0].UnixMilli) * time.Millisecond
	if span < 29*time.Minute || span > 30*time.Minute {
		t.Errorf("long history spans %v", span)
	}
	for i := 1; i < len(long); i++ {
		if d := long[i].UnixMilli - long[i-1].UnixMilli; d != LongStep.Milliseconds() {
			t.Fatalf("step %d ms at %d", d, i)
		}
	}
	if got := long[len(long)-1].V[SpTTFT]; got != 9 {
		t.Errorf("the spike was lost: %v", got)
	}
	if got := long[0].V[SpKV]; !math.IsNaN(float64(got)) {
		t.Errorf("unknown became %v", got)
	}
	if len(r.view()) != 240 {
		t.Errorf("fine ring %d", len(r.view()))
	}
}
