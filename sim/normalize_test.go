package sim_test

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// Every generation, in both formats, with and without data parallelism,
// parses cleanly with vtop's own normalizer and is detected as the release
// it impersonates.
func TestExpositionNormalizes(t *testing.T) {
	for _, p := range sim.Profiles {
		for _, dp := range []int{1, 2} {
			if dp > 1 && (p.Gen == sources.GenV0 || p.Server == sources.ServerSGLang) {
				continue
			}
			for _, format := range []sim.Format{sim.FormatText, sim.FormatOpenMetrics} {
				name := fmt.Sprintf("%s/dp%d/%s", p.Name, dp, map[sim.Format]string{sim.FormatText: "text", sim.FormatOpenMetrics: "om"}[format])
				t.Run(name, func(t *testing.T) {
					f, err := sim.NewFleet(one(sim.ReplicaConfig{Profile: p.Name, DP: dp,
						Scenarios: []sim.ScenarioSpec{{Name: "busy"}}}), 3)
					if err != nil {
						t.Fatal(err)
					}
					n := sources.NewNormalizer()
					r := f.Replicas()[0]
					var snap *sources.Snapshot
					for range 3 {
						f.Advance(20 * time.Second)
						s := r.Scrape(n, format)
						if s.Err != nil {
							t.Fatal(s.Err)
						}
						snap = s.Data
					}
					if len(snap.Warnings) > 0 {
						t.Fatalf("warnings: %v", snap.Warnings)
					}
					if snap.Kind != sources.KindEngine {
						t.Fatalf("kind %v", snap.Kind)
					}
					if snap.Version.Server != p.Server || (p.Server == sources.ServerVLLM && (snap.Version.Gen != p.Gen || !snap.Version.Contains(p.Version))) {
						t.Fatalf("detected %v, want %v %v", snap.Version, p.Gen, p.Version)
					}
					if len(snap.Subs) != dp {
						t.Fatalf("%d sub-series, want %d", len(snap.Subs), dp)
					}
					for i, sub := range snap.Subs {
						wantEngine := ""
						if p.Gen == sources.GenV1 {
							wantEngine = fmt.Sprint(i)
						}
						if sub.Key.Engine != wantEngine || sub.Key.Model != sim.Models[0].Name {
							t.Fatalf("sub %d key %+v", i, sub.Key)
						}
						sglang := p.Server == sources.ServerSGLang
						if sglang && !(sub.Gauges[sources.GKVTokensMax] > 0) {
							t.Fatalf("sub %d: no token pool size", i)
						}
						if !sglang && (sub.Cache == nil || sub.Cache.CapacityTokens() == 0) {
							t.Fatalf("sub %d: no cache config", i)
						}
						if !(sub.Counters[sources.CGenTokens] > 0) || !sub.Hists[sources.HTTFT].Present() || !(sub.Hists[sources.HTTFT].Count > 0) {
							t.Fatalf("sub %d: no traffic seen: gen %v ttft %+v", i, sub.Counters[sources.CGenTokens], sub.Hists[sources.HTTFT])
						}
						created := sub.Created[sources.CGenTokens]
						if (p.Name == "v0.6" || sglang || dp > 1 && p.Name == "latest") != math.IsNaN(created) {
							t.Fatalf("sub %d: _created %v for %s dp %d", i, created, p.Name, dp)
						}
					}
					rss := snap.Proc[sources.PRSS]
					if (p.Name == "v0.6" || p.Server == sources.ServerSGLang || dp > 1 && p.Name == "latest") != math.IsNaN(rss) {
						t.Fatalf("RSS %v for %s dp %d (process metrics only with the single-process registry)", rss, p.Name, dp)
					}
				})
			}
		}
	}
}

func TestSameSeedSameBytes(t *testing.T) {
	run := func(seed uint64) []byte {
		f, err := sim.NewFleet(one(sim.ReplicaConfig{DP: 2, Scenarios: []sim.ScenarioSpec{{Name: "kv-thrashing", Delay: 20 * time.Second}}}), seed)
		if err != nil {
			t.Fatal(err)
		}
		for range 90 {
			f.Advance(time.Second)
		}
		return f.Replicas()[0].Exposition(sim.FormatOpenMetrics)
	}
	a, b, c := run(11), run(11), run(12)
	if !bytes.Equal(a, b) {
		t.Fatal("the same seed gave different expositions")
	}
	if bytes.Equal(a, c) {
		t.Fatal("different seeds gave the same exposition")
	}
}

func TestFleetRefusesWhatVLLMRefuses(t *testing.T) {
	small := sim.Models[0]
	small.MaxModelLen = 500_000
	for name, rc := range map[string]sim.ReplicaConfig{
		"cache smaller than max_model_len": {Model: small},
		"V0 budget below max_model_len":    {Profile: "v0.6", MaxBatchedTokens: 4096},
		"data parallel V0":                 {Profile: "v0.6", DP: 2},
		"unknown generation":               {Profile: "v0.3"},
		"model without costs":              {Model: sim.Model{Name: "x"}},
		"swapping on V1":                   {Scenarios: []sim.ScenarioSpec{{Name: "swapping"}}},
		"unknown scenario":                 {Scenarios: []sim.ScenarioSpec{{Name: "meltdown"}}},
	} {
		if _, err := sim.NewFleet(one(rc), 1); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := sim.NewFleet(sim.FleetConfig{}, 1); err == nil {
		t.Error("an empty fleet was accepted")
	}
}

func TestParseScenarios(t *testing.T) {
	got, err := sim.ParseScenarios("busy+kv-thrashing@2m")
	if err != nil || len(got) != 2 || got[0] != (sim.ScenarioSpec{Name: "busy"}) || got[1] != (sim.ScenarioSpec{Name: "kv-thrashing", Delay: 2 * time.Minute}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "busy+", "busy@-1s", "busy@soon", "nope"} {
		if _, err := sim.ParseScenarios(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if s := got[1].String(); s != "kv-thrashing@2m0s" {
		t.Errorf("String %q", s)
	}
}
