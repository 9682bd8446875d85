package detect_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
)

// verdictsAfter opens on a replica broken for three minutes and returns
// its verdict at each of the next d seconds.
func verdictsAfter(t *testing.T, rc sim.ReplicaConfig, d time.Duration) []*diagnose.Verdict {
	t.Helper()
	rc.Name = "replica-3"
	p := newScenarioPipeline(t, rc)
	for p.fleet.Elapsed() < 3*time.Minute {
		p.fleet.Advance(time.Second)
	}
	var vs []*diagnose.Verdict
	for k := time.Duration(0); k < d; k += time.Second {
		v := p.step().Endpoints[0].Verdict
		vs = append(vs, &v)
	}
	return vs
}

func said(vs []*diagnose.Verdict) string {
	var b strings.Builder
	var last diagnose.Limit = "-"
	for i, v := range vs {
		if v.Limit != last {
			fmt.Fprintf(&b, " %s@%ds", v.Limit, i+1)
			last = v.Limit
		}
	}
	return b.String()
}

// Adapters listed waiting in lora_requests_info while every --max-loras
// slot is taken are the mechanism itself, in gauges: the first scrape
// names the LoRA slots (it waited ten points for the sparkline before).
func TestLoRASlotsAtFirstScrape(t *testing.T) {
	for _, sc := range []string{"lora-slots", "lora-slots-closed"} {
		vs := verdictsAfter(t, sim.ReplicaConfig{Scenarios: []sim.ScenarioSpec{{Name: sc}}}, 3*time.Second)
		if vs[0].Limit != diagnose.LimitLoRASlots || vs[0].Flag == nil || vs[0].Flag.Flag != "--max-loras" {
			t.Errorf("%s: first scrape's verdict %+v, want the LoRA slots with --max-loras; verdicts%s", sc, vs[0], said(vs))
		}
	}
}

// The first verdict after "too few observations" is the limit itself:
// not "unexplained" while an engine has made no progress at any point
// seen yet (shorter than a stall takes to call), not arrivals sized from
// a preemption count of zero over thirteen completions.
func TestFirstVerdictIsTheLimit(t *testing.T) {
	for _, c := range []struct {
		scenario, profile string
		want              diagnose.Limit
	}{
		{"engine-stalled", "latest", diagnose.LimitStalled},
		{"engine-stalled", "v0.6", diagnose.LimitStalled},
		{"kv-thrashing", "v0.6", diagnose.LimitKVCache},
		{"kv-thrashing", "latest", diagnose.LimitKVCache},
	} {
		vs := verdictsAfter(t, sim.ReplicaConfig{Profile: c.profile, Scenarios: []sim.ScenarioSpec{{Name: c.scenario}}}, 30*time.Second)
		for _, v := range vs {
			if v.Limit == diagnose.LimitFewData {
				continue
			}
			if v.Limit != c.want {
				t.Errorf("%s on %s: first verdict %s (under %q), want %s; verdicts%s", c.scenario, c.profile, v.Limit, v.Under, c.want, said(vs))
			}
			break
		}
	}
}

// A closed-loop harness sends its next request when the previous one
// ends: arrivals equal completions, and its standing queue of 350 (±6)
// never outruns the replica. The least-squares slope of that wobble
// (0.06/s against 3.4 served/s) is counting noise, and the verdict stays
// compute, never "about 2 replicas".
func TestClosedLoopQueueIsNotArrivals(t *testing.T) {
	vs := verdictsAfter(t, sim.ReplicaConfig{Scenarios: []sim.ScenarioSpec{{Name: "closed-loop-backlog"}}}, 2*time.Minute)
	for i, v := range vs {
		if v.Limit == diagnose.LimitArrivals {
			t.Fatalf("arrivals exceed capacity at %ds (under %s, %d replicas); verdicts%s", i+1, v.Under, v.Replicas, said(vs))
		}
	}
}

// TestLoRAVerdictHolds: eight tenants' adapters on two data-parallel
// engines with --max-loras 2. The adapters waiting, a gauge, move by one
// as requests come and go, and now and then one adapter's queue drains
// for a scrape: the slots stay the limit, and the slots advised stay put
// (the verdict read "unexplained" for two seconds, and "--max-loras 2 →
// 3" and "→ 4" by turns, 13 times in four minutes).
func TestLoRAVerdictHolds(t *testing.T) {
	vs := verdictsAfter(t, sim.ReplicaConfig{DP: 2, Scenarios: []sim.ScenarioSpec{{Name: "lora-slots"}}}, 4*time.Minute)
	moves, last := 0, -1.0
	for i, v := range vs {
		if v.Limit != diagnose.LimitLoRASlots || v.Flag == nil {
			t.Fatalf("at %ds: %s; verdicts%s", i+1, v.Limit, said(vs))
		}
		if to := v.Flag.To.Num; to != last {
			if last >= 0 {
				moves++
			}
			last = to
		}
	}
	if moves > 1 {
		t.Errorf("--max-loras shown moved %d times", moves)
	}
}
