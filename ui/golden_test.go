package ui

import (
	"fmt"
	"io"
	"math"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/muesli/termenv"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/themes"
)

// Golden View() tests: fixed-time frames, the ASCII profile (TestMain), at
// the three sizes the issue names. Regenerate with
//
//	go test ./ui -run Golden -update
//
// and read every changed file before committing it.

var goldenSizes = [][2]int{{80, 24}, {120, 40}, {200, 60}}

// eachSize runs fn at every golden size and compares View() with
// testdata/<test>/<W>x<H>.golden.
func eachSize(t *testing.T, fn func(w, h int) *Model) {
	for _, sz := range goldenSizes {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m := fn(sz[0], sz[1])
			checkLayout(t, m)
			golden.RequireEqual(t, m.View())
		})
	}
}

func fleetFrame() *diagnose.Frame {
	return fixtureFrame(fixtureOpts{endpoints: 8, gpus: 8, findings: true})
}

// brokenFrame is a fleet opened 40 s into an incident: the conditions
// hold, no rule has fired yet (every finding pending), values are ✖.
func brokenFrame() *diagnose.Frame {
	fr := fleetFrame()
	fr.Findings = nil
	for i := range fr.Endpoints {
		fr.Endpoints[i].Findings = nil
	}
	for _, x := range fixtureFindings()[:2] {
		x.State, x.HeldFor, x.Hold = diagnose.FindingPending, 40*time.Second, 2*time.Minute
		x.FirstSeen = t0.Add(-40 * time.Second)
		fr.Pending = append(fr.Pending, x)
		for i := range fr.Endpoints {
			if fr.Endpoints[i].Name == x.Target {
				fr.Endpoints[i].Pending = append(fr.Endpoints[i].Pending, x)
				// The verdict line heads the findings: which limit binds,
				// how many signals agree.
				fr.Endpoints[i].Verdict = diagnose.Verdict{Limit: diagnose.LimitKVCache, Signals: 3, Of: 4}
			}
		}
	}
	fr.Fleet.Verdict = diagnose.Verdict{Limit: diagnose.LimitKVCache, Signals: 2, Of: 8}
	return fr
}

// Opening on a broken fleet: pending findings with their evidence and
// action, never "no findings".
func TestGoldenBrokenFleet(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		return newTestModel(brokenFrame(), w, h, Options{})
	})
}

func TestGoldenBrokenEndpoint(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		m := newTestModel(brokenFrame(), w, h, Options{})
		press(m, "enter")
		return m
	})
}

// fleet40Frame is a 40-replica fleet with pod-style names, 8 of them
// thrashing their KV cache, each with the queue backlog it causes.
func fleet40Frame() *diagnose.Frame {
	fr := fixtureFrame(fixtureOpts{endpoints: 40, gpus: 8})
	base := fixtureFindings()[0]
	for i := range fr.Endpoints {
		e := &fr.Endpoints[i]
		e.Name = fmt.Sprintf("vllm-llama-7f9c%02d-%d.vllm.svc.cluster.local:8000", i, i%3)
		if i%5 != 3 {
			continue
		}
		e.Stats = fixtureStats(0.97, 1)
		x := base
		x.Target = e.Name
		y := diagnose.Finding{Rule: "queue_backlog", Severity: diagnose.SevWarning, Target: e.Name,
			FirstSeen: t0.Add(-2 * time.Minute), LastSeen: t0, Title: "Queue backlog", Summary: diagnose.Plain("31 waiting for 2m"),
			Action: diagnose.Plain("add replicas"), Flags: []diagnose.FlagChange{{Flag: "replicas", From: diagnose.Str("40"), To: diagnose.Str("44")}}}
		e.Findings = []diagnose.Finding{x, y}
		fr.Findings = append(fr.Findings, x, y)
	}
	return fr
}

// 40 endpoints: the table scrolls with markers, names shortened.
func TestGoldenFleet40(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		return newTestModel(fleet40Frame(), w, h, Options{})
	})
}

func TestGoldenFleet(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		return newTestModel(fleetFrame(), w, h, Options{})
	})
}

// Sorted by severity, replica-1's engines shown, the cursor on one of them.
func TestGoldenFleetSortedExpanded(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		m := newTestModel(fleetFrame(), w, h, Options{})
		press(m, "g", "j", "space", "j", "j")
		return m
	})
}

// The filter being typed: only the Qwen endpoints.
func TestGoldenFleetFilter(t *testing.T) {
	m := newTestModel(fleetFrame(), 80, 24, Options{})
	press(m, "/", "q", "w", "e", "n")
	checkLayout(t, m)
	golden.RequireEqual(t, m.View())
}

// replica-1: four data-parallel engines, KV near full, a critical finding,
// its GPUs joined.
func TestGoldenEndpoint(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		m := newTestModel(fleetFrame(), w, h, Options{})
		press(m, "enter")
		return m
	})
}

// A single target opens on its endpoint view; no GPUs on this host.
func TestGoldenEndpointSingle(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		fr := fixtureFrame(fixtureOpts{endpoints: 1})
		return newTestModel(fr, w, h, Options{SLO: "code"})
	})
}

