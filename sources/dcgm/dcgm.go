// Package dcgm reads NVIDIA dcgm-exporter series, scraped directly or
// queried from a TSDB, into the GPU readings the rest of vtop uses. Every
// dcgm-exporter metric name vtop reads, with the aliases across exporter
// and DCGM releases, lives in the fields table here (facts from
// ../shared/dcgm-metrics/NOTES.md).
package dcgm

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// field says where one DCGM value goes in a GPU reading.
type field uint8

const (
	fUtil        field = iota // %
	fUtilRatio                // 0..1 (DCGM 4.6 names)
	fEngineAct                // 0..1, the MIG instance's utilization
	fMemCopy                  // %
	fFBUsed                   // MiB
	fFBFree                   // MiB
	fFBReserved               // MiB
	fTemp                     // °C
	fPower                    // W
	fPowerLimit               // W
	fSMClock                  // MHz
	fMemClock                 // MHz
	fClockEvents              // bit mask, as NVML's
	fXID                      // the last XID code seen, 0 none
	fECCDBEVol                // uncorrectable ECC errors since the driver loaded
	fRemapUncorr              // uncorrectable remapped rows
	fRemapFail                // 0/1
	fPCIeTx                   // bytes/s
	fPCIeRx                   // bytes/s
	numFields
)

// SMClockName and UtilName are the exporter's SM clock (MHz) and
// utilization (percent) series, for rules exported to Prometheus.
const (
	SMClockName = "DCGM_FI_DEV_SM_CLOCK"
	UtilName    = "DCGM_FI_DEV_GPU_UTIL"
)

// fields maps every metric name to its field: old and new spellings alike.
var fields = map[string]field{
	UtilName:                                    fUtil,
	"DCGM_FI_DEV_GPU_UTIL_RATIO":                fUtilRatio,
	"DCGM_FI_PROF_GR_ENGINE_ACTIVE":             fEngineAct,
	"DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO":         fEngineAct,
	"DCGM_FI_DEV_MEM_COPY_UTIL":                 fMemCopy,
	"DCGM_FI_DEV_FB_USED":                       fFBUsed,
	"DCGM_FI_DEV_FB_FREE":                       fFBFree,
	"DCGM_FI_DEV_FB_RESERVED":                   fFBReserved,
	"DCGM_FI_DEV_GPU_TEMP":                      fTemp,
	"DCGM_FI_DEV_GPU_TEMP_CELSIUS":              fTemp,
	"DCGM_FI_DEV_POWER_USAGE":                   fPower,
	"DCGM_FI_DEV_BOARD_POWER_WATTS":             fPower,
	"DCGM_FI_DEV_ENFORCED_POWER_LIMIT":          fPowerLimit,
	"DCGM_FI_DEV_POWER_MGMT_LIMIT":              fPowerLimit,
	SMClockName:                                 fSMClock,
	"DCGM_FI_DEV_MEM_CLOCK":                     fMemClock,
	"DCGM_FI_DEV_CLOCKS_EVENT_REASONS":          fClockEvents,
	"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS":        fClockEvents,
	"DCGM_FI_DEV_XID_ERRORS":                    fXID,
	"DCGM_FI_DEV_XID_ERROR":                     fXID,
	"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL":             fECCDBEVol,
	"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS":   fRemapUncorr,
	"DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL": fRemapUncorr,
	"DCGM_FI_DEV_ROW_REMAP_FAILURE":             fRemapFail,
	"DCGM_FI_PROF_PCIE_TX_BYTES":                fPCIeTx,
	"DCGM_FI_PROF_PCIE_RX_BYTES":                fPCIeRx,
}

// Known reports whether vtop reads this metric name.
func Known(name string) bool { _, ok := fields[name]; return ok }

// Device is one GPU (or MIG instance) with where it runs and who holds it.
type Device struct {
	sources.GPU
	Host      string // Hostname/hostname label (the Kubernetes node), else the exporter's host
	Namespace string // the workload holding it, when the exporter maps pods
	Pod       string
	Instance  string // MIG GPU instance ID, "" for a whole GPU
	Exporter  string // the exporter's own host (its target address)
}

// Key identifies a device across readings: host, UUID, MIG instance.
func (d *Device) Key() string { return d.Host + "/" + d.UUID + "/" + d.Instance }

type acc struct {
	Device
	v [numFields]float64
}

