package detect

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// GPU rules read the local GPUs (NVML or the simulator): one evaluation per
// device. A finding names the endpoints whose processes hold the GPU (its
// Target), or the GPU itself when no watched endpoint does, and lists the
// device in Finding.GPUs.

// gpu_throttling parameters, looked up by name: a check indexes its values
// through these.
var (
	gtParams = params{
		{"window", 60, "s", "the window the throttled share is measured over"},
		{"share", 0.5, "ratio", "share of throttled readings that counts"},
		{"clear", 0.1, "ratio", "share of throttled readings below which it clears"},
	}
	gtWindow = gtParams.index("window")
	gtShare  = gtParams.index("share")
	gtClear  = gtParams.index("clear")
)

var ruleGPUThrottling = &Rule{
	ID: "gpu_throttling", Title: "GPU throttling", Scope: ScopeGPU,
	Catches:  "A GPU held below its clocks by a thermal, power or hardware slowdown for most of a window: every step takes longer, so inter-token latency and throughput suffer while vLLM's own numbers look merely slow.",
	Needs:    "the GPU's clock-event reasons (NVML); vtop on the node",
	Cond:     "thermal, power-brake or hardware slowdown reasons in ≥ {share} of the readings over {window} (a software power cap alone is info: a busy GPU at its power limit); with less than half the window seen (just opened), in every one of at least 3 readings",
	Clear:    "slowdown in < {clear} of the readings over {window}",
	Severity: "warning; critical when the slowdown is hardware-asserted (hardware slowdown, hardware thermal, power brake); info for the power cap alone",
	Action:   "thermal: cooling (fans, airflow, inlet temperature); power brake or hardware slowdown: the node's power delivery and BMC log, drain and service; power cap: check the configured power limit",
	For:      2 * time.Minute, ResolveFor: 2 * time.Minute,
	Params: gtParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		t := throttleOf(x, u, seconds(p[gtWindow]))
		switch {
		case t.n < 3:
			return condUnknown, 0
		case t.span < seconds(p[gtWindow])/2 && (t.share < 1 || t.reasons&^sources.ClockSWPowerCap == 0):
			// Less than half the window: known only when every reading
			// says a slowdown that is not the power cap's (opened on a GPU
			// past its slowdown temperature, the first 30 s said nothing
			// of it, and the SLO breach it causes advised "add capacity").
			return condUnknown, 0
		case t.share < p[gtClear]:
			return condClear, 0
		case t.share < p[gtShare]:
			return condHold, 0
		case t.reasons&(sources.ClockHWSlowdown|sources.ClockHWThermal|sources.ClockHWPowerBrake) != 0:
			return condMet, diagnose.SevCritical
		case t.reasons&(sources.ClockSWThermal) != 0:
			return condMet, diagnose.SevWarning
		}
		return condMet, diagnose.SevInfo // the software power cap alone
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		w := seconds(p[gtWindow])
		t := throttleOf(x, u, w)
		g := &x.f.GPU.GPUs[u.gpu]
		why := strings.Join((t.reasons & sources.ClockThrottle).Words(), ", ")
		seen := w
		if t.span < w {
			seen = t.span // opened moments ago: the readings it has
		}
		fd.Summary = say("%s %s for %s of %s: %s", g.Where(), "throttled", pct(t.share), dur(seen), why)
		fd.Evidence = []diagnose.Evidence{evNum("throttled readings", t.share, diagnose.UnitRatio, w), ev("reasons", why, w),
			evNum("temperature", g.TempC, diagnose.UnitCelsius, 0), evNum("slowdown temperature", g.TempSlowdownC, diagnose.UnitCelsius, 0),
			evNum("power", g.PowerW, diagnose.UnitWatts, 0), evNum("power limit", g.PowerLimitW, diagnose.UnitWatts, 0), evNum("SM clock", g.SMClockMHz, diagnose.UnitMHz, 0),
			evNum("utilization", g.UtilGPU/100, diagnose.UnitRatio, 0)}
		if since := x.f.GPUSeries[u.gpu].ThrottledSince; !since.IsZero() {
			fd.Evidence = append(fd.Evidence, evNum("throttled for", x.now.Sub(since).Seconds(), diagnose.UnitSeconds, 0))
		}
		fd.Explain = say("%s (%s) runs below its clocks because of %s. The engine's steps take longer, so inter-token latency rises and throughput falls with no change in vLLM's configuration; no vLLM flag fixes it.", g.Where(), g.Name, why)
		var action []diagnose.Text
		if t.reasons&sources.ClockThermal != 0 {
			action = append(action, say("cooling: it runs at %s (fans, airflow, inlet temperature, dust; nvidia-smi -q -d TEMPERATURE)", tempWords(g)))
		}
		if t.reasons&(sources.ClockHWSlowdown|sources.ClockHWPowerBrake) != 0 {
			action = append(action, plain("hardware-asserted slowdown: check the node's power supplies and the BMC/SEL log; drain it for service if it persists"))
		}
		if t.reasons&sources.ClockSWPowerCap != 0 {
			action = append(action, say("power cap: it draws %s; check nvidia-smi -q -d POWER for a lowered limit", powerWords(g)))
		}
		fd.Action = diagnose.Join(action, "; ")
	},
}

