package ui

import (
	"fmt"
	"math"
	"slices"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	f "github.com/vtop-dev/vtop/ui/format"
)

// gpuUnavailable says why there is no GPU data, or "" when there is.
func gpuUnavailable(g *sources.GPUSnapshot) string {
	switch {
	case g.Unavailable != "":
		return g.Unavailable
	case len(g.GPUs) > 0:
		return ""
	case g.Time.IsZero():
		return "no GPU reading"
	}
	return "no GPUs found"
}

// gpuTitle names the source; simulated GPUs always say so.
func gpuTitle(g *sources.GPUSnapshot) string {
	t := "GPU"
	src := g.Source
	if g.Simulated && !strings.Contains(strings.ToLower(src), "simulated") {
		src = strings.TrimSpace("simulated " + src)
	}
	if src != "" {
		t += " · " + src
	}
	n := len(g.GPUs)
	if n == 1 {
		return t + " · 1 device"
	}
	return t + " · " + itoa(n) + " devices"
}

// gpuIndex is the device's index as nvidia-smi and DCGM give it on its host.
func gpuIndex(g *sources.GPU) string { return strings.TrimPrefix(strings.Fields(g.Label())[1], "GPU ") }

// gpuName is the device's model after its host (read from elsewhere) and
// before its MIG profile: "gpu-node-2 H100 80GB HBM3 MIG 1g.10gb".
func gpuName(g *sources.GPU) string {
	n := shortGPUName(g.Name)
	if g.Host != "" {
		n = g.Host + " " + n
	}
	if g.MIGProfile != "" {
		n += " MIG " + g.MIGProfile
	}
	return n
}

func shortGPUName(n string) string {
	n = strings.TrimPrefix(n, "NVIDIA ")
	if n == "" {
		return f.Missing
	}
	return n
}

// tempLevel: at the slowdown threshold the GPU throttles; 10 °C below it
// is a warning. Without a threshold, 85 °C is.
func tempLevel(g *sources.GPU) level {
	t := g.TempC
	if math.IsNaN(t) {
		return lvNone
	}
	if s := g.TempSlowdownC; !math.IsNaN(s) && s > 0 {
		switch {
		case t >= s:
			return lvCrit
		case t >= s-10:
			return lvWarn
		}
		return lvNone
	}
	if t >= 85 {
		return lvWarn
	}
	return lvNone
}

// gpuState is the device's health: a problem, throttling (and for how
// long, from the history), or fine.
func (c *common) gpuState(g *sources.GPU, ser *diagnose.GPUSeries) (string, paint) {
	s := c.st
	if g.Stale {
		// Its source fails: the values are the last read, dimmed, and
		// judged on nothing; the age is since its last real point.
		t := "stale"
		if ser != nil && len(ser.Points) > 0 {
			t += " " + f.Short(c.fr.Time.Sub(ser.Points[len(ser.Points)-1].Time))
		}
		return t, s.muted
	}
	if g.Problem != "" {
		return symCrit + " " + g.Problem, s.crit
	}
	var bad []string
	if g.ECCUncorrected > 0 {
		bad = append(bad, "ECC uncorrected "+f.Count(g.ECCUncorrected))
	}
	if g.RemapFailed {
		bad = append(bad, "row remapping failed (replace the GPU)")
	} else if g.RemapPending {
		bad = append(bad, "row remap pending (reset the GPU)")
	}
	if len(bad) > 0 {
		return symCrit + " " + strings.Join(bad, ", "), s.crit
	}
	if g.Throttled {
		t := symWarn + " throttled"
		if ser != nil && !ser.ThrottledSince.IsZero() {
			t += " " + f.Short(c.fr.Time.Sub(ser.ThrottledSince))
		}
		return t + ": " + strings.Join(g.ClockEvents, ", "), s.warn
	}
	if len(g.ClockEvents) > 0 {
		return strings.Join(g.ClockEvents, ", "), s.muted
	}
	return symOK, s.ok
}

// memPair is "72.5/80GiB", or "512MiB/80GiB" when the units differ.
func memPair(used, total float64) string {
	u, t := f.Bytes(used), f.Bytes(total)
	for _, unit := range []string{"TiB", "GiB", "MiB", "KiB"} {
		if strings.HasSuffix(u, unit) && strings.HasSuffix(t, unit) {
			return strings.TrimSuffix(u, unit) + "/" + t
		}
	}
	return u + "/" + t
}

