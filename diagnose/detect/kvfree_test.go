package detect_test

import (
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
)

// TestKVAdviceRaisesAFreeCacheFirst: a cache deployed small
// (--gpu-memory-utilization 0.54, kv-thrashing) thrashes under long
// documents. The advice led with "lower --max-num-seqs 256 → 24" and
// offered the raise to 0.90 as an alternative, though its GPU held the
// memory the raise takes, free. Where the endpoint's GPUs are read and
// hold it free, the raise leads (the batch cut follows as the
// alternative); read without GPUs, nothing says the memory is free, and
// the order stays.
func TestKVAdviceRaisesAFreeCacheFirst(t *testing.T) {
	for _, gpus := range []bool{true, false} {
		p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Scenarios: []sim.ScenarioSpec{{Name: "kv-thrashing", Delay: 30 * time.Second}}})
		first := map[string]int{}
		for p.fleet.Elapsed() < 4*time.Minute {
			var f *diagnose.Frame
			if gpus {
				f = p.step()
			} else {
				f = p.stepWithoutGPUs()
			}
			for _, fd := range append(f.Findings, f.Pending...) {
				if (fd.Rule == "kv_cache_thrashing" || fd.Rule == "kv_cache_saturated") && len(fd.Flags) > 0 && fd.State != diagnose.FindingResolving {
					first[fd.Flags[0].Flag]++
					if fd.Flags[0].Alt || len(fd.Flags) > 1 && !fd.Flags[1].Alt {
						t.Errorf("GPUs %v: the first flag must lead, the rest be alternatives: %+v", gpus, fd.Flags)
					}
				}
			}
		}
		t.Logf("GPUs read %v: first flags %v", gpus, first)
		want, not := "--gpu-memory-utilization", "--max-num-seqs"
		if !gpus {
			want, not = not, want
		}
		if first[want] == 0 || first[not] > 0 {
			t.Errorf("GPUs read %v: first flags %v, want %s", gpus, first, want)
		}
	}
}
