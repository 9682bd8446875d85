package detect

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

func chatCfg() RulesConfig { return RulesConfig{SLO: diagnose.SLOProfiles()[0]} }

func thrashing(s *diagnose.Stats) {
	s.KVUsage, s.KVUsageMax, s.PreemptionsRate, s.TTFT = 0.97, 0.97, 22, qs(1.5, 4, 6, 200)
	s.Running, s.Waiting, s.AvgPromptLen, s.AvgGenLen = 250, 40, 800, 300
}

// A finding fires after its for, stays while the value sits between the
// fire and clear thresholds, and resolves only after the clear condition
// held for resolve_for: no flapping.
func TestHysteresis(t *testing.T) {
	ep := upEndpoint("r", healthyStats())
	w := newWorld(t, isolated(chatCfg(), "kv_cache_thrashing"), ep)
	set := func(pre, kv float64) func(time.Time, *world) {
		return func(_ time.Time, w *world) {
			s := &w.eps[0].Stats
			thrashing(s)
			s.PreemptionsRate, s.KVUsage = pre, kv
			w.eps[0].Subs[0].Stats = *s
		}
	}
	frames := w.run(t0, 3*time.Minute, time.Second, set(22, 0.97))
	at, fd := firstFiring(frames, "kv_cache_thrashing")
	// 4.4 preemptions per finished request is 88× the share threshold:
	// far past it, so it fires after the shortest hold, not the 2m for.
	if fd == nil || at.Sub(t0) != fastHold || !fd.FirstSeen.Equal(t0) || fd.Hold != fastHold {
		t.Fatalf("fired at %v (first seen %v), want after exactly %v", at.Sub(t0), fd, fastHold)
	}
	// Between thresholds (KV 85%: below kv_high, above kv_clear) it stays,
	// and alternating in and out of the band never resolves it.
	start := t0.Add(3*time.Minute + time.Second)
	frames = w.run(start, 5*time.Minute, time.Second, func(now time.Time, w *world) {
		kv := 0.85
		if now.Unix()%20 < 10 {
			kv = 0.97
		}
		set(22, kv)(now, w)
	})
	for _, f := range frames {
		if findingOf(f, "kv_cache_thrashing") == nil {
			t.Fatalf("resolved at %v while in the band", f.Time.Sub(t0))
		}
	}
	last := findingOf(frames[len(frames)-1], "kv_cache_thrashing")
	if !last.FirstSeen.Equal(t0) {
		t.Errorf("first seen moved to %v", last.FirstSeen)
	}
	// Clear (the preemptions stop, KV 70%): resolves after resolve_for
	// (2m), not before. (KV 70% alone does not clear it while it still
	// preempts: a preemption is a step that found the cache full.)
	start = start.Add(5*time.Minute + time.Second)
	frames = w.run(start, 3*time.Minute, time.Second, set(0, 0.70))
	var gone time.Time
	for _, f := range frames {
		if findingOf(f, "kv_cache_thrashing") == nil && gone.IsZero() {
			gone = f.Time
		}
	}
	if gone.Sub(start) != 2*time.Minute {
		t.Errorf("resolved %v after clearing, want 2m", gone.Sub(start))
	}
	// A short marginal relapse (0.3/s: 0.06 per finished request, just
	// past the 0.05 share) below for does not fire again.
	start = start.Add(3*time.Minute + time.Second)
	frames = w.run(start, 90*time.Second, time.Second, set(0.3, 0.97))
	if at, fd := firstFiring(frames, "kv_cache_thrashing"); fd != nil {
		t.Errorf("refired after %v", at.Sub(start))
	}
}

// The worked example of the issue: 27,000 blocks × 16 tokens, average
// sequence 1,100 tokens, 15% headroom.
func TestFitMaxNumSeqs(t *testing.T) {
	cases := []struct {
		blocks, bs, seq, headroom float64
		n                         int
		perSeq, usable            float64
		missing                   string
	}{
		// 27,000 × 0.85 = 22,950; 1,100/16 = 68.75 → 69; 22,950/69 = 332.6 → 332
		{27000, 16, 1100, 0.15, 332, 69, 22950, ""},
		// exact: 1,000 × 0.8 = 800; 512/16 = 32; 800/32 = 25
		{1000, 16, 512, 0.2, 25, 32, 800, ""},
		// no headroom; a 17-token sequence takes 2 blocks: 100/2 = 50
		{100, 16, 17, 0, 50, 2, 100, ""},
		// block size 32 (V0 on some GPUs): 5,000 × 0.9 = 4,500; 3,000/32 = 93.75 → 94; 4,500/94 = 47.9 → 47
		{5000, 32, 3000, 0.1, 47, 94, 4500, ""},
		{nan, 16, 1100, 0.15, 0, 0, 0, "num_gpu_blocks unknown"},
		{27000, nan, 1100, 0.15, 0, 0, 0, "block_size unknown"},
		{27000, 16, nan, 0.15, 0, 0, 0, "average sequence length unknown"},
	}
	for _, c := range cases {
		f, miss := FitMaxNumSeqs(c.blocks, c.bs, c.seq, c.headroom)
		if c.missing != "" {
			if !strings.Contains(miss, c.missing) {
				t.Errorf("%v: missing %q, want %q", c, miss, c.missing)
			}
			continue
		}
		if miss != "" || f.N != c.n || f.BlocksPerSeq != c.perSeq || f.Usable != c.usable {
			t.Errorf("%v: got n=%d perSeq=%v usable=%v (%s)", c, f.N, f.BlocksPerSeq, f.Usable, miss)
		}
	}
	f, _ := FitMaxNumSeqs(27000, 16, 1100, 0.15)
	want := "27,000 blocks × (1 − 15% headroom) = 22,950 usable; 1,100-token average sequence ÷ 16 tokens per block = 69 blocks per sequence (rounded up: a sequence holds whole blocks); 22,950 ÷ 69 = 332 sequences"
	if txt(f.Why()) != want {
		t.Errorf("why:\n%s\nwant\n%s", txt(f.Why()), want)
	}
}

