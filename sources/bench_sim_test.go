package sources_test

import (
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// simBodies are a minute of consecutive /metrics bodies of one busy
// simulated replica (latest release, text format): what a steady target
// sends from one scrape to the next.
func simBodies(b *testing.B) [][]byte {
	fl, err := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{{Scenarios: []sim.ScenarioSpec{{Name: "busy"}}}}}, 1)
	if err != nil {
		b.Fatal(err)
	}
	fl.Advance(time.Minute)
	var out [][]byte
	for range 60 {
		fl.Advance(time.Second)
		out = append(out, fl.Replicas()[0].Exposition(sim.FormatText))
	}
	return out
}

// BenchmarkNormalizeSimSteady: vtop's scrape path over consecutive bodies of
// a busy replica, only changed lines parsed; .../full parses every body.
func BenchmarkNormalizeSimSteady(b *testing.B) {
	bodies := simBodies(b)
	for _, c := range []struct {
		name string
		n    *sources.Normalizer
	}{{"incremental", sources.NewNormalizer()}, {"full", sources.NewFullNormalizer()}} {
		b.Run(c.name, func(b *testing.B) {
			ct := sim.FormatText.ContentType()
			for _, body := range bodies {
				if _, err := c.n.Normalize(body, ct); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(bodies[0])))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Forth then back through the minute, so every step is one
				// second of change.
				k := i % (2*len(bodies) - 2)
				if k >= len(bodies) {
					k = 2*len(bodies) - 2 - k
				}
				if _, err := c.n.Normalize(bodies[k], ct); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