// gpuSparkWidth is the utilization history beside each GPU: what the line
// leaves over its fixed fields, within bounds.
func gpuSparkWidth(w int) int {
	sw := min(w-95, 24)
	if sw < 6 {
		return 0
	}
	return sw
}

// gpuDev is what a GPU line's cells read.
type gpuDev struct {
	c    *common
	g    *sources.GPU
	ser  *diagnose.GPUSeries
	w    int // the line's width
	temp level
}

// gpuCols are the GPU line's cells; each carries the spaces before it.
func gpuCols(w int) []col[*gpuDev] {
	nameW := 14
	if w >= 150 {
		nameW = 22
	}
	cols := []col[*gpuDev]{
		// The index nvidia-smi and DCGM give it on its host, and the host
		// first: "nvidia-smi -i 5" on the right node checks the right card.
		{column{w: 2, right: true}, func(d *gpuDev, _ int) cellOut { return cellOut{text: gpuIndex(d.g), p: &noPaint} }},
		{column{w: 1 + nameW}, func(d *gpuDev, _ int) cellOut { return cellOut{label: " ", text: gpuName(d.g), p: &noPaint} }},
		{column{w: 10, right: true}, func(d *gpuDev, _ int) cellOut {
			return cellOut{label: gpuLabel(" ", sources.GPUUtil), text: gpuText(d.g, sources.GPUUtil, sources.GPUUtil), p: &noPaint}
		}},
	}
	if sw := gpuSparkWidth(w); sw > 0 {
		cols = append(cols, col[*gpuDev]{column{}, func(d *gpuDev, _ int) cellOut {
			if d.ser == nil {
				return cellOut{}
			}
			pts := d.ser.Points
			raw := d.c.st.pad.series(len(pts), func(i int) float64 { return pts[i].UtilGPU }, sw, 1, sparkScale{max: 100})[0]
			return cellOut{label: " ", text: raw, p: &d.c.st.spark}
		}})
	}
	cols = append(cols,
		col[*gpuDev]{column{w: 6 + 12}, func(d *gpuDev, _ int) cellOut {
			return cellOut{label: gpuLabel("  ", sources.GPUMemUsed), text: gpuText(d.g, sources.GPUMemUsed, sources.GPUMemTotal), p: &noPaint}
		}},
		col[*gpuDev]{column{w: 1 + 6, right: true}, func(d *gpuDev, _ int) cellOut {
			p := d.c.st.lv(d.temp)
			return cellOut{label: gpuLabel(" ", sources.GPUTemp), text: gpuText(d.g, sources.GPUTemp, sources.GPUTemp) + d.temp.mark(), p: &p}
		}},
		col[*gpuDev]{column{w: 2 + 9, right: true}, func(d *gpuDev, _ int) cellOut {
			return cellOut{label: gpuLabel("  ", sources.GPUPower), text: gpuText(d.g, sources.GPUPower, sources.GPUPowerLimit), p: &noPaint}
		}},
		col[*gpuDev]{column{}, func(d *gpuDev, _ int) cellOut {
			state, sp := d.c.gpuState(d.g, d.ser)
			return cellOut{label: "  ", text: state, p: &sp, keep: true}
		}},
		col[*gpuDev]{column{}, func(d *gpuDev, _ int) cellOut {
			clocks := gpuLabel("", sources.GPUSMClock) + gpuText(d.g, sources.GPUSMClock, sources.GPUSMClock)
			if d.w >= 150 {
				clocks += gpuLabel(" ", sources.GPUMemClock) + gpuText(d.g, sources.GPUMemClock, sources.GPUMemClock)
			}
			return cellOut{label: "  ", text: clocks, p: &d.c.st.muted}
		}},
	)
	return cols
}

