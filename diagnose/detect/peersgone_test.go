package detect_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/ui/format"
)

// TestRiseFromPeersGoneIsNotTheClients: a pool of two replicas loses one
// (its node drained: it leaves the fleet as discovery says; or it crashes
// and stays down), and the router sends its traffic to the other, whose
// arrivals rise ×2.2 at that moment. vtop said "a traffic question: find
// the client or feature that changed": no client changed anything. The
// change now says the peer that left and when, as a capacity question.
// The same rise with the peer still serving stays a traffic question.
func TestRiseFromPeersGoneIsNotTheClients(t *testing.T) {
	const at = 4 * time.Minute
	for _, how := range []string{"left", "down", "stayed"} {
		t.Run(how, func(t *testing.T) {
			p := newScenarioPipeline(t,
				sim.ReplicaConfig{Name: "stay", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}, {Name: "busy", Delay: at}}},
				sim.ReplicaConfig{Name: "gone", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}})
			for p.fleet.Elapsed() < 3*time.Minute {
				p.fleet.Advance(time.Second)
			}
			said := ""
			for p.fleet.Elapsed() < at+2*time.Minute {
				p.fleet.Advance(time.Second)
				reps := p.fleet.Replicas()
				gone := how != "stayed" && p.fleet.Elapsed() >= at
				if gone && how == "left" && p.fleet.Elapsed() == at {
					p.engine.LeaveTarget(1, p.fleet.Now())
					p.engine.Frame(p.fleet.Now())
				}
				for i, r := range reps {
					switch {
					case i == 1 && gone && how == "left":
						continue
					case i == 1 && gone:
						p.engine.Ingest(i, sources.Scrape{Target: r.Name(), Time: p.fleet.Now(), Err: errors.New("connection refused")})
					default:
						p.engine.Ingest(i, r.Scrape(p.norms[i], sim.FormatOpenMetrics))
					}
				}
				p.engine.IngestGPU(p.fleet.GPUs().Sample(context.Background()))
				f := p.engine.Frame(p.fleet.Now())
				p.det.Evaluate(f)
				for _, fd := range f.Findings {
					if fd.Rule == "workload_shift" && fd.Target == "stay" && strings.Contains(format.Say(fd.Summary), "arrival rate") {
						said = format.Say(fd.Summary) + " → " + format.Say(fd.Action)
					}
				}
			}
			t.Logf("%s", said)
			if said == "" {
				t.Fatal("the rise of arrivals was never named: the case tests nothing")
			}
			peer := strings.Contains(said, "when 1 of its peers (gone) left or went down at") && strings.Contains(said, "a capacity question, not the clients")
			if peer != (how != "stayed") {
				t.Errorf("%s: %s", how, said)
			}
		})
	}
}
