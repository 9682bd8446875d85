package diagnose

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

const gib = 1 << 30

func gpuAt(i int, util, used float64, ev sources.ClockEvent, procs ...sources.GPUProcess) sources.GPU {
	return sources.GPU{Index: i, UUID: "GPU-" + string(rune('a'+i)), Name: "H100", UtilGPU: util, UtilMem: util / 2,
		MemUsed: used, MemTotal: 80 * gib, TempC: 60 + float64(i), PowerW: 300, PowerLimitW: 700,
		ClockEventBits: ev, Throttled: ev.Throttling(), Processes: procs}
}

func snapAt(sec int, gpus ...sources.GPU) sources.GPUSnapshot {
	return sources.GPUSnapshot{Time: t0.Add(time.Duration(sec) * time.Second), Source: "test", GPUs: gpus}
}

func TestGPUHistoryAndThrottleRun(t *testing.T) {
	e := New(Config{}, nil)
	var frames []*Frame
	for s := range 10 {
		ev := sources.ClockEvent(0)
		switch {
		case s >= 3 && s < 5:
			ev = sources.ClockSWPowerCap
		case s >= 5 && s < 7:
			ev = sources.ClockHWThermal | sources.ClockIdle
		}
		e.IngestGPU(snapAt(s, gpuAt(0, float64(10*s), float64(10+s)*gib, ev), gpuAt(1, 90, 40*gib, 0)))
		frames = append(frames, e.Frame(t0.Add(time.Duration(s)*time.Second)))
	}
	for s, f := range frames {
		h := f.GPUSeries[0]
		if len(h.Points) != s+1 || h.UUID != "GPU-a" || f.GPUSeries[1].Index != 1 {
			t.Fatalf("second %d: %d points %q", s, len(h.Points), h.UUID)
		}
		throttled := s >= 3 && s < 7
		if throttled != !h.ThrottledSince.IsZero() {
			t.Errorf("second %d: throttled since %v", s, h.ThrottledSince)
		}
		if throttled && !h.ThrottledSince.Equal(t0.Add(3*time.Second)) {
			t.Errorf("second %d: the run began at 3 s, not %v", s, h.ThrottledSince)
		}
	}
	if r := frames[6].GPUSeries[0].ThrottleReasons; r != sources.ClockSWPowerCap|sources.ClockHWThermal {
		t.Errorf("reasons over the run %#x (idle is not throttling)", uint64(r))
	}
	now := t0.Add(9 * time.Second)
	pts := frames[9].GPUSeries[0].Points
	w := GPUWindow(pts, now, 5*time.Second) // (4 s, 9 s]
	if len(w) != 5 || !w[0].Time.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("window: %d points from %v", len(w), w[0].Time)
	}
	if m := GPUMean(w, func(p GPUPoint) float64 { return p.UtilGPU }); m != 70 {
		t.Errorf("mean util %v", m)
	}
	if s := GPUSlope(pts, func(p GPUPoint) float64 { return p.MemUsed }); math.Abs(s-gib) > 1 {
		t.Errorf("memory slope %v B/s, want 1 GiB/s", s)
	}
	if sh := GPUThrottledShare(pts); sh != 0.4 {
		t.Errorf("throttled share %v", sh)
	}
	if !math.IsNaN(GPUSlope(pts[:1], func(p GPUPoint) float64 { return p.MemUsed })) || !math.IsNaN(GPUMean(nil, nil)) {
		t.Error("too little data must be NaN")
	}
}

// History is bounded by count and age, and slices already handed out never
// change.
func TestGPUHistoryBoundedAndImmutable(t *testing.T) {
	e := New(Config{GPUMaxPoints: 20, GPURetention: time.Minute, Window: 10 * time.Second}, nil)
	var held []GPUPoint
	for s := range 500 {
		e.IngestGPU(snapAt(s, gpuAt(0, float64(s), gib, 0)))
		f := e.Frame(t0.Add(time.Duration(s) * time.Second))
		pts := f.GPUSeries[0].Points
		if len(pts) > 20 {
			t.Fatalf("%d points kept", len(pts))
		}
		if s == 100 {
			held = pts
		}
	}
	for i, p := range held {
		if p.UtilGPU != float64(81+i) {
			t.Fatalf("a handed-out slice changed: point %d = %v", i, p.UtilGPU)
		}
	}
	e2 := New(Config{GPUMaxPoints: 1000, GPURetention: 30 * time.Second, Window: 10 * time.Second}, nil)
	for s := range 100 {
		e2.IngestGPU(snapAt(s, gpuAt(0, 1, gib, 0)))
	}
	if n := len(e2.Frame(t0.Add(99 * time.Second)).GPUSeries[0].Points); n != 31 {
		t.Errorf("age bound: %d points, want 31", n)
	}
}

