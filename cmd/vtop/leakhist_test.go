package main

import (
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
)

// Five minutes of a steady 60 MiB/min leak in Prometheus: with the history
// read at opening, the fit and the hold use it, so memory_leak is named
// (firing) within 10 s of opening, not after ten more minutes of live data.
func TestPrometheusFiveMinutesOfLeak(t *testing.T) {
	const span = 5 * time.Minute
	epoch := time.Now().Add(-span).Truncate(historyStep)
	h := simHistory(t, sim.FleetConfig{Replicas: []sim.ReplicaConfig{
		{Name: "leaky", Scenarios: []sim.ScenarioSpec{{Name: "memory-leak"}}},
		{Name: "steady", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
	}}, epoch, span, historyStep)
	url := startPrometheus(t, h, "")

	start := time.Now()
	// Published every second, as before startHub (the history's 5 s
	// interval would publish every 5 s).
	hb, _ := startHubEvery(t, time.Second, "--prometheus", url, "--gpu", "none")
	deadline := time.After(10 * time.Second)
	var named time.Duration
loop:
	for {
		select {
		case fr := <-hb.Frames():
			for _, f := range fr.Findings {
				if f.Rule == "memory_leak" && f.Target == "leaky" {
					named = time.Since(start)
					t.Logf("named %v after opening: %s: %s", named, f.Severity, format.Say(f.Summary))
					break loop
				}
			}
			for _, f := range fr.Pending {
				if f.Rule == "memory_leak" {
					t.Logf("pending %v of %v", f.HeldFor, f.Hold)
				}
			}
		case <-deadline:
			break loop
		}
	}
	if named == 0 {
		t.Error("memory_leak not named within 10 s of opening on 5 min of history")
	}
}
