package detect

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

const gib80 = 80 * (1 << 30)

func h100(i int, util, used float64, ev sources.ClockEvent) sources.GPU {
	return sources.GPU{Index: i, UUID: "GPU-" + string(rune('a'+i)), Name: "NVIDIA H100 80GB HBM3", UtilGPU: util, UtilMem: util / 2,
		MemUsed: used, MemTotal: gib80, TempC: 70, TempSlowdownC: 87, PowerW: 500, PowerLimitW: 700, SMClockMHz: 1980,
		ClockEventBits: ev, Throttled: ev.Throttling(), ECCUncorrected: 0}
}

// onGPU joins an endpoint to GPU slots.
func onGPU(ep diagnose.EndpointView, slots ...int) diagnose.EndpointView {
	ep.GPU = diagnose.EndpointGPU{GPUs: slots, MemBytes: 70 << 30, UtilGPU: 60}
	return ep
}

func TestGPUThrottling(t *testing.T) {
	cases := []struct {
		name string
		ev   func(s int) sources.ClockEvent
		fire bool
		sev  diagnose.Severity
	}{
		{"thermal all the time", func(int) sources.ClockEvent { return sources.ClockSWThermal }, true, diagnose.SevWarning},
		{"hardware slowdown", func(int) sources.ClockEvent { return sources.ClockHWSlowdown | sources.ClockSWThermal }, true, diagnose.SevCritical},
		{"power cap alone is info", func(int) sources.ClockEvent { return sources.ClockSWPowerCap }, true, diagnose.SevInfo},
		{"thermal 60% of the time", func(s int) sources.ClockEvent {
			if s%10 < 6 {
				return sources.ClockSWThermal
			}
			return 0
		}, true, diagnose.SevWarning},
		{"thermal 40% of the time", func(s int) sources.ClockEvent {
			if s%10 < 4 {
				return sources.ClockSWThermal
			}
			return 0
		}, false, 0},
		{"idle is not throttling", func(int) sources.ClockEvent { return sources.ClockIdle }, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, chatCfg(), onGPU(upEndpoint("r", healthyStats()), 1))
			frames := w.run(t0, 4*time.Minute, time.Second, func(now time.Time, w *world) {
				s := int(now.Sub(t0).Seconds())
				w.addGPUReading(now, h100(0, 5, 1<<30, 0), h100(1, 90, 70<<30, c.ev(s)))
			})
			at, fd := firstFiring(frames, "gpu_throttling")
			if !c.fire {
				if fd != nil {
					t.Fatalf("fired: %s", txt(fd.Summary))
				}
				return
			}
			// History needs half the 60 s window, then 2 min for.
			if fd == nil || at.Sub(t0) < 2*time.Minute || at.Sub(t0) > 2*time.Minute+31*time.Second {
				t.Fatalf("fired at %v: %+v", at.Sub(t0), fd)
			}
			if fd.Severity != c.sev || fd.Target != "r" || len(fd.GPUs) != 1 || fd.GPUs[0] != 1 || txt(fd.Action) == "" {
				t.Errorf("finding %+v", fd)
			}
			last := frames[len(frames)-1]
			if c.sev > diagnose.SevInfo && (len(last.Endpoints[0].Findings) == 0 || last.Endpoints[0].Findings[0].Rule != "gpu_throttling") {
				t.Errorf("not attached to its endpoint: %+v", last.Endpoints[0].Findings)
			}
		})
	}
	// No GPU reading: nothing.
	w := newWorld(t, chatCfg(), upEndpoint("r", healthyStats()))
	if _, fd := firstFiring(w.run(t0, 4*time.Minute, time.Second, nil), "gpu_throttling"); fd != nil {
		t.Errorf("fired without GPUs")
	}
}

func TestGPUXID(t *testing.T) {
	cases := []struct {
		xid    int
		sev    diagnose.Severity
		action string
	}{
		{79, diagnose.SevCritical, "reboot"},
		{48, diagnose.SevCritical, "reset it"},
		{94, diagnose.SevCritical, "restart the vLLM server"},
		{13, diagnose.SevWarning, "restart the vLLM server"},
		{45, 0, ""}, // informational
	}
	for _, c := range cases {
		w := newWorld(t, chatCfg(), onGPU(upEndpoint("r", healthyStats()), 0), upEndpoint("other", healthyStats()))
		at := t0.Add(30 * time.Second)
		frames := w.run(t0, 40*time.Minute, 10*time.Second, func(now time.Time, w *world) {
			w.addGPUReading(now, h100(0, 90, 70<<30, 0), h100(1, 0, 0, 0))
			if now.Equal(at) {
				w.events = []sources.GPUEvent{sources.XIDEvent(at, 0, c.xid)}
			}
		})
		first, fd := firstFiring(frames, "gpu_xid")
		if c.sev == 0 {
			if fd != nil {
				t.Errorf("XID %d fired: %s", c.xid, txt(fd.Summary))
			}
			continue
		}
		if fd == nil || !first.Equal(at) || fd.Severity != c.sev || fd.Target != "r" || !strings.Contains(txt(fd.Action), c.action) ||
			!strings.Contains(txt(fd.Summary), "XID "+strconv.Itoa(c.xid)+" on GPU 0") {
			t.Errorf("XID %d: at %v %+v", c.xid, first.Sub(t0), fd)
			continue
		}
		// It stays for the 30 min window, then resolves.
		var gone time.Time
		for _, f := range frames {
			if f.Time.After(at) && findingOf(f, "gpu_xid") == nil && gone.IsZero() {
				gone = f.Time
			}
		}
		if d := gone.Sub(at); d < 30*time.Minute || d > 30*time.Minute+10*time.Second {
			t.Errorf("XID %d resolved after %v", c.xid, d)
		}
	}
	// A GPU that fell off the bus and is gone from the reading still gets
	// its finding, named by index.
	w := newWorld(t, chatCfg(), upEndpoint("r", healthyStats()))
	w.events = []sources.GPUEvent{sources.XIDEvent(t0, 3, 79)}
	fd := findingOf(w.frame(t0.Add(time.Second)), "gpu_xid")
	if fd == nil || fd.Target != "GPU 3" || fd.Severity != diagnose.SevCritical {
		t.Errorf("lost GPU: %+v", fd)
	}
}