// gpuText is number id of g in its unit, as sources.GPUFields gives it,
// against number of (its total or limit: "72.5/80GiB", "300/700W") unless
// of is id.
func gpuText(g *sources.GPU, id, of sources.GPUFieldID) string {
	unit, v := sources.GPUFields[id].Unit, g.Num(id)
	switch {
	case of == id:
		return gpuUnit(unit, v)
	case unit == "bytes":
		return memPair(v, g.Num(of))
	}
	return whole(v) + "/" + gpuUnit(unit, g.Num(of))
}

// gpuUnit writes a GPU reading in its unit.
func gpuUnit(unit string, v float64) string {
	switch unit {
	case "%":
		return f.Percent(v / 100)
	case "bytes":
		return f.Bytes(v)
	case "bytes/s":
		return f.Bytes(v) + "/s"
	case "count":
		return f.Count(v)
	}
	return whole(v) + unit // °C, W, MHz: exact
}

// gpuLabel is lead and the field's short word before its number, when it
// has one (a temperature's unit says what it is).
func gpuLabel(lead string, id sources.GPUFieldID) string {
	if w := sources.GPUFields[id].Short; w != "" {
		return lead + w + " "
	}
	return lead
}

// gpuLine is one device on one line: utilization (and its history),
// memory, temperature, power against its limit, health, clocks.
func (c *common) gpuLine(g *sources.GPU, ser *diagnose.GPUSeries, mine bool, w int) string {
	s := c.st
	mk := " "
	if mine {
		mk = symExpand
	}
	d := &gpuDev{c: c, g: g, ser: ser, w: w, temp: tempLevel(g)}
	cols := gpuCols(w)
	if g.Problem != "" {
		// A GPU that cannot be read says only why.
		state, sp := c.gpuState(g, ser)
		cols = append(cols[:2], col[*gpuDev]{column{}, func(*gpuDev, int) cellOut { return cellOut{label: " ", text: state, p: &sp} }})
	}
	return paintRow(s, cols, d, rowOpts{lead: mk, leadPainted: s.accent.s(mk), dim: g.Stale, w: w})
}

// procLine lists the processes holding memory on a GPU.
func (c *common) procLine(g *sources.GPU, w int) string {
	if len(g.Processes) == 0 {
		return c.st.muted.s("      no processes")
	}
	parts := make([]string, 0, len(g.Processes))
	for _, p := range g.Processes {
		parts = append(parts, fmt.Sprintf("%d %s %s", p.PID, p.Name, f.Bytes(p.UsedBytes)))
	}
	return cut(c.st.muted.s("      ↳ "+strings.Join(parts, " · ")), w)
}

// mineLine says which GPUs serve the endpoint, or why that is unknown.
func (c *common) mineLine(e *diagnose.EndpointGPU, w int) string {
	s := c.st
	if len(e.GPUs) == 0 {
		return cut(s.muted.s("this endpoint: "+e.Note), w)
	}
	ids := make([]string, len(e.GPUs))
	for i, g := range e.GPUs {
		ids[i] = gpuIndex(&c.fr.GPU.GPUs[g])
	}
	text := "this endpoint (" + symExpand + "): " + f.Bytes(e.MemBytes) + " on GPU " + strings.Join(ids, ", ")
	if !math.IsNaN(e.UtilGPU) {
		text += " · util " + f.Percent(e.UtilGPU/100)
	}
	if e.Root > 0 {
		text += fmt.Sprintf(" · pid %d %s", e.Root, e.RootName)
		if n := len(e.PIDs) - 1; n > 0 {
			text += fmt.Sprintf(" and %d more processes", n)
		}
	}
	if e.Note != "" {
		text += " · " + e.Note
	}
	if e.Stale {
		// Its GPUs' exporter fails: the share is the last one read.
		return cut(s.muted.s(text+" · stale (its GPUs' exporter fails)"), w)
	}
	return cut(s.accent.s(text), w)
}

// maxGPUEvents is how many recent XID events the panel lists.
const maxGPUEvents = 3