// Reader gathers one reading's series into devices. XID codes are turned
// into events when they change, so it is kept across readings.
type Reader struct {
	devs    map[string]*acc
	order   []string
	lastXID map[string]float64
	held    []string // device keys whose codes are kept though unread (holdXID)
	// What a reading refused: devices past MaxDevices, values out of their
	// field's range (the first one, to name it).
	dropped    int
	rejected   int
	rejectedEx string
}

// MaxDevices bounds the GPUs (and MIG instances) one reading keeps: the
// largest nodes hold 8 GPUs of 7 instances, and a fleet's exporters read
// together a few thousand; an answer naming more is hostile or a mistake,
// and past the bound it costs nothing more.
const MaxDevices = 4096

// valid is each field's plausible range; a value outside it is a broken
// or hostile exporter's, kept as unknown rather than shown or acted on (an
// XID of 79.5 is not "fallen off the bus").
func valid(f field, v float64) bool {
	if math.IsInf(v, 0) {
		return false
	}
	integer := v == math.Trunc(v)
	switch f {
	case fUtil, fMemCopy:
		return v >= 0 && v <= 100
	case fUtilRatio, fEngineAct:
		return v >= 0 && v <= 1
	case fFBUsed, fFBFree, fFBReserved:
		return v >= 0 && v <= 1<<24 // MiB: 16 TiB
	case fTemp:
		return v >= -50 && v <= 200
	case fPower, fPowerLimit:
		return v >= 0 && v <= 100_000
	case fSMClock, fMemClock:
		return v >= 0 && v <= 100_000
	case fClockEvents:
		return integer && v >= 0 && v < 1<<53
	case fXID:
		return integer && v >= 0 && v <= 1<<16
	case fECCDBEVol, fRemapUncorr:
		return integer && v >= 0
	case fRemapFail:
		return v == 0 || v == 1
	case fPCIeTx, fPCIeRx:
		return v >= 0
	}
	return true
}

// Refused says what the last reading left out: devices past MaxDevices
// and values out of range, as a note ("" when nothing was).
func (r *Reader) Refused() string {
	var parts []string
	if r.dropped > 0 {
		parts = append(parts, fmt.Sprintf("more than %d GPUs in one reading: %d left out", MaxDevices, r.dropped))
	}
	if r.rejected > 0 {
		parts = append(parts, fmt.Sprintf("%d value%s out of range ignored (%s)", r.rejected, plural(r.rejected), r.rejectedEx))
	}
	return strings.Join(parts, "; ")
}

// NewReader returns an empty reader.
func NewReader() *Reader { return &Reader{lastXID: map[string]float64{}} }

// holdXID keeps, through the next End, the last XID codes of devices
// the reading lacks because their exporter fails (they are kept stale):
// when it answers again, a code it had already reported is no new event.
func (r *Reader) holdXID(keys []string) {
	r.held = keys
}

// count is how many devices the reading holds so far.
func (r *Reader) count() int { return len(r.order) }

// Begin starts a reading.
func (r *Reader) Begin() {
	r.devs = map[string]*acc{}
	r.order = r.order[:0]
	r.dropped, r.rejected, r.rejectedEx = 0, 0, ""
}

// Add reads one sample; label returns a label's value ("" when absent)
// and instanceHost is the exporter target's host, used when the series
// carries no Hostname.
func (r *Reader) Add(name string, label func(string) string, v float64, instanceHost string) {
	f, ok := fields[name]
	if !ok || math.IsNaN(v) {
		return
	}
	if !valid(f, v) {
		if r.rejected == 0 {
			r.rejectedEx = name + " " + strconv.FormatFloat(v, 'g', 6, 64)
		}
		r.rejected++
		return
	}
	uuid := label("UUID")
	if uuid == "" {
		uuid = label("uuid") // --use-old-namespace
	}
	host := label("Hostname")
	if host == "" {
		host = label("hostname")
	}
	if host == "" {
		host = instanceHost
	}
	mig := label("GPU_I_ID")
	k := host + "/" + uuid + "/" + mig
	a := r.devs[k]
	if a == nil {
		if len(r.order) >= MaxDevices {
			r.dropped++ // counts series, not devices: enough to say so
			return
		}
		a = &acc{Device: Device{Instance: sources.Sanitize(mig, 20)}}
		for i := range a.v {
			a.v[i] = math.NaN()
		}
		a.Host = sources.Sanitize(host, 80)
		a.UUID = sources.Sanitize(uuid, 80)
		a.Index, _ = strconv.Atoi(label("gpu"))
		a.Name = sources.Sanitize(label("modelName"), 60)
		a.PCIBusID = sources.Sanitize(label("pci_bus_id"), 40)
		a.MIG = sources.TriNo
		if p := label("GPU_I_PROFILE"); p != "" {
			a.MIG = sources.TriYes
			a.MIGProfile = sources.Sanitize(p, 20)
		}
		a.Namespace, a.Pod = workload(label)
		a.Exporter = sources.Sanitize(instanceHost, 80)
		r.devs[k] = a
		r.order = append(r.order, k)
	}
	// Device-level values repeat on every MIG row: the first one stands.
	if math.IsNaN(a.v[f]) {
		a.v[f] = v
	}
}