type throttle struct {
	n       int
	span    time.Duration
	share   float64
	reasons sources.ClockEvent
}

func throttleOf(x *evalCtx, u *unit, w time.Duration) throttle {
	var t throttle
	if u.gpu >= len(x.f.GPUSeries) {
		return t
	}
	pts := diagnose.GPUWindow(x.f.GPUSeries[u.gpu].Points, x.now, w)
	for _, p := range pts {
		if p.Lost {
			continue
		}
		t.n++
		t.reasons |= p.ClockEvents & sources.ClockThrottle
	}
	if len(pts) > 0 {
		t.span = pts[len(pts)-1].Time.Sub(pts[0].Time)
	}
	t.share = diagnose.GPUThrottledShare(pts)
	return t
}

// withUnit renders a reading with its unit, "--" alone when unknown.
func withUnit(v float64, u string) diagnose.Text {
	if bad(v) {
		return plain(missing)
	}
	return say("%s"+u, dec(v, 0))
}

func tempWords(g *sources.GPU) diagnose.Text {
	s := withUnit(g.TempC, "°C")
	if !bad(g.TempSlowdownC) {
		s = s.Add(" (slowdown at %s°C)", dec(g.TempSlowdownC, 0))
	}
	return s
}

func powerWords(g *sources.GPU) diagnose.Text {
	s := withUnit(g.PowerW, " W")
	if !bad(g.PowerLimitW) {
		s = s.Add(" of a %s W limit", dec(g.PowerLimitW, 0))
	}
	return s
}

// gpu_xid parameters, looked up by name: a check indexes its values
// through these.
var (
	gxParams = params{
		{"window", 1800, "s", "how long an XID keeps the finding open"},
	}
	gxWindow = gxParams.index("window")
)

var ruleGPUXID = &Rule{
	ID: "gpu_xid", Title: "GPU XID error", Scope: ScopeGPU,
	Catches:  "The driver reported an XID error on a GPU: uncorrectable ECC (48, 94, 95), page retirement or row remap (63, 64), NVLink (74), fallen off the bus (79), firmware faults, or an application fault (13, 31, 43).",
	Needs:    "XID events (NVML event set); vtop on the node",
	Cond:     "an XID of level warning or critical in NVIDIA's catalog on this GPU within {window}",
	Clear:    "no such XID within {window}",
	Severity: "critical for XIDs that take the GPU or its memory out (48, 61–64, 74, 79, 94, 95, 119, 120, 140, 154); warning for application faults",
	Action:   "what the XID calls for: restart the server (application fault, contained ECC error 94), drain and reset the GPU (48, 63, 64, 74, 95), drain and reboot the node (79)",
	For:      0, ResolveFor: 0,
	Params: gxParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		worst, _, ok := xidsOf(x, u, seconds(p[gxWindow]))
		switch {
		case !ok:
			return condClear, 0
		case worst.Level == "critical":
			return condMet, diagnose.SevCritical
		}
		return condMet, diagnose.SevWarning
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		w := seconds(p[gxWindow])
		worst, evs, _ := xidsOf(x, u, w)
		last := evs[len(evs)-1]
		dev := fmt.Sprintf("GPU %d", u.gpuIndex)
		if u.gpu >= 0 && u.gpu < len(x.f.GPU.GPUs) {
			dev = x.f.GPU.GPUs[u.gpu].Where()
		}
		fd.Summary = say("XID %d on %s (%s) %s ago: %s", worst.XID, dev, worst.Name, dur(x.now.Sub(last.Time)), worst.Action.Advice())
		var codes []string
		for _, e := range evs {
			codes = append(codes, fmt.Sprintf("%d at %s", e.XID, e.Time.UTC().Format("15:04:05")))
		}
		fd.Evidence = []diagnose.Evidence{ev("XIDs", strings.Join(codes, ", "), w), ev("worst", fmt.Sprintf("XID %d: %s (%s)", worst.XID, worst.Name, worst.Level), w)}
		if u.gpu >= 0 && u.gpu < len(x.f.GPU.GPUs) {
			g := &x.f.GPU.GPUs[u.gpu]
			if g.Problem != "" {
				fd.Evidence = append(fd.Evidence, ev("device", g.Problem, 0))
			}
			if !bad(g.ECCUncorrected) {
				fd.Evidence = append(fd.Evidence, evNum("uncorrectable ECC errors", g.ECCUncorrected, diagnose.UnitCount, 0))
			}
			if g.RemapPending {
				fd.Evidence = append(fd.Evidence, ev("row remap", "pending a GPU reset", 0))
			}
		}
		fd.Explain = say("The NVIDIA driver logged XID %d (%s) on %s. %s", worst.XID, worst.Name, dev, xidWords(worst.Action))
		fd.Action = plain(worst.Action.Advice())
	},
}