func TestFitBatchedTokens(t *testing.T) {
	// 20 ms at 256 tokens/step, 200 ms at 4,096: 180 ms / 3,840 tokens =
	// 46.875 µs per token; 50 ms target: 256 + 30 ms / 46.875 µs = 256 + 640 = 896.
	b, miss := FitBatchedTokens(0.020, 0.200, 256, 4096, 0.050)
	if !miss.IsZero() || b.Tokens != 896 || math.Abs(b.PerToken-46.875e-6) > 1e-12 {
		t.Fatalf("%+v %s", b, txt(miss))
	}
	// Not a multiple of 64: 10 ms at 100, 110 ms at 2,100 → 50 µs/token;
	// 40 ms target: 100 + 30/0.05 = 700 → 640.
	if b, _ := FitBatchedTokens(0.010, 0.110, 100, 2100, 0.040); b.Tokens != 640 {
		t.Errorf("got %d, want 640", b.Tokens)
	}
	for _, c := range []struct {
		a, b, c, d, target float64
		want               string
	}{
		{0.02, 0.2, nan, 4096, 0.05, "tokens per step unknown"},
		{0.02, 0.2, 4096, 4096, 0.05, "not from step size"},
		{0.06, 0.2, 256, 4096, 0.05, "median step misses the target"},
		{nan, 0.2, 256, 4096, 0.05, "inter-token latency unknown"},
	} {
		if _, miss := FitBatchedTokens(c.a, c.b, c.c, c.d, c.target); !strings.Contains(txt(miss), c.want) {
			t.Errorf("%v: %q, want %q", c, txt(miss), c.want)
		}
	}
}

func TestLowerMemUtil(t *testing.T) {
	// With the GPU reading: 79.5 of 80 GiB = 99.375% used; keeping 5% free
	// takes 0.04375 off 0.95 → 0.90625 → 0.90.
	s, miss := LowerMemUtil(0.95, 79.5*(1<<30), 80*(1<<30), 0.05, 0.05)
	if miss != "" || s.To != 0.90 || !strings.Contains(txt(s.Why), "0.95 − 0.044 = 0.9") {
		t.Errorf("%+v %s", s, miss)
	}
	// Without: one step.
	if s, _ := LowerMemUtil(0.97, nan, nan, 0.05, 0.05); s.To != 0.92 {
		t.Errorf("step: %+v", s)
	}
	if _, miss := LowerMemUtil(nan, nan, nan, 0.05, 0.05); !strings.Contains(miss, "gpu_memory_utilization unknown") {
		t.Errorf("missing: %q", miss)
	}
}

