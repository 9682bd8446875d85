package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
)

// Incidents nobody prepared vtop for, each written from its mechanism, read
// alike through every path: scraped directly (the batches a poller makes),
// from a real Prometheus holding their history (--prometheus with
// backfill), and replayed from a recording:
//   - a router that pins a tenant to one replica of three: the router
//     binds, not capacity (routing, no replica to add);
//   - a chat template that stops ending answers: answers run to their
//     limit (runaway_answers), not a traffic question;
//   - a deploy that restarts a replica with a twentieth of its KV cache:
//     the cache's findings say the restart first, with the value before.
func TestUnpreparedIncidentsThroughEveryPath(t *testing.T) {
	const at, span = 3 * time.Minute, 6 * time.Minute
	rc := func(name string, scs ...sim.ScenarioSpec) sim.ReplicaConfig {
		return sim.ReplicaConfig{Name: name, Scenarios: scs}
	}
	for _, c := range []struct {
		name  string
		fleet []sim.ReplicaConfig
		check func(t *testing.T, path string, fr *diagnose.Frame)
	}{
		{"pinned", []sim.ReplicaConfig{rc("hot", sim.ScenarioSpec{Name: "hot-replica", Delay: at}), rc("peer-a", sim.ScenarioSpec{Name: "healthy"}), rc("peer-b", sim.ScenarioSpec{Name: "healthy"})},
			func(t *testing.T, path string, fr *diagnose.Frame) {
				for _, e := range fr.Endpoints {
					if e.Name == "hot" && e.Verdict.Limit != diagnose.LimitRouting {
						t.Errorf("%s: hot reads %s (%+v)", path, e.Verdict.Limit, e.Verdict.Evidence)
					}
				}
			}},
		{"runaway", []sim.ReplicaConfig{rc("runaway", sim.ScenarioSpec{Name: "busy"}, sim.ScenarioSpec{Name: "runaway-answers", Delay: at})},
			func(t *testing.T, path string, fr *diagnose.Frame) {
				if fd := findingOn(fr, "runaway", "runaway_answers"); fd == nil {
					t.Errorf("%s: no runaway_answers: %v", path, rulesOn(fr, "runaway"))
				} else {
					t.Logf("%s: %s", path, format.Say(fd.Summary))
				}
			}},
		{"redeploy", []sim.ReplicaConfig{rc("redeploy", sim.ScenarioSpec{Name: "busy"}, sim.ScenarioSpec{Name: "redeploy-less-kv", Delay: at})},
			func(t *testing.T, path string, fr *diagnose.Frame) {
				said := false
				for _, r := range []string{"kv_cache_thrashing", "kv_cache_saturated", "preemption"} {
					if fd := findingOn(fr, "redeploy", r); fd != nil {
						a := format.Say(fd.Action)
						said = said || strings.HasPrefix(a, "first the restart at ")
						t.Logf("%s: %s: %.160s", path, r, a)
					}
				}
				if !said {
					t.Errorf("%s: no KV finding says the restart first: %v", path, rulesOn(fr, "redeploy"))
				}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			epoch := time.Now().Add(-span).Truncate(historyStep)
			h := simHistorySeeded(t, sim.FleetConfig{Replicas: c.fleet}, epoch, span, historyStep, nil, 1)
			c.check(t, "direct", runToEnd(t, replayPipeline(t, h, historyStep)))

			c.check(t, "prometheus", runToEnd(t, backfilled(t, startPrometheus(t, h, ""), h, "10m")))

			var last *diagnose.Frame
			path := filepath.Join(t.TempDir(), c.name+".vtop")
			simRun(t, path, c.fleet, int(span/time.Second), func(fr *diagnose.Frame) { last = fr })
			c.check(t, "recorded", last)
			if c.name != "redeploy" {
				return
			}
			// The report says what the restart changed.
			code, out, errOut := runArgs(t, nil, "replay", "--once", "-o", "json", path)
			if code == 3 || errOut != "" {
				t.Fatalf("replay: exit %d: %s", code, errOut)
			}
			var rep struct {
				Endpoints []struct {
					Restarts []struct {
						KVBefore float64 `json:"kv_cache_before_tokens"`
						KVAfter  float64 `json:"kv_cache_after_tokens"`
						Before   float64 `json:"gpu_memory_utilization_before"`
						After    float64 `json:"gpu_memory_utilization_after"`
					} `json:"restarts"`
				} `json:"endpoints"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			if rs := rep.Endpoints[0].Restarts; len(rs) != 1 || !(rs[0].KVAfter < rs[0].KVBefore/10) || rs[0].Before != 0.9 || !(rs[0].After < 0.5) {
				t.Errorf("JSON restarts: %+v", rs)
			}
		})
	}
}

// findingOn is target's finding of rule, firing or pending; nil when none.
func findingOn(fr *diagnose.Frame, target, rule string) *diagnose.Finding {
	for _, fd := range append(append([]diagnose.Finding{}, fr.Findings...), fr.Pending...) {
		if fd.Target == target && fd.Rule == rule && fd.State != diagnose.FindingResolving {
			return &fd
		}
	}
	return nil
}

// rulesOn lists target's findings' rules.
func rulesOn(fr *diagnose.Frame, target string) []string {
	var out []string
	for _, fd := range append(append([]diagnose.Finding{}, fr.Findings...), fr.Pending...) {
		if fd.Target == target {
			out = append(out, fd.Rule+":"+fd.State.String())
		}
	}
	return out
}
