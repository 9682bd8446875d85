package detect

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// KV pinned at 97% with 150 running and 60 waiting, and no preemption
// counter (older V1, trimmed exporters, llm-d's simulator): saturation is
// named, in seconds (60 waiting is 12× the queue threshold), with advice
// that agrees with the evidence.
func TestKVSaturatedWithoutPreemptionCounter(t *testing.T) {
	st := healthyStats()
	st.KVUsage, st.KVUsageMax, st.Running, st.Waiting, st.PreemptionsRate = 0.97, 0.97, 150, 60, nan
	ep := upEndpoint("r", st)
	w := newWorld(t, chatCfg(), ep)
	frames := w.run(t0, time.Minute, time.Second, nil)
	at, fd := firstFiring(frames, "kv_cache_saturated")
	if fd == nil || at.Sub(t0) != fastHold || fd.Severity != diagnose.SevWarning {
		t.Fatalf("fired at %v: %+v", at.Sub(t0), fd)
	}
	// 0.85 × 150 ÷ 0.97 = 131 sequences fit at what running ones hold,
	// set as 128 (a multiple of 8 from 128).
	if !strings.Contains(txt(fd.Action), "set --max-num-seqs to 128") {
		t.Errorf("action %q", txt(fd.Action))
	}
	// Pending before it fires: named within seconds of opening.
	if p := frames[5].Pending; len(p) == 0 || p[0].Rule != "kv_cache_saturated" || p[0].State != diagnose.FindingPending {
		t.Errorf("not pending at 5s: %+v", p)
	}
	// Nothing waiting: no saturation.
	st.Waiting = 0
	w = newWorld(t, chatCfg(), upEndpoint("r", st))
	if _, fd := firstFiring(w.run(t0, 2*time.Minute, time.Second, nil), "kv_cache_saturated"); fd != nil {
		t.Errorf("fired with no queue: %+v", fd)
	}
}

// An engine holding requests that produces no token and finishes nothing
// while /metrics answers is stalled: critical within about 30 s; a
// sleeping engine is exempt and shown as asleep.
func TestEngineStalled(t *testing.T) {
	ep := upEndpoint("r", healthyStats())
	w := newWorld(t, chatCfg(), ep)
	w.run(t0, 20*time.Second, time.Second, nil)
	stall := func(_ time.Time, w *world) {
		s := &w.eps[0].Stats
		s.GenTokRate, s.ReqRate, s.Running, s.Waiting = 0, 0, 12, 30
		w.eps[0].Subs[0].Stats = *s
	}
	start := t0.Add(21 * time.Second)
	frames := w.run(start, time.Minute, time.Second, stall)
	at, fd := firstFiring(frames, "engine_stalled")
	if fd == nil || fd.Severity != diagnose.SevCritical || at.Sub(start) != 30*time.Second || !fd.FirstSeen.Equal(start) {
		t.Fatalf("fired at %v: %+v", at.Sub(start), fd)
	}
	if p := frames[10].Pending; len(p) == 0 || p[0].Rule != "engine_stalled" || p[0].HeldFor != 10*time.Second {
		t.Errorf("not pending 10s into the stall: %+v", p)
	}
	// Tokens again: resolving, then gone.
	frames = w.run(start.Add(61*time.Second), time.Minute, time.Second, func(_ time.Time, w *world) {
		s := &w.eps[0].Stats
		s.GenTokRate, s.ReqRate = 900, 5
		w.eps[0].Subs[0].Stats = *s
	})
	if fd := findingOf(frames[1], "engine_stalled"); fd == nil || fd.State != diagnose.FindingResolving {
		t.Errorf("after tokens resume: %+v", fd)
	}
	if fd := findingOf(frames[len(frames)-1], "engine_stalled"); fd != nil {
		t.Errorf("still there a minute later: %+v", fd)
	}

	// Asleep: no stalled and no underutilization finding; an info one says so.
	st := healthyStats()
	st.GenTokRate, st.ReqRate, st.Running, st.Waiting, st.KVUsage = 0, 0, 0, 0, 0
	st.Sleep, st.SleepLevel = diagnose.SleepAsleep, "weights_offloaded"
	w = newWorld(t, chatCfg(), upEndpoint("r", st))
	frames = w.run(t0, 10*time.Minute, 5*time.Second, nil)
	last := frames[len(frames)-1]
	if findingOf(last, "gpu_underutilization") != nil || findingOf(last, "engine_stalled") != nil {
		t.Errorf("a sleeping engine raised %+v", last.Findings)
	}
	if fd := findingOf(last, "engine_sleeping"); fd == nil || fd.Severity != diagnose.SevInfo || !strings.Contains(txt(fd.Summary), "asleep (weights_offloaded)") {
		t.Errorf("sleeping not shown: %+v", last.Findings)
	}
	// The same idle engine awake is underused (the suppression is real).
	st.Sleep = diagnose.SleepAwake
	w = newWorld(t, chatCfg(), upEndpoint("r", st))
	if _, fd := firstFiring(w.run(t0, 10*time.Minute, 5*time.Second, nil), "gpu_underutilization"); fd == nil {
		t.Errorf("an idle awake engine is not underused")
	}
}

// Failed requests (finished_reason error, ≥0.14) and admission rejections
// (by the cap that fired) are findings; releases without the signals stay
// silent.
func TestRequestErrorsAndRejections(t *testing.T) {
	st := healthyStats()
	st.ErrorShare = 0.12
	w := newWorld(t, chatCfg(), upEndpoint("r", st))
	_, fd := firstFiring(w.run(t0, 2*time.Minute, time.Second, nil), "request_errors")
	if fd == nil || fd.Severity != diagnose.SevCritical {
		t.Errorf("12%% errors: %+v", fd)
	}
	st = healthyStats()
	st.ErrorShare, st.RejectRate = nan, nan
	w = newWorld(t, chatCfg(), upEndpoint("r", st))
	for _, f := range w.run(t0, 3*time.Minute, 5*time.Second, nil) {
		if len(f.Findings)+len(f.Pending) > 0 {
			t.Fatalf("a release without the signals: %+v %+v", f.Findings, f.Pending)
		}
	}
	st = healthyStats()
	st.RejectRate, st.Rejects = 2, []diagnose.FinishShare{{Reason: "max_num_queued_reqs", PerSec: 2}}
	w = newWorld(t, chatCfg(), upEndpoint("r", st))
	_, fd = firstFiring(w.run(t0, 2*time.Minute, time.Second, nil), "admission_rejections")
	// 2 rejected against 5 finished: 2 ÷ 7 = 29% of those offered.
	if fd == nil || fd.Severity != diagnose.SevCritical || !strings.Contains(txt(fd.Action), "max_num_queued_reqs cap fired") || !strings.Contains(txt(fd.Summary), "29%") {
		t.Errorf("rejections: %+v", fd)
	}
}
