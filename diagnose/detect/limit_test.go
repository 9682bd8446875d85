package detect

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// The batch pinned at one low value for minutes with a queue and the KV
// cache nearly empty: the plateau is the current --max-num-seqs, so the
// advice says "48 → n", not "current value unknown".
func TestPlateauIsTheCurrentMaxNumSeqs(t *testing.T) {
	st := healthyStats()
	st.Running, st.Waiting, st.KVUsage, st.KVUsageMax, st.TTFT = 48, 30, 0.2, 0.2, qs(1.5, 4, 6, 200)
	ep := upEndpoint("r", st) // no max_num_seqs in the config
	w := newWorld(t, chatCfg(), ep)
	frames := w.run(t0, 3*time.Minute, time.Second, nil)
	f := frames[len(frames)-1]
	if v := f.Endpoints[0].Verdict; v.Limit != diagnose.LimitBatchCap || v.Signals < 3 {
		t.Fatalf("verdict %+v, want the batch cap", v)
	}
	fd := findingOf(f, "prefill_starvation")
	if fd == nil || len(fd.Flags) == 0 {
		t.Fatalf("no prefill_starvation with a flag: %+v", f.Findings)
	}
	fc := fd.Flags[0]
	if fc.Flag != "--max-num-seqs" || spell(fc.From) != "48" || !strings.Contains(txt(fc.Why), "current value from the plateau: 48 running") {
		t.Errorf("flag %+v, want from the plateau 48", fc)
	}
	if !strings.Contains(txt(fd.Action), "raise --max-num-seqs 48 → ") {
		t.Errorf("action %q", txt(fd.Action))
	}
	// Without a queue throughout, a flat batch is no cap.
	st.Waiting = 0
	w = newWorld(t, chatCfg(), upEndpoint("r", st))
	frames = w.run(t0, time.Minute, time.Second, nil)
	if v := frames[len(frames)-1].Endpoints[0].Verdict; v.Limit == diagnose.LimitBatchCap {
		t.Errorf("flat batch with nothing waiting called the batch cap: %+v", v)
	}
}

// Issue 18's first case: requests queued behind LoRA adapter slots, the
// batch far from full, KV far from full. The verdict names the slots and
// the advice is --max-loras; --max-num-seqs, which would not admit one more
// request, is recommended by no finding.
func TestLoRASlotsNotPrefillStarvation(t *testing.T) {
	st := healthyStats()
	st.Running, st.Waiting, st.KVUsage, st.KVUsageMax, st.TTFT = 12, 40, 0.1, 0.1, qs(2, 6, 9, 200)
	st.WaitingDeferred, st.WaitingCapacity = 40, 0
	ep := upEndpoint("r", st)
	ep.MaxNumSeqs = 256
	ep.Lora = &sources.LoraInfo{MaxLora: 2, Running: []string{"a", "b"}, Waiting: []string{"c", "d", "e"}}
	w := newWorld(t, chatCfg(), ep)
	frames := w.run(t0, 3*time.Minute, time.Second, nil)
	f := frames[len(frames)-1]
	if v := f.Endpoints[0].Verdict; v.Limit != diagnose.LimitLoRASlots || v.Signals != 4 {
		t.Fatalf("verdict %+v, want LoRA slots with 4 signals", v)
	}
	fd := findingOf(f, "binding_limit")
	if fd == nil || len(fd.Flags) != 1 || fd.Flags[0].Flag != "--max-loras" || spell(fd.Flags[0].From) != "2" || spell(fd.Flags[0].To) != "4" {
		t.Fatalf("binding_limit %+v", fd)
	}
	for _, x := range append(f.Findings, f.Pending...) {
		if x.Rule == "prefill_starvation" {
			t.Errorf("prefill_starvation fired: %s", txt(x.Action))
		}
		for _, fc := range x.Flags {
			if fc.Flag == "--max-num-seqs" {
				t.Errorf("%s recommends %s %s → %s", x.Rule, fc.Flag, spell(fc.From), spell(fc.To))
			}
		}
	}
}

