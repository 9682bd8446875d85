//go:build cgo

package nvml

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/vtop-dev/vtop/sources"
)

func TestEveryFieldOnDGXA100(t *testing.T) {
	f := newFakeNode(t, 8)
	f.set(3, func(g *gpuState) {
		g.reasons = uint64(sources.ClockSWPowerCap | sources.ClockHWThermal)
		g.corrRows, g.uncRows, g.pending, g.failed = 2, 1, true, true
		g.mig = nvml.DEVICE_MIG_ENABLE
		g.graphics = []nvml.ProcessInfo{{Pid: 1003, UsedGpuMemory: 1 * gib}, {Pid: 2222, UsedGpuMemory: 3 * gib}}
	})
	f.writeComm(2222, "Xorg")
	s := f.open()
	snap := sample(t, s)
	if snap.Unavailable != "" || snap.Source != "NVML (driver 550.54.15)" {
		t.Fatalf("source %q unavailable %q", snap.Source, snap.Unavailable)
	}
	if len(snap.GPUs) != 8 {
		t.Fatalf("%d GPUs, want 8", len(snap.GPUs))
	}
	for i, g := range snap.GPUs {
		d := f.dev(i)
		want := map[string][2]float64{
			"util":     {g.UtilGPU, float64(50 + i)},
			"mem util": {g.UtilMem, float64(20 + i)},
			"used":     {g.MemUsed, float64(10+i) * gib},
			"total":    {g.MemTotal, 40 * gib},
			"temp":     {g.TempC, float64(60 + i)},
			"slowdown": {g.TempSlowdownC, 90},
			"power":    {g.PowerW, 250 + float64(i)},
			"limit":    {g.PowerLimitW, 400},
			"sm":       {g.SMClockMHz, 1410},
			"memclk":   {g.MemClockMHz, 1215},
			"ecc":      {g.ECCUncorrected, float64(i)},
			"pcie tx":  {g.PCIeTxBps, float64(1000*(i+1)) * 1024},
			"pcie rx":  {g.PCIeRxBps, float64(500*(i+1)) * 1024},
		}
		for name, v := range want {
			if v[0] != v[1] {
				t.Errorf("GPU %d %s = %v, want %v", i, name, v[0], v[1])
			}
		}
		if g.Index != i || g.Name != "Mock NVIDIA A100-SXM4-40GB" || g.UUID != d.UUID || g.PCIBusID != d.PciBusID {
			t.Errorf("GPU %d identity: %d %q %q %q", i, g.Index, g.Name, g.UUID, g.PCIBusID)
		}
		if len(g.FieldsMissing) != 0 || g.Problem != "" {
			t.Errorf("GPU %d missing %v problem %q", i, g.FieldsMissing, g.Problem)
		}
		if i == 3 {
			continue
		}
		if g.RetiredPages != float64(i%2) || g.RemapPending || g.RemapFailed || g.MIG != sources.TriNo || g.Throttled || g.ClockEvents != nil {
			t.Errorf("GPU %d: rows %v pending %v failed %v MIG %v throttled %v events %v",
				i, g.RetiredPages, g.RemapPending, g.RemapFailed, g.MIG, g.Throttled, g.ClockEvents)
		}
		wantProc := []sources.GPUProcess{{PID: 1000 + i, Name: "VLLM::Worker_" + string(rune('0'+i)), UsedBytes: float64(8+i) * gib}}
		if !slices.Equal(g.Processes, wantProc) {
			t.Errorf("GPU %d processes %+v, want %+v", i, g.Processes, wantProc)
		}
	}
	g := snap.GPUs[3]
	if g.RetiredPages != 3 || !g.RemapPending || !g.RemapFailed || g.MIG != sources.TriYes {
		t.Errorf("GPU 3 rows %v pending %v failed %v MIG %v", g.RetiredPages, g.RemapPending, g.RemapFailed, g.MIG)
	}
	if !g.Throttled || g.ClockEventBits != sources.ClockSWPowerCap|sources.ClockHWThermal ||
		!slices.Equal(g.ClockEvents, []string{"power cap", "thermal slowdown (hardware)"}) {
		t.Errorf("GPU 3 clock events %v %v throttled %v", g.ClockEventBits, g.ClockEvents, g.Throttled)
	}
	// Compute and graphics lists merge by PID, keeping the larger figure.
	wantProc := []sources.GPUProcess{{PID: 1003, Name: "VLLM::Worker_3", UsedBytes: 11 * gib}, {PID: 2222, Name: "Xorg", UsedBytes: 3 * gib}}
	if !slices.Equal(g.Processes, wantProc) {
		t.Errorf("GPU 3 processes %+v, want %+v", g.Processes, wantProc)
	}
	if len(snap.Notes) != 0 {
		t.Errorf("notes %q", snap.Notes)
	}
	// Static fields are read once, not every poll.
	sample(t, s)
	if n := len(f.dev(0).GetTemperatureThresholdCalls()); n != 1 {
		t.Errorf("slowdown threshold read %d times, want once", n)
	}
}

