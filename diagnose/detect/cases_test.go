package detect

import (
	"math"
	"strings"
	"testing"
	"time"

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

// Two restarts are a crash loop only with memory climbing before each
// (an OOM kill's signature, again); two deploys a few minutes apart, the
// new process as big as the old, are not; a third restart is, whatever
// the memory did.
func TestCrashLoopOnTwoOOMKills(t *testing.T) {
	p := make([]float64, len(clParams))
	for i, v := range clParams {
		p[i] = v.Default
	}
	at := func(m int, before, after float64) diagnose.Restart {
		return diagnose.Restart{At: t0.Add(time.Duration(m) * time.Minute), RSSBefore: before, RSSAfter: after, GPUMemBefore: math.NaN(), GPUMemAfter: math.NaN()}
	}
	const gib = 1 << 30
	for _, c := range []struct {
		name string
		rs   []diagnose.Restart
		want bool
	}{
		{"two OOM kills", []diagnose.Restart{at(0, 4*gib, 1.1*gib), at(1, 4*gib, 1.1*gib)}, true},
		{"two deploys", []diagnose.Restart{at(0, 1.2*gib, 1.1*gib), at(4, 1.2*gib, 1.1*gib)}, false},
		{"one OOM kill, one deploy", []diagnose.Restart{at(0, 4*gib, 1.1*gib), at(4, 1.2*gib, 1.1*gib)}, false},
		{"memory unknown", []diagnose.Restart{at(0, math.NaN(), math.NaN()), at(1, math.NaN(), math.NaN())}, false},
		{"one OOM kill", []diagnose.Restart{at(0, 4*gib, 1.1*gib)}, false},
		{"three deploys", []diagnose.Restart{at(0, 1.2*gib, 1.1*gib), at(4, 1.2*gib, 1.1*gib), at(8, 1.2*gib, 1.1*gib)}, true},
	} {
		x := &evalCtx{now: t0.Add(10 * time.Minute)}
		u := &unit{ep: &diagnose.EndpointView{Restarts: c.rs}}
		if got, _ := ruleCrashLoop.check(x, u, p); (got == condMet) != c.want {
			t.Errorf("%s: %v, want met %v", c.name, got, c.want)
		}
	}
}

// A preemption is a step that found the KV cache full: the reading at the
// scrape can be long after it, so the summary says the window's highest
// beside it ("at KV 0.9%" read as a contradiction).
func TestPreemptionSaysTheFullCache(t *testing.T) {
	p := make([]float64, len(prParams))
	for i, v := range prParams {
		p[i] = v.Default
	}
	st := diagnose.Stats{PreemptionsRate: 0.06, ReqRate: 6, KVUsage: 0.009, KVUsageMax: 1}
	u := &unit{ep: &diagnose.EndpointView{}, st: &st}
	var fd diagnose.Finding
	rulePreemption.describe(&evalCtx{now: t0, f: &diagnose.Frame{Time: t0}}, u, p, diagnose.SevWarning, &fd)
	if s := txt(fd.Summary); !strings.Contains(s, "KV up to 100% in the window (0.9% now)") {
		t.Errorf("summary: %s", s)
	}
}
