package detect_test

import (
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
)

// TestBatchCapNamedAsTheQueueForms: a failover sends ten times the
// traffic a minute after vtop opened. vLLM admits up to --max-num-seqs
// (256) and the rest wait: from the first scrape with the batch at its
// cap and a queue, with the KV cache under a third used, the batch cap is
// what binds (or, once the queue grows past what it absorbs, arrivals
// over it). Judged over the whole window, the batch's climb to the cap at
// the window's start hid the plateau: "compute: batch and KV have room"
// for seven seconds at 256 of 256, then "unexplained" for nine once the
// waits were steady. A queue seconds old may still be a burst the engine
// drains. V1 and V0.
func TestBatchCapNamedAsTheQueueForms(t *testing.T) {
	for _, prof := range []string{"latest", "v0.6"} {
		t.Run(prof, func(t *testing.T) {
			const onset = 4 * time.Minute
			p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Profile: prof,
				Scenarios: []sim.ScenarioSpec{{Name: "busy"}, {Name: "queue-backlog", Delay: onset}}})
			for p.fleet.Elapsed() < 3*time.Minute {
				p.fleet.Advance(time.Second)
			}
			atCap := 0
			for p.fleet.Elapsed() < onset+2*time.Minute {
				f := p.step()
				ep := &f.Endpoints[0]
				st, v := &ep.Stats, &ep.Verdict
				if ep.MaxNumSeqs <= 0 {
					t.Fatal("the simulator's --max-num-seqs is not known")
				}
				if st.Waiting < 1 || st.Running < float64(ep.MaxNumSeqs) || st.KVUsage >= 0.8 || v.GaveUp > 0 {
					continue
				}
				atCap++
				if v.Limit == diagnose.LimitBurst && ep.Trend.WaitFor < 10*time.Second {
					continue // a queue seconds old may yet drain
				}
				if v.Limit != diagnose.LimitBatchCap && (v.Limit != diagnose.LimitArrivals || v.Under != diagnose.LimitBatchCap) {
					t.Errorf("at %v: %.0f running of %d, %.0f waiting, KV %.0f%%: verdict %s (under %s)",
						p.fleet.Elapsed()-onset, st.Running, ep.MaxNumSeqs, st.Waiting, 100*st.KVUsage, v.Limit, v.Under)
				}
			}
			if atCap < 30 {
				t.Fatalf("the batch sat at its cap with a queue at %d scrapes only", atCap)
			}
		})
	}
}
