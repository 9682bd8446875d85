//go:build cgo

package nvml

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/vtop-dev/vtop/sources"
)

const gib = 1 << 30

// gpuState is what one mocked GPU reports. fail makes a method return a code
// instead of its value.
type gpuState struct {
	util, memUtil     uint32
	used, total       uint64
	temp, slowdown    uint32
	powerMW, limitMW  uint32
	smMHz, memMHz     uint32
	reasons           uint64
	ecc               uint64
	corrRows, uncRows int
	pending, failed   bool
	sbePages, dbePage int
	pagesPending      bool
	txKiB, rxKiB      uint32
	mig               int
	compute, graphics []nvml.ProcessInfo
	events            uint64 // supported event types
	fail              map[string]nvml.Return
}

// fakeNode is a DGX A100 from go-nvml's mock with every call vtop makes
// filled in from gpuState, a fake /proc, and an event channel.
type fakeNode struct {
	t        testing.TB
	srv      *dgxa100.Server
	procRoot string

	mu       sync.Mutex
	gpus     []*gpuState
	missing  map[string]bool
	shutdown bool
	lateWait bool // a Wait ran after Shutdown
	freed    bool
	events   chan nvml.EventData
}

func newFakeNode(t testing.TB, n int) *fakeNode {
	f := &fakeNode{t: t, srv: dgxa100.New(), procRoot: t.TempDir(), missing: map[string]bool{},
		events: make(chan nvml.EventData, 16)}
	f.srv.DeviceGetCountFunc = func() (int, nvml.Return) { return n, nvml.SUCCESS }
	f.srv.LookupSymbolFunc = func(name string) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.missing[name] {
			return errors.New("undefined symbol: " + name)
		}
		return nil
	}
	f.srv.ShutdownFunc = func() nvml.Return {
		f.mu.Lock()
		f.shutdown = true
		f.mu.Unlock()
		return nvml.SUCCESS
	}
	f.srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(ms uint32) (nvml.EventData, nvml.Return) {
				f.mu.Lock()
				f.lateWait = f.lateWait || f.shutdown
				f.mu.Unlock()
				select {
				case e := <-f.events:
					return e, nvml.SUCCESS
				case <-time.After(time.Duration(ms) * time.Millisecond):
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				}
			},
			FreeFunc: func() nvml.Return {
				f.mu.Lock()
				f.freed = true
				f.mu.Unlock()
				return nvml.SUCCESS
			},
		}, nvml.SUCCESS
	}
	for i := range n {
		g := &gpuState{
			util: uint32(50 + i), memUtil: uint32(20 + i),
			used: uint64(10+i) * gib, total: 40 * gib,
			temp: uint32(60 + i), slowdown: 90,
			powerMW: uint32(250_000 + 1000*i), limitMW: 400_000,
			smMHz: 1410, memMHz: 1215,
			ecc: uint64(i), uncRows: i % 2,
			txKiB: uint32(1000 * (i + 1)), rxKiB: uint32(500 * (i + 1)),
			compute: []nvml.ProcessInfo{{Pid: uint32(1000 + i), UsedGpuMemory: uint64(8+i) * gib}},
			events:  nvml.EventTypeXidCriticalError,
			fail:    map[string]nvml.Return{},
		}
		f.gpus = append(f.gpus, g)
		f.writeComm(1000+i, fmt.Sprintf("VLLM::Worker_%d", i))
		f.wire(f.dev(i), g)
	}
	return f
}

func (f *fakeNode) dev(i int) *dgxa100.Device { return f.srv.Devices[i].(*dgxa100.Device) }