// The fleet aggregated: Enter on the fleet line.
func TestGoldenFleetAggregate(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		m := newTestModel(fleetFrame(), w, h, Options{})
		press(m, "k", "enter")
		return m
	})
}

// A down endpoint shows its error and its last values, dimmed, "as of".
func TestGoldenEndpointDown(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		m := newTestModel(fleetFrame(), w, h, Options{})
		selectEndpoint(t, m, "replica-2")
		press(m, "enter")
		return m
	})
}

// notVLLMFrame: replica-3's port answers with Prometheus' own metrics.
func notVLLMFrame() *diagnose.Frame {
	fr := fleetFrame()
	e := &fr.Endpoints[3]
	e.State, e.Since, e.NotVLLM = diagnose.StateDown, t0.Add(-5*time.Minute), true
	e.LastSuccess, e.Stats = time.Time{}, unknownStats()
	e.LastError = "no vLLM metrics among 812 samples (is this the vLLM API server's port?)"
	x := diagnose.Finding{Rule: "endpoint_down", Severity: diagnose.SevWarning, Target: e.Name, FirstSeen: e.Since, LastSeen: t0,
		Title: "Not a vLLM endpoint", Summary: diagnose.Plain("answers without vLLM metrics since 14:00:00 UTC: " + e.LastError),
		Action: diagnose.Plain("point vtop at the vLLM API server's port (vllm serve --port, default 8000) and path /metrics")}
	fr.Findings = append(fr.Findings, x)
	e.Findings = []diagnose.Finding{x}
	fr.Fleet.Up--
	return fr
}

// A port that answers but is not vLLM: its own state and message.
func TestGoldenNotVLLM(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		return newTestModel(notVLLMFrame(), w, h, Options{})
	})
}

func TestGoldenNotVLLMEndpoint(t *testing.T) {
	m := newTestModel(notVLLMFrame(), 80, 24, Options{})
	selectEndpoint(t, m, "replica-3")
	press(m, "enter")
	checkLayout(t, m)
	golden.RequireEqual(t, m.View())
}

// gpuTroubleFrame has GPUs in every state the panel distinguishes.
func gpuTroubleFrame() *diagnose.Frame {
	fr := fleetFrame()
	g := &fr.GPU
	g.GPUs[2].Problem = "GPU has fallen off the bus"
	g.GPUs[3].ECCUncorrected = 2
	g.GPUs[3].RemapPending = true
	g.GPUs[4].UtilGPU, g.GPUs[4].PowerW = nan, nan
	g.GPUs[4].Processes = nil
	g.GPUs[6].TempC = 88
	g.GPUs[6].Throttled = true
	g.GPUs[6].ClockEvents = []string{"HW thermal slowdown", "SW thermal slowdown"}
	// GPU 5's exporter fails: its last values (power-capped) read 42 s
	// ago, dimmed and "stale", not "throttled".
	g.GPUs[5].Stale = true
	fr.GPUSeries = fixtureGPUSeries(g)
	fr.GPUSeries[5].Points = fr.GPUSeries[5].Points[:120-42]
	fr.GPUEvents = []sources.GPUEvent{
		sources.XIDEvent(t0.Add(-9*time.Minute), 3, 63),
		sources.XIDEvent(t0.Add(-40*time.Second), 2, 79),
	}
	return fr
}

// The GPU panel focused in replica-0's view (no engines: at 80×24 the
// GPUs have room for a panel).
func TestGoldenGPU(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		m := newTestModel(gpuTroubleFrame(), w, h, Options{})
		selectEndpoint(t, m, "replica-0")
		press(m, "enter", "tab", "tab")
		if m.focus != paneGPU {
			t.Fatalf("tab did not focus the GPU pane (focus %d)", m.focus)
		}
		return m
	})
}

func TestGoldenGPUUnavailable(t *testing.T) {
	fr := fleetFrame()
	fr.GPU = sources.GPUSnapshot{Time: t0, Unavailable: "NVML unavailable: libnvidia-ml.so.1 not found"}
	m := newTestModel(fr, 80, 24, Options{})
	press(m, "enter")
	checkLayout(t, m)
	golden.RequireEqual(t, m.View())
}

// manyFindings is a fleet with more findings than fit at 80×24.
func manyFindings() *diagnose.Frame {
	fr := fleetFrame()
	base := fixtureFindings()
	for i := 0; i < 6; i++ {
		x := base[i%len(base)]
		x.Target = fmt.Sprintf("replica-%d", 5+i%3)
		x.FirstSeen = x.FirstSeen.Add(-time.Duration(i) * time.Minute)
		fr.Findings = append(fr.Findings, x)
	}
	return fr
}

// The findings pane focused in the fleet view, the third finding selected.
func TestGoldenFindings(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		m := newTestModel(manyFindings(), w, h, Options{})
		press(m, "tab")
		if m.focus != paneGPU && m.focus != paneFindings {
			t.Fatalf("focus %d", m.focus)
		}
		for m.focus != paneFindings {
			press(m, "tab")
		}
		press(m, "j", "j")
		return m
	})
}