// The thrashing finding names the computed --max-num-seqs against the
// configured one, with the arithmetic, and leaves preemption and slo_breach
// (which it explains) out of the list.
func TestThrashingAdviceAndSupersede(t *testing.T) {
	st := healthyStats()
	thrashing(&st)
	st.AvgPromptLen, st.AvgGenLen = 3000, 1000 // 4,000 tokens: 250 blocks
	st.GPUMemUtil = 0.55
	ep := upEndpoint("replica-3", st)
	ep.MaxNumSeqs = 256
	ep.Stats.GPUMemUtil = 0.55
	w := newWorld(t, chatCfg(), ep)
	frames := w.run(t0, 6*time.Minute, 5*time.Second, nil)
	f := frames[len(frames)-1]
	fd := findingOf(f, "kv_cache_thrashing")
	if fd == nil {
		t.Fatalf("no thrashing finding: %+v", f.Findings)
	}
	if findingOf(f, "preemption") != nil || findingOf(f, "slo_breach") != nil {
		t.Errorf("superseded findings shown: %+v", f.Findings)
	}
	// 27,000 × 0.85 = 22,950; 4,000 / 16 = 250; 22,950 / 250 = 91.8 → 91,
	// set as 88 (a multiple of 4). The other ways out are alternatives,
	// not changes to make with it: 88 was computed for today's cache.
	if !strings.HasPrefix(txt(fd.Action), "lower --max-num-seqs 256 → 88, or raise --gpu-memory-utilization 0.55 → 0.90, or --kv-cache-dtype fp8") ||
		!strings.Contains(txt(fd.Action), "apply one, then recompute") {
		t.Errorf("action %q", txt(fd.Action))
	}
	if len(fd.Flags) != 3 || fd.Flags[0].Alt || !fd.Flags[1].Alt || !fd.Flags[2].Alt {
		t.Errorf("alternatives %+v", fd.Flags)
	}
	if fd.Flags[0].Flag != "--max-num-seqs" || spell(fd.Flags[0].From) != "256" || spell(fd.Flags[0].To) != "88" || fd.Flags[0].Exact != 91 || !strings.Contains(txt(fd.Flags[0].Why), "22,950 ÷ 250 = 91") ||
		!strings.Contains(txt(fd.Flags[0].Why), "live: KV 97% × 27,000 blocks ÷ 250 running = 104.8 blocks per running sequence; 22,950 usable ÷ 104.8 = 219 sequences; the smaller: 91; rounded down to a multiple of 4") {
		t.Errorf("flag %+v", fd.Flags[0])
	}
	var mem, dtype bool
	for _, fc := range fd.Flags {
		mem = mem || (fc.Flag == "--gpu-memory-utilization" && spell(fc.From) == "0.55" && spell(fc.To) == "0.90")
		dtype = dtype || (fc.Flag == "--kv-cache-dtype" && spell(fc.To) == "fp8" && strings.Contains(txt(fc.Why), "54,000 blocks"))
	}
	if !mem || !dtype {
		t.Errorf("flags %+v", fd.Flags)
	}
	if len(f.Endpoints[0].Findings) != 1 || f.Findings[0].Severity != diagnose.SevCritical || fd.Engine != "0" {
		t.Errorf("endpoint findings %+v", f.Endpoints[0].Findings)
	}
	// Unknown max_num_seqs: the value is still computed and the finding
	// says what is missing to compare.
	w = newWorld(t, chatCfg(), upEndpoint("r", st))
	w.eps[0].Stats.GPUMemUtil = 0.9
	fd = findingOf(w.run(t0, 3*time.Minute, 5*time.Second, nil)[36], "kv_cache_thrashing")
	if fd == nil || spell(fd.Flags[0].From) != "" || spell(fd.Flags[0].To) != "88" || !strings.Contains(txt(fd.Flags[0].Why), "set max_num_seqs in the config file's targets") {
		t.Errorf("unknown current: %+v", fd)
	}
	// Already at or below the fit: --max-num-seqs is not the lever, and the
	// finding says so instead of recommending a rise.
	w = newWorld(t, chatCfg(), upEndpoint("r", st))
	w.eps[0].MaxNumSeqs = 64
	fd = findingOf(w.run(t0, 3*time.Minute, 5*time.Second, nil)[36], "kv_cache_thrashing")
	if fd == nil || fd.Flags[0].Flag == "--max-num-seqs" || !strings.Contains(txt(fd.Action), "--max-num-seqs 64 already fits 91 sequences") {
		t.Errorf("already fitting: %+v", fd)
	}
	// No prompt-length histogram: the cache-config fit names the missing
	// metric, and the live fit (0.85 × 250 ÷ 0.97 = 219, set as 216) still
	// gives a number.
	st.AvgPromptLen = nan
	w = newWorld(t, chatCfg(), upEndpoint("r", st))
	fd = findingOf(w.run(t0, 3*time.Minute, 5*time.Second, nil)[36], "kv_cache_thrashing")
	if fd == nil || spell(fd.Flags[0].To) != "216" || !strings.Contains(txt(fd.Flags[0].Why), "cache config: cannot compute: average sequence length unknown (vllm:request_prompt_tokens") {
		t.Errorf("missing data: %+v", fd.Flags)
	}
	// Neither: no number, both reasons named.
	st.KVUsage = nan
	w = newWorld(t, chatCfg(), upEndpoint("r", st))
	fd = findingOf(w.run(t0, 3*time.Minute, 5*time.Second, nil)[36], "kv_cache_thrashing")
	if fd != nil {
		t.Errorf("thrashing without KV usage: %+v", fd)
	}
}

