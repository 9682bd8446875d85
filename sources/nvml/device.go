//go:build cgo

package nvml

import (
	"math"
	"slices"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vtop-dev/vtop/sources"
)

// device is one GPU and what vtop learned about reading it.
type device struct {
	index           int
	h               nvml.Device // nil when no handle could be had
	name, uuid, bus string
	slowdownC       float64 // static: read once

	// Set by Sample only.
	skip       [numFields]string // permanent reason a field is not read ("not supported")
	memV1      bool              // the v2 memory call is refused: use v1
	remap      remapKind
	noMIG      bool // MIG not supported: the GPU is not in MIG mode
	noGraphics bool // graphics process list not supported

	// Guarded by Source.mu: the background readers set them too.
	problem        string // sticky device failure: the device is not called again
	pcieTx, pcieRx float64
	pcieSkip       string
}

type remapKind uint8

const (
	remapUnknown remapKind = iota
	remapRows              // Ampere and newer: row remapping
	remapPages             // older: dynamic page retirement
)

func (s *Source) openDevice(i int) *device {
	d := &device{index: i, slowdownC: math.NaN(), pcieTx: math.NaN(), pcieRx: math.NaN()}
	h, ret := s.lib.DeviceGetHandleByIndex(i)
	switch ret {
	case nvml.SUCCESS:
		d.h = h
	case nvml.ERROR_GPU_IS_LOST:
		d.problem = problemLost
		return d
	case nvml.ERROR_NO_PERMISSION:
		d.problem = "no permission to open this GPU (device cgroup or /dev/nvidia* permissions)"
		return d
	default:
		d.problem = "cannot open this GPU: " + retText(ret)
		return d
	}
	r := reader{s: s, d: d}
	// Identity calls fail only on a sick device; any other refusal leaves the field empty.
	id := func(ret nvml.Return) bool {
		if ret == nvml.ERROR_GPU_IS_LOST || ret == nvml.ERROR_RESET_REQUIRED {
			r.ok(fUtil, ret)
		}
		return ret == nvml.SUCCESS
	}
	if s.have[cName] {
		if v, ret := h.GetName(); id(ret) {
			d.name = sources.Sanitize(v, 96)
		}
	}
	if s.have[cUUID] && !r.lost {
		if v, ret := h.GetUUID(); id(ret) {
			d.uuid = sources.Sanitize(v, 96)
		}
	}
	if s.have[cPCI] && !r.lost {
		if p, ret := h.GetPciInfo(); id(ret) {
			d.bus = sources.Sanitize(cString(p.BusId[:]), 32)
		}
	}
	if r.can(fTempSlowdown, cTempThreshold) {
		if v, ret := h.GetTemperatureThreshold(nvml.TEMPERATURE_THRESHOLD_SLOWDOWN); r.ok(fTempSlowdown, ret) {
			d.slowdownC = float64(v)
		}
	}
	if r.lost {
		d.problem = r.problem
	}
	return d
}

// blank is the device with every number unknown.
func (d *device) blank() sources.GPU {
	g := sources.GPU{Index: d.index, Name: d.name, UUID: d.uuid, PCIBusID: d.bus}
	g.SetUnknown()
	g.TempSlowdownC = d.slowdownC
	return g
}

// reader reads one device once, turning every return code into a value,
// a remembered "not supported", or a device problem.
type reader struct {
	s         *Source
	d         *device
	g         *sources.GPU
	transient []string // fields that failed this time only
	lost      bool
	problem   string
}

// can reports whether field f may be read with call c, and records why not
// when the driver lacks the call.
func (r *reader) can(f field, c call) bool {
	if r.lost || r.d.skip[f] != "" {
		return false
	}
	if !r.s.have[c] {
		r.d.skip[f] = "driver lacks " + symbols[c][0]
		return false
	}
	return true
}

// ok handles the return of a call that reads field f.
func (r *reader) ok(f field, ret nvml.Return) bool {
	switch ret {
	case nvml.SUCCESS:
		return true
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_NO_PERMISSION:
		r.d.skip[f] = retText(ret)
	case nvml.ERROR_GPU_IS_LOST:
		r.lost, r.problem = true, problemLost
	case nvml.ERROR_RESET_REQUIRED:
		r.lost, r.problem = true, problemReset
	default:
		r.transient = append(r.transient, fieldNames[f]+" ("+retText(ret)+")")
	}
	return false
}