// eventLines lists the newest XID events with what to do.
func (c *common) eventLines(w int) []string {
	ev := c.fr.GPUEvents
	var out []string
	for i := len(ev) - 1; i >= 0 && len(out) < maxGPUEvents; i-- {
		e := &ev[i]
		p := c.st.warn
		sym := symWarn
		if e.Level == "critical" {
			p, sym = c.st.crit, symCrit
		}
		x := sources.LookupXID(e.XID)
		dev := fmt.Sprintf("GPU %d", e.GPU)
		if e.GPU >= 0 && e.GPU < len(c.fr.GPU.GPUs) {
			dev = c.fr.GPU.GPUs[e.GPU].Where()
		}
		text := fmt.Sprintf("%s XID %d · %s · %s · %s", sym, e.XID, dev, clock(e.Time), e.Text)
		out = append(out, cut(p.s(text)+c.st.muted.s(" → "+x.Action.Advice()), w))
	}
	return out
}

// gpuPane is the GPU panel as a component: it owns its size and scroll,
// answers its own keys and says which keys it has. The Model only routes
// keys to it when it has the focus and sets its size from the layout.
type gpuPane struct {
	c       *common
	off     int // the first GPU shown
	w, h    int
	focused bool
	mine    *diagnose.EndpointGPU // the shown endpoint's share; nil in the fleet views
}

func (p *gpuPane) SetSize(sz size) { p.w, p.h = sz.w, sz.h }

// reset goes back to the first GPU (another endpoint's panel).
func (p *gpuPane) reset() { p.off = 0 }

// Update scrolls the list of GPUs.
func (p *gpuPane) Update(k tea.KeyMsg) action {
	if i, ok := p.c.keys.listMove(k, p.off, len(p.c.fr.GPU.GPUs), 4); ok {
		p.off = i
	}
	return action{}
}

// ShortHelp is what the footer shows while the pane has the keys.
func (p *gpuPane) ShortHelp() []hint {
	km := &p.c.keys
	return []hint{{b: km.Down, key: "↑↓", desc: "scroll"}}
}

// View renders the panel at its size. One line is the one-line summary.
func (p *gpuPane) View() []string {
	c, mine := p.c, p.mine
	sz := size{p.w, p.h}
	if sz.h == 1 {
		return []string{c.gpuSummary(sz.w)}
	}
	if sz.h <= 0 {
		return nil
	}
	s := c.st
	g := &c.fr.GPU
	if why := gpuUnavailable(g); why != "" {
		return block([]string{s.muted.s("GPU: unavailable (" + why + ")")}, sz.w, sz.h)
	}
	out := []string{s.rule(gpuTitle(g), p.focused, sz.w)}
	if mine != nil && (len(mine.GPUs) > 0 || mine.Note != "") && sz.h > 2 {
		out = append(out, c.mineLine(mine, sz.w))
	}
	events := c.eventLines(sz.w)
	n := len(g.GPUs)
	room := sz.h - len(out)
	// Per-process memory under as many GPUs as the rows left once every
	// GPU and event has its line allow, the first first: the layout gave
	// the panel that room (roomy, or the pane has focus), and a row it
	// cannot fill for every GPU still says what runs on some.
	procs := 0
	if slices.ContainsFunc(g.GPUs, func(x sources.GPU) bool { return len(x.Processes) > 0 }) {
		procs = min(n, max(0, room-len(events)-n))
	}
	// Events first when the GPUs would not all fit anyway: an XID is news.
	ev := min(len(events), max(0, room-1))
	room -= ev
	fit := max(0, room)
	if fit < n {
		fit = max(0, room-1) // one line says how many more
	}
	if fit == 0 {
		// Too few rows for the title, a GPU and "N of M shown": the
		// summary (which counts them) stands for the title, and the
		// GPUs fill the rows left.
		out = append([]string{c.gpuSummary(sz.w)}, out[1:]...)
		for _, i := range gpuOrder(n, mine) {
			if len(out) >= sz.h {
				break
			}
			var ser *diagnose.GPUSeries
			if i < len(c.fr.GPUSeries) {
				ser = &c.fr.GPUSeries[i]
			}
			out = append(out, c.gpuLine(&g.GPUs[i], ser, mine != nil && slices.Contains(mine.GPUs, i), sz.w))
		}
		return block(out, sz.w, sz.h)
	}
	out = append(out, events[:ev]...)
	p.off = max(0, min(p.off, n-fit))
	order := gpuOrder(n, mine)
	for _, i := range order[p.off:min(n, p.off+fit)] {
		d := &g.GPUs[i]
		var ser *diagnose.GPUSeries
		if i < len(c.fr.GPUSeries) {
			ser = &c.fr.GPUSeries[i]
		}
		isMine := mine != nil && slices.Contains(mine.GPUs, i)
		out = append(out, c.gpuLine(d, ser, isMine, sz.w))
		if procs > 0 {
			out = append(out, c.procLine(d, sz.w))
			procs--
		}
	}
	if hidden := n - fit; hidden > 0 && len(out) < sz.h {
		more := fmt.Sprintf("  %d of %d GPUs shown", fit, n)
		if p.off > 0 {
			more += " (from " + g.GPUs[order[p.off]].Label() + ")"
		}
		hint := " · tab to this pane, ↑↓ to scroll"
		if p.focused {
			hint = " · ↑↓ to scroll"
		}
		out = append(out, s.muted.s(more+hint))
	}
	for _, note := range g.Notes {
		if len(out) < sz.h {
			out = append(out, s.muted.s("  "+note))
		}
	}
	return block(out, sz.w, sz.h)
}

