package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/vtop-dev/vtop/diagnose"
)

// sixFrame is the on-call screen the issue tried: six endpoints on six
// GPUs and six findings, each with its evidence.
func sixFrame() *diagnose.Frame {
	fr := fixtureFrame(fixtureOpts{endpoints: 6, gpus: 6, findings: true})
	more := []diagnose.Finding{
		{Rule: "queue_backlog", Severity: diagnose.SevWarning, Target: "replica-5",
			FirstSeen: t0.Add(-2 * time.Minute), LastSeen: t0, Title: "Queue backlog", Summary: diagnose.Plain("31 waiting for 2m"),
			Evidence: []diagnose.Evidence{{Name: "waiting", Num: 31, Unit: diagnose.UnitCount, Window: time.Minute},
				{Name: "running", Num: 256, Unit: diagnose.UnitCount}, {Name: "arrivals", Num: 9.5, Unit: diagnose.UnitPerSec, Window: time.Minute}},
			Action: diagnose.Plain("add replicas"), Flags: []diagnose.FlagChange{{Flag: "replicas", From: diagnose.Str("6"), To: diagnose.Str("8")}}},
		{Rule: "gpu_throttling", Severity: diagnose.SevCritical, Target: "replica-3",
			FirstSeen: t0.Add(-2 * time.Minute), LastSeen: t0, Title: "GPU 5 throttled", Summary: diagnose.Plain("SW power cap for 2m, SM clock 1410MHz"),
			Evidence: []diagnose.Evidence{{Name: "SM clock", Num: 1410, Unit: diagnose.UnitCount}, {Name: "power", Num: 700, Unit: diagnose.UnitCount}},
			Action:   diagnose.Plain("check nvidia-smi -q -d POWER for a lowered limit")},
		{Rule: "memory_leak", Severity: diagnose.SevWarning, Target: "replica-2",
			FirstSeen: t0.Add(-20 * time.Minute), LastSeen: t0, Title: "Memory leak", Summary: diagnose.Plain("API server RSS grows 41 MiB/min"),
			Evidence: []diagnose.Evidence{{Name: "RSS", Num: 3.4 * (1 << 30), Unit: diagnose.UnitBytes},
				{Name: "growth", Num: 41 << 20 / 60, Unit: diagnose.UnitBytesPerSec, Window: 10 * time.Minute}},
			Action: diagnose.Plain("restart the API server in a quiet moment before it runs out")},
	}
	fr.Findings = append(fr.Findings, more...)
	for _, x := range more {
		for i := range fr.Endpoints {
			if fr.Endpoints[i].Name == x.Target {
				fr.Endpoints[i].Findings = append(fr.Endpoints[i].Findings, x)
			}
		}
	}
	return fr
}

// Six findings and six GPUs at the sizes.
func TestGoldenSixFindingsSixGPUs(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		m := newTestModel(sixFrame(), w, h, Options{})
		checkEveryRowUsed(t, m)
		return m
	})
}

// checkEveryRowUsed: in the fleet view, no body row is blank while
// anything is hidden: a table row, a finding or its evidence, a GPU.
func checkEveryRowUsed(t *testing.T, m *Model) {
	t.Helper()
	lines := strings.Split(m.View(), "\n")
	blank := 0
	for _, l := range lines[headerLines : len(lines)-footerLines] {
		if strings.TrimSpace(ansi.Strip(l)) == "" {
			blank++
		}
	}
	if blank == 0 {
		return
	}
	var hidden []string
	if m.lay.fleetRows < m.fleet.shown() {
		hidden = append(hidden, "table rows")
	}
	c := m.countsNow()
	if g := m.lay.fleetGPU.h; !c.gpuNone && c.gpus > 0 && g < gpuWant(c, m.h >= fleetGPUMinHeight) {
		hidden = append(hidden, "GPUs")
	}
	forms, take, _, ok := chooseForms(c.findLens, m.lay.fleetFind.h-c.findHead)
	for i := range forms {
		if !ok || forms[i] != formDetail || take[i] < c.findLens[i][formDetail] {
			hidden = append(hidden, "findings or their evidence")
			break
		}
	}
	if len(hidden) > 0 {
		t.Errorf("%dx%d: %d blank rows while %s hide:\n%s", m.w, m.h, blank, strings.Join(hidden, ", "), ansi.Strip(m.View()))
	}
}