// read samples one device. Once the device is lost nothing more is asked of
// it, in this reading or later ones.
func (s *Source) read(d *device, census *procCensus) sources.GPU {
	g := d.blank()
	if p := s.problem(d); p != "" {
		g.Problem = p
		return g
	}
	r := reader{s: s, d: d, g: &g}
	h := d.h
	if r.can(fUtil, cUtil) {
		if u, ret := h.GetUtilizationRates(); r.ok(fUtil, ret) {
			g.UtilGPU, g.UtilMem = float64(u.Gpu), float64(u.Memory)
		}
	}
	r.memory()
	if r.can(fTemp, cTemp) {
		if v, ret := h.GetTemperature(nvml.TEMPERATURE_GPU); r.ok(fTemp, ret) {
			g.TempC = float64(v)
		}
	}
	if r.can(fPower, cPower) {
		if v, ret := h.GetPowerUsage(); r.ok(fPower, ret) {
			g.PowerW = float64(v) / 1000
		}
	}
	if r.can(fPowerLimit, cPowerLimit) {
		if v, ret := h.GetEnforcedPowerLimit(); r.ok(fPowerLimit, ret) {
			g.PowerLimitW = float64(v) / 1000
		}
	}
	if r.can(fSMClock, cClock) {
		if v, ret := h.GetClockInfo(nvml.CLOCK_SM); r.ok(fSMClock, ret) {
			g.SMClockMHz = float64(v)
		}
	}
	if r.can(fMemClock, cClock) {
		if v, ret := h.GetClockInfo(nvml.CLOCK_MEM); r.ok(fMemClock, ret) {
			g.MemClockMHz = float64(v)
		}
	}
	r.clockEvents()
	if r.can(fECC, cECC) {
		if v, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); r.ok(fECC, ret) {
			g.ECCUncorrected = float64(v)
		}
	}
	r.retired()
	r.mig()
	r.processes(census)
	r.pcie()
	if r.lost {
		s.setProblem(d, r.problem)
		lost := d.blank()
		lost.Problem = r.problem
		return lost
	}
	for f, why := range d.skip {
		if why != "" {
			g.FieldsMissing = append(g.FieldsMissing, fieldNames[f]+" ("+why+")")
		}
	}
	g.FieldsMissing = append(g.FieldsMissing, r.transient...)
	return g
}

// memory prefers the v2 call, whose "used" leaves out memory the driver
// reserves for itself, and falls back to v1 where the driver refuses it.
func (r *reader) memory() {
	if r.lost || r.d.skip[fMem] != "" {
		return
	}
	if r.s.have[cMemV2] && !r.d.memV1 {
		m, ret := r.d.h.GetMemoryInfo_v2()
		switch ret {
		case nvml.SUCCESS:
			r.g.MemUsed, r.g.MemTotal = float64(m.Used), float64(m.Total)
			return
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_ARGUMENT_VERSION_MISMATCH, nvml.ERROR_FUNCTION_NOT_FOUND:
			r.d.memV1 = true
		default:
			r.ok(fMem, ret)
			return
		}
	}
	if r.can(fMem, cMemV1) {
		if m, ret := r.d.h.GetMemoryInfo(); r.ok(fMem, ret) {
			r.g.MemUsed, r.g.MemTotal = float64(m.Used), float64(m.Total)
		}
	}
}

// clockEvents uses the R535+ call, or its older name on older drivers.
func (r *reader) clockEvents() {
	c := cClockEvents
	if !r.s.have[c] {
		c = cThrottleReasons
		if !r.s.have[c] && r.d.skip[fClockEvents] == "" {
			r.d.skip[fClockEvents] = "driver lacks " + symbols[cClockEvents][0]
		}
	}
	if !r.can(fClockEvents, c) {
		return
	}
	var bits uint64
	var ret nvml.Return
	if c == cClockEvents {
		bits, ret = r.d.h.GetCurrentClocksEventReasons()
	} else {
		bits, ret = r.d.h.GetCurrentClocksThrottleReasons()
	}
	if r.ok(fClockEvents, ret) {
		ev := sources.ClockEvent(bits)
		r.g.ClockEventBits, r.g.ClockEvents, r.g.Throttled = ev, ev.Words(), ev.Throttling()
	}
}