// gpuOrder lists the GPUs to show: the endpoint's own first, then the rest.
func gpuOrder(n int, mine *diagnose.EndpointGPU) []int {
	out := make([]int, 0, n)
	if mine != nil {
		for _, i := range mine.GPUs {
			if i >= 0 && i < n {
				out = append(out, i)
			}
		}
	}
	for i := 0; i < n; i++ {
		if mine == nil || !slices.Contains(mine.GPUs, i) {
			out = append(out, i)
		}
	}
	return out
}

// gpuSummary is the GPU panel in one line, for the fleet view.
func (c *common) gpuSummary(w int) string {
	s := c.st
	g := &c.fr.GPU
	if why := gpuUnavailable(g); why != "" {
		return cut(s.muted.s("GPU: unavailable ("+why+")"), w)
	}
	var util, used, total float64
	nu, hot, throttled, problems, stale := 0, math.NaN(), 0, 0, 0
	names := map[string]int{}
	for i := range g.GPUs {
		d := &g.GPUs[i]
		names[shortGPUName(d.Name)]++
		if d.Stale {
			stale++ // last values: not summed with live ones, not judged
			continue
		}
		if !math.IsNaN(d.UtilGPU) {
			util += d.UtilGPU
			nu++
		}
		used += d.MemUsed
		total += d.MemTotal
		if !math.IsNaN(d.TempC) && (math.IsNaN(hot) || d.TempC > hot) {
			hot = d.TempC
		}
		if d.Throttled {
			throttled++
		}
		if d.Problem != "" || d.ECCUncorrected > 0 || d.RemapPending || d.RemapFailed {
			problems++
		}
	}
	kinds := make([]string, 0, len(names))
	for n, c := range names {
		kinds = append(kinds, fmt.Sprintf("%d× %s", c, n))
	}
	slices.Sort(kinds)
	avg := math.NaN()
	if nu > 0 {
		avg = util / float64(nu)
	}
	parts := []string{s.title.s(gpuTitle(g))}
	if problems > 0 {
		parts = append(parts, s.crit.s(fmt.Sprintf("%s %d with errors", symCrit, problems)))
	}
	if throttled > 0 {
		parts = append(parts, s.warn.s(fmt.Sprintf("%s %d throttled", symWarn, throttled)))
	}
	if n := len(c.fr.GPUEvents); n > 0 {
		parts = append(parts, s.crit.s(fmt.Sprintf("%s %d XID events", symCrit, n)))
	}
	if stale > 0 {
		parts = append(parts, s.muted.s(fmt.Sprintf("%d stale", stale)))
	}
	if throttled == 0 && problems == 0 && stale == 0 && len(c.fr.GPUEvents) == 0 {
		parts = append(parts, s.ok.s(symOK))
	}
	parts = append(parts,
		strings.Join(kinds, ", "),
		"util "+f.Percent(avg/100)+" avg",
		"mem "+memPair(used, total),
		"max "+whole(hot)+"°C")
	return cut(strings.Join(parts, s.muted.s(" · ")), w)
}

// whole renders a reading in whole units (°C, W, MHz): exact, never "2k".
func whole(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return f.Missing
	}
	return fmt.Sprintf("%.0f", v)
}
