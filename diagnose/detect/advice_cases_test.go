package detect

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// The three --max-num-seqs situations of issue 9: the advice is the
// smaller of the cache-config fit and the live fit, agrees with the
// evidence beside it, never lowers to at or above what runs and never
// raises past what the live KV fits; the value shown is that evidence
// rounded down as operators set it (a multiple of 8 from 128, of 4 below).
func TestMaxNumSeqsAgreesWithEvidence(t *testing.T) {
	cases := []struct {
		name      string
		rule      string
		mut       func(e *diagnose.EndpointView)
		lo, hi    int // the computed fit
		shown     int // rounded
		action    string
		whyHas    []string
		notAbove  float64 // the advice stays below this (running) when lowering
		raiseFrom int
	}{
		{
			// 150 running fill 95%: live 0.85 × 150 ÷ 0.95 = 134.2 → 134;
			// the cache-config fit from finished requests is 337.
			name: "150 running at KV 95%", rule: "kv_cache_thrashing", lo: 130, hi: 138, shown: 128, notAbove: 150,
			mut: func(e *diagnose.EndpointView) {
				s := &e.Stats
				thrashing(s)
				s.Running, s.Waiting, s.KVUsage, s.AvgPromptLen, s.AvgGenLen = 150, 60, 0.95, 800, 280
			},
			action: "set --max-num-seqs to 128",
			whyHas: []string{"22,950 ÷ 68 = 337 sequences", "live: KV 95% × 27,000 blocks ÷ 150 running", "= 134 sequences", "the smaller: 134",
				"rounded down to a multiple of 8 (exact below 16, multiples of 4 below 128, of 8 from 128), as operators set it: 128"},
		},
		{
			// 60 of 64 slots at KV 71%: live 0.85 × 60 ÷ 0.71 = 71.8 → 71;
			// raising to the cache-config 332 would need ~3.9× the cache.
			name: "starving 60 of 64 at KV 71%", rule: "prefill_starvation", lo: 70, hi: 74, shown: 68, raiseFrom: 64,
			mut: func(e *diagnose.EndpointView) {
				s := &e.Stats
				s.Running, s.Waiting, s.KVUsage, s.TTFT, s.AvgPromptLen, s.AvgGenLen = 60, 20, 0.71, qs(1.5, 4, 6, 200), 800, 300
				e.MaxNumSeqs = 64
			},
			action: "raise --max-num-seqs 64 → 68",
			whyHas: []string{"= 332 sequences", "live: KV 71% × 27,000 blocks ÷ 60 running", "the smaller: 71", "rounded down to a multiple of 4", "as operators set it: 68"},
		},
		{
			// V0 swapping at KV 99% with 110 running: 0.85 × 110 ÷ 0.99 =
			// 94.4 → 94, below the 110 running.
			name: "V0 swapping at KV 99%", rule: "swapping", lo: 90, hi: 100, shown: 92, notAbove: 110,
			mut: func(e *diagnose.EndpointView) {
				s := &e.Stats
				*s = healthyV0Stats()
				s.Running, s.Waiting, s.KVUsage, s.Swapped, s.PreemptionsRate, s.AvgPromptLen, s.AvgGenLen = 110, 30, 0.99, 6, 3, 800, 300
				e.Version, e.MaxNumSeqs = v0, 256
				e.Subs[0].Key.Engine = ""
			},
			action: "lower --max-num-seqs 256 → 92",
			whyHas: []string{"= 332 sequences", "live: KV 99% × 27,000 blocks ÷ 110 running", "the smaller: 94", "as operators set it: 92"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ep := upEndpoint("r", healthyStats())
			c.mut(&ep)
			ep.Subs[0].Stats = ep.Stats
			w := newWorld(t, chatCfg(), ep)
			frames := w.run(t0, 3*time.Minute, time.Second, nil)
			fd := findingOf(frames[len(frames)-1], c.rule)
			if fd == nil {
				t.Fatalf("no %s: %+v", c.rule, frames[len(frames)-1].Findings)
			}
			var fc *diagnose.FlagChange
			for i := range fd.Flags {
				if fd.Flags[i].Flag == "--max-num-seqs" {
					fc = &fd.Flags[i]
				}
			}
			if fc == nil {
				t.Fatalf("no --max-num-seqs flag: %q %+v", txt(fd.Action), fd.Flags)
			}
			n, err := strconv.Atoi(spell(fc.To))
			if exact := int(fc.Exact); exact < c.lo || exact > c.hi {
				t.Errorf("--max-num-seqs computed %v, want %d..%d; why %s", fc.Exact, c.lo, c.hi, txt(fc.Why))
			}
			if err != nil || n != c.shown {
				t.Errorf("--max-num-seqs %q, want %d (%v rounded); why %s", spell(fc.To), c.shown, fc.Exact, txt(fc.Why))
			}
			if c.notAbove > 0 && float64(n) >= c.notAbove {
				t.Errorf("lowers to %d with %v running", n, c.notAbove)
			}
			if c.raiseFrom > 0 && n <= c.raiseFrom {
				t.Errorf("raise to %d from %d", n, c.raiseFrom)
			}
			if !strings.Contains(txt(fd.Action), c.action) {
				t.Errorf("action %q, want %q", txt(fd.Action), c.action)
			}
			for _, s := range c.whyHas {
				if !strings.Contains(txt(fc.Why), s) {
					t.Errorf("why lacks %q: %s", s, txt(fc.Why))
				}
			}
		})
	}
}