// A burst that drains: the queue emptied within the window and is not
// growing. The SLO breach it caused says so and stays info; no backlog.
func TestBurstThatDrainsIsQuiet(t *testing.T) {
	st := healthyStats()
	st.TTFT = qs(0.8, 3, 5, 300) // the burst's requests waited
	w := newWorld(t, chatCfg(), upEndpoint("r", st))
	frames := w.run(t0, 6*time.Minute, time.Second, func(now time.Time, w *world) {
		// A batch job every 40 s: 30 requests queue for 6 s and drain.
		s := int(now.Sub(t0).Seconds()) % 40
		w.eps[0].Stats.Waiting = 0
		if s < 6 {
			w.eps[0].Stats.Waiting = float64(30 - 5*s)
		}
	})
	for _, f := range frames {
		for _, x := range f.Findings {
			if x.Severity > diagnose.SevInfo {
				t.Fatalf("%v: %s %s: %s (verdict %+v, trend %+v)", f.Time.Sub(t0), x.Severity, x.Rule, txt(x.Summary), f.Endpoints[0].Verdict, f.Endpoints[0].Trend)
			}
		}
	}
	f := frames[len(frames)-1]
	if v := f.Endpoints[0].Verdict; v.Limit != diagnose.LimitBurst {
		t.Errorf("verdict %+v, want a burst", v)
	}
	fd := findingOf(f, "slo_breach")
	if fd == nil || fd.Severity != diagnose.SevInfo || !strings.Contains(txt(fd.Summary), "transient burst") {
		t.Errorf("slo_breach %+v, want info naming the burst", fd)
	}
}

// Too few observations: a verdict says so, and no latency rule sets a
// severity from them.
func TestFewSamplesNoSeverity(t *testing.T) {
	st := healthyStats()
	st.TTFT, st.Waiting = qs(2, 6, 9, 300), 12
	w := newWorld(t, chatCfg(), upEndpoint("r", st))
	f := w.run(t0, 5*time.Second, time.Second, nil)[5]
	if v := f.Endpoints[0].Verdict; v.Limit != diagnose.LimitFewData {
		t.Errorf("verdict after 6 points %+v, want few samples", v)
	}
	for _, x := range append(f.Findings, f.Pending...) {
		if x.Rule == "slo_breach" {
			t.Errorf("slo_breach from 6 points: %s %s", x.Severity, txt(x.Summary))
		}
	}
}

// P/D disaggregation's decode side: 1.2 reads a second of 5 requests fail and are
// recomputed here; the queue empties between them, but it is the transfer,
// not a burst, and no finding advises a flag of this engine's batch.
func TestKVTransferBinds(t *testing.T) {
	for _, expired := range []float64{0, 0.3} {
		st := healthyStats()
		st.TTFT, st.KVXferFailRate, st.KVExpiredRate, st.WaitingDeferred = qs(0.1, 2.3, 2.4, 300), 1.2, expired, 2
		w := newWorld(t, chatCfg(), upEndpoint("r", st))
		frames := w.run(t0, 3*time.Minute, time.Second, func(now time.Time, w *world) {
			w.eps[0].Stats.Waiting = float64(int(now.Sub(t0).Seconds()) % 3) // empties every 3 s
		})
		f := frames[len(frames)-1]
		if v := f.Endpoints[0].Verdict; v.Limit != diagnose.LimitKVTransfer || v.Signals != 3 {
			t.Fatalf("expired %g/s: verdict %+v, want KV transfer with 3 signals", expired, v)
		}
		fd := findingOf(f, "binding_limit")
		if fd == nil || fd.Title != "KV transfer binds" || !strings.Contains(txt(fd.Action), "UCX_TLS") {
			t.Fatalf("expired %g/s: binding_limit %+v", expired, fd)
		}
		if got := strings.Contains(txt(fd.Action), "VLLM_NIXL_ABORT_REQUEST_TIMEOUT"); got != (expired > 0) {
			t.Errorf("expired %g/s: the timeout advised %v: %s", expired, got, txt(fd.Action))
		}
		for _, x := range append(f.Findings, f.Pending...) {
			for _, fc := range x.Flags {
				if fc.Flag == "--max-num-seqs" {
					t.Errorf("%s recommends %s %s → %s", x.Rule, fc.Flag, spell(fc.From), spell(fc.To))
				}
			}
		}
	}
	// A failed read now and then (1 % of requests) binds nothing.
	st := healthyStats()
	st.TTFT, st.KVXferFailRate = qs(0.1, 2.3, 2.4, 300), 0.05
	w := newWorld(t, chatCfg(), upEndpoint("r", st))
	frames := w.run(t0, time.Minute, time.Second, nil)
	if v := frames[len(frames)-1].Endpoints[0].Verdict; v.Limit == diagnose.LimitKVTransfer || !slices.Contains(v.Ruled, diagnose.LimitKVTransfer) {
		t.Errorf("1 %% of reads failing: verdict %+v, want another limit with KV transfer ruled out", v)
	}
}

