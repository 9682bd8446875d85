package ui

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

// mutedAfter asserts that in line, after the cell that ends with mark,
// every colour is the muted one: the last values, dimmed, never painted
// as live ones.
func mutedAfter(t *testing.T, m *Model, line, mark string) {
	t.Helper()
	i := strings.Index(line, mark)
	if i < 0 {
		t.Fatalf("no %q in %q", mark, ansi.Strip(line))
	}
	allowed := map[string]bool{"\x1b[0m": true, "\x1b[m": true}
	for _, s := range sgr.FindAllString(m.st.muted.pre, -1) {
		allowed[s] = true
	}
	rest := line[i+len(mark):]
	if j := strings.Index(rest, columnSep); j >= 0 {
		rest = rest[:j] // the wide layout's right column is another panel
	}
	for _, loc := range sgr.FindAllStringIndex(rest, -1) {
		s, text := rest[loc[0]:loc[1]], rest[loc[1]:]
		if k := strings.IndexByte(text, 0x1b); k >= 0 {
			text = text[:k]
		}
		if strings.TrimSpace(text) == "" {
			continue // paints nothing visible (an empty cell)
		}
		if !allowed[s] && !strings.HasPrefix(s, "\x1b[48;") { // the theme's background
			t.Errorf("%q painted %q, not muted: %q", ansi.Strip(line), s, rest)
			return
		}
	}
}

// A down endpoint's last values are dimmed, not erased and not shown as
// live: its row and its engines' rows in the table, its four rows and its
// engines in its own view.
func TestDownValuesDimmed(t *testing.T) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.TrueColor)
	fr := fleetFrame()
	e := &fr.Endpoints[2] // down 42s
	e.Subs = nil
	for k := 0; k < 2; k++ {
		e.Subs = append(e.Subs, diagnose.SubView{Key: sources.SubKey{Model: e.Models[0], Engine: fmt.Sprint(k)}, Stats: fixtureStats(0.7, 1)})
	}
	m := newTestModel(fr, 200, 60, Options{Renderer: r})
	selectEndpoint(t, m, "replica-2")
	press(m, " ")
	var rows []string
	for _, l := range strings.Split(m.View(), "\n") {
		if p := ansi.Strip(l); strings.Contains(p, "replica-2") || strings.Contains(p, "└ ") && len(rows) > 0 && len(rows) < 3 {
			rows = append(rows, l)
		}
	}
	if len(rows) != 3 {
		t.Fatalf("want the row and its two engines, got %d:\n%s", len(rows), ansi.Strip(m.View()))
	}
	if p := ansi.Strip(rows[0]); !strings.Contains(p, "81%") || !strings.Contains(p, "169/9") {
		t.Errorf("the last values are erased: %q", p)
	}
	mutedAfter(t, m, rows[0], "down 42s")
	for _, l := range rows[1:] {
		mutedAfter(t, m, l, "└ ")
	}
	// Its own view: the four rows and the engines table.
	press(m, "enter")
	view := strings.Split(m.View(), "\n")
	seen := 0
	for _, l := range view {
		p := ansi.Strip(l)
		if strings.HasPrefix(p, "Latency") || strings.HasPrefix(p, "Queue") || strings.HasPrefix(p, "Throughput") {
			mutedAfter(t, m, l, p[:5])
			seen++
		}
		if strings.Contains(p, "engine 1") || strings.HasPrefix(strings.TrimSpace(p), "e1 ") {
			mutedAfter(t, m, l, "1")
			seen++
		}
	}
	if seen < 4 {
		t.Errorf("the endpoint view's rows not found (%d):\n%s", seen, ansi.Strip(m.View()))
	}
}

// A stale GPU's line (its exporter fails) shows its last values dimmed
// and says "stale" with the age of its last reading, never "throttled";
// a fresh one beside it keeps its colours.
func TestStaleGPUDimmed(t *testing.T) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.TrueColor)
	m := newTestModel(gpuTroubleFrame(), 120, 40, Options{Renderer: r})
	selectEndpoint(t, m, "replica-0")
	press(m, "enter", "tab", "tab")
	var stale, fresh string
	for _, l := range strings.Split(m.View(), "\n") {
		p := ansi.Strip(l)
		switch {
		case strings.HasPrefix(p, "  5 H100"):
			stale = l
		case strings.HasPrefix(p, "  6 H100"):
			fresh = l
		}
	}
	if stale == "" || fresh == "" {
		t.Fatalf("no GPU 5 or 6 line:\n%s", ansi.Strip(m.View()))
	}
	if p := ansi.Strip(stale); !strings.Contains(p, "stale 42s") || strings.Contains(p, "throttled") || !strings.Contains(p, "85%") {
		t.Errorf("stale GPU line %q", p)
	}
	mutedAfter(t, m, stale, "H100 80GB HBM3")
	if !strings.Contains(fresh, m.st.crit.pre) && !strings.Contains(fresh, m.st.warn.pre) {
		t.Errorf("the fresh throttled GPU lost its colours: %q", fresh)
	}
}

// The endpoint's own share of GPUs whose exporter fails is dimmed and
// says stale, as the GPUs' own lines are: it is the last share read.
func TestStaleShareDimmed(t *testing.T) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.TrueColor)
	m := newTestModel(gpuTroubleFrame(), 120, 40, Options{Renderer: r})
	e := diagnose.EndpointGPU{GPUs: []int{0}, MemBytes: 70e9, UtilGPU: 85}
	fresh := m.common.mineLine(&e, 120)
	e.Stale = true
	stale := m.common.mineLine(&e, 120)
	if p := ansi.Strip(stale); !strings.Contains(p, "stale") || !strings.HasPrefix(p, "this endpoint") {
		t.Errorf("stale share %q", p)
	}
	if !strings.Contains(stale, m.st.muted.pre) || strings.Contains(stale, m.st.accent.pre) {
		t.Errorf("the stale share is not muted: %q", stale)
	}
	if strings.Contains(fresh, m.st.muted.pre) || strings.Contains(ansi.Strip(fresh), "stale") {
		t.Errorf("the fresh share is muted: %q", fresh)
	}
}
