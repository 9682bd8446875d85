package main

import (
	"math"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/promapi"
)

// --prometheus reads SGLang replicas and the families behind the panels
// (speculative decoding's counters and positions, LoRA's info) from a real
// Prometheus as a direct scrape does: the engine, the spec counters and
// the adapters of the last exposition the server was given.
func TestPrometheusReadsEnginesAndFeatures(t *testing.T) {
	lora := sim.ChatLoad()
	lora.Adapters = 3
	cfg := sim.FleetConfig{Replicas: []sim.ReplicaConfig{
		{Name: "spec", SpecTokens: 3, SpecAccept: 0.7, Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "sglang", Profile: "sglang", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "lora", MaxLoras: 2, Load: &lora, Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
	}}
	span := 2 * time.Minute
	h := simHistory(t, cfg, time.Now().Add(-span-2*time.Second).Truncate(historyStep), span, historyStep)
	_, got := oneRefresh(t, promapi.Config{URL: startPrometheus(t, h, ""), Interval: historyStep})
	find := func(name string) *sources.Snapshot {
		for target, s := range got {
			if s.Data != nil && len(s.Data.Subs) > 0 && containsName(target, name) {
				return s.Data
			}
		}
		t.Fatalf("no %s replica read from Prometheus (targets %v)", name, keys(got))
		return nil
	}
	if s := find("sglang"); s.Version.Server != sources.ServerSGLang || math.IsNaN(s.Subs[0].Gauges[sources.GKVUsage]) {
		t.Errorf("sglang read as %s, KV %v", s.Version, s.Subs[0].Gauges[sources.GKVUsage])
	}
	s := find("spec")
	if sub := &s.Subs[0]; !(sub.Counters[sources.CSpecAccepted] > 0) || len(sub.Labeled[sources.LSpecAcceptedPos]) != 3 {
		t.Errorf("spec: accepted %v, positions %v", sub.Counters[sources.CSpecAccepted], sub.Labeled[sources.LSpecAcceptedPos])
	}
	if l := find("lora").Lora; l == nil || l.MaxLora != 2 {
		t.Errorf("lora: %+v", l)
	}
}

func containsName(target, name string) bool {
	for i := 0; i+len(name) <= len(target); i++ {
		if target[i:i+len(name)] == name && (i+len(name) == len(target) || target[i+len(name)] < 'a' || target[i+len(name)] > 'z') {
			return true
		}
	}
	return false
}

func keys(m map[string]sources.Scrape) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
