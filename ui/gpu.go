package ui

import (
	"fmt"
	"math"
	"slices"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/vtop-dev/vtop/diagnose"
	f "github.com/vtop-dev/vtop/diagnose/format"
	"github.com/vtop-dev/vtop/sources"
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
func (m *Model) gpuState(g *sources.GPU, ser *diagnose.GPUSeries) (string, paint) {
	s := m.st
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
			t += " " + f.Short(m.fr.Time.Sub(ser.ThrottledSince))
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

// gpuLine is one device on one line: utilization (and its history),
// memory, temperature, power against its limit, health, clocks.
func (m *Model) gpuLine(g *sources.GPU, ser *diagnose.GPUSeries, mine bool, w int) string {
	s := m.st
	mk := " "
	if mine {
		mk = symExpand
	}
	nameW := 14
	if w >= 150 {
		nameW = 22
	}
	tl := tempLevel(g)
	temp := whole(g.TempC) + "°C" + tl.mark()
	power := whole(g.PowerW) + "/" + whole(g.PowerLimitW) + "W"
	clocks := "SM " + whole(g.SMClockMHz) + "MHz"
	if w >= 150 {
		clocks += " mem " + whole(g.MemClockMHz) + "MHz"
	}
	state, sp := m.gpuState(g, ser)
	var b strings.Builder
	b.WriteString(s.accent.s(mk) + padLeft(itoa(g.Index), 2) + " " + pad(shortGPUName(g.Name), nameW))
	if g.Problem != "" {
		b.WriteString(" " + sp.s(state))
		return cut(b.String(), w)
	}
	b.WriteString(s.muted.s(" util ") + padLeft(f.Percent(g.UtilGPU/100), 4))
	if sw := gpuSparkWidth(w); sw > 0 && ser != nil {
		pts := ser.Points
		b.WriteString(" " + s.spark.s(s.pad.series(len(pts), func(i int) float64 { return pts[i].UtilGPU }, sw, 1, sparkScale{max: 100})[0]))
	}
	b.WriteString(s.muted.s("  mem ") + pad(memPair(g.MemUsed, g.MemTotal), 12))
	b.WriteString(" " + s.lv(tl).s(padLeft(temp, 6)))
	b.WriteString("  " + padLeft(power, 9))
	b.WriteString("  " + sp.s(state))
	b.WriteString("  " + s.muted.s(clocks))
	return cut(b.String(), w)
}

// procLine lists the processes holding memory on a GPU.
func (m *Model) procLine(g *sources.GPU, w int) string {
	if len(g.Processes) == 0 {
		return m.st.muted.s("      no processes")
	}
	parts := make([]string, 0, len(g.Processes))
	for _, p := range g.Processes {
		parts = append(parts, fmt.Sprintf("%d %s %s", p.PID, p.Name, f.Bytes(p.UsedBytes)))
	}
	return cut(m.st.muted.s("      ↳ "+strings.Join(parts, " · ")), w)
}

// mineLine says which GPUs serve the endpoint, or why that is unknown.
func (m *Model) mineLine(e *diagnose.EndpointGPU, w int) string {
	s := m.st
	if len(e.GPUs) == 0 {
		return cut(s.muted.s("this endpoint: "+e.Note), w)
	}
	ids := make([]string, len(e.GPUs))
	for i, g := range e.GPUs {
		ids[i] = itoa(m.fr.GPU.GPUs[g].Index)
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
	return cut(s.accent.s(text), w)
}

// maxGPUEvents is how many recent XID events the panel lists.
const maxGPUEvents = 3

// eventLines lists the newest XID events with what to do.
func (m *Model) eventLines(w int) []string {
	ev := m.fr.GPUEvents
	var out []string
	for i := len(ev) - 1; i >= 0 && len(out) < maxGPUEvents; i-- {
		e := &ev[i]
		p := m.st.warn
		sym := symWarn
		if e.Level == "critical" {
			p, sym = m.st.crit, symCrit
		}
		x := sources.LookupXID(e.XID)
		text := fmt.Sprintf("%s XID %d · GPU %d · %s · %s", sym, e.XID, e.GPU, clock(e.Time), e.Text)
		out = append(out, cut(p.s(text)+m.st.muted.s(" → "+x.Action.Advice()), w))
	}
	return out
}

// gpuPane is the GPU panel as a component: it owns its size and scroll,
// answers its own keys and says which keys it has. The Model only routes
// keys to it when it has the focus and sets its size from the layout.
type gpuPane struct {
	off     int // the first GPU shown
	w, h    int
	focused bool
}

func (p *gpuPane) SetSize(sz size) { p.w, p.h = sz.w, sz.h }

// reset goes back to the first GPU (another endpoint's panel).
func (p *gpuPane) reset() { p.off = 0 }

// Update scrolls the list of n GPUs; it says whether the key was its own.
func (p *gpuPane) Update(km *keyMap, k tea.KeyMsg, n int) bool {
	i, ok := km.listMove(k, p.off, n, 4)
	if ok {
		p.off = i
	}
	return ok
}

// ShortHelp is what the footer shows while the pane has the keys.
func (p *gpuPane) ShortHelp(km *keyMap) []hint {
	return []hint{{b: km.Down, key: "↑↓", desc: "scroll"}}
}

// View renders the panel at its size; mine is the shown endpoint's share
// (nil in the fleet views). One line is the one-line summary.
func (p *gpuPane) View(m *Model, mine *diagnose.EndpointGPU) []string {
	sz := size{p.w, p.h}
	if sz.h == 1 {
		return []string{m.gpuSummary(sz.w)}
	}
	if sz.h <= 0 {
		return nil
	}
	s := m.st
	g := &m.fr.GPU
	if why := gpuUnavailable(g); why != "" {
		return block([]string{s.muted.s("GPU: unavailable (" + why + ")")}, sz.w, sz.h)
	}
	out := []string{s.rule(gpuTitle(g), p.focused, sz.w)}
	if mine != nil && (len(mine.GPUs) > 0 || mine.Note != "") && sz.h > 2 {
		out = append(out, m.mineLine(mine, sz.w))
	}
	events := m.eventLines(sz.w)
	n := len(g.GPUs)
	room := sz.h - len(out)
	// Per-process memory when every GPU still fits with it: the layout
	// gave the panel that room (roomy, or the pane has focus).
	procs := slices.ContainsFunc(g.GPUs, func(x sources.GPU) bool { return len(x.Processes) > 0 }) &&
		room-len(events) >= 2*n
	per := 1
	if procs {
		per = 2
	}
	// Events first when the GPUs would not all fit anyway: an XID is news.
	ev := min(len(events), max(0, room-per))
	room -= ev
	fit := max(0, room/per)
	if fit < n {
		fit = max(0, (room-1)/per) // one line says how many more
	}
	if fit == 0 {
		return block([]string{m.gpuSummary(sz.w)}, sz.w, sz.h)
	}
	out = append(out, events[:ev]...)
	p.off = max(0, min(p.off, n-fit))
	order := gpuOrder(n, mine)
	for _, i := range order[p.off:min(n, p.off+fit)] {
		d := &g.GPUs[i]
		var ser *diagnose.GPUSeries
		if i < len(m.fr.GPUSeries) {
			ser = &m.fr.GPUSeries[i]
		}
		isMine := mine != nil && slices.Contains(mine.GPUs, i)
		out = append(out, m.gpuLine(d, ser, isMine, sz.w))
		if procs {
			out = append(out, m.procLine(d, sz.w))
		}
	}
	if hidden := n - fit; hidden > 0 && len(out) < sz.h {
		more := fmt.Sprintf("  %d of %d GPUs shown", fit, n)
		if p.off > 0 {
			more += fmt.Sprintf(" (from GPU %d)", g.GPUs[order[p.off]].Index)
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
func (m *Model) gpuSummary(w int) string {
	s := m.st
	g := &m.fr.GPU
	if why := gpuUnavailable(g); why != "" {
		return cut(s.muted.s("GPU: unavailable ("+why+")"), w)
	}
	var util, used, total float64
	nu, hot, throttled, problems := 0, math.NaN(), 0, 0
	names := map[string]int{}
	for i := range g.GPUs {
		d := &g.GPUs[i]
		names[shortGPUName(d.Name)]++
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
	if n := len(m.fr.GPUEvents); n > 0 {
		parts = append(parts, s.crit.s(fmt.Sprintf("%s %d XID events", symCrit, n)))
	}
	if throttled == 0 && problems == 0 && len(m.fr.GPUEvents) == 0 {
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
