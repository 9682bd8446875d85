package ui

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// checkLayout asserts the screen fits the terminal: no line wider than it,
// never more lines than its height (exactly its height once big enough, so
// nothing below is left over from the previous frame), no control
// characters but the color escapes.
func checkLayout(t *testing.T, m *Model) {
	t.Helper()
	v := m.View()
	lines := strings.Split(v, "\n")
	if len(lines) > m.h {
		t.Errorf("%dx%d: %d lines", m.w, m.h, len(lines))
	}
	if !m.lay.tooSmall && len(lines) != m.h {
		t.Errorf("%dx%d: %d lines, want the full height", m.w, m.h, len(lines))
	}
	for i, l := range lines {
		if w := width(l); w > m.w {
			t.Errorf("%dx%d: line %d is %d wide: %q", m.w, m.h, i, w, l)
		}
		for _, r := range l {
			if r < 0x20 && r != 0x1b || r == 0x7f {
				t.Errorf("%dx%d: line %d has control character %U", m.w, m.h, i, r)
			}
		}
	}
}

// layoutFrames are the frames the matrix runs through: a fleet, a large
// fleet, one endpoint, a fleet with no data at all.
func layoutFrames() map[string]*diagnose.Frame {
	empty := &diagnose.Frame{Time: t0, Window: 60e9, Interval: 1e9,
		Endpoints: []diagnose.EndpointView{{Name: "127.0.0.1:8000", State: diagnose.StatePending}, {Name: "127.0.0.1:8001", State: diagnose.StateDown, LastError: "connection refused"}},
		Fleet:     diagnose.FleetView{Total: 2, Stats: unknownStats()}}
	long := fleetFrame()
	long.Endpoints[0].Name = strings.Repeat("a-very-long-endpoint-name-", 5)
	long.Endpoints[0].Models = []string{strings.Repeat("org/", 3) + strings.Repeat("Model-", 20)}
	long.Endpoints[0].LastError = strings.Repeat("error ", 60)
	long.Findings[0].Summary = diagnose.Plain(strings.Repeat("evidence ", 40))
	long.Findings[1].Flags = []diagnose.FlagChange{
		{Flag: "--max-num-batched-tokens", From: diagnose.Str("2048"), To: diagnose.Str("8192")},
		{Flag: "--enable-chunked-prefill", To: diagnose.Str("true")},
		{Flag: "--long-prefill-token-threshold", From: diagnose.Str("0"), To: diagnose.Str("2048")},
		{Flag: "--max-num-partial-prefills", From: diagnose.Str("1"), To: diagnose.Str("4")},
	}
	return map[string]*diagnose.Frame{
		"fleet8":  gpuTroubleFrame(),
		"fleet50": fixtureFrame(fixtureOpts{endpoints: 50, gpus: 16, findings: true}),
		"single":  fixtureFrame(fixtureOpts{endpoints: 1, gpus: 1}),
		"empty":   empty,
		"long":    long,
		"broken":  brokenFrame(),
		"fleet40": fleet40Frame(),
	}
}

// Layout invariants over a matrix of sizes, 60×20 to 300×100, in every
// view, with resizes in between: nothing overflows, nothing panics.
func TestLayoutMatrix(t *testing.T) {
	widths := []int{60, 79, 80, 81, 99, 100, 109, 110, 120, 149, 150, 159, 160, 200, 300}
	heights := []int{20, 23, 24, 25, 29, 30, 33, 34, 40, 48, 60, 100}
	states := []struct {
		name string
		keys []string
	}{
		{"fleet", nil},
		{"selected-last", []string{"G"}},
		{"expanded", []string{"e", "s", "s"}},
		{"endpoint", []string{"enter"}},
		{"endpoint-gpu", []string{"enter", "tab", "j", "j"}},
		{"endpoint-findings", []string{"enter", "shift+tab"}},
		{"aggregate", []string{"k", "enter"}},
		{"detail", []string{"tab", "tab", "enter"}},
		{"help", []string{"?", "j", "j", "j"}},
		{"filter", []string{"/", "x", "y"}},
		{"paused", []string{"p"}},
	}
	for name, fr := range layoutFrames() {
		for _, st := range states {
			t.Run(name+"/"+st.name, func(t *testing.T) {
				m := newTestModel(fr, 120, 40, Options{})
				press(m, st.keys...)
				for _, w := range widths {
					for _, h := range heights {
						m.Update(tea.WindowSizeMsg{Width: w, Height: h})
						checkLayout(t, m)
						checkFlagsWhole(t, m)
						if t.Failed() {
							t.Fatalf("at %dx%d:\n%s", w, h, m.View())
						}
					}
				}
				// A frame arriving at a small size, then keys there.
				m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
				m.Update(frameMsg{fr})
				press(m, "j", "tab", "k")
				checkLayout(t, m)
			})
		}
	}
}

func TestTooSmall(t *testing.T) {
	for _, sz := range [][2]int{{79, 24}, {80, 23}, {60, 20}, {20, 5}} {
		m := newTestModel(fleetFrame(), sz[0], sz[1], Options{})
		want := fmt.Sprintf("terminal too small (%d×%d, need 80×24)", sz[0], sz[1])
		if got := m.View(); got != cut(want, sz[0]) {
			t.Errorf("%v: %q", sz, got)
		}
	}
	m := newTestModel(fleetFrame(), 80, 24, Options{})
	if strings.Contains(m.View(), "too small") {
		t.Error("80×24 is big enough")
	}
}

