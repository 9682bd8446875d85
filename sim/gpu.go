package sim

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// gpuModel is the simulated device under one engine. Utilization is the
// share of time a kernel ran (what NVML reports), so it follows how busy the
// engine kept the GPU, not how full its batches were. Power follows the work
// in each step, temperature follows power with a thermal lag, and clocks
// drop when the power limit or the slowdown temperature is reached, which
// makes the engine's steps slower: the throttle feeds back into latency.
type gpuModel struct {
	util, memUtil float64 // 0..1, exponentially averaged over ~1 s
	powerW        float64 // averaged over ~1 s
	tempC         float64
	clock         float64 // SM clock as a fraction of the maximum (busy)
	busyNow       bool
	powerCapped   bool
	thermal       bool
	pcieBps       float64

	ambientC  float64
	cwPerWatt float64 // °C above ambient per watt at steady state

	memBase float64 // bytes held by the engine process at start
	leak    float64 // bytes leaked since start

	// neighbor is another process on the GPU (nil: none): its kernels are
	// time-sliced with the engine's, which gets 1 - share of the SMs.
	neighbor *gpuNeighbor
}

// gpuNeighbor is a process that is not the engine's on its GPU: a job
// someone started there.
type gpuNeighbor struct {
	pid   int
	name  string
	bytes float64
	share float64 // of the GPU's time its kernels take
}

const (
	utilTau    = time.Second
	powerTau   = time.Second
	thermalTau = 40 * time.Second
)

func newGPUModel(cfg *engineConfig) gpuModel {
	g := gpuModel{ambientC: gpuAmbientC, cwPerWatt: 0.065, clock: 1}
	g.tempC = g.ambientC + g.cwPerWatt*gpuIdleW
	g.powerW = gpuIdleW
	g.memBase = cfg.gpuMemUtil*gpuMemTotal + cudaContextB
	return g
}

func decay(d, tau time.Duration) float64 { return math.Exp(-float64(d) / float64(tau)) }

// slowdown is how much longer a step takes at the current clocks. Decode is
// mostly bound by memory bandwidth, so only part of the step scales.
func (g *gpuModel) slowdown() float64 {
	s := 1 + 0.8*(1/g.clock-1)
	if g.neighbor != nil {
		// Time-sliced: every step waits for the neighbor's share.
		s /= 1 - g.neighbor.share
	}
	return s
}

// run accounts a busy span with a step mix of prefill tokens and decoding
// sequences.
func (g *gpuModel) run(span time.Duration, prefillTok, decodeSeqs int) {
	intensity := 0.3 + 0.45*math.Min(1, float64(decodeSeqs)/64) + 0.65*math.Min(1, float64(prefillTok)/4096)
	bw := 0.35 + 0.45*math.Min(1, float64(decodeSeqs)/96)
	g.busyNow = true
	g.advance(span, 1, bw, intensity)
}

func (g *gpuModel) idle(span time.Duration) {
	g.busyNow = false
	g.advance(span, 0, 0, 0)
}

func (g *gpuModel) advance(span time.Duration, busy, bw, intensity float64) {
	if span <= 0 {
		return
	}
	// Clocks: the power limit caps the draw; at the slowdown temperature
	// the GPU drops to about half its clocks until it has cooled a few
	// degrees (the sawtooth of a thermally throttled GPU).
	clock := 1.0
	switch {
	case g.tempC >= gpuSlowdownC:
		g.thermal = true
	case g.tempC <= gpuSlowdownC-3:
		g.thermal = false
	}
	if g.thermal {
		clock = 0.55
	}
	want := gpuIdleW + (gpuMaxW-gpuIdleW)*intensity*clock
	g.powerCapped = busy > 0 && want > gpuPowerLimitW
	if g.powerCapped {
		clock *= (gpuPowerLimitW - gpuIdleW) / (want - gpuIdleW)
		want = gpuPowerLimitW
	}
	if busy > 0 {
		g.clock = clock
	}
	a := decay(span, utilTau)
	g.util = g.util*a + busy*(1-a)
	g.memUtil = g.memUtil*a + bw*(1-a)
	p := decay(span, powerTau)
	g.powerW = g.powerW*p + want*(1-p)
	target := g.ambientC + g.cwPerWatt*g.powerW
	t := decay(span, thermalTau)
	g.tempC = g.tempC*t + target*(1-t)
	g.pcieBps = g.pcieBps*a + busy*(2e5+1e6*intensity)*(1-a)
}

