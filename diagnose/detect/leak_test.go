package detect

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// A steady leak of 1.4 GiB/min is named within 3 minutes (a steep line
// over ≥ 2 min of history), critical because it doubles resident memory
// in well under an hour; a GPU-memory leak is projected against the
// devices' total.
func TestSteepLeak(t *testing.T) {
	const gib = 1 << 30
	w := newWorld(t, chatCfg(), upEndpoint("r", healthyStats()))
	frames := w.run(t0, 4*time.Minute, 5*time.Second, func(now time.Time, w *world) {
		w.eps[0].RSS = 2*gib + now.Sub(t0).Minutes()*1.4*gib
	})
	at, fd := firstFiring(frames, "memory_leak")
	if fd == nil || at.Sub(t0) > 3*time.Minute || fd.Severity != diagnose.SevCritical || !strings.Contains(txt(fd.Summary), "resident memory doubles") {
		t.Fatalf("fired at %v: %+v", at.Sub(t0), fd)
	}
	// The same growth with a noisy line (R² below 0.95) waits for the
	// full window.
	w = newWorld(t, chatCfg(), upEndpoint("r", healthyStats()))
	frames = w.run(t0, 4*time.Minute, 5*time.Second, func(now time.Time, w *world) {
		d := now.Sub(t0)
		w.eps[0].RSS = 2*gib + d.Minutes()*1.4*gib + float64(int(d.Seconds())%60)*0.1*gib
	})
	if _, fd := firstFiring(frames, "memory_leak"); fd != nil {
		t.Errorf("a noisy short line fired: %+v", fd)
	}

	// GPU memory: 70 of 80 GiB used, growing 256 MiB/min: 10 GiB left is
	// 40 minutes: critical.
	ep := upEndpoint("r", healthyStats())
	ep.RSS = nan
	ep.GPU = diagnose.EndpointGPU{GPUs: []int{0}}
	w = newWorld(t, chatCfg(), ep)
	frames = w.run(t0, 4*time.Minute, 5*time.Second, func(now time.Time, w *world) {
		used := 70*gib + now.Sub(t0).Minutes()*256*mib1
		w.eps[0].GPU.MemBytes = used
		w.gpu = sources.GPUSnapshot{Time: now, Source: "test", GPUs: []sources.GPU{{Index: 0, MemUsed: used, MemTotal: 80 * gib}}}
		w.series = []diagnose.GPUSeries{{}}
	})
	at, fd = firstFiring(frames, "memory_leak")
	if fd == nil || at.Sub(t0) > 3*time.Minute || fd.Severity != diagnose.SevCritical || !strings.Contains(txt(fd.Summary), "GPU memory full") {
		t.Fatalf("GPU leak fired at %v: %+v", at.Sub(t0), fd)
	}
}

// The live view and a --once report (every hold capped at half the
// window) over the same frames name the same findings with the same
// severity.
func TestLiveAndOnceAgree(t *testing.T) {
	st := healthyStats()
	st.KVUsage, st.KVUsageMax, st.Running, st.Waiting, st.PreemptionsRate = 0.97, 0.97, 150, 60, nan
	const gib = 1 << 30
	mut := func(now time.Time, w *world) { w.eps[0].RSS = 2*gib + now.Sub(t0).Minutes()*1.4*gib }
	live := newWorld(t, chatCfg(), upEndpoint("r", st))
	cfg := chatCfg()
	cfg.ForCap = 30 * time.Second
	once := newWorld(t, cfg, upEndpoint("r", st))
	a := live.run(t0, 3*time.Minute, 5*time.Second, mut)
	b := once.run(t0, 3*time.Minute, 5*time.Second, mut)
	sum := func(f *diagnose.Frame) string {
		var s []string
		for _, fd := range f.Findings {
			s = append(s, fd.ID()+" "+fd.Severity.String()+" "+fd.State.String())
		}
		return strings.Join(s, "; ")
	}
	la, lb := sum(a[len(a)-1]), sum(b[len(b)-1])
	if la != lb || !strings.Contains(la, "memory_leak") || !strings.Contains(la, "kv_cache_saturated") {
		t.Errorf("live: %s\nonce: %s", la, lb)
	}
}
