package detect

import (
	"testing"

	"github.com/vtop-dev/vtop/diagnose"
)

// A throttled GPU withholds capacity the way a thrashing cache does: the
// lever is its cooling, so a queue clients abandon on it is not headed
// "arrivals exceed capacity", nor sized in replicas; an unthrottled GPU's
// compute is capacity.
func TestThrottledComputeIsNotCapacity(t *testing.T) {
	var st diagnose.Stats
	if capacityUnder(&diagnose.Verdict{Limit: diagnose.LimitCompute, Throttled: true}, &st) {
		t.Error("a throttled GPU's compute read as capacity")
	}
	if !capacityUnder(&diagnose.Verdict{Limit: diagnose.LimitCompute}, &st) {
		t.Error("a busy GPU's compute is capacity")
	}
}
