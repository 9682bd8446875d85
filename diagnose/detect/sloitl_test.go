package detect_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
)

// Prompts that never hit the prefix cache are prefilled whole, a chunk at
// a time, in steps that every running stream waits through: on the 14B
// model the inter-token p99 sits near 200 ms (four times the chat
// target) while its p50 and p95 stream at pace. When that is the SLO's
// only breach, it says so and that it is not capacity; it advised "add
// capacity if the engine is simply saturated" with KV at 10 % and ten
// requests running.
func TestSLOTailOnlyIsNotCapacity(t *testing.T) {
	qwen := sim.LookupModel("Qwen/Qwen2.5-14B-Instruct")
	for _, c := range []struct {
		profile, scenario string
		// smaller is the step-size lever the action names for this
		// engine; no flag of another engine or generation may appear.
		smaller string
	}{
		{"latest", "prefix-cache-miss", "(a lower --max-num-batched-tokens)"},
		// V0 prefills whole prompts unless told to chunk them.
		{"v0.6", "healthy", "(--enable-chunked-prefill, or a lower --max-num-batched-tokens with it)"},
		// SGLang chunks by default: its own flag, no V0 clause (it read
		// "V0: (no SGLang flag: …)").
		{"sglang", "batch-job-bursts", "(a lower --chunked-prefill-size)"},
	} {
		t.Run(c.profile+"/"+c.scenario, func(t *testing.T) {
			t.Parallel()
			p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Model: qwen, Profile: c.profile,
				Scenarios: []sim.ScenarioSpec{{Name: c.scenario}}})
			for p.fleet.Elapsed() < 3*time.Minute {
				p.fleet.Advance(time.Second)
			}
			tail := 0
			for p.fleet.Elapsed() < 10*time.Minute {
				f := p.step()
				for _, fd := range append(f.Findings, f.Pending...) {
					if fd.Rule != "slo_breach" {
						continue
					}
					s, a := format.Say(fd.Summary), format.Say(fd.Action)
					if !strings.Contains(s, "the slowest gaps only") {
						continue
					}
					tail++
					if strings.Contains(a, "add capacity") || !strings.HasPrefix(a, "not capacity") || strings.Contains(s, "TTFT") || strings.Contains(s, "E2E") ||
						!strings.Contains(a, c.smaller) || strings.Contains(a, "V0:") {
						t.Fatalf("%s: %s → %s", p.fleet.Elapsed(), s, a)
					}
				}
			}
			if tail == 0 {
				t.Fatal("no SLO breach of the inter-token tail alone: the case tests nothing")
			}
			t.Logf("%d evaluations said the tail alone", tail)
		})
	}
}

// TestSLOBreachNotJudgedOnASecond: opened on busy, healthy replicas, the
// first seconds' histograms hold a step or two: one prefill that stalled
// every stream read as inter-token p95 58 ms on a busy 14B and 51 ms on
// V0 (a pending SLO breach advising "add capacity", gone a scrape later).
// No SLO breach before the verdict has its points; none at all on these.
func TestSLOBreachNotJudgedOnASecond(t *testing.T) {
	qwen := sim.LookupModel("Qwen/Qwen2.5-14B-Instruct")
	for _, c := range []struct {
		profile string
		model   sim.Model
	}{{"v0.10", qwen}, {"latest", qwen}, {"v0.6", sim.Model{}}} {
		t.Run(c.profile+"/"+c.model.Name, func(t *testing.T) {
			t.Parallel()
			p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Model: c.model, Profile: c.profile,
				Scenarios: []sim.ScenarioSpec{{Name: "busy"}}})
			for p.fleet.Elapsed() < 3*time.Minute {
				p.fleet.Advance(time.Second)
			}
			for k := 1; k <= 30; k++ {
				f := p.step()
				for _, fd := range append(f.Findings, f.Pending...) {
					if fd.Rule == "slo_breach" {
						t.Fatalf("at %ds: %s → %s", k, format.Say(fd.Summary), format.Say(fd.Action))
					}
				}
			}
		})
	}
}