// Every row is used in the fleet view whatever it shows, at the sizes an
// on-call engineer has.
func TestEveryRowUsed(t *testing.T) {
	frames := map[string]func() *diagnose.Frame{"six": sixFrame, "fleet": fleetFrame, "broken": brokenFrame,
		"gpu-trouble": gpuTroubleFrame, "fleet40": fleet40Frame, "timeline": timelineFrame}
	for name, fr := range frames {
		for _, sz := range [][2]int{{80, 24}, {100, 30}, {120, 40}, {160, 48}, {200, 60}} {
			m := newTestModel(fr(), sz[0], sz[1], Options{})
			checkEveryRowUsed(t, m)
			press(m, "tab") // the findings focused: two thirds of the room
			checkEveryRowUsed(t, m)
			if t.Failed() {
				t.Fatalf("%s", name)
			}
		}
	}
}

// chooseForms fills the room: top findings first in full, then with
// their evidence, the first that does not fit whole showing what does.
func TestChooseForms(t *testing.T) {
	lens := [][3]int{{5, 3, 1}, {4, 2, 2}, {6, 3, 1}}
	cases := []struct {
		room  int
		forms []int
		take  []int
		used  int
		ok    bool
	}{
		{3, []int{formCompact, formCompact, formCompact}, []int{1, 2, 1}, 4, false},
		{4, []int{formCompact, formFull, formCompact}, []int{1, 2, 1}, 4, true}, // as long in full: the full form
		{6, []int{formFull, formFull, formCompact}, []int{3, 2, 1}, 6, true},
		{8, []int{formFull, formFull, formFull}, []int{3, 2, 3}, 8, true},
		{9, []int{formDetail, formFull, formFull}, []int{4, 2, 3}, 9, true}, // the first's evidence, in part
		{11, []int{formDetail, formDetail, formFull}, []int{5, 3, 3}, 11, true},
		{20, []int{formDetail, formDetail, formDetail}, []int{5, 4, 6}, 15, true},
	}
	for _, c := range cases {
		forms, take, used, ok := chooseForms(lens, c.room)
		if !slicesEqual(forms, c.forms) || !slicesEqual(take, c.take) || used != c.used || ok != c.ok {
			t.Errorf("room %d: forms %v take %v used %d ok %v, want %v %v %d %v", c.room, forms, take, used, ok, c.forms, c.take, c.used, c.ok)
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The finding's detail wraps its long lines (the target, the summary, an
// evidence name and value, the timeline) instead of cutting them with
// "…": at 80 columns every word of them is on the screen.
func TestDetailWraps(t *testing.T) {
	fr := sixFrame()
	long := "the scheduler waited on a KV transfer from the prefill instance for 4.2s on average, with 31 requests held"
	x := &fr.Findings[0]
	x.Target = "vllm-llama-7f9c03-0.vllm-headless.inference-production.svc.cluster.local:8000"
	x.Summary = diagnose.Plain(long)
	x.Evidence = append(x.Evidence, diagnose.Evidence{Name: "KV transfer wait per request (p95 over the window)", Text: diagnose.Plain(long)})
	fr.Endpoints[1].Name = x.Target
	fr.Endpoints[1].Findings = []diagnose.Finding{*x}
	m := newTestModel(fr, 80, 24, Options{})
	press(m, "tab", "enter")
	if m.overlay != overlayFinding {
		t.Fatal("no detail open")
	}
	var screen []string
	for range 6 {
		screen = append(screen, strings.Split(ansi.Strip(m.View()), "\n")...)
		press(m, "pgdown")
	}
	all := strings.Join(screen, "\n")
	for _, l := range screen {
		if strings.HasSuffix(strings.TrimRight(l, " "), "…") {
			t.Errorf("a line is cut: %q", l)
		}
	}
	flat := strings.Join(strings.Fields(all), " ")
	for _, want := range []string{x.Target, long, "KV transfer wait per request (p95 over the window)"} {
		if !strings.Contains(flat, want) {
			t.Errorf("%q is not on the screen:\n%s", want, all)
		}
	}
}