func xidWords(a sources.XIDAction) string {
	switch a {
	case sources.XIDReboot:
		return "The GPU is gone from the bus: the engines on it are dead and only a node reboot (often a power cycle) brings it back."
	case sources.XIDResetGPU:
		return "The GPU's memory or links are in a state only a GPU reset clears; engines on it may return wrong results or crash until then."
	case sources.XIDRestartApp:
		return "A process on the GPU faulted or was stopped; the vLLM engine on it has likely crashed or will."
	}
	return "Informational; act if it repeats."
}

// xidsOf returns the XID events of the unit's GPU within w (warning and
// critical levels), oldest first, and the worst of them.
func xidsOf(x *evalCtx, u *unit, w time.Duration) (sources.XIDInfo, []sources.GPUEvent, bool) {
	var worst sources.XIDInfo
	var out []sources.GPUEvent
	rank := func(i sources.XIDInfo) int {
		return map[string]int{"info": 0, "warning": 1, "critical": 2}[i.Level]*10 + int(i.Action)
	}
	for _, e := range x.f.GPUEvents {
		if e.XID == 0 || e.GPU != u.gpuIndex || x.now.Sub(e.Time) > w || e.Time.After(x.now) {
			continue
		}
		info := sources.LookupXID(e.XID)
		if info.Level == "info" {
			continue
		}
		out = append(out, e)
		if len(out) == 1 || rank(info) > rank(worst) {
			worst = info
		}
	}
	return worst, out, len(out) > 0
}

// evalGPUs evaluates a GPU rule on every device of the frame (gpu_xid
// also on every device index an XID names that the reading no longer
// lists).
func (d *Detector) evalGPUs(x *evalCtx, ri int) {
	r := &d.rules[ri]
	f := x.f
	var idx, slot []int // device indexes, and their slots in f.GPU.GPUs (-1: not listed)
	for i := range f.GPU.GPUs {
		idx, slot = append(idx, f.GPU.GPUs[i].Index), append(slot, i)
	}
	// A stale device (its source fails: the values are the last read) is
	// judged on nothing: no finding, and the sweep drops its states. Its
	// index stays listed so an XID it reported is not judged unlisted.
	var stale []int
	for i := range f.GPU.GPUs {
		if f.GPU.GPUs[i].Stale {
			stale = append(stale, i)
		}
	}
	if r.ID == ruleGPUXID.ID {
		for _, e := range f.GPUEvents {
			if e.XID != 0 && !slices.Contains(idx, e.GPU) {
				idx, slot = append(idx, e.GPU), append(slot, -1)
			}
		}
	}
	for k, gi := range idx {
		if slot[k] >= 0 && slices.Contains(stale, slot[k]) {
			continue
		}
		x.u = unit{gpu: slot[k], gpuIndex: gi, target: gpuTarget(f, slot[k], gi), key: unitKey{gpu: gi}}
		if slot[k] >= 0 {
			x.u.key.uuid = f.GPU.GPUs[slot[k]].UUID
		}
		x.since, x.over = time.Time{}, 0
		c, sev := r.check(x, &x.u, r.Values)
		d.step(x, ri, &x.u, c, sev)
	}
}

// gpuTarget names the endpoints holding GPU slot (an index into
// f.GPU.GPUs), or the device itself.
func gpuTarget(f *diagnose.Frame, slot, index int) string {
	var names []string
	for i := range f.Endpoints {
		if slot >= 0 && slices.Contains(f.Endpoints[i].GPU.GPUs, slot) {
			names = append(names, f.Endpoints[i].Name)
		}
	}
	if len(names) == 0 {
		if slot >= 0 && slot < len(f.GPU.GPUs) {
			return f.GPU.GPUs[slot].Where()
		}
		return fmt.Sprintf("GPU %d", index)
	}
	return strings.Join(names, ", ")
}

// endpointGPUUtil is the mean utilization of the endpoint's GPUs over the
// last w, NaN without a GPU join.
func endpointGPUUtil(f *diagnose.Frame, ep *diagnose.EndpointView, w time.Duration) float64 {
	if len(ep.GPU.GPUs) == 0 || ep.GPU.Stale {
		return math.NaN()
	}
	if pts := diagnose.GPUWindow(ep.GPU.Hist, f.Time, w); len(pts) > 0 {
		return diagnose.GPUMean(pts, func(p diagnose.GPUPoint) float64 { return p.UtilGPU })
	}
	return ep.GPU.UtilGPU
}
