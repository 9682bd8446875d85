package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
)

func TestZZRunawayDating(t *testing.T) {
	for _, at := range []time.Duration{time.Minute, 3 * time.Minute} {
		for _, step := range []time.Duration{2 * time.Second, 5 * time.Second} {
			span := at + 3*time.Minute
			fleet := []sim.ReplicaConfig{{Name: "runaway", Scenarios: []sim.ScenarioSpec{{Name: "busy"}, {Name: "runaway-answers", Delay: at}}}}
			epoch := time.Now().Add(-span).Truncate(historyStep)
			h := simHistorySeeded(t, sim.FleetConfig{Replicas: fleet}, epoch, span, step, nil, 1)
			show := func(path string, fr *diagnose.Frame) {
				for _, s := range fr.Endpoints[0].Shifts {
					fmt.Printf("at=%v step=%v %s: %s onset %v (change %+v) det %v\n", at, step, path, s.Name, s.Onset.Sub(epoch), s.Onset.Sub(epoch)-at, s.Detected.Sub(epoch))
				}
			}
			show("direct", runToEnd(t, replayPipeline(t, h, step)))
			url := startPrometheus(t, h, "")
			o, _, err := resolve([]string{"--once", "--prometheus", url, "--backfill", "30m", "--window", "60s", "--at", h.end.Format(time.RFC3339Nano)}, envFor(t))
			if err != nil {
				t.Fatal(err)
			}
			p, err := newPipeline(o, quiet())
			if err != nil {
				t.Fatal(err)
			}
			show("prom", runToEnd(t, p))
		}
	}
}