// With several data-parallel engines the KV rules run per engine: the
// thrashing one is named and its own blocks size the advice.
func TestMultiEngine(t *testing.T) {
	calm, hot := healthyStats(), healthyStats()
	thrashing(&hot)
	hot.NumGPUBlocks, hot.KVCapacityTokens = 13500, 13500*16
	calm.NumGPUBlocks = 13500
	agg := healthyStats()
	agg.Engines, agg.NumGPUBlocks, agg.KVUsage, agg.KVUsageMax, agg.PreemptionsRate = 2, 27000, 0.68, 0.97, 11
	ep := upEndpoint("dp", agg)
	ep.Subs = []diagnose.SubView{{Key: sources.SubKey{Model: "m", Engine: "0"}, Stats: calm}, {Key: sources.SubKey{Model: "m", Engine: "1"}, Stats: hot}}
	ep.MaxNumSeqs = 256
	w := newWorld(t, chatCfg(), ep)
	f := w.run(t0, 3*time.Minute, 5*time.Second, nil)[36]
	var got []diagnose.Finding
	for _, fd := range f.Findings {
		if fd.Rule == "kv_cache_thrashing" {
			got = append(got, fd)
		}
	}
	if len(got) != 1 || got[0].Engine != "1" || got[0].Model != "m" {
		t.Fatalf("findings %+v", got)
	}
	// 13,500 × 0.85 = 11,475; 1,100/16 → 69; 11,475/69 = 166.3 → 166
	// (set as 160), not the 332 the endpoint's summed blocks would give.
	if got[0].Flags[0].Exact != 166 || spell(got[0].Flags[0].To) != "160" {
		t.Errorf("per-engine fit %+v", got[0].Flags[0])
	}
}

func TestEndpointDownRestartFlap(t *testing.T) {
	ep := upEndpoint("r", healthyStats())
	w := newWorld(t, chatCfg(), ep)
	setState := func(s diagnose.State, since time.Time) {
		w.eps[0].State, w.eps[0].Since = s, since
		if s != diagnose.StateUp {
			w.eps[0].LastError = "connection refused"
		}
	}
	// A restart: down 20 s, then up with a restart mark: info only.
	downAt := t0.Add(10 * time.Second)
	frames := w.run(t0, 3*time.Minute, time.Second, func(now time.Time, w *world) {
		switch {
		case now.Equal(downAt):
			setState(diagnose.StateDown, downAt)
		case now.Equal(downAt.Add(20 * time.Second)):
			setState(diagnose.StateUp, now)
			w.eps[0].RestartedAt = now
		}
	})
	for _, f := range frames {
		if sev, ok := Worst(f.Findings); ok && sev > diagnose.SevInfo {
			t.Fatalf("restart gave %+v at %v", f.Findings, f.Time.Sub(t0))
		}
	}
	if _, fd := firstFiring(frames, "endpoint_restarted"); fd == nil || fd.Severity != diagnose.SevInfo {
		t.Errorf("restart not noted: %+v", fd)
	}
	// A real outage: warning after 30 s, critical after 2 min.
	start := t0.Add(time.Hour)
	w = newWorld(t, chatCfg(), ep)
	frames = w.run(start, 3*time.Minute, time.Second, func(now time.Time, w *world) {
		if now.Equal(start.Add(10 * time.Second)) {
			setState(diagnose.StateDown, now)
		}
	})
	at, fd := firstFiring(frames, "endpoint_down")
	if fd == nil || at.Sub(start) != 55*time.Second || fd.Severity != diagnose.SevWarning || !strings.Contains(txt(fd.Summary), "connection refused") {
		t.Errorf("outage: %v %+v", at.Sub(start), fd)
	}
	if fd := findingOf(frames[len(frames)-1], "endpoint_down"); fd == nil || fd.Severity != diagnose.SevCritical {
		t.Errorf("not critical after 2m: %+v", fd)
	}
	// Other rules stop on a down endpoint (their data is stale).
	if len(frames[len(frames)-1].Findings) != 1 {
		t.Errorf("findings on a down endpoint: %+v", frames[len(frames)-1].Findings)
	}
	// Flapping: 20 s down every minute fires within a minute of the start.
	start = t0.Add(2 * time.Hour)
	w = newWorld(t, chatCfg(), ep)
	frames = w.run(start, 3*time.Minute, time.Second, func(now time.Time, w *world) {
		d := now.Sub(start)
		down := d%time.Minute < 20*time.Second
		if down && w.eps[0].State == diagnose.StateUp {
			setState(diagnose.StateDown, now)
		} else if !down && w.eps[0].State != diagnose.StateUp {
			setState(diagnose.StateUp, now)
		}
	})
	at, fd = firstFiring(frames, "endpoint_down")
	if fd == nil || at.Sub(start) > time.Minute || !fd.FirstSeen.Equal(start) || !strings.Contains(txt(fd.Summary), "outage 2 in 10m") {
		t.Errorf("flapping: %v %+v", at.Sub(start), fd)
	}
	// While it is up between outages it is titled flapping, not down.
	titled := false
	for _, f := range frames {
		if fd := findingOf(f, "endpoint_down"); fd != nil && f.Endpoints[0].State == diagnose.StateUp {
			titled = true
			if fd.Title != "Endpoint flapping" {
				t.Errorf("up between outages, titled %q", fd.Title)
				break
			}
		}
	}
	if !titled {
		t.Error("no flapping finding while up")
	}
}

