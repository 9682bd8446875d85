package detect_test

import (
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
)

// TestPrefixMissWarnsOnlyWhenItMatchedBefore: "prefix cache misses" is a
// warning to keep the shared system prompt byte-identical; on prompts that
// share nothing it alarms on normal life. The decode side of a P/D pair
// of unique 3k-token prompts (vLLM 0.10 exposes no NIXL counter to say
// what it is) and a benchmark harness of unique documents read hit 0 %,
// as a system prompt broken at its top does: no counter tells them apart.
// A warning needs the cache seen matching first; otherwise it is a
// question (info). A client change that breaks a matching prefix while
// vtop watches is still a warning.
func TestPrefixMissWarnsOnlyWhenItMatchedBefore(t *testing.T) {
	for _, c := range []struct {
		name, prof string
		scs        []sim.ScenarioSpec
		want       diagnose.Severity // most severe prefix_cache_miss fired (info: at most info, or none)
	}{
		{"P/D decode, unique prompts, 0.10", "v0.10", []sim.ScenarioSpec{{Name: "pd-decode"}}, diagnose.SevInfo},
		{"benchmark of unique documents", "latest", []sim.ScenarioSpec{{Name: "closed-loop-backlog"}}, diagnose.SevInfo},
		{"broken before vtop opened", "latest", []sim.ScenarioSpec{{Name: "prefix-cache-miss"}}, diagnose.SevInfo},
		{"broken while vtop watched", "latest", []sim.ScenarioSpec{{Name: "prefix-cache-miss", Delay: 4 * time.Minute}}, diagnose.SevWarning},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Profile: c.prof, Scenarios: c.scs})
			for p.fleet.Elapsed() < 3*time.Minute {
				p.fleet.Advance(time.Second)
			}
			var most diagnose.Severity
			seen := false
			for p.fleet.Elapsed() < 12*time.Minute {
				f := p.step()
				for _, fd := range f.Findings {
					if fd.Rule == "prefix_cache_miss" {
						seen, most = true, max(most, fd.Severity)
					}
				}
			}
			if most != c.want || c.want > diagnose.SevInfo && !seen {
				t.Errorf("prefix_cache_miss fired %v, at most %v; want %v", seen, most, c.want)
			}
		})
	}
}