// reading renders the device as NVML would report it.
func (g *gpuModel) reading(idx int, uuid, bus string, procs []sources.GPUProcess, why string) sources.GPU {
	sm := gpuIdleSMClock
	// The same clock-event bits NVML reports; the words come from them, as
	// the NVML source makes them.
	var bits sources.ClockEvent
	// Clocks are read at an instant: boost while a kernel runs, idle
	// clocks between requests.
	if g.busyNow {
		sm = math.Round(gpuMaxSMClock * g.clock)
	} else {
		bits |= sources.ClockIdle
	}
	if g.powerCapped {
		bits |= sources.ClockSWPowerCap
	}
	if g.thermal {
		bits |= sources.ClockSWThermal | sources.ClockHWThermal
	}
	used := 0.0
	for _, p := range procs {
		used += p.UsedBytes
	}
	return sources.GPU{
		Index: idx, Name: gpuName, UUID: uuid, PCIBusID: bus,
		UtilGPU: math.Round(g.util * 100), UtilMem: math.Round(g.memUtil * 100),
		MemUsed: used, MemTotal: gpuMemTotal,
		TempC: math.Round(g.tempC), TempSlowdownC: gpuSlowdownC,
		PowerW: math.Round(g.powerW*10) / 10, PowerLimitW: gpuPowerLimitW,
		SMClockMHz: sm, MemClockMHz: gpuMemClock,
		ClockEvents: bits.Words(), ClockEventBits: bits, Throttled: bits.Throttling(),
		PCIeTxBps: math.Round(g.pcieBps / 2), PCIeRxBps: math.Round(g.pcieBps),
		MIG: sources.TriNo, Processes: procs, SimulatedReason: why,
	}
}

// GPUs is the simulated GPUs of a fleet as a sources.GPUSource: one device
// per engine, numbered across replicas, always marked simulated.
type GPUs struct{ f *Fleet }

var _ sources.GPUSource = (*GPUs)(nil)

// Sample reads every replica's devices at its current simulated time (with
// a wall clock attached, after bringing each replica up to now).
func (s *GPUs) Sample(ctx context.Context) sources.GPUSnapshot {
	f := s.f
	snap := sources.GPUSnapshot{Source: "simulated", Simulated: true}
	idx := 0
	for _, r := range f.replicas {
		if ctx.Err() != nil {
			snap.Unavailable = "simulated GPUs: " + ctx.Err().Error()
			return snap
		}
		r.mu.Lock()
		f.sync(r)
		snap.Time = f.epoch.Add(r.now)
		snap.GPUs = r.appendGPUs(snap.GPUs, idx)
		idx += len(r.engines)
		r.mu.Unlock()
	}
	return snap
}

// Close implements sources.GPUSource.
func (s *GPUs) Close() error { return nil }

func gpuUUID(seed uint64, idx int) string {
	h := seed*0x9e3779b97f4a7c15 + uint64(idx+1)*0xbf58476d1ce4e5b9
	h ^= h >> 31
	h2 := h*0x94d049bb133111eb + 0x2545f4914f6cdd1d
	return fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", uint32(h>>32), uint16(h>>16), uint16(h),
		uint16(h2>>48), h2&0xffffffffffff)
}

func gpuBus(idx int) string {
	buses := [...]int{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}
	return fmt.Sprintf("00000000:%02X:00.0", buses[idx%len(buses)]+idx/len(buses))
}
