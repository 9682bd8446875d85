package detect_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
)

// The simulator's crash loop (an OOM kill at the memory limit after 40 s
// of serving, 20 s of model loading, again) through the whole path: each
// restart is counted at the new process's first scrape with the memory the
// old one held just before, and the second within the window, memory
// having climbed to the limit before both, is a critical crash_loop with
// its interval and the OOM suspicion, standing in for the flapping and
// restarted findings it explains (it waited for a third, a minute later).
func TestCrashLoop(t *testing.T) {
	t.Parallel()
	p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3",
		Scenarios: []sim.ScenarioSpec{{Name: "crash-loop", Delay: incidentAt}}})
	// The mechanism's schedule: killed 40 s after serving starts, serving
	// again 20 s later.
	var want []time.Duration
	for k := range 4 {
		want = append(want, incidentAt+40*time.Second+20*time.Second+time.Duration(k)*time.Minute)
	}
	var fired *diagnose.Finding
	var firedAt time.Duration
	var last *diagnose.Frame
	for p.fleet.Elapsed() < want[3]+5*time.Second {
		f := p.step()
		last = f
		for i := range f.Findings {
			fd := &f.Findings[i]
			if fd.Rule == "crash_loop" && fired == nil {
				fired, firedAt = fd, p.fleet.Elapsed()
			}
			if fd.Rule == "endpoint_restarted" && fired != nil {
				t.Errorf("endpoint_restarted shown beside the crash loop at %v", p.fleet.Elapsed())
			}
		}
	}
	ep := last.Endpoints[0]
	if len(ep.Restarts) != 4 {
		t.Fatalf("%d restarts counted, want 4: %+v", len(ep.Restarts), ep.Restarts)
	}
	t0 := p.fleet.Now().Add(-p.fleet.Elapsed())
	for k, r := range ep.Restarts {
		// Seen at the new process's first scrape: within two intervals.
		if lag := r.At.Sub(t0) - want[k]; lag < 0 || lag > 2*time.Second {
			t.Errorf("restart %d seen at %v, serving again at %v", k, r.At.Sub(t0), want[k])
		}
		// The memory just before: the leak at its limit (~1 GiB + 3 GiB),
		// the new process back near its baseline.
		if !(r.RSSBefore > 3.8*(1<<30)) || !(r.RSSAfter < 1.5*(1<<30)) || math.IsNaN(r.GPUMemBefore) {
			t.Errorf("restart %d: RSS %.2f GiB before, %.2f GiB after, GPU %v", k, r.RSSBefore/(1<<30), r.RSSAfter/(1<<30), r.GPUMemBefore)
		}
		if d := r.Down(); d < 19*time.Second || d > 22*time.Second {
			t.Errorf("restart %d: down %v, the model loads for 20 s", k, d)
		}
	}
	if fired == nil {
		t.Fatal("no crash_loop")
	}
	if lag := firedAt - want[1]; lag < 0 || lag > 2*time.Second {
		t.Errorf("crash_loop fired at %v, the second restart serves at %v", firedAt, want[1])
	}
	t.Logf("%s: %s → %s", fired.Severity, format.Say(fired.Summary), format.Say(fired.Action))
	if fired.Severity != diagnose.SevCritical || !strings.Contains(format.Say(fired.Summary), "every 1m") ||
		!strings.Contains(format.Say(fired.Summary), "OOM kill suspected") || !strings.Contains(format.Say(fired.Action), "memory limit") {
		t.Errorf("crash_loop: %s: %s → %s", fired.Severity, format.Say(fired.Summary), format.Say(fired.Action))
	}
	for _, fd := range last.Findings {
		if fd.Rule == "endpoint_down" || fd.Rule == "endpoint_restarted" {
			t.Errorf("%s shown beside crash_loop: %s", fd.Rule, format.Say(fd.Summary))
		}
	}
}
