package detect

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// TestRuleEdges drives each rule just below and just above its thresholds,
// with missing data, and across V0/V1 metric sets: a case fires exactly when
// it should, not before its for duration, with a recommendation.
func TestRuleEdges(t *testing.T) {
	chat := diagnose.SLOProfiles()[0] // TTFT 500ms, ITL 50ms, E2E 10s
	thrash := func(s *diagnose.Stats) {
		s.KVUsage, s.KVUsageMax, s.PreemptionsRate, s.TTFT = 0.97, 0.97, 8, qs(1.5, 4, 6, 200)
		s.Running, s.Waiting, s.AvgPromptLen, s.AvgGenLen = 250, 40, 800, 300
	}
	starve := func(s *diagnose.Stats) {
		s.TTFT, s.ITL, s.Waiting, s.Running, s.KVUsage = qs(1.2, 1.8, 2.5, 200), qs(0.025, 0.035, 0.05, 50000), 30, 48, 0.45
	}
	cases := []struct {
		name string
		rule string
		v0   bool
		mut  func(ep *diagnose.EndpointView)
		fire bool
		sev  diagnose.Severity
	}{
		{"thrashing: full KV, preemptions, slow TTFT", "kv_cache_thrashing", false, func(e *diagnose.EndpointView) { thrash(&e.Stats) }, true, diagnose.SevCritical},
		{"thrashing: preemptions per request just above", "kv_cache_thrashing", false, func(e *diagnose.EndpointView) { thrash(&e.Stats); e.Stats.PreemptionsRate = 0.255 }, true, diagnose.SevWarning},
		{"thrashing: preemptions per request just below", "kv_cache_thrashing", false, func(e *diagnose.EndpointView) { thrash(&e.Stats); e.Stats.PreemptionsRate = 0.245 }, false, 0},
		{"thrashing: per request enough, rate just below the floor", "kv_cache_thrashing", false, func(e *diagnose.EndpointView) {
			thrash(&e.Stats)
			e.Stats.PreemptionsRate, e.Stats.ReqRate = 0.049, 0.5
		}, false, 0},
		{"thrashing: rate at the floor, share well past", "kv_cache_thrashing", false, func(e *diagnose.EndpointView) {
			thrash(&e.Stats)
			e.Stats.PreemptionsRate, e.Stats.ReqRate = 0.051, 0.5
		}, true, diagnose.SevWarning},
		{"thrashing: nothing finishes", "kv_cache_thrashing", false, func(e *diagnose.EndpointView) { thrash(&e.Stats); e.Stats.PreemptionsRate, e.Stats.ReqRate = 0.2, 0 }, true, diagnose.SevCritical},
		{"thrashing: completions unknown", "kv_cache_thrashing", false, func(e *diagnose.EndpointView) { thrash(&e.Stats); e.Stats.ReqRate = nan }, false, 0},
		{"thrashing: KV just below full", "kv_cache_thrashing", false, func(e *diagnose.EndpointView) { thrash(&e.Stats); e.Stats.KVUsage = 0.899 }, false, 0},
		{"thrashing: TTFT within target", "kv_cache_thrashing", false, func(e *diagnose.EndpointView) { thrash(&e.Stats); e.Stats.TTFT = qs(0.2, 0.45, 0.6, 200) }, false, 0},
		{"thrashing: no preemption counter (V0 < 0.4.3)", "kv_cache_thrashing", false, func(e *diagnose.EndpointView) { thrash(&e.Stats); e.Stats.PreemptionsRate = nan }, false, 0},
		{"thrashing: no TTFT observation", "kv_cache_thrashing", false, func(e *diagnose.EndpointView) { thrash(&e.Stats); e.Stats.TTFT = noQ() }, false, 0},
		{"thrashing: V0 gpu_cache_usage metric set", "kv_cache_thrashing", true, func(e *diagnose.EndpointView) { thrash(&e.Stats) }, true, diagnose.SevCritical},

		{"preemption: just above 1% of requests", "preemption", false, func(e *diagnose.EndpointView) { e.Stats.PreemptionsRate = 0.055 }, true, diagnose.SevWarning},
		{"preemption: just below 1% of requests", "preemption", false, func(e *diagnose.EndpointView) { e.Stats.PreemptionsRate = 0.045 }, false, 0},
		{"preemption: below the floor", "preemption", false, func(e *diagnose.EndpointView) { e.Stats.PreemptionsRate, e.Stats.ReqRate = 0.019, 0.1 }, false, 0},
		{"preemption: critical", "preemption", false, func(e *diagnose.EndpointView) { e.Stats.PreemptionsRate = 1.3 }, true, diagnose.SevCritical},
		{"preemption: missing", "preemption", false, func(e *diagnose.EndpointView) { e.Stats.PreemptionsRate = nan }, false, 0},

		{"swapping: V0 swapped request", "swapping", true, func(e *diagnose.EndpointView) { e.Stats.Swapped = 1 }, true, diagnose.SevCritical},
		{"swapping: V0 CPU KV just above", "swapping", true, func(e *diagnose.EndpointView) { e.Stats.CPUKVUsage = 0.011 }, true, diagnose.SevCritical},
		{"swapping: V0 CPU KV just below", "swapping", true, func(e *diagnose.EndpointView) { e.Stats.CPUKVUsage = 0.009 }, false, 0},
		{"swapping: V1 has no swap metrics", "swapping", false, func(e *diagnose.EndpointView) { thrash(&e.Stats) }, false, 0},

		{"starvation: batch full, KV room", "prefill_starvation", false, func(e *diagnose.EndpointView) { starve(&e.Stats); e.MaxNumSeqs = 48 }, true, diagnose.SevWarning},
		{"starvation: max_num_seqs unknown", "prefill_starvation", false, func(e *diagnose.EndpointView) { starve(&e.Stats) }, true, diagnose.SevWarning},
		{"starvation: batch not full", "prefill_starvation", false, func(e *diagnose.EndpointView) { starve(&e.Stats); e.MaxNumSeqs = 256 }, false, 0},
		// --max-num-seqs is per data-parallel engine: 2 engines of 48 are not full at 48 running.
		{"starvation: DP engines not full", "prefill_starvation", false, func(e *diagnose.EndpointView) {
			starve(&e.Stats)
			e.MaxNumSeqs, e.Stats.Engines, e.Stats.Running = 48, 2, 48
		}, false, 0},
		{"starvation: DP engines full", "prefill_starvation", false, func(e *diagnose.EndpointView) {
			starve(&e.Stats)
			e.MaxNumSeqs, e.Stats.Engines, e.Stats.Running = 48, 2, 96
		}, true, diagnose.SevWarning},
		{"starvation: decode slow too", "prefill_starvation", false, func(e *diagnose.EndpointView) { starve(&e.Stats); e.Stats.ITL = qs(0.06, 0.08, 0.1, 50000) }, false, 0},
		{"starvation: just below the queue", "prefill_starvation", false, func(e *diagnose.EndpointView) { starve(&e.Stats); e.Stats.Waiting = 4 }, false, 0},
		{"starvation: KV is the limit", "prefill_starvation", false, func(e *diagnose.EndpointView) { starve(&e.Stats); e.Stats.KVUsage = 0.95 }, false, 0},
		{"starvation: critical", "prefill_starvation", false, func(e *diagnose.EndpointView) { starve(&e.Stats); e.Stats.TTFT = qs(3, 8, 10, 100) }, true, diagnose.SevCritical},

		{"backlog: queue time p95 just above", "queue_backlog", false, func(e *diagnose.EndpointView) { e.Stats.Waiting, e.Stats.Queue = 12, qs(2, 5.1, 7, 100) }, true, diagnose.SevWarning},
		{"backlog: queue time p95 just below, flat queue", "queue_backlog", false, func(e *diagnose.EndpointView) { e.Stats.Waiting, e.Stats.Queue = 12, qs(2, 4.9, 7, 100) }, false, 0},
		{"backlog: just below the waiting count", "queue_backlog", false, func(e *diagnose.EndpointView) { e.Stats.Waiting, e.Stats.Queue = 9, qs(20, 40, 50, 100) }, false, 0},
		{"backlog: critical", "queue_backlog", false, func(e *diagnose.EndpointView) { e.Stats.Waiting, e.Stats.Queue = 200, qs(20, 40, 50, 100) }, true, diagnose.SevCritical},
		{"backlog: waiting unknown", "queue_backlog", false, func(e *diagnose.EndpointView) { e.Stats.Waiting, e.Stats.Queue = nan, qs(20, 40, 50, 100) }, false, 0},

		{"stutter: p99 just above 2× target", "decode_stutter", false, func(e *diagnose.EndpointView) { e.Stats.ITL = qs(0.03, 0.06, 0.101, 50000) }, true, diagnose.SevWarning},
		{"stutter: p99 just below", "decode_stutter", false, func(e *diagnose.EndpointView) { e.Stats.ITL = qs(0.03, 0.06, 0.099, 50000) }, false, 0},
		{"stutter: uniformly slow is not stutter", "decode_stutter", false, func(e *diagnose.EndpointView) { e.Stats.ITL = qs(0.06, 0.1, 0.2, 50000) }, false, 0},
		{"stutter: too few tokens", "decode_stutter", false, func(e *diagnose.EndpointView) { e.Stats.ITL = qs(0.03, 0.06, 0.2, 100) }, false, 0},

		{"abort: share just above", "high_abort_rate", false, func(e *diagnose.EndpointView) { e.Stats.AbortShare = 0.101 }, true, diagnose.SevWarning},
		{"abort: share just below", "high_abort_rate", false, func(e *diagnose.EndpointView) { e.Stats.AbortShare = 0.099 }, false, 0},
		{"abort: critical", "high_abort_rate", false, func(e *diagnose.EndpointView) { e.Stats.AbortShare = 0.3 }, true, diagnose.SevCritical},
		{"abort: too little traffic", "high_abort_rate", false, func(e *diagnose.EndpointView) { e.Stats.AbortShare, e.Stats.ReqRate = 0.5, 0.04 }, false, 0},
		{"abort: no finish reasons", "high_abort_rate", false, func(e *diagnose.EndpointView) { e.Stats.AbortShare, e.Stats.ReqRate = nan, nan }, false, 0},

		{"oom: KV full at 0.95", "oom_risk", false, func(e *diagnose.EndpointView) { e.Stats.KVUsage, e.Stats.GPUMemUtil = 0.92, 0.95 }, true, diagnose.SevWarning},
		{"oom: KV full at 0.94", "oom_risk", false, func(e *diagnose.EndpointView) { e.Stats.KVUsage, e.Stats.GPUMemUtil = 0.92, 0.94 }, false, 0},
		{"oom: gpu_memory_utilization unknown", "oom_risk", false, func(e *diagnose.EndpointView) { e.Stats.KVUsage, e.Stats.GPUMemUtil = 0.99, nan }, false, 0},

		{"slo: TTFT p95 just above", "slo_breach", false, func(e *diagnose.EndpointView) { e.Stats.TTFT = qs(0.3, 0.51, 0.8, 300) }, true, diagnose.SevWarning},
		{"slo: TTFT p95 just below", "slo_breach", false, func(e *diagnose.EndpointView) { e.Stats.TTFT = qs(0.3, 0.49, 0.8, 300) }, false, 0},
		// E2E's thresholds, with the first token late too (E2E alone over while
		// TTFT and inter-token latency are within target is long answers:
		// info, below).
		{"slo: E2E p99 over twice the target", "slo_breach", false, func(e *diagnose.EndpointView) {
			e.Stats.E2E, e.Stats.TTFT = qs(4, 9, 21, 300), qs(0.3, 0.6, 0.8, 300)
		}, true, diagnose.SevWarning},
		{"slo: critical", "slo_breach", false, func(e *diagnose.EndpointView) {
			e.Stats.E2E, e.Stats.TTFT = qs(10, 25, 30, 300), qs(0.3, 0.6, 0.8, 300)
		}, true, diagnose.SevCritical},
		{"slo: E2E alone over, first token and pace within target: long answers", "slo_breach", false, func(e *diagnose.EndpointView) { e.Stats.E2E = qs(10, 25, 30, 300) }, true, diagnose.SevInfo},
		{"slo: too few requests", "slo_breach", false, func(e *diagnose.EndpointView) { e.Stats.TTFT = qs(3, 5, 6, 5) }, false, 0},

		// Short prompts (150 tokens) whose shared prefix no longer matches:
		// 9.9 % of 150 is 15 tokens a request, under one 16-token block.
		// A warning where the cache was seen matching (its hit rate fell,
		// here 60 % → 5 % a minute before), info where it never was
		// (prompts that share nothing read the same).
		{"prefix: hit ratio just below, nothing shared hits", "prefix_cache_miss", false, func(e *diagnose.EndpointView) {
			e.Stats.PrefixHitRatio, e.Stats.ReqRate = 0.099, 20
			prefixFellBefore(e)
		}, true, diagnose.SevWarning},
		{"prefix: hit ratio just below, never seen matching", "prefix_cache_miss", false, func(e *diagnose.EndpointView) { e.Stats.PrefixHitRatio, e.Stats.ReqRate = 0.099, 20 }, true, diagnose.SevInfo},
		// 5 % of 3,000 queried tokens/s over 5 requests/s: 30 tokens a
		// request, under two blocks; 5.5 %: 33, a shared prefix hits.
		{"prefix: matched just under two blocks a request", "prefix_cache_miss", false, func(e *diagnose.EndpointView) { e.Stats.PrefixHitRatio = 0.05; prefixFellBefore(e) }, true, diagnose.SevWarning},
		{"prefix: matched just over two blocks a request", "prefix_cache_miss", false, func(e *diagnose.EndpointView) { e.Stats.PrefixHitRatio = 0.055 }, false, 0},
		// RAG over unique documents behind a 512-token system prompt on 60
		// % of requests: 7 % of 9k tokens/s over 2 requests/s is 315 tokens
		// a request, the shared prefix hitting; the rest no cache gives.
		{"prefix: a shared prefix hits, the documents are unique", "prefix_cache_miss", false, func(e *diagnose.EndpointView) {
			e.Stats.PrefixHitRatio, e.Stats.PrefixQueryRate, e.Stats.PromptTokRate, e.Stats.ReqRate = 0.07, 9000, 9000, 2
		}, false, 0},
		{"prefix: per request unknown, the ratio alone", "prefix_cache_miss", false, func(e *diagnose.EndpointView) {
			e.Stats.PrefixHitRatio, e.Stats.PrefixQueryRate = 0.099, nan
			prefixFellBefore(e)
		}, true, diagnose.SevWarning},
		{"prefix: hit ratio just above", "prefix_cache_miss", false, func(e *diagnose.EndpointView) { e.Stats.PrefixHitRatio = 0.101 }, false, 0},
		{"prefix: no traffic", "prefix_cache_miss", false, func(e *diagnose.EndpointView) { e.Stats.PrefixHitRatio, e.Stats.PromptTokRate = 0, 50 }, false, 0},
		{"prefix: hit ratio unknown", "prefix_cache_miss", false, func(e *diagnose.EndpointView) { e.Stats.PrefixHitRatio = nan }, false, 0},
		{"prefix: V0 caching off is info", "prefix_cache_miss", true, func(e *diagnose.EndpointView) {}, true, diagnose.SevInfo},

		{"underutil: batch of one", "gpu_underutilization", false, func(e *diagnose.EndpointView) { e.Stats.Running, e.Stats.KVUsage, e.Stats.ReqRate = 1, 0.02, 0.25 }, true, diagnose.SevInfo},
		{"underutil: batch of three", "gpu_underutilization", false, func(e *diagnose.EndpointView) { e.Stats.Running, e.Stats.KVUsage = 3, 0.02 }, false, 0},
		{"underutil: queue behind a small batch", "gpu_underutilization", false, func(e *diagnose.EndpointView) { e.Stats.Running, e.Stats.Waiting, e.Stats.KVUsage = 1, 5, 0.02 }, false, 0},
		{"underutil: KV unknown", "gpu_underutilization", false, func(e *diagnose.EndpointView) { e.Stats.Running, e.Stats.KVUsage = 1, nan }, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := healthyStats()
			if c.v0 {
				st = healthyV0Stats()
			}
			ep := upEndpoint("replica-3", st)
			if c.v0 {
				ep.Version = v0
				ep.Subs[0].Key.Engine = ""
				ep.Cache.PrefixCaching = sources.TriNo
			}
			c.mut(&ep)
			ep.Subs[0].Stats = ep.Stats
			w := newWorld(t, isolated(RulesConfig{SLO: chat}, c.rule), ep)
			r, _ := LookupRule(c.rule)
			horizon := 2*r.For + 10*time.Second
			frames := w.run(t0, horizon, time.Second, nil)
			at, fd := firstFiring(frames, c.rule)
			if !c.fire {
				if fd != nil {
					t.Fatalf("fired at +%v: %s", at.Sub(t0), txt(fd.Summary))
				}
				return
			}
			if fd == nil {
				t.Fatalf("did not fire within %v", horizon)
			}
			// The trend rules need half a window of sparkline first.
			// The hold shrinks with how far past the threshold the data
			// is; a case just past it keeps the rule's full for.
			if lag := at.Sub(t0); lag < fd.Hold || lag > fd.Hold+w.window/2+2*time.Second || fd.Hold > r.For || fd.Hold < min(fastHold, r.For) {
				t.Errorf("fired after %v, hold %v, for %v", lag, fd.Hold, r.For)
			}
			if strings.Contains(c.name, "just above") && fd.Hold != r.For {
				t.Errorf("a marginal case holds %v, want the full %v", fd.Hold, r.For)
			}
			if fd.Severity != c.sev {
				t.Errorf("severity %v, want %v", fd.Severity, c.sev)
			}
			if fd.Target != "replica-3" || fd.Model != "m" || txt(fd.Summary) == "" || txt(fd.Explain) == "" || txt(fd.Action) == "" || len(fd.Evidence) == 0 {
				t.Errorf("incomplete finding: %+v", fd)
			}
			if strings.Contains(txt(fd.Summary)+txt(fd.Action), "NaN") || strings.Contains(txt(fd.Summary)+txt(fd.Action), "%!") {
				t.Errorf("bad number in %q / %q", txt(fd.Summary), txt(fd.Action))
			}
			for _, fc := range fd.Flags {
				if strings.Contains(spell(fc.To)+txt(fc.Why), "NaN") {
					t.Errorf("flag %+v", fc)
				}
			}
		})
	}
}

// prefixFellBefore gives e a fall of its prefix-cache hit rate, 60 % → 5 %,
// a minute before t0: the cache was seen matching.
func prefixFellBefore(e *diagnose.EndpointView) {
	e.Shifts = []diagnose.Shift{{Signal: diagnose.SigPrefixHit, Name: "prefix hit rate", Kind: diagnose.ShiftWorkload, Unit: diagnose.UnitRatio,
		Onset: t0.Add(-time.Minute), Detected: t0.Add(-30 * time.Second), Before: 0.6, After: 0.05}}
}