// Every symbol is one cell wide for every width table in play (the
// terminal's, through x/ansi), so columns line up.
func TestSymbolWidths(t *testing.T) {
	for _, s := range []string{symUp, symDown, symStale, symRestart, symPending, symCrit, symWarn, symInfo, symOK, symSel, symExpand, symCollapse, symSub, symNotVLLM, "↑", "↓", "‖", "°", "≤", "·", "─", "│", "░", "█", "▏", "↳", "×", "…"} {
		if w := width(s); w != 1 {
			t.Errorf("%q is %d cells", s, w)
		}
	}
	for _, r := range sparkRunes {
		if w := width(string(r)); w != 1 {
			t.Errorf("%q is %d cells", r, w)
		}
	}
}

// The model never reads a GPU snapshot it was not given: a frame without
// GPU data says why.
func TestGPUUnavailableReasons(t *testing.T) {
	cases := map[string]sources.GPUSnapshot{
		"no GPU reading":                    {},
		"no GPUs found":                     {Time: t0},
		"GPU reading off (--gpu none)":      {Time: t0, Unavailable: "GPU reading off (--gpu none)"},
		"NVML compiled out (without cgo)":   {Time: t0, Unavailable: "NVML compiled out (without cgo)"},
		"NVML unavailable: libnvidia-ml.so": {Time: t0, Unavailable: "NVML unavailable: libnvidia-ml.so"},
	}
	for want, g := range cases {
		fr := fleetFrame()
		fr.GPU = g
		m := newTestModel(fr, 120, 40, Options{})
		if !strings.Contains(m.View(), "GPU: unavailable ("+want+")") {
			t.Errorf("%q missing:\n%s", want, m.View())
		}
	}
}

// checkFlagsWhole asserts every finding whose title line is on screen
// shows each of its flag changes whole on one line: the answer is never
// cut off.
func checkFlagsWhole(t *testing.T, m *Model) {
	t.Helper()
	if m.fr == nil || m.overlay != overlayNone || m.lay.tooSmall {
		return
	}
	lines := strings.Split(m.View(), "\n")
	for _, it := range m.find.items {
		x := *it.x
		title := x.Title
		switch {
		case it.n > 1:
			title += " ×" + fmt.Sprint(it.n)
		case m.findWithTarget():
			title = m.name(x.Target) + ": " + title
		}
		if it.member {
			title = "└ " + title
		}
		at := -1
		for i, l := range lines {
			if findingTitleLine(l, title) {
				at = i
				break
			}
		}
		if at < 0 {
			continue
		}
		below := strings.Join(lines[at:min(len(lines), at+1+len(x.Flags)+2)], "\n")
		for _, part := range strings.Split(flagText(&x), ", ") {
			if !strings.Contains(below, part) {
				t.Errorf("%dx%d: %q shown without %q:\n%s", m.w, m.h, x.Title, part, m.View())
			}
		}
	}
}

// findingTitleLine: a findings pane line naming title ("  ✖ crit  title").
func findingTitleLine(l, title string) bool {
	for _, sev := range []string{symCrit + " crit", symWarn + " warn", symInfo + " info", symPending + " pending", symOK + " resolving"} {
		if (strings.HasPrefix(l, "  "+sev+" ") || strings.HasPrefix(l, symSel+" "+sev+" ")) && strings.Contains(l, title) {
			return true
		}
	}
	return false
}

// At 80×24 the top finding's flag change is on screen in the fleet view
// and in its endpoint's view, however many endpoints and findings.
func TestTopFindingChangeAt80x24(t *testing.T) {
	for name, fr := range layoutFrames() {
		if len(fr.Findings) == 0 {
			continue
		}
		m := newTestModel(fr, 80, 24, Options{})
		top := fr.Findings[0]
		if !strings.Contains(m.View(), strings.Split(flagText(&top), ", ")[0]) {
			t.Errorf("%s fleet view lacks %q:\n%s", name, flagText(&top), m.View())
		}
		selectEndpoint(t, m, top.Target)
		press(m, "enter")
		checkFlagsWhole(t, m)
		if !strings.Contains(m.View(), strings.Split(flagText(&top), ", ")[0]) {
			t.Errorf("%s endpoint view lacks %q:\n%s", name, flagText(&top), m.View())
		}
	}
}

// While findings are hidden ("↓ N more"), the findings pane has no blank
// row: a row left over shows the next finding's first lines; and a group's
// endpoint list that does not fit its line is a count, the title whole.
func TestFindingsPaneUsesEveryRow(t *testing.T) {
	roster := func() *diagnose.Frame { return withRoster(fleet40Frame()) }
	for _, fr := range []func() *diagnose.Frame{fleetFrame, fleet40Frame, roster, gpuTroubleFrame, timelineFrame} {
		for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
			m := newTestModel(fr(), sz[0], sz[1], Options{})
			lines := m.find.View()
			hidden := false
			for _, l := range lines {
				if strings.Contains(ansi.Strip(l), "more ·") || strings.Contains(ansi.Strip(l), "of the last") || strings.Contains(ansi.Strip(l), " shown ·") {
					hidden = true
				}
			}
			if !hidden {
				continue
			}
			for i, l := range lines {
				if strings.TrimSpace(ansi.Strip(l)) == "" {
					t.Errorf("%dx%d: blank row %d in the findings pane while findings are hidden:\n%s", sz[0], sz[1], i, ansi.Strip(strings.Join(lines, "\n")))
					break
				}
				if strings.Contains(l, "×") && strings.HasSuffix(strings.TrimRight(ansi.Strip(l), " "), "…") {
					t.Errorf("%dx%d: a group's line is cut: %q", sz[0], sz[1], ansi.Strip(l))
				}
			}
		}
	}
}