// Enter on a finding: the full explanation and the flag change.
func TestGoldenFindingDetail(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		m := newTestModel(fleetFrame(), w, h, Options{})
		press(m, "enter", "tab", "enter")
		if m.overlay != overlayFinding {
			t.Fatalf("no finding detail (focus %d)", m.focus)
		}
		return m
	})
}

func TestGoldenHelp(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		m := newTestModel(fleetFrame(), w, h, Options{})
		press(m, "?")
		return m
	})
}

func TestGoldenTooSmall(t *testing.T) {
	m := newTestModel(fleetFrame(), 79, 24, Options{})
	golden.RequireEqual(t, m.View())
}

// One color golden per theme: the fleet view at 120×40 with a true-color
// renderer (mono has attributes only).
func TestGoldenTheme(t *testing.T) {
	for _, name := range themes.Names() {
		t.Run(name, func(t *testing.T) {
			r := lipgloss.NewRenderer(io.Discard)
			r.SetColorProfile(termenv.TrueColor)
			m := newTestModel(fleetFrame(), 120, 40, Options{Theme: name, Renderer: r})
			checkLayout(t, m)
			golden.RequireEqual(t, m.View())
		})
	}
}

// Enter on a group opens it: each endpoint's finding under the group.
func TestGoldenFleet40GroupOpen(t *testing.T) {
	m := newTestModel(fleet40Frame(), 120, 40, Options{})
	press(m, "tab", "enter")
	if len(m.find.items) != 2+8 || !m.find.items[1].member {
		t.Fatalf("group not opened: %d items", len(m.find.items))
	}
	checkLayout(t, m)
	checkFlagsWhole(t, m)
	golden.RequireEqual(t, m.View())
	press(m, "g", "enter")
	if len(m.find.items) != 2 {
		t.Errorf("group not closed: %d items", len(m.find.items))
	}
}

// timelineFrame is the fleet with what changed on its thrashing replica:
// a prompt-length change, the latency that followed, a restart, and its
// finding firing (Timeline orders them).
func timelineFrame() *diagnose.Frame {
	fr := fleetFrame()
	x := fixtureFindings()[0]
	for i := range fr.Endpoints {
		e := &fr.Endpoints[i]
		if e.Name != x.Target {
			continue
		}
		e.Shifts = []diagnose.Shift{
			{Signal: diagnose.SigPromptTok, Name: "prompt tokens/s", Kind: diagnose.ShiftWorkload, Unit: diagnose.UnitPerSec,
				Onset: t0.Add(-4 * time.Minute), Detected: t0.Add(-3*time.Minute - 20*time.Second), Before: 3600, After: 16000},
			{Signal: diagnose.SigTTFT, Name: "TTFT p95", Kind: diagnose.ShiftSymptom, Unit: diagnose.UnitSeconds,
				Onset: t0.Add(-4*time.Minute + 3*time.Second), Detected: t0.Add(-3*time.Minute - 40*time.Second), Before: 0.07, After: 0.72},
			{Signal: diagnose.SigPrefixHit, Name: "prefix hit rate", Kind: diagnose.ShiftWorkload, Unit: diagnose.UnitRatio,
				Onset: t0.Add(-4 * time.Minute), Detected: t0.Add(-3 * time.Minute), Before: 0.27, After: 0.04, Ended: t0.Add(-time.Minute), Accepted: false},
		}
		e.Restarts = []diagnose.Restart{{At: t0.Add(-10 * time.Minute), LastBefore: t0.Add(-10*time.Minute - 21*time.Second),
			RSSBefore: 4 << 30, RSSPeak: 4 << 30, RSSAfter: 1.1 * (1 << 30), GPUMemBefore: math.NaN(), GPUMemAfter: math.NaN()}}
	}
	return fr
}

// c: the timeline of the endpoint shown, or of the fleet.
func TestGoldenTimeline(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		m := newTestModel(timelineFrame(), w, h, Options{})
		press(m, "c")
		if m.overlay != overlayTimeline {
			t.Fatal("c opened no timeline")
		}
		return m
	})
}

// The endpoint with changes and a restart within its sparklines' span:
// each onset is marked ▼ above the latency sparklines, at its column.
func TestGoldenEndpointMarks(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		fr := timelineFrame()
		for i := range fr.Endpoints {
			e := &fr.Endpoints[i]
			if len(e.Shifts) == 0 {
				continue
			}
			// Within the 240 s the fixture's sparklines hold.
			e.Shifts[0].Onset = t0.Add(-90 * time.Second)
			e.Restarts[0].At = t0.Add(-200 * time.Second)
		}
		m := newTestModel(fr, w, h, Options{})
		press(m, "enter")
		if m.ep < 0 || len(m.fr.Endpoints[m.ep].Shifts) == 0 {
			t.Fatalf("opened endpoint %d, not the one with changes", m.ep)
		}
		return m
	})
}