func TestXIDEventsKept(t *testing.T) {
	e := New(Config{XIDRetention: 10 * time.Minute}, nil)
	s := snapAt(0, gpuAt(0, 1, gib, 0))
	s.Events = []sources.GPUEvent{sources.XIDEvent(s.Time, 0, 79)}
	e.IngestGPU(s)
	s = snapAt(60, gpuAt(0, 1, gib, 0))
	s.Events = []sources.GPUEvent{sources.XIDEvent(s.Time, 0, 94)}
	e.IngestGPU(s)
	e.IngestGPU(snapAt(120, gpuAt(0, 1, gib, 0)))
	if ev := e.Frame(t0.Add(2 * time.Minute)).GPUEvents; len(ev) != 2 || ev[0].XID != 79 || ev[1].XID != 94 {
		t.Fatalf("%+v", ev)
	}
	e.IngestGPU(snapAt(630, gpuAt(0, 1, gib, 0)))
	if ev := e.Frame(t0.Add(630 * time.Second)).GPUEvents; len(ev) != 1 || ev[0].XID != 94 {
		t.Errorf("after retention: %+v", ev)
	}
}

func TestEndpointGPUJoin(t *testing.T) {
	e := New(Config{}, []TargetInfo{{Name: "a:8000"}, {Name: "b:8001"}, {Name: "remote:8000"}, {Name: "idle:8002"}, {Name: "unjoined:8003"}})
	proc := func(pid int, used float64) sources.GPUProcess {
		return sources.GPUProcess{PID: pid, Name: "VLLM::Worker", UsedBytes: used}
	}
	e.SetEndpointProcs(0, sources.ProcTree{Root: 100, RootName: "vllm", PIDs: []int{100, 101, 102}})
	e.SetEndpointProcs(1, sources.ProcTree{Root: 300, RootName: "python3", PIDs: []int{300}})
	e.SetEndpointProcs(2, sources.ProcTree{Note: "not on this host"})
	e.SetEndpointProcs(3, sources.ProcTree{Root: 400, RootName: "docker-proxy", PIDs: []int{400}})
	if g := e.Frame(t0).Endpoints[0].GPU; g.Note != "no GPU reading yet" || !math.IsNaN(g.MemBytes) {
		t.Errorf("before any reading: %+v", g)
	}
	for s := range 3 {
		e.IngestGPU(snapAt(s,
			gpuAt(0, 80, 30*gib, 0, proc(101, 10*gib), proc(999, 1*gib)),
			gpuAt(1, 60, 30*gib, sources.ClockSWPowerCap, proc(102, float64(20+s)*gib)),
			gpuAt(2, 10, 6*gib, 0, proc(300, 5*gib)),
		))
	}
	f := e.Frame(t0.Add(2 * time.Second))
	a, b := f.Endpoints[0].GPU, f.Endpoints[1].GPU
	if !slices.Equal(a.GPUs, []int{0, 1}) || a.MemBytes != 32*gib || a.UtilGPU != 70 || a.Root != 100 || a.Note != "" {
		t.Errorf("a: %+v", a)
	}
	if len(a.Hist) != 3 || a.Hist[2].MemUsed != 32*gib || a.Hist[2].MemTotal != 160*gib || !a.Hist[2].Throttled() || a.Hist[2].TempC != 61 {
		t.Errorf("a history: %+v", a.Hist)
	}
	if s := GPUSlope(a.Hist, func(p GPUPoint) float64 { return p.MemUsed }); math.Abs(s-gib) > 1 {
		t.Errorf("a memory slope %v", s)
	}
	if !slices.Equal(b.GPUs, []int{2}) || b.MemBytes != 5*gib {
		t.Errorf("b: %+v", b)
	}
	if g := f.Endpoints[2].GPU; g.Note != "not on this host" || g.GPUs != nil || !math.IsNaN(g.MemBytes) {
		t.Errorf("remote: %+v", g)
	}
	if g := f.Endpoints[3].GPU; !strings.Contains(g.Note, "hold no GPU memory; the port is forwarded into a container") {
		t.Errorf("docker-proxy: %+v", g)
	}
	if g := f.Endpoints[4].GPU; g.Note != "" || !math.IsNaN(g.MemBytes) || g.GPUs != nil {
		t.Errorf("never joined: %+v", g)
	}

	// GPU 1 falls off the bus: it stays attached to a, flagged lost.
	lost := gpuAt(1, math.NaN(), math.NaN(), 0)
	lost.Problem = "GPU has fallen off the bus"
	e.IngestGPU(snapAt(3, gpuAt(0, 80, 30*gib, 0, proc(101, 10*gib)), lost, gpuAt(2, 10, 6*gib, 0, proc(300, 5*gib))))
	a = e.Frame(t0.Add(3 * time.Second)).Endpoints[0].GPU
	if !slices.Equal(a.GPUs, []int{0, 1}) || !a.Hist[len(a.Hist)-1].Lost || !math.IsNaN(a.MemBytes) ||
		a.Note != "GPU 1: GPU has fallen off the bus" || !math.IsNaN(a.Hist[len(a.Hist)-1].MemUsed) {
		t.Errorf("lost GPU detached: %+v", a)
	}
	if s := GPUSlope(a.Hist, func(p GPUPoint) float64 { return p.MemUsed }); math.Abs(s-gib) > 1 {
		t.Errorf("the lost reading must not bend the slope: %v", s)
	}

	// The driver cannot tell per-process memory; then NVML goes away.
	e.IngestGPU(snapAt(4, gpuAt(0, 80, 30*gib, 0, proc(101, math.NaN()))))
	if a := e.Frame(t0.Add(4 * time.Second)).Endpoints[0].GPU; !math.IsNaN(a.MemBytes) || !strings.Contains(a.Note, "per-process") {
		t.Errorf("unknown per-process memory: %+v", a)
	}
	e.IngestGPU(sources.GPUSnapshot{Time: t0.Add(5 * time.Second), Unavailable: "NVML unavailable: libnvidia-ml.so.1 not found"})
	if a := e.Frame(t0.Add(5 * time.Second)).Endpoints[0].GPU; a.Note != "no GPU data: NVML unavailable: libnvidia-ml.so.1 not found" {
		t.Errorf("unavailable: %+v", a)
	}
}

