package detect

import (
	"testing"

	"github.com/vtop-dev/vtop/diagnose"
)

// A fleet opened mid-incident: the replica that queues has too few points
// to be judged, the rest are healthy. The fleet is not "healthy" then;
// once a member names a limit, that limit is the fleet's.
func TestSumVerdictsFewData(t *testing.T) {
	v := func(l diagnose.Limit) *diagnose.Verdict { return &diagnose.Verdict{Limit: l} }
	for _, c := range []struct {
		name string
		in   []*diagnose.Verdict
		want diagnose.Limit
	}{
		{"first seconds", []*diagnose.Verdict{v(diagnose.LimitFewData), v(diagnose.LimitHealthy), v(diagnose.LimitIdle)}, diagnose.LimitFewData},
		{"all healthy", []*diagnose.Verdict{v(diagnose.LimitHealthy), v(diagnose.LimitIdle)}, diagnose.LimitHealthy},
		{"a limit named", []*diagnose.Verdict{v(diagnose.LimitFewData), v(diagnose.LimitKVCache), v(diagnose.LimitHealthy)}, diagnose.LimitKVCache},
	} {
		if got := sumVerdicts(c.in); got.Limit != c.want {
			t.Errorf("%s: %s, want %s", c.name, got.Limit, c.want)
		}
	}
}

// A pool whose members are quiet is not "latency within target" while one
// member's tokens stream slower than target: the pool carries the pace.
func TestSumVerdictsCarriesThePace(t *testing.T) {
	slow := &diagnose.Verdict{Limit: diagnose.LimitHealthy, PaceOver: true}
	if got := sumVerdicts([]*diagnose.Verdict{{Limit: diagnose.LimitHealthy}, slow}); got.Limit != diagnose.LimitHealthy || !got.PaceOver {
		t.Errorf("%+v", got)
	}
	if got := sumVerdicts([]*diagnose.Verdict{{Limit: diagnose.LimitHealthy}, {Limit: diagnose.LimitIdle}}); got.PaceOver {
		t.Errorf("%+v", got)
	}
}

// A pool's compute is a throttled GPU's when it is each such member's.
func TestSumVerdictsCarriesTheThrottle(t *testing.T) {
	hot := &diagnose.Verdict{Limit: diagnose.LimitCompute, Throttled: true}
	if got := sumVerdicts([]*diagnose.Verdict{{Limit: diagnose.LimitHealthy}, hot}); got.Limit != diagnose.LimitCompute || !got.Throttled {
		t.Errorf("%+v", got)
	}
	if got := sumVerdicts([]*diagnose.Verdict{hot, {Limit: diagnose.LimitCompute}}); got.Throttled {
		t.Errorf("%+v", got)
	}
}