// Every NVML clock-event bit decodes into its words and the right
// throttling verdict, read through the mock.
func TestEveryClockEventReason(t *testing.T) {
	cases := []struct {
		bits      uint64
		word      string
		throttled bool
	}{
		{nvml.ClocksEventReasonGpuIdle, "idle", false},
		{nvml.ClocksEventReasonApplicationsClocksSetting, "application clocks setting", false},
		{nvml.ClocksEventReasonSwPowerCap, "power cap", true},
		{nvml.ClocksThrottleReasonHwSlowdown, "hardware slowdown", true},
		{nvml.ClocksEventReasonSyncBoost, "sync boost", false},
		{nvml.ClocksEventReasonSwThermalSlowdown, "thermal slowdown (software)", true},
		{nvml.ClocksThrottleReasonHwThermalSlowdown, "thermal slowdown (hardware)", true},
		{nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "power brake (hardware)", true},
		{nvml.ClocksEventReasonDisplayClockSetting, "display clock setting", false},
		{0x1000, "unknown reason 0x1000", false},
	}
	f := newFakeNode(t, 1)
	s := f.open()
	var all uint64
	for _, c := range cases {
		all |= c.bits
		f.set(0, func(g *gpuState) { g.reasons = c.bits })
		g := sample(t, s).GPUs[0]
		if !slices.Equal(g.ClockEvents, []string{c.word}) || g.Throttled != c.throttled || uint64(g.ClockEventBits) != c.bits {
			t.Errorf("bits %#x: words %q throttled %v, want %q %v", c.bits, g.ClockEvents, g.Throttled, c.word, c.throttled)
		}
	}
	f.set(0, func(g *gpuState) { g.reasons = all })
	if g := sample(t, s).GPUs[0]; len(g.ClockEvents) != len(cases) || !g.Throttled {
		t.Errorf("all reasons: %q", g.ClockEvents)
	}
	f.set(0, func(g *gpuState) { g.reasons = 0 })
	if g := sample(t, s).GPUs[0]; g.ClockEvents != nil || g.Throttled {
		t.Errorf("no reasons: %q %v", g.ClockEvents, g.Throttled)
	}
}

