package diagnose

import (
	"math"
	"time"
)

// FromSeconds converts seconds to a Duration, saturating at the largest and
// smallest Duration instead of overflowing (float-to-int conversion of an
// out-of-range value is undefined in Go); NaN is 0.
func FromSeconds(v float64) time.Duration {
	switch {
	case math.IsNaN(v):
		return 0
	case v >= float64(math.MaxInt64)/1e9:
		return math.MaxInt64
	case v <= float64(math.MinInt64)/1e9:
		return math.MinInt64
	}
	return time.Duration(v * 1e9)
}
