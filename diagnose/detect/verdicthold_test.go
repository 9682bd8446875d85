package detect_test

import (
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
)

// TestVerdictHoldsNearTheTarget: a 14B whose prompts no longer share their
// system prompt computes each prompt in full, and its TTFT p95 sits about
// the 500 ms target. Once a limit is named for latency over target, the
// verdict does not call the endpoint healthy again until the latency is a
// fifth under the target; and once it said "too few observations" in the
// first seconds, it does not claim "latency within target" before it has
// the points to judge. It read "compute" and "nothing waits, latency
// within target" by turns, and "too few observations" and "latency within
// target" by turns in its first eight seconds (a busy 14B whose first
// seconds' inter-token p95 crossed the target by turns).
func TestVerdictHoldsNearTheTarget(t *testing.T) {
	qwen := sim.LookupModel("Qwen/Qwen2.5-14B-Instruct")
	for _, scs := range [][]sim.ScenarioSpec{{{Name: "prefix-cache-miss"}}, {{Name: "busy"}, {Name: "stray-bad-requests", Delay: 4 * time.Minute}}} {
		t.Run(scs[len(scs)-1].Name, func(t *testing.T) {
			verdictHolds(t, sim.ReplicaConfig{Name: "replica-3", Profile: "v0.11", Model: qwen, Scenarios: scs})
		})
	}
	// SGLang's 14B: bursts move the inter-token p95 about the target, and
	// the quiet line gained and lost "but tokens stream slower than
	// target" 8 times in 20 s.
	t.Run("sglang", func(t *testing.T) {
		verdictHolds(t, sim.ReplicaConfig{Name: "replica-3", Profile: "sglang", Model: qwen, Scenarios: []sim.ScenarioSpec{{Name: "prefix-cache-miss"}}})
	})
}

func verdictHolds(t *testing.T, rc sim.ReplicaConfig) {
	p := newScenarioPipeline(t, rc)
	for p.fleet.Elapsed() < 3*time.Minute {
		p.fleet.Advance(time.Second)
	}
	prev := diagnose.Verdict{}
	paceTurns := 0
	for k := 1; k <= 240; k++ {
		f := p.step()
		ep := &f.Endpoints[0]
		v, st := ep.Verdict, &ep.Stats
		quiet := v.Limit == diagnose.LimitHealthy || v.Limit == diagnose.LimitBurst
		if quiet && prev.Limit == diagnose.LimitFewData && ep.Trend.Points < 10 {
			t.Errorf("at %ds: \"too few observations\", then a quiet verdict at %d points", k, ep.Trend.Points)
		}
		if quiet && prev.Limit.Symptom() && !v.Drained && v.Limit != diagnose.LimitBurst {
			ttft, itl := f.SLO.TTFT.Seconds(), f.SLO.ITL.Seconds()
			if st.TTFT.Count >= 20 && st.TTFT.P95 > 0.8*ttft || st.ITL.Count >= 20 && st.ITL.P50 > 0.8*itl {
				t.Errorf("at %ds: %s → healthy at TTFT p95 %.0f ms, inter-token p50 %.0f ms", k, prev.Limit, 1000*st.TTFT.P95, 1000*st.ITL.P50)
			}
		}
		if quiet && (prev.Limit == diagnose.LimitHealthy || prev.Limit == diagnose.LimitBurst) && v.PaceOver != prev.PaceOver {
			paceTurns++
		}
		prev = v
	}
	if paceTurns > 4 {
		t.Errorf("the quiet line's pace turned %d times in 240 s", paceTurns)
	}
}