// A driver that lacks optional symbols: the calls are never made (the mock
// panics on a nil function, as a real missing symbol would kill the
// process) and the fields say why they are missing.
func TestMissingSymbols(t *testing.T) {
	f := newFakeNode(t, 2)
	f.lack("nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetPcieThroughput",
		"nvmlDeviceGetRemappedRows", "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetMigMode", "nvmlEventSetCreate")
	for i := range 2 {
		d := f.dev(i)
		d.GetMemoryInfo_v2Func, d.GetCurrentClocksEventReasonsFunc, d.GetPcieThroughputFunc = nil, nil, nil
		d.GetRemappedRowsFunc, d.GetTotalEccErrorsFunc, d.GetMigModeFunc = nil, nil, nil
	}
	f.srv.EventSetCreateFunc = nil
	f.set(1, func(g *gpuState) {
		g.reasons = uint64(sources.ClockHWSlowdown)
		g.sbePages, g.dbePage, g.pagesPending = 2, 1, true
	})
	s := f.open()
	snap := sample(t, s)
	g := snap.GPUs[1]
	if g.MemUsed != 12*gib { // the v1 figure
		t.Errorf("memory through v1: %v", g.MemUsed/gib)
	}
	if !g.Throttled || !slices.Equal(g.ClockEvents, []string{"hardware slowdown"}) {
		t.Errorf("clock events through the older call: %q", g.ClockEvents)
	}
	if g.RetiredPages != 3 || !g.RemapPending {
		t.Errorf("retired pages fallback: %v pending %v", g.RetiredPages, g.RemapPending)
	}
	for _, want := range []string{
		"PCIe throughput (driver lacks nvmlDeviceGetPcieThroughput)",
		"uncorrected ECC errors (driver lacks nvmlDeviceGetTotalEccErrors)",
		"MIG mode (driver lacks nvmlDeviceGetMigMode)",
	} {
		if !slices.Contains(g.FieldsMissing, want) {
			t.Errorf("FieldsMissing %q lacks %q", g.FieldsMissing, want)
		}
	}
	if !math.IsNaN(g.PCIeTxBps) || !math.IsNaN(g.ECCUncorrected) || g.MIG != sources.TriUnknown {
		t.Errorf("missing fields must be unknown: %v %v %v", g.PCIeTxBps, g.ECCUncorrected, g.MIG)
	}
	if !slices.Contains(snap.Notes, "XID events: driver lacks nvmlEventSetCreate") {
		t.Errorf("notes %q", snap.Notes)
	}
}

