package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	f "github.com/vtop-dev/vtop/ui/format"
)

// The GPU line takes its words and units from sources.GPUFields: a row's
// short word or unit changed there is what the line shows, with no edit
// here (the table is restored after).
func TestGPULineReadsGPUFields(t *testing.T) {
	fr := gpuTroubleFrame()
	m := newTestModel(fr, 200, 60, Options{})
	g := &fr.GPU.GPUs[0]
	line := func() string { return ansi.Strip(m.common.gpuLine(g, nil, false, 200)) }
	before := line()
	for _, want := range []string{"util ", gpuUnit("%", g.UtilGPU), "SM " + whole(g.SMClockMHz) + "MHz", "mem " + whole(g.MemClockMHz) + "MHz",
		whole(g.PowerW) + "/" + whole(g.PowerLimitW) + "W", memPair(g.MemUsed, g.MemTotal)} {
		if !strings.Contains(before, want) {
			t.Errorf("the line lacks %q:\n%s", want, before)
		}
	}
	saved := sources.GPUFields
	t.Cleanup(func() { sources.GPUFields = saved })
	sources.GPUFields[sources.GPUSMClock].Short = "core"
	sources.GPUFields[sources.GPUPower].Unit = "count"
	sources.GPUFields[sources.GPUUtil].Short = "busy"
	after := line()
	for _, want := range []string{"core " + whole(g.SMClockMHz) + "MHz", whole(g.PowerW) + "/" + gpuUnit("count", g.PowerLimitW) + "  ", "busy "} {
		if !strings.Contains(after, want) {
			t.Errorf("after the table changed, the line lacks %q:\n%s\n(before: %s)", want, after, before)
		}
	}
	if strings.Contains(after, "SM ") || strings.Contains(after, "util ") {
		t.Errorf("the line still names the old words:\n%s", after)
	}
}

// The endpoint view takes its words and units from diagnose.StatFields:
// a row's label or unit changed there is what the rows and the features
// panel show (the table is restored after).
func TestEndpointReadsStatFields(t *testing.T) {
	fr := featuresFrame(t)
	view := func() string {
		m := newTestModel(fr, 200, 24, Options{}) // compact rows: their cells' own words
		selectEndpoint(t, m, "spec-0")
		press(m, "enter")
		return ansi.Strip(m.View())
	}
	before := view()
	for _, want := range []string{"preempt ", "tokens/step ", "running "} {
		if !strings.Contains(before, want) {
			t.Fatalf("the view lacks %q:\n%s", want, before)
		}
	}
	saved := diagnose.StatFields
	t.Cleanup(func() { diagnose.StatFields = saved })
	diagnose.StatFields[diagnose.StatPreemptions].Label = "evicted"
	diagnose.StatFields[diagnose.StatRunning].Label = "in batch"
	diagnose.StatFields[diagnose.StatSpecAcceptLen].Unit = diagnose.UnitRatio
	after := view()
	var e *diagnose.EndpointView
	for i := range fr.Endpoints {
		if fr.Endpoints[i].Name == "spec-0" {
			e = &fr.Endpoints[i]
		}
	}
	for _, want := range []string{"evicted ", "in batch ", "tokens/step " + f.Percent(e.Stats.SpecAcceptLen)} {
		if !strings.Contains(after, want) {
			t.Errorf("after the table changed, the view lacks %q:\n%s", want, after)
		}
	}
	if strings.Contains(after, "preempt ") {
		t.Errorf("the view still names the old word:\n%s", after)
	}
}
