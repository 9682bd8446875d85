package detect_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
)

// TestKVAdviceNamesTheLostPrefix: a client change puts a request id at
// the top of a busy 14B's 2k-token shared system prompt a minute after
// vtop opened. With prefix caching the prompt's blocks were held once
// for every running request; now each holds its own copy, the cache
// fills and the engine preempts. The KV findings said only "lower
// --max-num-seqs 256 → 64": a flag that trades away three quarters of the
// batch for what a prompt fix gives back. They now say the prefix cache
// first, with the hit rate's fall and when. Prompts ×8 (long-prompts)
// fill the same cache with the prefix still matching: no such clause
// there (a rate that falls while the prefix still matches:
// TestPrefixLostOnlyWhenNothingMatches).
func TestKVAdviceNamesTheLostPrefix(t *testing.T) {
	for _, c := range []struct {
		scenario string
		want     bool
	}{{"prefix-cache-miss", true}, {"long-prompts", false}} {
		t.Run(c.scenario, func(t *testing.T) {
			kv, said := 0, 0
			kvFindingsAfter(t, c.scenario, 4*time.Minute, func(since time.Duration, at time.Time, fd *diagnose.Finding) {
				kv++
				a := format.Say(fd.Action)
				if !strings.HasPrefix(a, "first the prefix cache: its hit rate fell") {
					return
				}
				said++
				if !c.want {
					t.Fatalf("at %v: %s", since, a)
				}
				// The fix is the prompts: no flag heads the advice
				// (a screen shows the flags first).
				if len(fd.Flags) != 0 {
					t.Errorf("at %v a flag heads the advice: %+v", since, fd.Flags[0])
				}
				if !strings.Contains(a, at.Format("15:04:05")) && !strings.Contains(a, at.Add(time.Second).Format("15:04:05")) &&
					!strings.Contains(a, at.Add(2*time.Second).Format("15:04:05")) {
					t.Errorf("the fall is not dated at the change (%s): %s", at.Format("15:04:05"), a)
				}
			})
			if kv == 0 {
				t.Fatal("no KV finding")
			}
			if c.want && said < kv/2 {
				t.Errorf("the lost prefix was said in %d of %d KV findings", said, kv)
			}
			t.Logf("%d of %d KV findings name the lost prefix", said, kv)
		})
	}
}

// kvFindingsAfter opens on a busy 14B (vLLM 0.11) three minutes in, starts
// scenario a minute later, and hands each KV-pressure finding, firing or
// pending, of the span after the change to each: how long after the
// change, and the change's time of day.
func kvFindingsAfter(t *testing.T, scenario string, span time.Duration, each func(since time.Duration, at time.Time, fd *diagnose.Finding)) {
	t.Helper()
	const onset = 4 * time.Minute
	p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Profile: "v0.11", Model: sim.LookupModel("Qwen/Qwen2.5-14B-Instruct"),
		Scenarios: []sim.ScenarioSpec{{Name: "busy"}, {Name: scenario, Delay: onset}}})
	for p.fleet.Elapsed() < 3*time.Minute {
		p.fleet.Advance(time.Second)
	}
	at := p.fleet.Now().Add(onset - p.fleet.Elapsed()).UTC()
	for p.fleet.Elapsed() < onset+span {
		f := p.step()
		for _, fd := range append(f.Findings, f.Pending...) {
			switch fd.Rule {
			case "kv_cache_thrashing", "kv_cache_saturated", "preemption":
				each(p.fleet.Elapsed()-onset, at, &fd)
			}
		}
	}
}

// TestKVFindingSaysWhatChanged: prompts ×8 on a busy 14B a minute after
// vtop opened fill its KV cache. The cache's findings say, in their own
// line, the change of traffic that came before the pressure and when
// ("; after prompt mean 940 → 4.4k tokens (×4.6) at 14:04:00"): the
// flags beside them are sized for the new traffic. A fall of traffic
// (fewer or shorter requests) is never said as what filled it.
func TestKVFindingSaysWhatChanged(t *testing.T) {
	kv, said := 0, 0
	kvFindingsAfter(t, "long-prompts", 3*time.Minute, func(since time.Duration, at time.Time, fd *diagnose.Finding) {
		kv++
		s := format.Say(fd.Summary)
		i := strings.Index(s, "; after ")
		if i < 0 {
			return
		}
		said++
		after := s[i:]
		if !strings.Contains(after, "prompt mean") && !strings.Contains(after, "prompt tokens/s") {
			t.Fatalf("at %v: %s", since, s)
		}
		ok := false
		for d := -3; d <= 3; d++ {
			ok = ok || strings.HasSuffix(after, at.Add(time.Duration(d)*time.Second).Format("15:04:05"))
		}
		if !ok {
			t.Errorf("at %v the change is not dated at %s: %s", since, at.Format("15:04:05"), s)
		}
	})
	if kv == 0 || said < kv/2 {
		t.Errorf("the change was said in %d of %d KV findings", said, kv)
	}
}