func (f *fakeNode) writeComm(pid int, name string) {
	dir := filepath.Join(f.procRoot, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(name+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// set changes GPU i under the lock the mocked calls take.
func (f *fakeNode) set(i int, fn func(g *gpuState)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.gpus[i])
}

func (f *fakeNode) fail(i int, method string, ret nvml.Return) {
	f.set(i, func(g *gpuState) { g.fail[method] = ret })
}

func (f *fakeNode) lack(symbols ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range symbols {
		f.missing[s] = true
	}
}

// state is the code method returns on g: SUCCESS unless a failure is set.
// The caller holds f.mu.
func (f *fakeNode) state(g *gpuState, method string) nvml.Return {
	if r, ok := g.fail[method]; ok {
		return r
	}
	return nvml.SUCCESS
}

func (f *fakeNode) wire(d *dgxa100.Device, g *gpuState) {
	lock := func(method string) (func(), nvml.Return) {
		f.mu.Lock()
		return f.mu.Unlock, f.state(g, method)
	}
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		var p nvml.PciInfo
		for i, c := range []byte(d.PciBusID) {
			p.BusId[i] = int8(c)
		}
		return p, nvml.SUCCESS
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		unlock, r := lock("util")
		defer unlock()
		return nvml.Utilization{Gpu: g.util, Memory: g.memUtil}, r
	}
	d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
		unlock, r := lock("memv2")
		defer unlock()
		return nvml.Memory_v2{Total: g.total, Used: g.used, Free: g.total - g.used}, r
	}
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		unlock, r := lock("memv1")
		defer unlock()
		// v1 counts the driver's reservation as used: 1 GiB more.
		return nvml.Memory{Total: g.total, Used: g.used + gib, Free: g.total - g.used - gib}, r
	}
	d.GetTemperatureFunc = func(s nvml.TemperatureSensors) (uint32, nvml.Return) {
		unlock, r := lock("temp")
		defer unlock()
		if s != nvml.TEMPERATURE_GPU {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return g.temp, r
	}
	d.GetTemperatureThresholdFunc = func(th nvml.TemperatureThresholds) (uint32, nvml.Return) {
		unlock, r := lock("slowdown")
		defer unlock()
		if th != nvml.TEMPERATURE_THRESHOLD_SLOWDOWN {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return g.slowdown, r
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) {
		unlock, r := lock("power")
		defer unlock()
		return g.powerMW, r
	}
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) {
		unlock, r := lock("limit")
		defer unlock()
		return g.limitMW, r
	}
	d.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		unlock, r := lock("clock")
		defer unlock()
		switch c {
		case nvml.CLOCK_SM:
			return g.smMHz, r
		case nvml.CLOCK_MEM:
			return g.memMHz, r
		}
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
		unlock, r := lock("events")
		defer unlock()
		return g.reasons, r
	}
	d.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) {
		unlock, r := lock("throttle")
		defer unlock()
		return g.reasons, r
	}
	d.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
		unlock, r := lock("ecc")
		defer unlock()
		if t != nvml.MEMORY_ERROR_TYPE_UNCORRECTED || c != nvml.VOLATILE_ECC {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return g.ecc, r
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) {
		unlock, r := lock("remap")
		defer unlock()
		return g.corrRows, g.uncRows, g.pending, g.failed, r
	}
	d.GetRetiredPagesFunc = func(c nvml.PageRetirementCause) ([]uint64, nvml.Return) {
		unlock, r := lock("pages")
		defer unlock()
		n := g.sbePages
		if c == nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR {
			n = g.dbePage
		}
		return make([]uint64, n), r
	}
	d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) {
		unlock, r := lock("pagesPending")
		defer unlock()
		if g.pagesPending {
			return nvml.FEATURE_ENABLED, r
		}
		return nvml.FEATURE_DISABLED, r
	}
	d.GetPcieThroughputFunc = func(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
		unlock, r := lock("pcie")
		defer unlock()
		if c == nvml.PCIE_UTIL_RX_BYTES {
			return g.rxKiB, r
		}
		return g.txKiB, r
	}
	d.GetMigModeFunc = func() (int, int, nvml.Return) {
		unlock, r := lock("mig")
		defer unlock()
		return g.mig, g.mig, r
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		unlock, r := lock("compute")
		defer unlock()
		return append([]nvml.ProcessInfo(nil), g.compute...), r
	}
	d.GetGraphicsRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		unlock, r := lock("graphics")
		defer unlock()
		return append([]nvml.ProcessInfo(nil), g.graphics...), r
	}
	d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) {
		unlock, r := lock("supported")
		defer unlock()
		return g.events, r
	}
	d.RegisterEventsFunc = func(types uint64, _ nvml.EventSet) nvml.Return {
		unlock, r := lock("register")
		defer unlock()
		return r
	}
}

// open starts the source on the fake node; PCIe is read by the test itself
// (readPCIe) so readings do not depend on the background ticker.
func (f *fakeNode) open() *Source {
	f.t.Helper()
	src := open(f.srv, Options{ProcRoot: f.procRoot, PCIeEvery: time.Hour, EventWait: 10 * time.Millisecond})
	s, ok := src.(*Source)
	if !ok {
		f.t.Fatalf("open: %+v", src.Sample(context.Background()))
	}
	f.t.Cleanup(func() { s.Close() })
	s.readPCIe()
	return s
}

func sample(t testing.TB, s sources.GPUSource) sources.GPUSnapshot {
	t.Helper()
	return s.Sample(context.Background())
}