// Memory that grows on a straight line under flat load is a leak; the same
// growth under rising load, or noise, is not; without RSS nothing fires.
func TestMemoryLeak(t *testing.T) {
	mk := func(t *testing.T, rss func(d time.Duration) float64, req func(d time.Duration) float64) (time.Time, *diagnose.Finding) {
		w := newWorld(t, chatCfg(), upEndpoint("r", healthyStats()))
		frames := w.run(t0, 25*time.Minute, 5*time.Second, func(now time.Time, w *world) {
			d := now.Sub(t0)
			w.eps[0].RSS = rss(d)
			w.eps[0].Stats.ReqRate = req(d)
		})
		return firstFiring(frames, "memory_leak")
	}
	flatReq := func(time.Duration) float64 { return 3 }
	leak := func(d time.Duration) float64 { return 1.5*(1<<30) + d.Minutes()*60*mib1 } // 60 MiB/min
	at, fd := mk(t, leak, flatReq)
	// 60 MiB/min needs min_span × 64 ÷ 60 = 2m08s of history on a line
	// (R² ≥ 0.95); the hold counts from the line's start and 7.5× the
	// 8 MiB/min threshold shortens it to 10m × 1.5 ÷ 7.5 = 2m, so it
	// fires once the line is long enough. From about 2 GiB it doubles in
	// about half an hour: critical.
	if fd == nil || at.Sub(t0) < 2*time.Minute+8*time.Second || at.Sub(t0) > 2*time.Minute+30*time.Second || fd.Severity != diagnose.SevCritical {
		t.Fatalf("leak fired at %v: %+v", at.Sub(t0), fd)
	}
	if !strings.Contains(txt(fd.Summary), "60 MiB/min") || !strings.Contains(txt(fd.Summary), "resident memory") {
		t.Errorf("summary %q", txt(fd.Summary))
	}
	// Load rising with memory: not a leak.
	if _, fd := mk(t, leak, func(d time.Duration) float64 { return 1 + d.Minutes()/2 }); fd != nil {
		t.Errorf("fired under rising load: %s", txt(fd.Summary))
	}
	// Just below the threshold (7.9 MiB/min).
	if _, fd := mk(t, func(d time.Duration) float64 { return 1.5*(1<<30) + d.Minutes()*7.9*mib1 }, flatReq); fd != nil {
		t.Errorf("fired below threshold: %s", txt(fd.Summary))
	}
	// Just above (8.1 MiB/min).
	if _, fd := mk(t, func(d time.Duration) float64 { return 1.5*(1<<30) + d.Minutes()*8.1*mib1 }, flatReq); fd == nil {
		t.Errorf("8.1 MiB/min did not fire")
	}
	// Noise around a flat level (±200 MiB sawtooth): no steady line.
	if _, fd := mk(t, func(d time.Duration) float64 {
		return 1.5*(1<<30) + float64(int(d.Seconds())%97)*4*mib1
	}, flatReq); fd != nil {
		t.Errorf("fired on noise: %s", txt(fd.Summary))
	}
	// Multiprocess mode: no RSS.
	if _, fd := mk(t, func(time.Duration) float64 { return nan }, flatReq); fd != nil {
		t.Errorf("fired without RSS: %s", txt(fd.Summary))
	}
}

func TestReplicaImbalance(t *testing.T) {
	hot, calm := healthyStats(), healthyStats()
	hot.Running, hot.Waiting = 60, 30
	calm.Running = 20
	w := newWorld(t, chatCfg(), upEndpoint("a", calm), upEndpoint("b", hot), upEndpoint("c", calm))
	frames := w.run(t0, 4*time.Minute, 5*time.Second, nil)
	at, fd := firstFiring(frames, "replica_imbalance")
	// 90 in flight against 2 × 20: 2.25× past the factor, so the 3m hold
	// is 3m × 1.5 ÷ 2.25 = 2m.
	if fd == nil || fd.Target != "b" || fd.Model != "m" || at.Sub(t0) != 2*time.Minute {
		t.Fatalf("%v %+v", at.Sub(t0), fd)
	}
	last := frames[len(frames)-1]
	if len(last.Endpoints[1].Findings) == 0 || last.Endpoints[1].Findings[0].Rule != "replica_imbalance" {
		t.Errorf("not attached to its endpoint: %+v", last.Endpoints[1].Findings)
	}
	// Just below the factor: 39 in flight vs 20 (×1.95).
	hot.Running, hot.Waiting = 39, 0
	w = newWorld(t, chatCfg(), upEndpoint("a", calm), upEndpoint("b", hot), upEndpoint("c", calm))
	if _, fd := firstFiring(w.run(t0, 4*time.Minute, 5*time.Second, nil), "replica_imbalance"); fd != nil {
		t.Errorf("fired at ×1.95: %s", txt(fd.Summary))
	}
	// One replica: no peers, no finding.
	hot.Running, hot.Waiting = 60, 30
	w = newWorld(t, chatCfg(), upEndpoint("b", hot))
	if _, fd := firstFiring(w.run(t0, 4*time.Minute, 5*time.Second, nil), "replica_imbalance"); fd != nil {
		t.Errorf("fired alone: %s", txt(fd.Summary))
	}
}

