package detect_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
)

// Drafts that are rarely accepted slow every decode step, so each
// sequence holds its KV blocks longer and a cache that fit the traffic
// thrashes. On the 14B model (fewer blocks) the spec-decode-low-accept
// replica's cache thrashes as well: the verdict names the drafts, and the
// thrashing finding's flag is the drafts' own; its --max-num-seqs (sized
// for today's slow decode) is said for after, not advised. Before, the
// screen's first finding advised --max-num-seqs alone while the verdict
// line named speculative decoding.
func TestThrashingUnderRejectedDraftsSaysDraftsFirst(t *testing.T) {
	p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Profile: "v0.10", Model: sim.LookupModel("Qwen/Qwen2.5-14B-Instruct"),
		Scenarios: []sim.ScenarioSpec{{Name: "spec-decode-low-accept"}}})
	// Opened three minutes in: the flag is the drafts' from the first
	// seconds, before the verdict has points enough to name them (it
	// said --max-num-seqs at 10 s, the drafts' flag at 40 s).
	for p.fleet.Elapsed() < 3*time.Minute {
		p.fleet.Advance(time.Second)
	}
	seen, early := false, false
	for p.fleet.Elapsed() < 8*time.Minute {
		f := p.step()
		if l := f.Endpoints[0].Verdict.Limit; l != diagnose.LimitSpecDecode && l != diagnose.LimitFewData {
			continue
		}
		for _, fs := range [][]diagnose.Finding{f.Findings, f.Pending} {
			for i := range fs {
				fd := &fs[i]
				if fd.Rule != "kv_cache_thrashing" {
					continue
				}
				seen = true
				early = early || f.Endpoints[0].Verdict.Limit == diagnose.LimitFewData
				if a := format.Say(fd.Action); !strings.HasPrefix(a, "first the drafts") {
					t.Fatalf("%s: thrashing under rejected drafts advises %q", p.fleet.Elapsed(), a)
				}
				// The flag shown on the list is the drafts' own.
				if len(fd.Flags) != 1 || !strings.Contains(fd.Flags[0].Flag, "--speculative-config") {
					t.Fatalf("%s: thrashing under rejected drafts shows flags %+v", p.fleet.Elapsed(), fd.Flags)
				}
			}
		}
	}
	if !seen || !early {
		t.Fatalf("thrashing while the drafts bind %v, in the verdict's first seconds %v: the case tests nothing", seen, early)
	}
}
