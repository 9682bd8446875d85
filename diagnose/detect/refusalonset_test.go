package detect_test

import (
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
)

// TestRefusalsNamedFromTheirFirst: a client release starts sending a
// parameter the API server refuses, a minute after vtop opened. The
// instrumentator creates the status="4xx" series at the first refusal, so
// the window's first frame lacks it: counted from zero, the refusals are
// named once their share of the window passes the threshold (a fifth of
// the requests refused: ~15 s), where skipping the new series hid them
// until the window no longer reached back before it (65 s). With status
// classes and with status codes.
func TestRefusalsNamedFromTheirFirst(t *testing.T) {
	for _, c := range []struct {
		name, prof string
		codes      bool
	}{{"classes", "latest", false}, {"codes", "v0.11", true}} {
		t.Run(c.name, func(t *testing.T) {
			const onset = 4 * time.Minute
			p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Profile: c.prof, HTTPStatusCodes: c.codes,
				Scenarios: []sim.ScenarioSpec{{Name: "bad-parameter", Delay: onset}}})
			for p.fleet.Elapsed() < 3*time.Minute {
				p.fleet.Advance(time.Second)
			}
			for p.fleet.Elapsed() < onset+time.Minute {
				f := p.step()
				for _, fd := range append(f.Findings, f.Pending...) {
					if fd.Rule == "http_rejections" {
						if d := p.fleet.Elapsed() - onset; d < 0 || d > 25*time.Second {
							t.Fatalf("named %v after the first refusal", d)
						} else {
							t.Logf("named %v after the first refusal", d)
						}
						return
					}
				}
			}
			t.Fatal("the refusals were not named within a minute of the first")
		})
	}
}
