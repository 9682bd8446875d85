package diagnose

import (
	"math"
	"testing"
	"time"
)

// FromSeconds saturates instead of overflowing: a hostile bucket bound of
// 1e300 seconds is the longest duration, not a negative one.
func TestFromSeconds(t *testing.T) {
	if d := FromSeconds(1e300); d != time.Duration(math.MaxInt64) {
		t.Errorf("FromSeconds(1e300) = %v, want the largest duration", d)
	}
	if d := FromSeconds(-1e300); d != time.Duration(math.MinInt64) {
		t.Errorf("FromSeconds(-1e300) = %v", d)
	}
	if d := FromSeconds(1.5); d != 1500*time.Millisecond {
		t.Errorf("FromSeconds(1.5) = %v", d)
	}
}
