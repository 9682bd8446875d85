package sources_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// Consecutive scrapes of simulated replicas, every generation and both
// formats, through a restart and a data-parallel engine: the incremental
// path gives the full parse's snapshot at every second, and takes most
// of them.
func TestIncrementalMatchesFullOnSim(t *testing.T) {
	for _, prof := range []string{"v0.6", "v0.10", "v0.11", "latest"} {
		for _, f := range []sim.Format{sim.FormatText, sim.FormatOpenMetrics} {
			t.Run(fmt.Sprintf("%s/%d", prof, f), func(t *testing.T) {
				cfg := sim.ReplicaConfig{Profile: prof, Scenarios: []sim.ScenarioSpec{{Name: "busy"}, {Name: "restart", Delay: 20 * time.Second}}}
				if prof != "v0.6" {
					cfg.DP = 2
				}
				fl, err := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{cfg}}, 7)
				if err != nil {
					t.Fatal(err)
				}
				var bodies [][]byte
				for range 60 {
					fl.Advance(time.Second)
					bodies = append(bodies, fl.Replicas()[0].Exposition(f))
				}
				n := sources.CheckIncremental(t, f.ContentType(), bodies)
				t.Logf("%d of %d bodies read incrementally", n, len(bodies))
				if n < len(bodies)/2 {
					t.Fatalf("only %d of %d bodies read incrementally", n, len(bodies))
				}
			})
		}
	}
}
