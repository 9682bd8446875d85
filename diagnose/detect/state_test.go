package detect

import (
	"math"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// thrashAt sets the endpoint thrashing with pre preemptions per second at
// KV kv (5 finished requests/s: pre/5 preemptions per finished request).
func thrashAt(pre, kv float64) func(time.Time, *world) {
	return func(_ time.Time, w *world) {
		s := &w.eps[0].Stats
		thrashing(s)
		s.PreemptionsRate, s.KVUsage, s.ReqRate = pre, kv, 5
		w.eps[0].Subs[0].Stats = *s
	}
}

// A condition holding toward its hold is shown as pending with how long it
// has held of how long it needs, apart from the firing findings.
func TestPendingExposed(t *testing.T) {
	cfg := isolated(chatCfg(), "kv_cache_thrashing")
	cfg.Rules["slo_breach"] = RuleConfig{}
	w := newWorld(t, cfg, upEndpoint("r", healthyStats()))
	// 0.3/s is 0.06 per finished request: marginal, the full 2m hold.
	frames := w.run(t0, 40*time.Second, time.Second, thrashAt(0.3, 0.97))
	f := frames[len(frames)-1]
	if findingOf(f, "kv_cache_thrashing") != nil {
		t.Fatalf("fired after 40s of a marginal condition")
	}
	// preemption and slo_breach wait behind their pending cause.
	if len(f.Pending) != 1 || len(f.Endpoints[0].Pending) != 1 {
		t.Fatalf("pending %+v / %+v", f.Pending, f.Endpoints[0].Pending)
	}
	p := f.Pending[0]
	if p.Rule != "kv_cache_thrashing" || p.State != diagnose.FindingPending || p.HeldFor != 40*time.Second || p.Hold != 2*time.Minute ||
		!p.FirstSeen.Equal(t0) || txt(p.Summary) == "" || p.Severity != diagnose.SevWarning {
		t.Errorf("pending finding %+v", p)
	}
	if _, any := Worst(f.Findings); any {
		t.Errorf("a pending condition counts as a finding: %+v", f.Findings)
	}
	// It fires at its hold, and is no longer pending.
	frames = w.run(t0.Add(41*time.Second), 80*time.Second, time.Second, thrashAt(0.3, 0.97))
	at, fd := firstFiring(frames, "kv_cache_thrashing")
	if fd == nil || at.Sub(t0) != 2*time.Minute || fd.State != diagnose.FindingFiring || len(frames[len(frames)-1].Pending) != 0 {
		t.Errorf("fired at %v: %+v", at.Sub(t0), fd)
	}
}

// A firing finding whose premise stops holding is resolving: still shown,
// with its age and today's evidence, but with no action to take.
func TestResolvingWithholdsAction(t *testing.T) {
	w := newWorld(t, chatCfg(), upEndpoint("r", healthyStats()))
	frames := w.run(t0, 30*time.Second, time.Second, thrashAt(22, 0.97))
	if fd := findingOf(frames[len(frames)-1], "kv_cache_thrashing"); fd == nil || txt(fd.Action) == "" || len(fd.Flags) == 0 {
		t.Fatalf("not firing with advice: %+v", fd)
	}
	clear := t0.Add(31 * time.Second)
	frames = w.run(clear, 60*time.Second, time.Second, thrashAt(0, 0.70))
	fd := findingOf(frames[len(frames)-1], "kv_cache_thrashing")
	if fd == nil || fd.State != diagnose.FindingResolving || !fd.ResolvingSince.Equal(clear) {
		t.Fatalf("want resolving since %v: %+v", clear, fd)
	}
	if txt(fd.Action) != "" || len(fd.Flags) != 0 {
		t.Errorf("resolving keeps its action %q %+v", txt(fd.Action), fd.Flags)
	}
	kv := math.NaN()
	for _, e := range fd.Evidence {
		if e.Name == "KV usage" {
			kv = e.Num
		}
	}
	if kv != 0.70 {
		t.Errorf("evidence is not today's: KV %v", kv)
	}
	// Holding again: firing with its action, first seen unchanged.
	frames = w.run(clear.Add(61*time.Second), 0, time.Second, thrashAt(22, 0.97))
	if fd := findingOf(frames[0], "kv_cache_thrashing"); fd == nil || fd.State != diagnose.FindingFiring || txt(fd.Action) == "" || !fd.FirstSeen.Equal(t0) {
		t.Errorf("relapse %+v", fd)
	}
}

// A ratio sitting on the critical threshold does not flap the severity:
// it rises at once and falls only after the lower severity held for
// resolve_for.
func TestSeverityNoFlap(t *testing.T) {
	w := newWorld(t, isolated(chatCfg(), "kv_cache_thrashing"), upEndpoint("r", healthyStats()))
	// 2.45/s and 2.55/s over 5 finished/s: 0.49 and 0.51 per request
	// around the 0.5 critical, switching every 10s for 150s.
	frames := w.run(t0, 150*time.Second, time.Second, func(now time.Time, w *world) {
		pre := 2.45
		if now.Sub(t0)/(10*time.Second)%2 == 1 {
			pre = 2.55
		}
		thrashAt(pre, 0.97)(now, w)
	})
	changes, last := 0, diagnose.Severity(0)
	for _, f := range frames {
		if fd := findingOf(f, "kv_cache_thrashing"); fd != nil {
			if last != 0 && fd.Severity != last {
				changes++
			}
			last = fd.Severity
		}
	}
	if changes > 1 || last != diagnose.SevCritical {
		t.Errorf("%d severity changes, last %v", changes, last)
	}
	// Below critical for resolve_for (2m): back to warning.
	frames = w.run(t0.Add(151*time.Second), 2*time.Minute, time.Second, thrashAt(2.45, 0.97))
	if fd := findingOf(frames[len(frames)-1], "kv_cache_thrashing"); fd == nil || fd.Severity != diagnose.SevWarning {
		t.Errorf("after 2m below critical: %+v", fd)
	}
}

// Premises are re-checked at every evaluation: prefill starvation whose
// batch no longer fills its slots (32 of 512) and whose inter-token p50 is
// 5× its target is resolving, its raise withheld; decode stutter whose
// median rose above target is resolving too.
func TestPremiseRechecked(t *testing.T) {
	starving := func(run, itl50 float64) func(time.Time, *world) {
		return func(_ time.Time, w *world) {
			s := &w.eps[0].Stats
			s.Running, s.Waiting, s.KVUsage, s.TTFT = run, 40, 0.5, qs(2, 4, 6, 200)
			s.ITL = qs(itl50, itl50*1.5, itl50*2, 50000)
			w.eps[0].Subs[0].Stats = *s
		}
	}
	ep := upEndpoint("r", healthyStats())
	ep.MaxNumSeqs = 512
	w := newWorld(t, chatCfg(), ep)
	frames := w.run(t0, 2*time.Minute, time.Second, starving(500, 0.02))
	if fd := findingOf(frames[len(frames)-1], "prefill_starvation"); fd == nil || fd.State != diagnose.FindingFiring || txt(fd.Action) == "" {
		t.Fatalf("starvation not firing: %+v", fd)
	}
	frames = w.run(t0.Add(121*time.Second), 10*time.Second, time.Second, starving(32, 0.25))
	fd := findingOf(frames[len(frames)-1], "prefill_starvation")
	if fd == nil || fd.State != diagnose.FindingResolving || txt(fd.Action) != "" || len(fd.Flags) != 0 {
		t.Errorf("32 of 512 slots, inter-token p50 5× target: %+v", fd)
	}

	ep = upEndpoint("r", healthyStats())
	w = newWorld(t, chatCfg(), ep)
	stutter := func(p50 float64) func(time.Time, *world) {
		return func(_ time.Time, w *world) {
			w.eps[0].Stats.ITL = qs(p50, 0.15, 0.3, 50000)
			w.eps[0].Subs[0].Stats = w.eps[0].Stats
		}
	}
	frames = w.run(t0, 4*time.Minute, time.Second, stutter(0.03))
	if fd := findingOf(frames[len(frames)-1], "decode_stutter"); fd == nil || fd.State != diagnose.FindingFiring {
		t.Fatalf("stutter not firing: %+v", fd)
	}
	frames = w.run(t0.Add(241*time.Second), 5*time.Second, time.Second, stutter(0.12))
	if fd := findingOf(frames[len(frames)-1], "decode_stutter"); fd == nil || fd.State != diagnose.FindingResolving {
		t.Errorf("median 0.12s above the 50ms target still claims stutter: %+v", fd)
	}
}

// Findings carry evidence as numbers with units (formatting is the
// reader's); text stays for evidence that is not one number.
func TestEvidenceNumbers(t *testing.T) {
	w := newWorld(t, chatCfg(), upEndpoint("r", healthyStats()))
	frames := w.run(t0, 30*time.Second, time.Second, thrashAt(22, 0.97))
	fd := findingOf(frames[len(frames)-1], "kv_cache_thrashing")
	if fd == nil {
		t.Fatal("no finding")
	}
	got := map[string]diagnose.Evidence{}
	for _, e := range fd.Evidence {
		got[e.Name] = e
	}
	for name, want := range map[string]struct {
		v    float64
		unit diagnose.Unit
	}{"KV usage": {0.97, "ratio"}, "preemptions": {22, "per_s"}, "running": {250, "count"}, "TTFT p95": {4, "s"}} {
		if e := got[name]; !e.Numeric() || e.Num != want.v || e.Unit != want.unit {
			t.Errorf("%s: %+v, want %v %s", name, e, want.v, want.unit)
		}
	}
	// An arithmetic is its numbers, each with its unit.
	if e := got["KV capacity"]; e.Unit != diagnose.UnitTokens || !(e.Num > 0) || !e.Text.IsZero() {
		t.Errorf("KV capacity %+v", e)
	}
}
