package detect_test

import (
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/report"
)

// TestSignalCountHeld: a client change breaks the prefix cache of a busy
// replica a minute after vtop opened; without shared blocks every request
// holds its own copy of the 2k-token system prompt, the cache fills and
// the engine preempts. One of the KV verdict's signals is a gauge read at
// the scrape (requests waiting for capacity), and the line read "KV
// cache, 3 of 4 signals agree" and "2 of 4" by turns (the count fell 8
// times in the two minutes after it was named). The count is shown at its
// highest of the last 30 s while the cache binds: it rises as evidence
// joins, and two people reading the screen seconds apart read the same
// line.
func TestSignalCountHeld(t *testing.T) {
	const onset = 4 * time.Minute
	p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3",
		Scenarios: []sim.ScenarioSpec{{Name: "busy"}, {Name: "prefix-cache-miss", Delay: onset}}})
	for p.fleet.Elapsed() < 3*time.Minute {
		p.fleet.Advance(time.Second)
	}
	var named time.Duration
	last, shown, falls := "", 0, 0
	for p.fleet.Elapsed() < onset+4*time.Minute {
		v := p.step().Endpoints[0].Verdict
		if v.Limit != diagnose.LimitKVCache {
			if named > 0 {
				t.Fatalf("at %v the KV cache named at %v gave way to %s", p.fleet.Elapsed()-onset, named, v.Limit)
			}
			continue
		}
		if named == 0 {
			named = p.fleet.Elapsed() - onset
		}
		line := report.VerdictLine(&v, false)
		if last != "" && line != last {
			t.Logf("at %v: %s", p.fleet.Elapsed()-onset, line)
		}
		if shown > 0 && v.Signals < shown {
			falls++
		}
		last, shown = line, v.Signals
		if p.fleet.Elapsed()-onset >= named+2*time.Minute {
			break
		}
	}
	if named == 0 {
		t.Fatal("the KV cache was never named")
	}
	if falls > 1 {
		t.Errorf("the signals shown fell %d times in the two minutes after the KV cache was named at %v", falls, named)
	}
}
