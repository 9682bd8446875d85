package ui

import (
	"slices"

	"github.com/charmbracelet/bubbles/key"

	f "github.com/vtop-dev/vtop/ui/format"
)

// helpLines is the help overlay: every key from the key map, then what the
// symbols mean (nothing on screen relies on color alone). Wide terminals
// get the two halves side by side.
func (m *Model) helpLines(w int) []string {
	s := m.st
	const keyW = 12
	var keys []string
	groups := m.keys.helpGroups()
	if m.replay != nil {
		// A recording is not polled, and p is the replay's pause.
		groups[0].keys = slices.DeleteFunc(slices.Clone(groups[0].keys), func(b binding) bool {
			return b.short == m.keys.Pause.short || b.short == m.keys.PollNow.short
		})
		groups = append([]helpGroup{m.replay.helpGroup()}, groups...)
	}
	if len(m.opts.Actions) > 0 {
		g := helpGroup{title: "Your actions (config file), on the selected endpoint or GPU"}
		for _, a := range m.opts.Actions {
			g.keys = append(g.keys, binding{Binding: key.NewBinding(key.WithKeys(a.Key), key.WithHelp(a.Key, a.Name))})
		}
		groups = append(groups, g)
	}
	for _, g := range groups {
		keys = append(keys, s.title.s(g.title))
		for _, b := range g.keys {
			h := b.Help()
			keys = append(keys, "  "+s.key.s(pad(h.Key, keyW))+" "+s.text.s(h.Desc))
		}
		keys = append(keys, "")
	}
	legend := []string{s.title.s("Symbols")}
	kv := m.fr.KV()
	for _, l := range [][2]string{
		{symUp, "up, with how long"},
		{symDown, "down: the endpoint view shows the error"},
		{symStale, "stale: no answer for a while (polls hang)"},
		{symRestart, "restarted recently"},
		{symJoined, "joined the fleet recently (discovery, or new series)"},
		{symLeft, "left the fleet: its last values, dimmed, for a while"},
		{symPending, "pending: not polled yet; a finding holding, not fired yet"},
		{"…", "at a line's end: cut to fit; enter on a finding shows it whole"},
		{"a→b", "from a to b: a flag to change; in the header, a setting the next frame applies"},
		{symCrit, "critical; after a value: far over its limit"},
		{symWarn, "warning; after a value: over its limit"},
		{symInfo, "advisory"},
		{symOK, "fine"},
		{"KV", symWarn + " from " + f.Percent(kv.Warn) + ", " + symCrit + " from " + f.Percent(kv.Crit) + " of the KV cache (the KV rules' kv_high)"},
		{"latency", symWarn + " over the SLO target, " + symCrit + " over twice (p99: 2× and 4×)"},
		{symExpand + " " + symCollapse, "engines hidden / shown; " + symExpand + " marks the endpoint's GPUs"},
		{symSel, "the selected row, or the pane keys go to"},
		{"--", "unknown: not exposed, or no request in the window"},
		{"~ ≤ ≥", "approximate: inside a bucket 2× wide or more; in the first bucket; in +Inf"},
		{"▁▃▅▇█", "history, newest right; a gap is a missing point"},
	} {
		legend = append(legend, "  "+s.text.s(pad(l[0], keyW))+" "+s.muted.s(l[1]))
	}
	legend = append(legend, "",
		s.title.s("Theme")+" "+s.text.s(m.theme.Name)+s.muted.s(" (t cycles; --theme or theme: in the config file)"),
		s.title.s("SLO")+" "+s.text.s(m.sloText())+s.muted.s(" (o cycles; --slo)"))
	if w >= wideMinWidth {
		return beside(keys, w/2, "", legend)
	}
	return append(keys, legend...)
}

func (m *Model) sloText() string {
	slo := m.slos[m.slo]
	return slo.Name + " (" + slo.Desc + "): TTFT ≤" + secs(slo.TTFT) + ", inter-token ≤" + secs(slo.ITL) + ", E2E ≤" + secs(slo.E2E) + " at p95"
}

// overlayBody shows lines scrolled by off in the body, with a title rule.
func (m *Model) overlayBody(title string, lines []string, off *int) []string {
	// Long lines wrap: evidence, explanations and errors are read whole.
	var wrapped []string
	for _, l := range lines {
		wrapped = append(wrapped, wrapLine(l, m.w)...)
	}
	lines = wrapped
	n := m.lay.body - 1
	*off = max(0, min(*off, len(lines)-n))
	out := []string{m.st.rule(title, true, m.w)}
	for i := *off; i < min(len(lines), *off+n); i++ {
		out = append(out, cut(lines[i], m.w))
	}
	if rest := len(lines) - (*off + n); rest > 0 && len(out) > 1 {
		out[len(out)-1] = m.st.muted.s("  ↓ " + itoa(rest) + " more lines")
	}
	return block(out, m.w, m.lay.body)
}
