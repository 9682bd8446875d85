package detect_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
)

// TestAnotherProcessOnTheGPUNamed: someone starts a batch job on a busy
// replica's GPU a minute after vtop opened; its kernels are time-sliced
// with the engine's, and every step takes about twice as long at full
// clocks. vtop said "the steps are slow, not the queue: its GPU shows no
// slowdown … a lower --max-num-seqs trades throughput for pace", "so 2
// replicas of this model instead of 1", and a 14B's thrashing cache
// "lower --max-num-seqs 256 → 128": NVML listed the job beside the engine
// all along. The process is now named, with how the engine slowed; the
// compute that binds is the shared GPU; nothing sizes replicas; the
// cache's advice says the process first with no flag heading it. A
// healthy replica's GPU runs only the engine: nothing said.
func TestAnotherProcessOnTheGPUNamed(t *testing.T) {
	const onset = 4 * time.Minute
	qwen := sim.LookupModel("Qwen/Qwen2.5-14B-Instruct")
	for _, c := range []struct {
		name     string
		profile  string
		model    sim.Model
		dp       int
		scenario string
	}{
		{"latest 8B", "latest", sim.Model{}, 0, "gpu-neighbor"},
		{"latest 8B, 2 engines", "latest", sim.Model{}, 2, "gpu-neighbor"},
		{"0.11 14B", "v0.11", qwen, 0, "gpu-neighbor"},
		{"V0 8B", "v0.6", sim.Model{}, 0, "gpu-neighbor"},
		{"latest 8B", "latest", sim.Model{}, 0, "healthy"},
	} {
		t.Run(c.name+"/"+c.scenario, func(t *testing.T) {
			p := busyThen(t, c.profile, c.model, c.dp, c.scenario, onset)
			var named time.Duration = -1
			kv, first, compute, shared := 0, 0, 0, 0
			for p.fleet.Elapsed() < onset+3*time.Minute {
				f := p.step()
				since := p.fleet.Elapsed() - onset
				v := &f.Endpoints[0].Verdict
				for _, fd := range append(f.Findings, f.Pending...) {
					a := format.Say(fd.Action)
					switch {
					case fd.Rule == "gpu_neighbor":
						if c.scenario != "gpu-neighbor" {
							t.Fatalf("at %v: %s", since, format.Say(fd.Summary))
						}
						if named < 0 && fd.Severity >= diagnose.SevWarning {
							named = since
							t.Logf("named at %v: %s → %s", since, format.Say(fd.Summary), a)
						}
					case named < 0 || fd.State == diagnose.FindingResolving:
					case strings.Contains(a, "replicas of this model instead"):
						t.Errorf("at %v %s sizes replicas: %s", since, fd.Rule, a)
					case fd.Rule == "kv_cache_thrashing" || fd.Rule == "kv_cache_saturated" || fd.Rule == "preemption":
						kv++
						if strings.HasPrefix(a, "first the other process on its GPU") && len(fd.Flags) == 0 {
							first++
						}
					}
				}
				if named >= 0 && v.Limit == diagnose.LimitCompute {
					compute++
					if v.Throttled && v.Shared.Form != "" {
						shared++
					}
				}
			}
			t.Logf("named at %v; compute verdicts %d, %d of them the shared GPU; %d of %d KV findings say the process first", named, compute, shared, first, kv)
			if c.scenario != "gpu-neighbor" {
				return
			}
			if named < 0 || named > 45*time.Second {
				t.Errorf("named at %v, want within 45 s", named)
			}
			if shared < compute || first < kv {
				t.Errorf("compute verdicts %d, shared %d; KV findings %d, the process first %d", compute, shared, kv, first)
			}
		})
	}
}
