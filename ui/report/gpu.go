package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	f "github.com/vtop-dev/vtop/ui/format"
)

// unit renders a number with a unit, "--" when unknown.
func unit(v float64, u string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return f.Missing
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + u
}

func pct(v float64) string { return f.Percent(v / 100) }

// writeGPU writes the GPU section: one block per GPU, the XID events, the
// notes, and GPU memory by endpoint.
func writeGPU(b *strings.Builder, fr *diagnose.Frame) {
	g := &fr.GPU
	switch {
	case g.Unavailable != "":
		fmt.Fprintf(b, "GPU: %s\n", g.Unavailable)
		return
	case g.Time.IsZero():
		b.WriteString("GPU: not read\n")
		return
	}
	fmt.Fprintf(b, "GPU  %s  %d GPUs  read %s ago\n", g.Source, len(g.GPUs), f.Age(fr.Time, g.Time))
	for i := range g.GPUs {
		var s *diagnose.GPUSeries
		if i < len(fr.GPUSeries) {
			s = &fr.GPUSeries[i]
		}
		writeOneGPU(b, fr, &g.GPUs[i], s)
	}
	if len(fr.GPUEvents) > 0 {
		b.WriteString("  XID events:\n")
		for _, ev := range fr.GPUEvents {
			x := sources.LookupXID(ev.XID)
			dev := fmt.Sprintf("GPU %d", ev.GPU)
			if ev.GPU >= 0 && ev.GPU < len(g.GPUs) {
				dev = g.GPUs[ev.GPU].Where()
			}
			fmt.Fprintf(b, "    %s  %s  XID %d  %s  [%s]  %s\n", ev.Time.Format("15:04:05"), dev, ev.XID, ev.Text, ev.Level, x.Action.Advice())
		}
	}
	for _, n := range g.Notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
	var by []string
	for _, e := range fr.Endpoints {
		if len(e.GPU.GPUs) > 0 {
			by = append(by, fmt.Sprintf("%s %s on %s", e.Name, f.Bytes(e.GPU.MemBytes), gpuList(e.GPU.GPUs, fr)))
		}
	}
	if len(by) > 0 {
		fmt.Fprintf(b, "  GPU memory by endpoint: %s\n", strings.Join(by, " │ "))
	}
}

func writeOneGPU(b *strings.Builder, fr *diagnose.Frame, g *sources.GPU, s *diagnose.GPUSeries) {
	fmt.Fprintf(b, "  %s  %s", g.Where(), g.Name)
	if g.Problem != "" {
		fmt.Fprintf(b, "  PROBLEM: %s\n", g.Problem)
		return
	}
	fmt.Fprintf(b, "  util %s  mem-io %s  memory %s / %s  %s (slowdown %s)  power %s / %s  SM %s  mem %s\n",
		pct(g.UtilGPU), pct(g.UtilMem), f.Bytes(g.MemUsed), f.Bytes(g.MemTotal), unit(g.TempC, "°C"), unit(g.TempSlowdownC, "°C"),
		unit(g.PowerW, "W"), unit(g.PowerLimitW, "W"), unit(g.SMClockMHz, "MHz"), unit(g.MemClockMHz, "MHz"))
	mig := "--"
	switch g.MIG {
	case sources.TriYes:
		mig = "on"
	case sources.TriNo:
		mig = "off"
	}
	rows := "retired/remapped " + f.Count(g.RetiredPages)
	if g.RemapPending {
		rows += " (pending a reset)"
	}
	if g.RemapFailed {
		rows += " (REMAP FAILED: replace the GPU)"
	}
	fmt.Fprintf(b, "      ECC uncorrected %s  %s  PCIe tx %s/s rx %s/s  MIG %s\n",
		f.Count(g.ECCUncorrected), rows, f.Bytes(g.PCIeTxBps), f.Bytes(g.PCIeRxBps), mig)
	if len(g.ClockEvents) > 0 {
		line := "      clock events: " + strings.Join(g.ClockEvents, ", ")
		if g.Throttled {
			line += "  THROTTLED"
			if s != nil && !s.ThrottledSince.IsZero() {
				line += " for " + f.Age(fr.Time, s.ThrottledSince)
			}
		}
		b.WriteString(line + "\n")
	}
	if len(g.Processes) > 0 {
		ps := make([]string, len(g.Processes))
		for i, p := range g.Processes {
			name := p.Name
			if name == "" {
				name = "?"
			}
			ps[i] = fmt.Sprintf("%d %s %s", p.PID, name, f.Bytes(p.UsedBytes))
		}
		b.WriteString("      processes: " + strings.Join(ps, ", ") + "\n")
	}
	if len(g.FieldsMissing) > 0 {
		b.WriteString("      missing: " + strings.Join(g.FieldsMissing, ", ") + "\n")
	}
}

// gpuList names GPUs by their NVML index: "GPU 0,1".
func gpuList(idx []int, fr *diagnose.Frame) string {
	parts := make([]string, len(idx))
	for i, gi := range idx {
		parts[i] = strings.TrimPrefix(fr.GPU.GPUs[gi].Label(), "GPU ")
	}
	return "GPU " + strings.Join(parts, ",")
}

// EndpointGPULine is an endpoint's GPU share in one line; "" when there is
// nothing to say (no join attempted, or a remote endpoint).
func EndpointGPULine(fr *diagnose.Frame, e *diagnose.EndpointView) string {
	g := &e.GPU
	switch {
	case len(g.GPUs) > 0:
		line := fmt.Sprintf("%s: %s held by %s (PID %d, %d processes), util %s",
			gpuList(g.GPUs, fr), f.Bytes(g.MemBytes), g.RootName, g.Root, len(g.PIDs), pct(g.UtilGPU))
		if g.Note != "" {
			line += "  (" + g.Note + ")"
		}
		return line
	case g.Note == "" || g.Note == diagnose.NoteNotLocal:
		return ""
	}
	return "GPU: -- (" + g.Note + ")"
}