// retired reads remapped rows (Ampere and newer) or, where the GPU does not
// remap rows, retired pages; whichever the GPU answers is remembered.
func (r *reader) retired() {
	if r.lost || r.d.skip[fRetired] != "" {
		return
	}
	if r.d.remap != remapPages && r.s.have[cRemappedRows] {
		corr, unc, pending, failed, ret := r.d.h.GetRemappedRows()
		switch ret {
		case nvml.SUCCESS:
			r.d.remap = remapRows
			r.g.RetiredPages, r.g.RemapPending, r.g.RemapFailed = float64(corr+unc), pending, failed
			return
		case nvml.ERROR_NOT_SUPPORTED:
			r.d.remap = remapPages
		default:
			r.ok(fRetired, ret)
			return
		}
	}
	if !r.can(fRetired, cRetiredPages) {
		return
	}
	sbe, ret := r.d.h.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
	if !r.ok(fRetired, ret) {
		return
	}
	dbe, ret := r.d.h.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
	if !r.ok(fRetired, ret) {
		return
	}
	r.g.RetiredPages = float64(len(sbe) + len(dbe))
	if r.s.have[cRetiredPending] {
		if st, ret := r.d.h.GetRetiredPagesPendingStatus(); ret == nvml.SUCCESS {
			r.g.RemapPending = st == nvml.FEATURE_ENABLED
		} else {
			r.ok(fRetired, ret)
		}
	}
}

// mig reads the current MIG mode; a GPU that cannot do MIG is not in it.
func (r *reader) mig() {
	if r.d.noMIG {
		r.g.MIG = sources.TriNo
		return
	}
	if !r.can(fMIG, cMIG) {
		return
	}
	cur, _, ret := r.d.h.GetMigMode()
	switch {
	case ret == nvml.ERROR_NOT_SUPPORTED:
		r.d.noMIG = true
		r.g.MIG = sources.TriNo
	case r.ok(fMIG, ret):
		r.g.MIG = sources.TriNo
		if cur == nvml.DEVICE_MIG_ENABLE {
			r.g.MIG = sources.TriYes
		}
	}
}

// processes lists compute and graphics processes, one entry per PID.
func (r *reader) processes(census *procCensus) {
	if !r.can(fProcs, cCompute) {
		return
	}
	list, ret := r.d.h.GetComputeRunningProcesses()
	if !r.ok(fProcs, ret) {
		return
	}
	if r.s.have[cGraphics] && !r.d.noGraphics {
		gl, ret := r.d.h.GetGraphicsRunningProcesses()
		switch ret {
		case nvml.SUCCESS:
			list = append(list, gl...)
		case nvml.ERROR_NOT_SUPPORTED:
			r.d.noGraphics = true
		default:
			r.ok(fProcs, ret)
		}
	}
	byPID := make(map[uint32]float64, len(list))
	for _, p := range list {
		used := float64(p.UsedGpuMemory)
		if p.UsedGpuMemory == math.MaxUint64 { // NVML_VALUE_NOT_AVAILABLE
			used = math.NaN()
		}
		if old, seen := byPID[p.Pid]; !seen || used > old || math.IsNaN(old) {
			byPID[p.Pid] = used
		}
	}
	r.g.Processes = make([]sources.GPUProcess, 0, len(byPID))
	for pid, used := range byPID {
		name, ok := procName(r.s.o.ProcRoot, int(pid))
		census.add(ok)
		r.g.Processes = append(r.g.Processes, sources.GPUProcess{PID: int(pid), Name: name, UsedBytes: used})
	}
	slices.SortFunc(r.g.Processes, func(a, b sources.GPUProcess) int { return a.PID - b.PID })
}

// pcie copies what the background reader measured last.
func (r *reader) pcie() {
	if !r.can(fPCIe, cPCIe) {
		return
	}
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if r.d.pcieSkip != "" {
		r.d.skip[fPCIe] = r.d.pcieSkip
		return
	}
	r.g.PCIeTxBps, r.g.PCIeRxBps = r.d.pcieTx, r.d.pcieRx
}

// cString converts a NUL-terminated C char array.
func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
