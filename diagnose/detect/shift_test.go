package detect_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
)

// What changed is said as a change of traffic (a question, info) or of
// capacity (a fault, warning): a prompt-length shift is the first, a GPU
// losing its clocks under unchanged traffic the second.
func TestShiftFindings(t *testing.T) {
	cases := []struct {
		scenario, rule, other string
		sev                   diagnose.Severity
		words                 []string
		within                time.Duration // onset after the scenario starts, at most
	}{
		{"long-prompts", "workload_shift", "capacity_shift", diagnose.SevInfo, []string{"prompt tokens/s", "→", "(×", "TTFT p95"}, 2 * time.Second},
		{"queue-backlog", "workload_shift", "capacity_shift", diagnose.SevInfo, []string{"arrival rate", "(×"}, 2 * time.Second},
		// The cooling degrades from the start; the clocks fall once the
		// GPU reaches its slowdown temperature.
		{"thermal-throttle", "capacity_shift", "", diagnose.SevWarning, []string{"GPU SM clock", "(÷", "no change of traffic"}, 5 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			t.Parallel()
			p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3",
				Scenarios: []sim.ScenarioSpec{{Name: c.scenario, Delay: 3 * time.Minute}}})
			t0 := p.fleet.Now()
			var got *diagnose.Finding
			for p.fleet.Elapsed() < 9*time.Minute && got == nil {
				f := p.step()
				for i := range f.Findings {
					fd := &f.Findings[i]
					if fd.Rule == c.rule {
						got = fd
					}
					if fd.Rule == c.other {
						t.Errorf("%s beside the %s: %s", c.other, c.rule, format.Say(fd.Summary))
					}
				}
			}
			if got == nil {
				t.Fatalf("no %s", c.rule)
			}
			t.Logf("%s %s: %s → %s", got.Severity, got.Rule, format.Say(got.Summary), format.Say(got.Action))
			if got.Severity != c.sev {
				t.Errorf("severity %s, want %s", got.Severity, c.sev)
			}
			for _, w := range c.words {
				if !strings.Contains(format.Say(got.Summary), w) {
					t.Errorf("summary lacks %q: %s", w, format.Say(got.Summary))
				}
			}
			// FirstSeen is the onset: the scrape the change began at.
			if on := got.FirstSeen.Sub(t0); on < 3*time.Minute-2*time.Second || on > 3*time.Minute+c.within {
				t.Errorf("onset %v, the change began at 3m", on)
			}
		})
	}
}