// workload is the pod holding the GPU: exported_* first (the exporter's
// labels renamed by a scrape without honor_labels), then the plain ones
// unless they are the exporter's own pod.
func workload(label func(string) string) (ns, pod string) {
	if p := label("exported_pod"); p != "" {
		return sources.Sanitize(label("exported_namespace"), 80), sources.Sanitize(p, 120)
	}
	pod = label("pod")
	if pod == "" || strings.Contains(label("container"), "dcgm-exporter") || strings.Contains(pod, "dcgm-exporter") {
		return "", ""
	}
	return sources.Sanitize(label("namespace"), 80), sources.Sanitize(pod, 120)
}

// End returns the reading's devices, in the order first seen, and the XID
// events of codes that changed since the last reading.
func (r *Reader) End(t time.Time) ([]Device, []sources.GPUEvent) {
	out := make([]Device, 0, len(r.order))
	var events []sources.GPUEvent
	// The codes of the devices of this reading only: a device gone (or a
	// storm of one-off UUIDs) leaves nothing behind.
	seen := make(map[string]float64, len(r.lastXID))
	for _, k := range r.order {
		a := r.devs[k]
		g := &a.GPU
		v := &a.v
		g.UtilGPU = v[fUtil]
		if math.IsNaN(g.UtilGPU) {
			g.UtilGPU = 100 * v[fUtilRatio]
		}
		if math.IsNaN(g.UtilGPU) {
			g.UtilGPU = 100 * v[fEngineAct] // MIG: no GPU_UTIL
		}
		g.UtilMem = v[fMemCopy]
		const mib = 1 << 20
		g.MemUsed = v[fFBUsed] * mib
		g.MemTotal = (v[fFBUsed] + v[fFBFree] + zeroIfNaN(v[fFBReserved])) * mib
		g.TempC, g.TempSlowdownC = v[fTemp], math.NaN()
		g.PowerW, g.PowerLimitW = v[fPower], v[fPowerLimit]
		g.SMClockMHz, g.MemClockMHz = v[fSMClock], v[fMemClock]
		g.ECCUncorrected = v[fECCDBEVol]
		g.RetiredPages = v[fRemapUncorr]
		g.RemapFailed = v[fRemapFail] == 1
		g.PCIeTxBps, g.PCIeRxBps = v[fPCIeTx], v[fPCIeRx]
		g.ClockEvents, g.ClockEventBits, g.Throttled = nil, 0, false
		if ce := v[fClockEvents]; !math.IsNaN(ce) && ce >= 0 {
			g.ClockEventBits = sources.ClockEvent(uint64(ce))
			g.ClockEvents = g.ClockEventBits.Words()
			g.Throttled = g.ClockEventBits.Throttling()
		}
		if x := v[fXID]; !math.IsNaN(x) {
			if prev, seen := r.lastXID[k]; x != 0 && (!seen || prev != x) {
				events = append(events, sources.XIDEvent(t, len(out), int(x)))
			}
			seen[k] = x
		} else if prev, ok := r.lastXID[k]; ok {
			seen[k] = prev
		}
		out = append(out, a.Device)
	}
	for _, k := range r.held {
		if prev, ok := r.lastXID[k]; ok {
			if _, read := seen[k]; !read {
				seen[k] = prev
			}
		}
	}
	r.held = nil
	r.lastXID = seen
	return out, events
}

func zeroIfNaN(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}