// GPUSlope (a test's check of a history) is the least-squares slope of v in units per second over the
// points where it is known (a memory leak's bytes/s); NaN with fewer than
// two points or no time between them.
func GPUSlope(pts []GPUPoint, v func(GPUPoint) float64) float64 {
	var n, st, sv, stt, stv float64
	var t0 time.Time
	for _, p := range pts {
		x := v(p)
		if math.IsNaN(x) {
			continue
		}
		if n == 0 {
			t0 = p.Time
		}
		t := p.Time.Sub(t0).Seconds()
		n++
		st += t
		sv += x
		stt += t * t
		stv += t * x
	}
	den := n*stt - st*st
	if n < 2 || den == 0 {
		return math.NaN()
	}
	return (n*stv - st*sv) / den
}

// A stale GPU (its source fails: the values are the last read) adds no
// point to its series nor to its endpoint's, stays joined to the
// endpoint (flagged stale), and its series resumes when it is fresh.
func TestGPUStaleAddsNoPoint(t *testing.T) {
	e := New(Config{}, []TargetInfo{{Name: "a:8000"}})
	e.SetEndpointProcs(0, sources.ProcTree{Root: 100, RootName: "vllm", PIDs: []int{100}})
	proc := sources.GPUProcess{PID: 100, Name: "VLLM::Worker", UsedBytes: 10 * gib}
	for s := range 6 {
		g := gpuAt(0, 80, 30*gib, 0, proc)
		g.Stale = s >= 2 && s < 5
		e.IngestGPU(snapAt(s, g))
		f := e.Frame(t0.Add(time.Duration(s) * time.Second))
		want := min(s+1, 2)
		if s == 5 {
			want = 3
		}
		ep := f.Endpoints[0].GPU
		if n := len(f.GPUSeries[0].Points); n != want || len(ep.Hist) != want {
			t.Errorf("second %d: %d points, endpoint %d, want %d", s, n, len(ep.Hist), want)
		}
		if !slices.Equal(ep.GPUs, []int{0}) || ep.Stale != g.Stale || ep.MemBytes != 10*gib {
			t.Errorf("second %d: join %+v", s, ep)
		}
	}
}