func TestScrapeSlow(t *testing.T) {
	ep := upEndpoint("r", healthyStats())
	ep.ScrapeDuration = 1200 * time.Millisecond
	w := newWorld(t, chatCfg(), ep)
	at, fd := firstFiring(w.run(t0, 2*time.Minute, time.Second, nil), "scrape_slow")
	if fd == nil || at.Sub(t0) != time.Minute || fd.Severity != diagnose.SevWarning {
		t.Errorf("%v %+v", at.Sub(t0), fd)
	}
	ep.ScrapeDuration = 900 * time.Millisecond
	w = newWorld(t, chatCfg(), ep)
	if _, fd := firstFiring(w.run(t0, 2*time.Minute, time.Second, nil), "scrape_slow"); fd != nil {
		t.Errorf("fired at 900ms")
	}
}

// Configuration: a disabled rule stays silent, thresholds and for
// durations move, and unknown rules or settings are errors.
func TestRulesConfig(t *testing.T) {
	st := healthyStats()
	st.PreemptionsRate = 0.3
	run := func(cfg RulesConfig) (time.Time, *diagnose.Finding) {
		w := newWorld(t, cfg, upEndpoint("r", st))
		return firstFiring(w.run(t0, 10*time.Minute, 5*time.Second, nil), "preemption")
	}
	// 0.06 per finished request is 6× the 0.01 share: 5m × 1.5 ÷ 6 = 75s.
	if at, fd := run(chatCfg()); fd == nil || at.Sub(t0) != 75*time.Second {
		t.Fatalf("default: %v %+v", at.Sub(t0), fd)
	}
	cfg := chatCfg()
	cfg.Rules = map[string]RuleConfig{"preemption": {Disabled: true}}
	if _, fd := run(cfg); fd != nil {
		t.Errorf("disabled rule fired")
	}
	// 0.3/s over 5 finished requests/s is 0.06 per request.
	cfg.Rules = map[string]RuleConfig{"preemption": {Params: map[string]float64{"share": 0.07}}}
	if _, fd := run(cfg); fd != nil {
		t.Errorf("share 0.07 fired at 0.06")
	}
	cfg.Rules = map[string]RuleConfig{"preemption": {For: time.Minute}}
	if at, fd := run(cfg); fd == nil || at.Sub(t0) != fastHold { // 1m × 1.5 ÷ 6
		t.Errorf("for 1m: %v", at.Sub(t0))
	}
	cfg = chatCfg()
	cfg.ForCap = 30 * time.Second
	if at, fd := run(cfg); fd == nil || at.Sub(t0) != 30*time.Second {
		t.Errorf("capped: %v", at.Sub(t0))
	}
	for _, bad := range []map[string]RuleConfig{
		{"kv_thrash": {}},
		{"preemption": {Params: map[string]float64{"rat": 1}}},
		{"preemption": {Params: map[string]float64{"share": -1}}},
	} {
		if _, err := NewDetector(RulesConfig{Rules: bad}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// Every rule is documented and renders its thresholds; every parameter a
// text names exists.
func TestRuleTableDocumented(t *testing.T) {
	active, err := RulesConfig{}.Active()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range active {
		r := &active[i]
		if seen[r.ID] {
			t.Errorf("duplicate id %s", r.ID)
		}
		seen[r.ID] = true
		// GPU rules read NVML, which no vLLM metric carries: they have no
		// Prometheus form.
		if r.Title == "" || r.Catches == "" || r.Cond == "" || r.Clear == "" || r.Severity == "" || r.Action == "" || r.Needs == "" ||
			(r.prom == nil) != (r.Scope == ScopeGPU || r.NoPromQL != "") || r.describe == nil {
			t.Errorf("%s: incomplete definition", r.ID)
		}
		if (r.check == nil) == (r.fleetCheck == nil) {
			t.Errorf("%s: needs exactly one check", r.ID)
		}
		for _, s := range []string{txt(r.Text(r.Cond)), txt(r.Text(r.Clear)), txt(r.Text(r.Severity)), txt(r.Text(r.Action))} {
			if strings.ContainsAny(s, "{}") {
				t.Errorf("%s: unresolved parameter in %q", r.ID, s)
			}
		}
		for _, e := range causeGraph[r.ID] {
			if !e.restates {
				continue
			}
			id := e.cause
			j := -1
			for k := range active {
				if active[k].ID == id {
					j = k
				}
			}
			// The detector skips describing superseded findings from the
			// verdicts of rules evaluated before them in the same frame.
			if j < 0 || j > i {
				t.Errorf("%s: superseded by %s, which must exist and come first", r.ID, id)
			}
		}
	}
	for _, id := range []string{"kv_cache_thrashing", "prefill_starvation", "preemption", "swapping", "memory_leak", "gpu_underutilization",
		"prefix_cache_miss", "queue_backlog", "decode_stutter", "high_abort_rate", "oom_risk", "slo_breach", "replica_imbalance",
		"gpu_throttling", "gpu_xid", "endpoint_down", "endpoint_restarted", "scrape_slow"} {
		if !seen[id] {
			t.Errorf("rule %s missing", id)
		}
	}
}

// The backlog is sized from the queue itself (Little's law), so a
// closed loop (arrivals = completions, the queue flat) gets a real number:
// 60 waiting behind 150 running at 5 req/s is 12 s queued, and serving all
// 210 at once takes 210 ÷ 150 = 1.4×: 2 replicas. A growing queue adds
// arrivals over completions when that is larger: 5 finished/s with 1.5/s
// growth behind 2,000 running is 6.5 ÷ 5 = 1.3× (with 10% aborted, 6.5 ÷
// 4.5 = 1.44×), above the in-flight (2,000 + 290) ÷ 2,000 = 1.15×.
func TestQueueBacklogArithmetic(t *testing.T) {
	for _, c := range []struct {
		name         string
		abort, run   float64
		growth, wait float64
		want         string
	}{
		{"closed loop", 0, 150, 0, 60, "Little's law: 60 waiting ÷ 5 req/s served = 12s queued (target 5s); serving all 210 in flight at once takes (150 running + 60 waiting) ÷ 150 = 1.4× today's capacity, so 2 replicas of this model instead of 1"},
		// A growing queue on a batch at a plateau whose cap the KV cache
		// cannot raise: arrivals exceed capacity.
		{"growing", 0, 2000, 1.5, 20, "arrivals exceed capacity: (5 req/s finished + the queue growing 1.5/s) ÷ 5 req/s served = 1.3× what this replica serves: about 2 replicas of this model instead of 1"},
		{"growing, aborts", 0.1, 2000, 1.5, 20, "arrivals exceed capacity: (5 req/s finished + the queue growing 1.5/s) ÷ 4.5 req/s served (the finished less the 10% aborted) = 1.44× what this replica serves: about 2 replicas of this model instead of 1"},
	} {
		st := healthyStats()
		st.ReqRate, st.AbortShare, st.Queue, st.Running = 5, c.abort, qs(4, 8, 9, 100), c.run
		w := newWorld(t, chatCfg(), upEndpoint("r", st))
		frames := w.run(t0, 3*time.Minute, time.Second, func(now time.Time, w *world) {
			w.eps[0].Stats.Waiting = c.wait + c.growth*now.Sub(t0).Seconds()
		})
		fd := findingOf(frames[len(frames)-1], "queue_backlog")
		if fd == nil || !strings.Contains(txt(fd.Action), c.want) {
			t.Errorf("%s: %+v", c.name, fd)
		}
	}
}

// The frame says which SLO profile its findings judged by; SetSLO switches it.
func TestDetectorSetSLO(t *testing.T) {
	d, err := NewDetector(RulesConfig{})
	if err != nil {
		t.Fatal(err)
	}
	f := &diagnose.Frame{Time: t0}
	d.Evaluate(f)
	if f.SLO.Name != "chat" {
		t.Errorf("default profile %q", f.SLO.Name)
	}
	code, _ := diagnose.FindSLO(diagnose.SLOProfiles(), "code")
	d.SetSLO(code)
	f = &diagnose.Frame{Time: t0}
	d.Evaluate(f)
	if f.SLO.Name != "code" || d.SLO().Name != "code" {
		t.Errorf("after SetSLO: frame %q, detector %q", f.SLO.Name, d.SLO().Name)
	}
}

// On a large pool a replica_imbalance finding lists the least and the
// most loaded few peers and counts the rest: listing all of them in every
// finding is quadratic in the fleet.
func TestReplicaImbalanceListsFewPeers(t *testing.T) {
	hot, calm := healthyStats(), healthyStats()
	hot.Running, hot.Waiting = 60, 30
	calm.Running = 20
	eps := []diagnose.EndpointView{upEndpoint("hot", hot)}
	for i := range 40 {
		c := calm
		c.Running = float64(15 + i%10)
		eps = append(eps, upEndpoint(fmt.Sprintf("calm-%02d", i), c))
	}
	w := newWorld(t, chatCfg(), eps...)
	_, fd := firstFiring(w.run(t0, 4*time.Minute, 5*time.Second, nil), "replica_imbalance")
	if fd == nil || fd.Target != "hot" {
		t.Fatalf("%+v", fd)
	}
	peers, notListed := 0, -1.0
	for _, e := range fd.Evidence {
		switch {
		case strings.Contains(e.Name, " on calm-"):
			peers++
		case e.Name == "peers not listed":
			notListed = e.Num
		}
	}
	if peers != 2*peersListed || notListed != float64(40-2*peersListed) {
		t.Errorf("%d peers listed, %v not listed; evidence %+v", peers, notListed, fd.Evidence)
	}
}

// Two hot replicas in one large pool: the peers are ordered once per
// evaluation for both findings, and each lists the least and the most
// loaded of the others, itself never among them.
func TestReplicaImbalanceTwoHotListEachOther(t *testing.T) {
	hot, calm := healthyStats(), healthyStats()
	hot.Running, hot.Waiting = 60, 30
	eps := []diagnose.EndpointView{upEndpoint("hot-a", hot)}
	for i := range 40 {
		c := calm
		c.Running = float64(15 + i%10)
		eps = append(eps, upEndpoint(fmt.Sprintf("calm-%02d", i), c))
	}
	hot.Waiting = 35
	eps = append(eps, upEndpoint("hot-b", hot))
	w := newWorld(t, chatCfg(), eps...)
	frames := w.run(t0, 4*time.Minute, 5*time.Second, nil)
	other := map[string]string{"hot-a": "hot-b", "hot-b": "hot-a"}
	seen := 0
	for i := range frames[len(frames)-1].Findings {
		fd := &frames[len(frames)-1].Findings[i]
		if fd.Rule != "replica_imbalance" {
			continue
		}
		seen++
		var names []string
		var loads []float64
		for _, e := range fd.Evidence {
			if _, name, ok := strings.Cut(e.Name, " on "); ok && strings.HasPrefix(e.Name, "per ") {
				names, loads = append(names, name), append(loads, e.Num)
			}
		}
		if len(names) != 2*peersListed || !slices.IsSorted(loads) || slices.Contains(names, fd.Target) || names[len(names)-1] != other[fd.Target] {
			t.Errorf("%s lists %v with loads %v", fd.Target, names, loads)
		}
	}
	if seen != 2 {
		t.Errorf("%d replica_imbalance findings, want 2", seen)
	}
}

// A down endpoint's advice follows its error, as the fetcher words it: a
// DNS typo, a wrong path or an expired token is not "check the process".
func TestEndpointDownAdviceFollowsError(t *testing.T) {
	cases := []struct{ err, want string }{
		{"DNS lookup of gpu-nod-1 failed: no such host", "typo"},
		{"connection refused (is vLLM running on this port?)", "listens on this port"},
		{"HTTP 404 Not Found (is the path /metrics, and is this the vLLM API server?)", "path"},
		{"served an HTML page, not metrics (wrong port or path? vLLM serves /metrics on its API port)", "not a dashboard"},
		{"TLS certificate not trusted (use --ca-file, or --insecure-skip-verify): x509: unknown authority", "--ca-file"},
		{"HTTP 401 Unauthorized (check --bearer-token-file / basic auth)", "--bearer-token-file"},
		{"HTTP 403 Forbidden (check --bearer-token-file / basic auth)", "--bearer-token-file"},
		{"timed out after 3s", "py-spy"},
		{"body larger than 16 MiB after decompression (limit --max-body)", "--max-body"},
		{"parse error at line 2", "Xid"}, // nothing more specific: the process advice
	}
	actions := map[string]bool{}
	for _, c := range cases {
		ep := upEndpoint("r", healthyStats())
		w := newWorld(t, chatCfg(), ep)
		start := t0
		frames := w.run(start, 2*time.Minute, time.Second, func(now time.Time, w *world) {
			if now.Equal(start.Add(5 * time.Second)) {
				w.eps[0].State, w.eps[0].Since, w.eps[0].LastError = diagnose.StateDown, now, c.err
			}
		})
		_, fd := firstFiring(frames, "endpoint_down")
		if fd == nil {
			t.Fatalf("%s: no endpoint_down", c.err)
		}
		if !strings.Contains(txt(fd.Action), c.want) {
			t.Errorf("%s: action %q lacks %q", c.err, txt(fd.Action), c.want)
		}
		actions[txt(fd.Action)] = true
	}
	if len(actions) != len(cases)-1 { // 401 and 403 share theirs
		t.Errorf("%d distinct actions for %d errors", len(actions), len(cases))
	}
}

// An endpoint unseen behind a failing source (Blind) is not down: it
// raises no endpoint_down however long the source fails.
func TestBlindEndpointRaisesNothing(t *testing.T) {
	ep := upEndpoint("r", healthyStats())
	w := newWorld(t, chatCfg(), ep)
	start := t0
	frames := w.run(start, 3*time.Minute, time.Second, func(now time.Time, w *world) {
		if now.Equal(start.Add(5 * time.Second)) {
			// What a stale endpoint looks like; the source says why.
			w.eps[0].State, w.eps[0].Since, w.eps[0].Blind = diagnose.StateStale, now, true
		}
	})
	if at, fd := firstFiring(frames, "endpoint_down"); fd != nil {
		t.Errorf("endpoint_down at %v behind a failing source: %+v", at.Sub(start), fd)
	}
	// The same outage seen directly is one.
	ep = upEndpoint("r", healthyStats())
	w = newWorld(t, chatCfg(), ep)
	frames = w.run(start, 3*time.Minute, time.Second, func(now time.Time, w *world) {
		if now.Equal(start.Add(5 * time.Second)) {
			w.eps[0].State, w.eps[0].Since = diagnose.StateStale, now
		}
	})
	if _, fd := firstFiring(frames, "endpoint_down"); fd == nil {
		t.Error("a stale endpoint seen directly raised no endpoint_down: the test proves nothing")
	}
}
