package detect_test

import (
	"math"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/report"
)

// TestSharesHeldOnTheLine: the shares the verdict line says move with
// every scrape's completions. A failover's queue stands and its clients
// give up, the abort share climbing a point or two every few seconds
// (the line read "66 %", "68 %", "70 %" by turns while nothing else
// moved); a client release's refusals wobble about a fifth. Two
// engineers ten seconds apart read the same line unless the share moved
// by ten points.
func TestSharesHeldOnTheLine(t *testing.T) {
	for _, c := range []struct {
		scenario string
		share    func(v *diagnose.Verdict) float64
	}{
		{"queue-backlog", func(v *diagnose.Verdict) float64 { return v.GaveUp }},
		{"bad-parameter", func(v *diagnose.Verdict) float64 { return v.Refused }},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Scenarios: []sim.ScenarioSpec{{Name: c.scenario}}})
			for p.fleet.Elapsed() < 3*time.Minute {
				p.fleet.Advance(time.Second)
			}
			shown, changes, read := 0.0, 0, 0
			var lines []string
			for p.fleet.Elapsed() < 8*time.Minute {
				v := &p.step().Endpoints[0].Verdict
				s := c.share(v)
				if s <= 0 {
					shown = 0
					continue
				}
				read++
				if shown > 0 && s != shown {
					changes++
					if math.Abs(s-shown) < 0.1 {
						t.Errorf("at %v the line moved %.3f → %.3f", p.fleet.Elapsed(), shown, s)
					}
					lines = append(lines, report.VerdictLine(v, false))
				}
				shown = s
			}
			t.Logf("%d readings with a share, the share shown changed %d times: %q", read, changes, lines)
			if read < 60 {
				t.Fatalf("a share on %d readings: the case tests nothing", read)
			}
		})
	}
}