func TestDriverTooOld(t *testing.T) {
	f := newFakeNode(t, 1)
	f.lack("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount")
	src := open(f.srv, Options{})
	snap := sample(t, src)
	if snap.Unavailable != "NVML unavailable: the driver is too old (it lacks nvmlDeviceGetCount)" || len(snap.GPUs) != 0 {
		t.Fatalf("%+v", snap)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
}

// NOT_SUPPORTED and NO_PERMISSION are permanent: the field is unknown, says
// why, and is not asked again. Other fields keep their values.
func TestNotSupportedAndNoPermission(t *testing.T) {
	f := newFakeNode(t, 2)
	for _, m := range []string{"ecc", "remap", "pages", "pcie", "util", "events", "slowdown"} {
		f.fail(0, m, nvml.ERROR_NOT_SUPPORTED)
	}
	f.fail(0, "limit", nvml.ERROR_NO_PERMISSION)
	f.fail(0, "compute", nvml.ERROR_NO_PERMISSION)
	f.fail(0, "mig", nvml.ERROR_NOT_SUPPORTED)
	f.fail(0, "graphics", nvml.ERROR_NOT_SUPPORTED)
	f.fail(1, "pages", nvml.ERROR_NOT_SUPPORTED)
	f.fail(1, "remap", nvml.ERROR_NOT_SUPPORTED)
	s := f.open()
	snap := sample(t, s)
	g := snap.GPUs[0]
	for name, v := range map[string]float64{"ECC": g.ECCUncorrected, "rows": g.RetiredPages, "pcie": g.PCIeTxBps,
		"util": g.UtilGPU, "slowdown": g.TempSlowdownC, "limit": g.PowerLimitW} {
		if !math.IsNaN(v) {
			t.Errorf("%s = %v, want unknown", name, v)
		}
	}
	if g.ClockEvents != nil || g.Processes != nil || g.MIG != sources.TriNo {
		t.Errorf("events %v procs %v MIG %v", g.ClockEvents, g.Processes, g.MIG)
	}
	if g.PowerW != 250 || g.TempC != 60 || g.MemUsed != 10*gib {
		t.Errorf("supported fields lost: %v %v %v", g.PowerW, g.TempC, g.MemUsed)
	}
	want := []string{"utilization (not supported)", "slowdown temperature (not supported)", "power limit (no permission)",
		"clock events (not supported)", "uncorrected ECC errors (not supported)", "retired pages / remapped rows (not supported)",
		"PCIe throughput (not supported)", "processes (no permission)"}
	if !slices.Equal(g.FieldsMissing, want) {
		t.Errorf("FieldsMissing\n got %q\nwant %q", g.FieldsMissing, want)
	}
	if g1 := snap.GPUs[1]; !slices.Equal(g1.FieldsMissing, []string{"retired pages / remapped rows (not supported)"}) {
		t.Errorf("GPU 1 FieldsMissing %q", g1.FieldsMissing)
	}
	d := f.dev(0)
	before := [...]int{len(d.GetTotalEccErrorsCalls()), len(d.GetEnforcedPowerLimitCalls()), len(d.GetMigModeCalls()), len(d.GetGraphicsRunningProcessesCalls())}
	s.readPCIe()
	pcie := len(d.GetPcieThroughputCalls())
	sample(t, s)
	after := [...]int{len(d.GetTotalEccErrorsCalls()), len(d.GetEnforcedPowerLimitCalls()), len(d.GetMigModeCalls()), len(d.GetGraphicsRunningProcessesCalls())}
	if before != after || len(d.GetPcieThroughputCalls()) != pcie {
		t.Errorf("refused calls asked again: %v → %v", before, after)
	}
}

// A transient error loses the field for one reading only.
func TestTransientError(t *testing.T) {
	f := newFakeNode(t, 1)
	f.fail(0, "power", nvml.ERROR_UNKNOWN)
	s := f.open()
	g := sample(t, s).GPUs[0]
	if !math.IsNaN(g.PowerW) || !slices.Equal(g.FieldsMissing, []string{"power (unknown error)"}) {
		t.Errorf("power %v missing %q", g.PowerW, g.FieldsMissing)
	}
	f.set(0, func(g *gpuState) { delete(g.fail, "power") })
	if g := sample(t, s).GPUs[0]; g.PowerW != 250 || len(g.FieldsMissing) != 0 {
		t.Errorf("after recovery: power %v missing %q", g.PowerW, g.FieldsMissing)
	}
}

// A GPU that falls off the bus mid-run becomes that GPU's problem; the
// others keep updating and the lost one is not called again.
func TestLostGPU(t *testing.T) {
	f := newFakeNode(t, 4)
	s := f.open()
	if g := sample(t, s).GPUs[2]; g.Problem != "" {
		t.Fatal(g.Problem)
	}
	f.fail(2, "temp", nvml.ERROR_GPU_IS_LOST)
	f.set(1, func(g *gpuState) { g.util = 99 })
	snap := sample(t, s)
	g := snap.GPUs[2]
	if !strings.Contains(g.Problem, "fallen off the bus") || !math.IsNaN(g.UtilGPU) || !math.IsNaN(g.MemUsed) {
		t.Fatalf("lost GPU: problem %q util %v mem %v", g.Problem, g.UtilGPU, g.MemUsed)
	}
	if g.UUID != f.dev(2).UUID || g.Index != 2 {
		t.Errorf("a lost GPU keeps its identity: %q %d", g.UUID, g.Index)
	}
	if snap.GPUs[1].UtilGPU != 99 || snap.GPUs[3].Problem != "" {
		t.Errorf("others must keep updating: %+v", snap.GPUs[1])
	}
	d := f.dev(2)
	calls := len(d.GetTemperatureCalls()) + len(d.GetUtilizationRatesCalls())
	s.readPCIe()
	pcie := len(d.GetPcieThroughputCalls())
	if g := sample(t, s).GPUs[2]; g.Problem == "" {
		t.Error("lost is sticky")
	}
	if n := len(d.GetTemperatureCalls()) + len(d.GetUtilizationRatesCalls()); n != calls || len(d.GetPcieThroughputCalls()) != pcie {
		t.Errorf("a lost GPU was called again")
	}
}

func TestLostAtOpenAndInPCIeReader(t *testing.T) {
	f := newFakeNode(t, 3)
	getHandle := f.srv.DeviceGetHandleByIndexFunc
	f.srv.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 1 {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return getHandle(i)
	}
	f.fail(2, "pcie", nvml.ERROR_GPU_IS_LOST)
	s := f.open()
	snap := sample(t, s)
	if !strings.Contains(snap.GPUs[1].Problem, "fallen off the bus") || snap.GPUs[1].Index != 1 {
		t.Errorf("GPU 1 at open: %+v", snap.GPUs[1])
	}
	if !strings.Contains(snap.GPUs[2].Problem, "fallen off the bus") {
		t.Errorf("GPU 2 after the PCIe reader: %+v", snap.GPUs[2])
	}
	if snap.GPUs[0].Problem != "" || snap.GPUs[0].UtilGPU != 50 {
		t.Errorf("GPU 0: %+v", snap.GPUs[0])
	}
}

// The no-driver path: the real go-nvml library with a library that is not
// there. Init fails cleanly and nothing else is called.
func TestNoDriver(t *testing.T) {
	const missing = "/nonexistent/libnvidia-ml.so.1"
	src := open(nvml.New(nvml.WithLibraryPath(missing)), Options{LibraryPath: missing})
	snap := sample(t, src)
	if snap.Unavailable != "NVML unavailable: "+missing+" not found" || len(snap.GPUs) != 0 {
		t.Fatalf("%+v", snap)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if u := Open(Options{LibraryPath: missing}).Sample(context.Background()).Unavailable; u != snap.Unavailable {
		t.Errorf("Open: %q", u)
	}
}

// Init failures other than a missing library: the bare mock panics on any
// call but Init, so the test fails if the source calls on after a failure.
func TestInitFailures(t *testing.T) {
	for ret, want := range map[nvml.Return]string{
		nvml.ERROR_DRIVER_NOT_LOADED:       "NVML unavailable: the NVIDIA kernel driver is not loaded",
		nvml.ERROR_NO_PERMISSION:           "NVML unavailable: no permission to open the GPU devices (/dev/nvidia*)",
		nvml.ERROR_LIB_RM_VERSION_MISMATCH: "NVML unavailable: NVML library and kernel driver versions differ (reload the nvidia module or reboot)",
	} {
		lib := &mock.Interface{InitFunc: func() nvml.Return { return ret }}
		src := open(lib, Options{})
		if got := sample(t, src).Unavailable; got != want {
			t.Errorf("%v: %q, want %q", int32(ret), got, want)
		}
		src.Close()
	}
}

func TestNoGPUs(t *testing.T) {
	f := newFakeNode(t, 0)
	s := f.open()
	snap := sample(t, s)
	if len(snap.GPUs) != 0 || !slices.Contains(snap.Notes, "NVML sees no GPUs on this host") {
		t.Errorf("%+v", snap)
	}
}

func TestXIDEvents(t *testing.T) {
	f := newFakeNode(t, 4)
	now := time.Date(2026, 5, 1, 3, 4, 5, 0, time.UTC)
	src := open(f.srv, Options{ProcRoot: f.procRoot, PCIeEvery: time.Hour, EventWait: 10 * time.Millisecond,
		Clock: func() time.Time { return now }})
	s := src.(*Source)
	f.events <- nvml.EventData{Device: f.dev(2), EventType: nvml.EventTypeXidCriticalError, EventData: 79}
	f.events <- nvml.EventData{Device: f.dev(1), EventType: nvml.EventTypeXidCriticalError, EventData: 13}
	f.events <- nvml.EventData{Device: f.dev(1), EventType: nvml.EventTypePState, EventData: 1}
	var evs []sources.GPUEvent
	deadline := time.Now().Add(5 * time.Second)
	for len(evs) < 2 && time.Now().Before(deadline) {
		start := time.Now()
		snap := sample(t, s)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Sample blocked %v behind the event wait", d)
		}
		evs = append(evs, snap.Events...)
		time.Sleep(5 * time.Millisecond)
	}
	want := []sources.GPUEvent{
		{Time: now, GPU: 2, XID: 79, Text: "GPU has fallen off the bus", Level: "critical"},
		{Time: now, GPU: 1, XID: 13, Text: sources.LookupXID(13).Name, Level: "warning"},
	}
	if !slices.Equal(evs, want) {
		t.Fatalf("events %+v, want %+v", evs, want)
	}
	if g := sample(t, s).GPUs[2]; !strings.Contains(g.Problem, "fallen off the bus") {
		t.Errorf("XID 79 marks the GPU lost: %q", g.Problem)
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.freed || !f.shutdown || f.lateWait {
		t.Errorf("freed %v shutdown %v wait after shutdown %v", f.freed, f.shutdown, f.lateWait)
	}
	if u := s.Sample(context.Background()).Unavailable; u != "NVML closed" {
		t.Errorf("after Close: %q", u)
	}
}

func TestXIDNotSupported(t *testing.T) {
	f := newFakeNode(t, 2)
	f.set(0, func(g *gpuState) { g.events = 0 })
	f.fail(1, "register", nvml.ERROR_NO_PERMISSION)
	s := f.open()
	if notes := sample(t, s).Notes; !slices.Equal(notes, []string{"XID events unavailable: no permission"}) {
		t.Errorf("notes %q", notes)
	}
	f2 := newFakeNode(t, 2)
	f2.set(0, func(g *gpuState) { g.events = 0 })
	s2 := f2.open()
	if notes := sample(t, s2).Notes; !slices.Equal(notes, []string{"XID events watched on 1 of 2 GPUs (others: not supported)"}) {
		t.Errorf("notes %q", notes)
	}
}

// Inside a container without host PIDs, NVML's PIDs are not in /proc.
func TestContainerWithoutHostPIDs(t *testing.T) {
	f := newFakeNode(t, 2)
	f.set(0, func(g *gpuState) { g.compute = []nvml.ProcessInfo{{Pid: 777001, UsedGpuMemory: math.MaxUint64}} })
	f.set(1, func(g *gpuState) { g.compute = []nvml.ProcessInfo{{Pid: 777002, UsedGpuMemory: 5 * gib}} })
	s := f.open()
	snap := sample(t, s)
	p := snap.GPUs[0].Processes
	if len(p) != 1 || p[0].PID != 777001 || p[0].Name != "" || !math.IsNaN(p[0].UsedBytes) {
		t.Errorf("processes %+v", p)
	}
	if len(snap.Notes) != 1 || !strings.Contains(snap.Notes[0], "another PID namespace") {
		t.Errorf("notes %q", snap.Notes)
	}
	// No processes listed at all while memory is held.
	f.set(0, func(g *gpuState) { g.compute = nil })
	f.set(1, func(g *gpuState) { g.compute = nil })
	snap = sample(t, s)
	if len(snap.Notes) != 1 || !strings.Contains(snap.Notes[0], "NVML lists no GPU processes while GPU 0 has 10.0 GiB in use") {
		t.Errorf("notes %q", snap.Notes)
	}
}

func TestCancelledSample(t *testing.T) {
	f := newFakeNode(t, 2)
	s := f.open()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	snap := s.Sample(ctx)
	if len(snap.GPUs) != 2 || !strings.HasPrefix(snap.GPUs[0].Problem, "not read: ") || snap.GPUs[1].UUID == "" {
		t.Errorf("%+v", snap.GPUs)
	}
}

func BenchmarkSample8GPUs(b *testing.B) {
	f := newFakeNode(b, 8)
	for i := range 8 {
		f.set(i, func(g *gpuState) {
			for p := range 3 {
				pid := uint32(3000 + 10*i + p)
				g.compute = append(g.compute, nvml.ProcessInfo{Pid: pid, UsedGpuMemory: gib})
				f.writeComm(int(pid), "VLLM::Worker")
			}
		})
	}
	s := f.open()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s.readPCIe() // the background part, so one op is every field of every GPU
		if snap := s.Sample(ctx); len(snap.GPUs) != 8 {
			b.Fatal(len(snap.GPUs))
		}
	}
}