// Inter-token stalls whose window holds a queue that formed and emptied
// are a burst's prefills: no decode_stutter, pending or firing, and so no
// budget advice; the same stalls with no queue at all fire it.
func TestStutterOfADrainedBurstIsQuiet(t *testing.T) {
	for _, burst := range []bool{true, false} {
		st := healthyStats()
		st.ITL = qs(0.008, 0.03, 0.14, 50000)
		w := newWorld(t, chatCfg(), upEndpoint("r", st))
		frames := w.run(t0, 5*time.Minute, time.Second, func(now time.Time, w *world) {
			s := int(now.Sub(t0).Seconds()) % 40
			w.eps[0].Stats.Waiting = 0
			if burst && s < 4 {
				w.eps[0].Stats.Waiting = float64(12 - 3*s)
			}
		})
		seen := false
		for _, f := range frames {
			for _, x := range append(f.Findings, f.Pending...) {
				seen = seen || x.Rule == "decode_stutter"
			}
		}
		if seen == burst {
			t.Errorf("burst %v: decode_stutter seen %v", burst, seen)
		}
	}
}

// Pools the configuration names each get the verdict of their members,
// whatever model they serve; targets without a pool are in none.
func TestConfiguredPoolVerdicts(t *testing.T) {
	kv := healthyStats()
	kv.KVUsage, kv.KVUsageMax, kv.PreemptionsRate, kv.Waiting, kv.TTFT = 0.97, 0.99, 2, 30, qs(2, 6, 9, 300)
	eps := []diagnose.EndpointView{upEndpoint("a", kv), upEndpoint("b", healthyStats()), upEndpoint("c", healthyStats()), upEndpoint("d", healthyStats())}
	eps[0].Pool, eps[1].Pool, eps[2].Pool = "west", "west", "east"
	eps[1].Models = []string{"other"}
	w := newWorld(t, chatCfg(), eps...)
	frames := w.run(t0, time.Minute, time.Second, nil)
	ps := frames[len(frames)-1].Fleet.Pools
	if len(ps) != 2 || ps[0].Pool != "east" || ps[1].Pool != "west" || ps[0].Endpoints != 1 || ps[1].Endpoints != 2 {
		t.Fatalf("pools %+v, want east (1) and west (2)", ps)
	}
	if v := ps[1].Verdict; v.Limit != diagnose.LimitKVCache || v.Signals != 1 || v.Of != 2 {
		t.Errorf("west's verdict %+v, want the KV cache, 1 of 2", v)
	}
	if v := ps[0].Verdict; v.Limit != diagnose.LimitHealthy {
		t.Errorf("east's verdict %+v, want healthy", v)
	}
}

// vLLM preempts only when a running sequence cannot get a block: a cache
// that preempts, read at 85 % after the preempted sequences freed theirs,
// binds; it is not room for compute or the batch cap to explain the queue.
func TestPreemptingCacheBindsBelowFull(t *testing.T) {
	st := healthyStats()
	st.Running, st.Waiting, st.KVUsage, st.KVUsageMax, st.TTFT = 180, 400, 0.85, 0.85, qs(3, 9, 12, 300)
	st.PreemptionsRate = 1.2
	ep := upEndpoint("r", st)
	ep.MaxNumSeqs = 256
	w := newWorld(t, chatCfg(), ep)
	frames := w.run(t0, 2*time.Minute, time.Second, nil)
	if v := frames[len(frames)-1].Endpoints[0].Verdict; v.Limit != diagnose.LimitKVCache {
		t.Fatalf("verdict %+v, want the KV cache", v)
	}
	// Without preemptions, 85 % is room.
	st.PreemptionsRate = 0
	w = newWorld(t, chatCfg(), upEndpoint("r", st))
	frames = w.run(t0, 2*time.Minute, time.Second, nil)
	if v := frames[len(frames)-1].Endpoints[0].Verdict; v.Limit == diagnose.LimitKVCache {
		t.Errorf("a cache at 85 %% that never preempted called binding: %+v", v)
	}
}
