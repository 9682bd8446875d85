package detect_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
)

// TestRestartWithASmallerCacheNamed: a deploy restarts a busy replica with
// --gpu-memory-utilization lowered to make room for an embedding model on
// its GPU; vLLM's profiling sizes the KV cache from it again, and the chat
// traffic comes back to a cache a twentieth of what it was. vtop said
// "restarted 2m ago" and, for the thrashing that followed, "lower
// --max-num-seqs 256 → 13, or raise --gpu-memory-utilization 0.27 →
// 0.90": the cause (the deploy) unsaid, a batch cut to 13 first. The
// restart now says what it changed (cache_config_info before and after),
// and the cache's findings say the restart first, with the value before
// it as the flag. A restart with the same settings says neither.
func TestRestartWithASmallerCacheNamed(t *testing.T) {
	const onset = 4 * time.Minute
	qwen := sim.LookupModel("Qwen/Qwen2.5-14B-Instruct")
	for _, c := range []struct {
		name     string
		profile  string
		model    sim.Model
		dp       int
		scenario string
		want     bool
	}{
		{"latest 8B", "latest", sim.Model{}, 0, "redeploy-less-kv", true},
		{"latest 8B, 2 engines", "latest", sim.Model{}, 2, "redeploy-less-kv", true},
		{"0.11 14B", "v0.11", qwen, 0, "redeploy-less-kv", true},
		{"V0 8B", "v0.6", sim.Model{}, 0, "redeploy-less-kv", true},
		{"same settings", "latest", sim.Model{}, 0, "restart", false},
	} {
		t.Run(c.name+"/"+c.scenario, func(t *testing.T) {
			p := busyThen(t, c.profile, c.model, c.dp, c.scenario, onset)
			restarted, said, kv, first := false, false, 0, 0
			for p.fleet.Elapsed() < onset+3*time.Minute {
				f := p.step()
				for _, fd := range append(f.Findings, f.Pending...) {
					a := format.Say(fd.Action)
					switch fd.Rule {
					case "endpoint_restarted":
						restarted = true
						s := format.Say(fd.Summary)
						if strings.Contains(s, "came back with") != c.want {
							t.Fatalf("at %v: %s", p.fleet.Elapsed()-onset, s)
						}
						if !said && c.want {
							said = true
							t.Logf("%s", s)
						}
					case "kv_cache_thrashing", "kv_cache_saturated", "preemption":
						if fd.State == diagnose.FindingResolving {
							continue
						}
						kv++
						if !strings.HasPrefix(a, "first the restart at ") {
							if c.want {
								t.Errorf("at %v %s: %s", p.fleet.Elapsed()-onset, fd.Rule, a)
							}
							continue
						}
						if !c.want {
							t.Fatalf("at %v %s: %s", p.fleet.Elapsed()-onset, fd.Rule, a)
						}
						// The flag is the value before the restart.
						if len(fd.Flags) == 0 || fd.Flags[0].Flag != "--gpu-memory-utilization" || format.Value(fd.Flags[0].To) != "0.90" {
							t.Errorf("flags %+v", fd.Flags)
						}
						if first++; first == 1 {
							t.Logf("%s → %s", format.Say(fd.Summary), a)
						}
					}
				}
			}
			t.Logf("%d of %d KV findings say the restart first", first, kv)
			if !restarted {
				t.Fatal("no restart seen: the case tests nothing")
			}
			if c.want && kv == 0 {
				t.Fatal("no KV pressure after the restart: the case tests nothing")
			}
		})
	}
}

// TestOneRestartIsOneRestart: a busy replica restarts once. vLLM V0
// creates a finish reason's series at its first finish, seconds after the
// new process serves: each came back below its value before the restart,
// read as a restart of its own, and one restart was three, "crash loop:
// 3 restarts in 4s" (critical). A restarted engine's prefix cache starts
// empty: SGLang's first seconds read "prefix-cache hit 0%: find what
// changed in the prompts" (warning). One restart, neither finding, on
// every generation.
func TestOneRestartIsOneRestart(t *testing.T) {
	qwen := sim.LookupModel("Qwen/Qwen2.5-14B-Instruct")
	for _, c := range []struct {
		profile string
		model   sim.Model
	}{{"v0.6", sim.Model{}}, {"v0.10", sim.Model{}}, {"latest", sim.Model{}}, {"sglang", sim.Model{}}, {"sglang", qwen}, {"v0.11", qwen}} {
		t.Run(c.profile+"/"+c.model.Name, func(t *testing.T) {
			p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Profile: c.profile, Model: c.model,
				Scenarios: []sim.ScenarioSpec{{Name: "busy"}, {Name: "restart", Delay: 4 * time.Minute}}})
			for p.fleet.Elapsed() < 3*time.Minute {
				p.fleet.Advance(time.Second)
			}
			var f *diagnose.Frame
			for p.fleet.Elapsed() < 7*time.Minute {
				f = p.step()
				for _, fd := range append(f.Findings, f.Pending...) {
					if fd.Rule == "crash_loop" || fd.Rule == "prefix_cache_miss" && fd.Severity >= diagnose.SevWarning {
						t.Fatalf("at %v %s: %s", p.fleet.Elapsed(), fd.Rule, format.Say(fd.Summary))
					}
				}
			}
			if n := len(f.Endpoints[0].Restarts); n != 1 {
				for _, r := range f.Endpoints[0].Restarts {
					t.Logf("restart at %v", r.At.Sub(p.fleet.Now()))
				}
				t.Errorf("%d restarts, want 1", n)
			}
		})
	}
}