// GPU signals in the endpoint rules: memory growth of the endpoint's GPU
// share, the device's headroom for OOM risk, utilization for idleness.
func TestGPUSignalsInEndpointRules(t *testing.T) {
	// GPU memory +6 MiB/min under flat load (RSS flat): memory_leak on GPU.
	w := newWorld(t, chatCfg(), onGPU(upEndpoint("r", healthyStats()), 0))
	frames := w.run(t0, 25*time.Minute, 5*time.Second, func(now time.Time, w *world) {
		w.eps[0].GPU.MemBytes = 70*(1<<30) + now.Sub(t0).Minutes()*6*mib1
		w.addGPUReading(now, h100(0, 60, w.eps[0].GPU.MemBytes, 0))
	})
	if _, fd := firstFiring(frames, "memory_leak"); fd == nil || !strings.Contains(txt(fd.Summary), "GPU memory +") || !strings.Contains(txt(fd.Summary), "6 MiB/min") {
		t.Errorf("GPU leak: %+v", fd)
	}
	// 79.5 of 80 GiB used with KV full: critical OOM risk with the
	// utilization computed to leave 5% free (0.9 → 0.85).
	st := healthyStats()
	st.KVUsage = 0.95
	w = newWorld(t, chatCfg(), onGPU(upEndpoint("r", st), 0))
	frames = w.run(t0, 6*time.Minute, 5*time.Second, func(now time.Time, w *world) {
		w.addGPUReading(now, h100(0, 90, 79.5*(1<<30), 0))
	})
	fd := findingOf(frames[len(frames)-1], "oom_risk")
	if fd == nil || fd.Severity != diagnose.SevCritical || spell(fd.Flags[0].From) != "0.90" || spell(fd.Flags[0].To) != "0.85" || !strings.Contains(txt(fd.Flags[0].Why), "keeping 5% free") {
		t.Errorf("oom: %+v", fd)
	}
	// A lost GPU makes the memory unknown: no number, no finding.
	w = newWorld(t, chatCfg(), onGPU(upEndpoint("r", st), 0))
	frames = w.run(t0, 6*time.Minute, 5*time.Second, func(now time.Time, w *world) {
		g := h100(0, nan, nan, 0)
		g.Problem = "GPU has fallen off the bus"
		w.addGPUReading(now, g)
	})
	if fd := findingOf(frames[len(frames)-1], "oom_risk"); fd != nil {
		t.Errorf("oom on a lost GPU: %+v", fd)
	}
	// Small batches but the GPU busy (80%): not underutilized; idle (5%): it is.
	for _, c := range []struct {
		util float64
		fire bool
	}{{80, false}, {5, true}} {
		st := healthyStats()
		st.Running, st.KVUsage = 1, 0.02
		ep := onGPU(upEndpoint("r", st), 0)
		w := newWorld(t, chatCfg(), ep)
		frames := w.run(t0, 8*time.Minute, 5*time.Second, func(now time.Time, w *world) {
			w.addGPUReading(now, h100(0, c.util, 70<<30, 0))
			w.eps[0].GPU.Hist = w.series[0].Points
		})
		if _, fd := firstFiring(frames, "gpu_underutilization"); (fd != nil) != c.fire {
			t.Errorf("util %v: %+v", c.util, fd)
		} else if fd != nil && !strings.Contains(txt(fd.Summary), "GPU 5%") {
			t.Errorf("summary %q", txt(fd.Summary))
		}
	}
}

// A throttled GPU whose source fails (stale: the last values, throttled
// still) raises nothing: a finding it had goes at once, none is raised
// while it stays stale, and its endpoint is not judged on it.
func TestGPUStaleRaisesNothing(t *testing.T) {
	w := newWorld(t, chatCfg(), onGPU(upEndpoint("r", healthyStats()), 1))
	staleFrom := t0.Add(3 * time.Minute)
	frames := w.run(t0, 6*time.Minute, time.Second, func(now time.Time, w *world) {
		g := h100(1, 90, 70<<30, sources.ClockSWThermal)
		g.Stale = !now.Before(staleFrom)
		w.addGPUReading(now, h100(0, 5, 1<<30, 0), g)
	})
	if at, fd := firstFiring(frames, "gpu_throttling"); fd == nil || !at.Before(staleFrom) {
		t.Fatalf("fresh and throttled: fired at %v: %+v", at.Sub(t0), fd)
	}
	for _, f := range frames {
		if f.Time.Before(staleFrom) {
			continue
		}
		for _, fd := range f.Findings {
			if len(fd.GPUs) > 0 && fd.GPUs[0] == 1 {
				t.Fatalf("stale GPU at %v: %s: %s", f.Time.Sub(t0), fd.Rule, txt(fd.Summary))
			}
		}
		if len(f.Endpoints[0].Findings) > 0 {
			t.Fatalf("at %v its endpoint has %s", f.Time.Sub(t0), f.Endpoints[0].Findings[0].Rule)
		}
	}
}
