package ui

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/diagnose/detect"
)

func run(cmd tea.Cmd) tea.Msg {
	if cmd == nil {
		return nil
	}
	return cmd()
}

func updateKey(m *Model, k string) tea.Cmd {
	_, cmd := m.Update(keyMsg(k))
	return cmd
}

func TestQuitKeys(t *testing.T) {
	for _, keys := range [][]string{{"q"}, {"ctrl+c"}, {"/", "a", "ctrl+c"}, {"j", "enter", "?", "q"}} {
		m := newTestModel(fleetFrame(), 80, 24, Options{})
		press(m, keys[:len(keys)-1]...)
		if _, ok := run(updateKey(m, keys[len(keys)-1])).(tea.QuitMsg); !ok {
			t.Errorf("%v did not quit", keys)
		}
	}
	// q typed into the filter is a letter, not quit.
	m := newTestModel(fleetFrame(), 80, 24, Options{})
	press(m, "/")
	if cmd := updateKey(m, "q"); cmd != nil {
		t.Errorf("q in the filter: %T", run(cmd))
	}
	if m.fleet.filter != "q" {
		t.Errorf("filter %q", m.fleet.filter)
	}
}

func TestPauseFreezesScreen(t *testing.T) {
	a := fleetFrame()
	m := newTestModel(a, 120, 40, Options{})
	press(m, "p")
	frozen := m.body
	b := fleetFrame()
	b.Time = t0.Add(time.Second)
	b.Endpoints[0].Stats.GenTokRate = 4321
	b.Endpoints[0].Name = "renamed-0"
	m.Update(frameMsg{b})
	m.Update(frameMsg{b})
	if !reflect.DeepEqual(m.body, frozen) {
		t.Error("the screen changed while paused")
	}
	if !strings.Contains(m.View(), "‖ PAUSED (2 new frames held; p resumes)") {
		t.Errorf("no paused indicator:\n%s", m.header)
	}
	press(m, "p")
	v := m.View()
	if strings.Contains(v, "PAUSED") || !strings.Contains(v, "renamed-0") || !strings.Contains(v, "4.3k") {
		t.Errorf("unpausing did not show the newest frame:\n%s", v)
	}
}

func TestWindowKeys(t *testing.T) {
	h := newFrameHub()
	m := New(h, Options{Window: time.Minute, Tick: -1})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	fr := fleetFrame()
	m.Update(frameMsg{fr})
	run(updateKey(m, "+"))
	if !strings.Contains(m.header, "window 1m→2m") {
		t.Errorf("header: %s", m.header)
	}
	fr2 := fleetFrame()
	fr2.Window = 2 * time.Minute
	m.Update(frameMsg{fr2})
	if !strings.Contains(m.header, "window 2m ") {
		t.Errorf("header: %s", m.header)
	}
	run(updateKey(m, "-"))
	run(updateKey(m, "-"))
	run(updateKey(m, "-"))
	run(updateKey(m, "-"))
	run(updateKey(m, "-")) // 15 s is the floor
	want := []time.Duration{2 * time.Minute, time.Minute, 30 * time.Second, 15 * time.Second}
	if !slices.Equal(h.windows, want) {
		t.Errorf("SetWindow calls %v, want %v", h.windows, want)
	}
	// The window never goes below two polls.
	h2 := newFrameHub()
	m2 := New(h2, Options{Window: time.Minute, Tick: -1})
	m2.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	fr3 := fleetFrame()
	fr3.Interval = 20 * time.Second
	m2.Update(frameMsg{fr3})
	for range 4 {
		run(updateKey(m2, "-"))
	}
	if !slices.Equal(h2.windows, nil) {
		t.Errorf("with a 20s interval: %v", h2.windows)
	}
}

func TestPollNow(t *testing.T) {
	h := newFrameHub()
	m := New(h, Options{Tick: -1})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.Update(frameMsg{fleetFrame()})
	run(updateKey(m, "r"))
	if h.polls != 1 {
		t.Errorf("polls %d", h.polls)
	}
}

func TestThemeAndSLOCycle(t *testing.T) {
	m := newTestModel(fleetFrame(), 120, 40, Options{})
	var seen []string
	for range 5 {
		seen = append(seen, m.theme.Name)
		press(m, "t")
	}
	if want := []string{"dark", "light", "high-contrast", "mono", "dark"}; !slices.Equal(seen, want) {
		t.Errorf("themes %v", seen)
	}
	if !strings.Contains(m.View(), "SLO chat") {
		t.Fatal("default SLO")
	}
	run(updateKey(m, "o"))
	if h := m.hub.(*frameHub); !slices.Equal(h.slos, []string{"code"}) {
		t.Errorf("the rules were not switched to code: %v", h.slos)
	}
	if !strings.Contains(m.View(), "SLO code") {
		t.Errorf("o did not switch to code:\n%s", m.header)
	}
	// Until a frame judged by the new profile arrives, the header says so.
	fr := fleetFrame()
	fr.SLO = diagnose.SLOProfiles()[0]
	m.Update(frameMsg{fr})
	if !strings.Contains(m.header, "SLO chat→code") {
		t.Errorf("pending profile: %s", m.header)
	}
	fr = fleetFrame()
	fr.SLO, _ = diagnose.FindSLO(diagnose.SLOProfiles(), "code")
	m.Update(frameMsg{fr})
	if !strings.Contains(m.header, "SLO code ") {
		t.Errorf("switched profile: %s", m.header)
	}
	// replica-3's TTFT p95 (423ms) is within chat (500ms) but over twice code's 200ms.
	line := rowOf(t, m.View(), "replica-3")
	if !strings.Contains(line, "423ms"+symCrit) {
		t.Errorf("TTFT not judged against code: %q", line)
	}
}

func rowOf(t *testing.T, view, name string) string {
	t.Helper()
	for _, l := range strings.Split(view, "\n") {
		if strings.Contains(l, " "+name+" ") {
			return l
		}
	}
	t.Fatalf("no row %s in\n%s", name, view)
	return ""
}

func TestPanesAndBack(t *testing.T) {
	m := newTestModel(fleetFrame(), 120, 40, Options{})
	order := []pane{m.focus}
	for range 3 {
		press(m, "tab")
		order = append(order, m.focus)
	}
	if want := []pane{paneMain, paneFindings, paneGPU, paneMain}; !slices.Equal(order, want) {
		t.Errorf("tab order %v", order)
	}
	press(m, "shift+tab")
	if m.focus != paneGPU {
		t.Errorf("shift+tab: %d", m.focus)
	}
	press(m, "esc")
	if m.focus != paneMain {
		t.Errorf("esc: %d", m.focus)
	}
	// At 80×24 the fleet's GPU panel is one line: no pane to visit.
	m = newTestModel(fleetFrame(), 80, 24, Options{})
	press(m, "tab")
	if m.focus != paneFindings {
		t.Errorf("80×24 tab: %d", m.focus)
	}
}

func TestDrillDownAndBack(t *testing.T) {
	m := newTestModel(fleetFrame(), 120, 40, Options{})
	if m.mode != modeFleet {
		t.Fatal("a fleet opens on the fleet view")
	}
	press(m, "enter")
	if m.mode != modeEndpoint || !strings.HasPrefix(m.body[0], "replica-1 · ") {
		t.Fatalf("enter: %q", m.body[0])
	}
	for _, row := range []string{"Latency", "Cache", "Queue", "Throughput"} {
		if !strings.Contains(m.View(), "\n"+row+" ") {
			t.Errorf("no %s row", row)
		}
	}
	press(m, "esc")
	if m.mode != modeFleet {
		t.Fatal("esc")
	}
	if r, _ := m.fleet.selected(); m.fr.Endpoints[r.ep].Name != "replica-1" {
		t.Error("the selection moved")
	}
	press(m, "g", "enter")
	if !strings.HasPrefix(m.body[0], "Fleet · aggregate of") {
		t.Errorf("fleet aggregate: %q", m.body[0])
	}
	// One target opens on its endpoint; esc shows it as a fleet of one.
	m = newTestModel(fixtureFrame(fixtureOpts{endpoints: 1}), 80, 24, Options{})
	if m.mode != modeEndpoint || m.ep != 0 {
		t.Fatal("one target opens on its endpoint view")
	}
	press(m, "esc")
	if m.mode != modeFleet {
		t.Fatal("esc from a single endpoint")
	}
}

func names(m *Model) []string {
	var out []string
	for _, r := range m.fleet.rows {
		if r.sub < 0 {
			out = append(out, m.fr.Endpoints[r.ep].Name)
		}
	}
	return out
}

func TestSort(t *testing.T) {
	fr := fleetFrame()
	fr.Endpoints[5].Stats.KVUsage = math.NaN()
	m := newTestModel(fr, 120, 40, Options{})
	want := map[sortKey][]string{
		sortName:     {"replica-0", "replica-1", "replica-2", "replica-3", "replica-4", "replica-5", "replica-6", "replica-7"},
		sortSeverity: {"replica-1", "replica-0", "replica-4", "replica-2", "replica-3", "replica-5", "replica-6", "replica-7"},
		sortKV:       {"replica-1", "replica-2", "replica-0", "replica-7", "replica-3", "replica-4", "replica-6", "replica-5"},
		sortWaiting:  {"replica-1", "replica-2", "replica-0", "replica-3", "replica-4", "replica-5", "replica-6", "replica-7"},
		sortTTFT:     {"replica-1", "replica-2", "replica-0", "replica-7", "replica-3", "replica-4", "replica-5", "replica-6"},
		sortTok:      {"replica-1", "replica-2", "replica-0", "replica-7", "replica-3", "replica-4", "replica-5", "replica-6"},
	}
	for k := sortKey(0); k < numSorts; k++ {
		if m.fleet.sort != k {
			t.Fatalf("sort %d, want %d", m.fleet.sort, k)
		}
		if got := names(m); !slices.Equal(got, want[k]) {
			t.Errorf("sort %s: %v", sortNames[k], got)
		}
		press(m, "s")
	}
	// Reversed KV: smallest first, the unknown one still last.
	press(m, "s", "s", "S")
	if got := names(m); !slices.Equal(got, []string{"replica-6", "replica-4", "replica-3", "replica-7", "replica-0", "replica-2", "replica-1", "replica-5"}) {
		t.Errorf("reversed KV: %v", got)
	}
}

func TestFilter(t *testing.T) {
	m := newTestModel(fleetFrame(), 80, 24, Options{})
	press(m, "/", "Q", "w", "e", "n")
	if got := names(m); !slices.Equal(got, []string{"replica-2", "replica-5"}) {
		t.Errorf("qwen: %v", got)
	}
	press(m, "backspace", "backspace", "backspace", "backspace")
	if len(names(m)) != 8 {
		t.Errorf("backspace: %v", names(m))
	}
	press(m, "d", "o", "w", "n", "enter")
	if got := names(m); !slices.Equal(got, []string{"replica-2"}) || m.fleet.filtering {
		t.Errorf("down: %v", got)
	}
	press(m, "j") // keys work again once the filter is kept
	press(m, "esc")
	if m.fleet.filter != "" || len(names(m)) != 8 {
		t.Errorf("esc kept the filter %q", m.fleet.filter)
	}
	press(m, "/", "r", "e", "s", "t", "a", "r", "t")
	if got := names(m); !slices.Equal(got, []string{"replica-4"}) {
		t.Errorf("restarted: %v", got)
	}
	press(m, "esc")
	if m.fleet.filter != "" || m.fleet.filtering {
		t.Error("esc while typing clears")
	}
	press(m, "/", "z", "z", "z")
	if !strings.Contains(m.View(), `no endpoint matches the filter "zzz"`) {
		t.Errorf("empty filter result:\n%s", m.View())
	}
}

func TestExpandEngines(t *testing.T) {
	m := newTestModel(fleetFrame(), 120, 40, Options{})
	press(m, "space")
	if len(m.fleet.rows) != 12 {
		t.Fatalf("rows %d", len(m.fleet.rows))
	}
	v := m.View()
	for _, e := range []string{"└ engine 0", "└ engine 3"} {
		if !strings.Contains(v, e) {
			t.Errorf("no %q", e)
		}
	}
	press(m, "j", "j", "space") // collapsing from an engine row
	if len(m.fleet.rows) != 8 {
		t.Fatalf("rows %d after collapse", len(m.fleet.rows))
	}
	if r, _ := m.fleet.selected(); m.fr.Endpoints[r.ep].Name != "replica-1" || r.sub != -1 {
		t.Errorf("cursor %+v", r)
	}
	press(m, "e")
	if len(m.fleet.rows) != 12 {
		t.Errorf("e: rows %d", len(m.fleet.rows))
	}
	// The selection stays on its row when a new frame reorders the table.
	press(m, "e", "G")
	fr := fleetFrame()
	fr.Endpoints[7].Name = "a-first"
	m.Update(frameMsg{fr})
	if r, _ := m.fleet.selected(); m.fr.Endpoints[r.ep].Name != "a-first" || m.fleet.cursor == len(m.fleet.rows)-1 {
		t.Errorf("cursor %d on %s", m.fleet.cursor, m.fr.Endpoints[r.ep].Name)
	}
}

// Missing is not zero: an endpoint that never answered, or a metric no
// engine exposes, shows "--".
func TestMissingIsNotZero(t *testing.T) {
	fr := fleetFrame()
	e := &fr.Endpoints[3]
	e.State, e.LastSuccess = diagnose.StateDown, time.Time{}
	e.Stats = diagnose.Stats{} // what diagnose holds for a target that never answered
	m := newTestModel(fr, 120, 40, Options{})
	line := rowOf(t, m.View(), "replica-3")
	if strings.Contains(line, " 0%") || strings.Contains(line, "0/0") || strings.Contains(line, "0µs") {
		t.Errorf("zeros for a target that never answered: %q", line)
	}
	if strings.Count(line, "--") < 5 {
		t.Errorf("want unknowns: %q", line)
	}
	selectEndpoint(t, m, "replica-3")
	press(m, "enter")
	if !strings.Contains(m.View(), "no data") {
		t.Errorf("endpoint view of a target with no data:\n%s", m.View())
	}
	// replica-6 has served no request in the window: latencies unknown, rates zero.
	line = rowOf(t, newTestModel(fleetFrame(), 120, 40, Options{}).View(), "replica-6")
	if !strings.Contains(line, "--") || !strings.Contains(line, " 0 ") {
		t.Errorf("replica-6: %q", line)
	}
}

// The help overlay lists every key of the key map.
func TestHelpListsEveryKey(t *testing.T) {
	m := newTestModel(fleetFrame(), 120, 40, Options{})
	text := strings.Join(m.helpLines(120), "\n")
	v := reflect.ValueOf(m.keys)
	n := 0
	for i := 0; i < v.NumField(); i++ {
		if _, ok := v.Field(i).Interface().(binding); ok {
			n++
		}
	}
	for _, g := range m.keys.helpGroups() {
		n -= len(g.keys)
		for _, b := range g.keys {
			if !strings.Contains(text, b.Help().Key) || !strings.Contains(text, b.Help().Desc) {
				t.Errorf("help lacks %q", b.Help().Key)
			}
		}
	}
	if n != 0 {
		t.Errorf("%d bindings are missing from the help groups", n)
	}
}

func TestFindingDetailAndScroll(t *testing.T) {
	m := newTestModel(fleetFrame(), 80, 24, Options{})
	press(m, "tab", "j", "enter")
	if m.overlay != overlayFinding || m.detail.Rule != "slo_breach" {
		t.Fatalf("detail of %q", m.detail.Rule)
	}
	v := m.View()
	for _, s := range []string{"TTFT over the chat SLO", "What it means", "--enable-chunked-prefill", "(current value unknown) → true"} {
		if !strings.Contains(v, s) {
			t.Errorf("detail lacks %q:\n%s", s, v)
		}
	}
	press(m, "esc")
	if m.overlay != overlayNone || m.focus != paneFindings {
		t.Error("esc closes the detail, keeps the pane")
	}
}

// Keys that arrive together over a slow link are still single presses.
func TestBatchedKeys(t *testing.T) {
	m := newTestModel(fleetFrame(), 120, 40, Options{})
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jj")})
	if m.fleet.cursor != 2 {
		t.Errorf("jj: cursor %d", m.fleet.cursor)
	}
	press(m, "enter")
	// Esc then j, fast: bubbletea reads alt+j.
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("j"), Alt: true})
	if m.mode != modeFleet || m.fleet.cursor != 3 {
		t.Errorf("alt+j: mode %d cursor %d", m.mode, m.fleet.cursor)
	}
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/qwen")})
	if m.fleet.filter != "qwen" {
		t.Errorf("/qwen in one read: filter %q", m.fleet.filter)
	}
	press(m, "esc")
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/q w"), Paste: false})
	if m.fleet.filter != "q w" {
		t.Errorf("filter %q", m.fleet.filter)
	}
}

func TestFitName(t *testing.T) {
	for _, c := range []struct {
		name string
		w    int
		want string
	}{
		{"replica-1", 12, "replica-1"},
		{"127.0.0.1:33269", 12, "127.0…:33269"},
		{"gpu-node-17.example.internal:8000", 14, "gpu-node…:8000"},
		{"a-very-long-endpoint-name", 11, "a-ver…-name"},
		{"http://10.0.0.1:8000/metrics", 12, "http:…etrics"},
	} {
		got := fitName(c.name, c.w)
		if got != c.want || width(got) > c.w {
			t.Errorf("fitName(%q, %d) = %q, want %q", c.name, c.w, got, c.want)
		}
	}
}

// --max-num-seqs is per engine: a data-parallel endpoint's batch capacity
// is that times its engines.
func TestBatchCapacityPerEngine(t *testing.T) {
	fr := fleetFrame()
	fr.Endpoints[1].MaxNumSeqs = 256 // 4 engines
	m := newTestModel(fr, 80, 24, Options{})
	press(m, "enter")
	if v := m.View(); !strings.Contains(v, "running 214 of 1024") {
		t.Errorf("capacity of 4 engines:\n%s", v)
	}
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	if v := m.View(); !strings.Contains(v, "max_num_seqs 256 per engine") {
		t.Errorf("title:\n%s", v)
	}
}

// When the GPU panel cannot show its title and a device, it is the
// one-line summary, below the findings, which come first.
func TestGPUPanelFallsBackToSummary(t *testing.T) {
	fr := fleetFrame()
	e := &fr.Endpoints[1]
	e.Findings = append(e.Findings, fr.Findings[1], fr.Findings[2])
	m := newTestModel(fr, 80, 24, Options{})
	press(m, "enter")
	lines := strings.Split(m.View(), "\n")
	find := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "Findings") {
			find = i
		}
		if strings.HasPrefix(l, "GPU · simulated") {
			if !strings.Contains(l, "8× H100") || find < 0 || find > i {
				t.Errorf("findings, then the GPU summary; got:\n%s", m.View())
			}
			return
		}
	}
	t.Errorf("no GPU line:\n%s", m.View())
}

// The endpoint view lists the endpoint's own GPUs first.
func TestEndpointGPUsFirst(t *testing.T) {
	fr := fleetFrame()
	fr.Endpoints[1].GPU.GPUs = []int{5, 6}
	m := newTestModel(fr, 120, 40, Options{})
	press(m, "enter")
	var gpus []string
	for _, l := range strings.Split(m.View(), "\n") {
		if strings.Contains(l, "H100") {
			gpus = append(gpus, strings.Fields(strings.TrimPrefix(l, symExpand))[0])
		}
	}
	if len(gpus) < 2 || gpus[0] != "5" || gpus[1] != "6" {
		t.Errorf("GPU order %v:\n%s", gpus, m.View())
	}
}

// Never a green "no findings" while a value on screen is critical or a
// rule is holding toward firing.
func TestNoGreenWhileCritical(t *testing.T) {
	quiet := func(fr *diagnose.Frame) *diagnose.Frame {
		fr.Findings, fr.Pending = nil, nil
		for i := range fr.Endpoints {
			fr.Endpoints[i].Findings, fr.Endpoints[i].Pending = nil, nil
		}
		return fr
	}
	green := func(v string) bool {
		return strings.Contains(v, symOK+" no findings") || strings.Contains(v, "no findings "+symOK)
	}
	for _, w := range []int{80, 120} {
		// replica-1 sits at KV 97%: critical on screen, nothing fired.
		v := newTestModel(quiet(fleetFrame()), w, 24, Options{})
		if s := v.View(); green(s) || !strings.Contains(s, "values marked "+symCrit) {
			t.Errorf("%d: critical values under a green no-findings:\n%s", w, s)
		}
		// Pending only: the pane lists them, the counts say none fired.
		if s := newTestModel(brokenFrame(), w, 24, Options{}).View(); green(s) || !strings.Contains(s, "2 pending") {
			t.Errorf("%d: pending findings under a green no-findings:\n%s", w, s)
		}
	}
	// A calm fleet does get its ✓; not while an endpoint is down.
	fr := quiet(fleetFrame())
	for i := range fr.Endpoints {
		fr.Endpoints[i].Stats = fixtureStats(0.1, 1)
	}
	if s := newTestModel(fr, 120, 40, Options{}).View(); green(s) || !strings.Contains(s, "2 endpoints are down or stale") {
		t.Errorf("a fleet with endpoints down:\n%s", s)
	}
	for i := range fr.Endpoints {
		fr.Endpoints[i].State = diagnose.StateUp
	}
	if s := newTestModel(fr, 120, 40, Options{}).View(); !green(s) {
		t.Errorf("a calm fleet:\n%s", s)
	}
}

// The filter finds endpoints by their findings (title, rule id, severity,
// state) and narrows the findings pane and the counts with the table.
func TestFilterFindings(t *testing.T) {
	for _, c := range []struct {
		q     string
		rows  []string
		finds int
	}{
		{"thrash", []string{"replica-1"}, 1},
		{"kv_cache", []string{"replica-1"}, 1},
		{"crit", []string{"replica-1"}, 1},
		{"warn", []string{"replica-0"}, 1},
		{"info", []string{"replica-4"}, 1},
		{"qwen", []string{"replica-2", "replica-5"}, 0},
	} {
		m := newTestModel(fleetFrame(), 120, 40, Options{})
		press(m, append([]string{"/"}, append(strings.Split(c.q, ""), "enter")...)...)
		if got := names(m); !slices.Equal(got, c.rows) {
			t.Errorf("/%s: rows %v, want %v", c.q, got, c.rows)
		}
		if len(m.find.fs) != c.finds {
			t.Errorf("/%s: %d findings listed, want %d", c.q, len(m.find.fs), c.finds)
		}
	}
	m := newTestModel(brokenFrame(), 120, 40, Options{})
	press(m, "/", "p", "e", "n", "d", "enter")
	if got := names(m); len(got) != 2 || len(m.find.fs) != 2 {
		t.Errorf("/pend: rows %v, %d findings", got, len(m.find.fs))
	}
}

// Keys whose effect is not otherwise visible say what they did; one key
// goes back to the fleet from anywhere.
func TestKeyFeedback(t *testing.T) {
	m := newTestModel(fleetFrame(), 120, 40, Options{})
	press(m, "t")
	if v := m.View(); !strings.Contains(strings.SplitN(v, "\n", 2)[0], "theme light") {
		t.Errorf("t: no theme name in the header:\n%s", v)
	}
	press(m, "r")
	if v := m.View(); !strings.Contains(strings.SplitN(v, "\n", 2)[0], "polling 8 targets now") {
		t.Errorf("r: no feedback:\n%s", v)
	}
	// The note goes after a few seconds of frames.
	fr := fleetFrame()
	fr.Time = t0.Add(5 * time.Second)
	m.Update(frameMsg{fr})
	if v := m.View(); strings.Contains(v, "polling 8 targets") {
		t.Errorf("the note stayed:\n%s", v)
	}
	// F: from a finding's detail in an endpoint view, straight to the fleet.
	press(m, "enter", "tab", "enter")
	if m.overlay != overlayFinding {
		t.Fatalf("no detail open (focus %d)", m.focus)
	}
	press(m, "F")
	if m.mode != modeFleet || m.overlay != overlayNone || m.focus != paneMain {
		t.Errorf("F: mode %d overlay %d focus %d", m.mode, m.overlay, m.focus)
	}
	// Esc from the endpoint's findings pane: the fleet in one key.
	press(m, "enter", "tab", "esc")
	if m.mode != modeFleet {
		t.Errorf("esc from the findings pane: mode %d", m.mode)
	}
}

// A symptom diagnose grouped under a cause sits right under it (↳), even
// when the frame lists it first, and the fleet table's finding column names
// the cause.
func TestSymptomUnderCause(t *testing.T) {
	fr := fleetFrame()
	cause := fixtureFindings()[0] // KV cache thrashing on replica-1
	sym := diagnose.Finding{Rule: "queue_backlog", Severity: diagnose.SevCritical, Target: "replica-1",
		FirstSeen: t0.Add(-time.Minute), LastSeen: t0, Title: "Queue backlog", Summary: diagnose.Plain("133 waiting"),
		Cause: cause.ID(), Action: diagnose.Plain("follow the cause: KV cache thrashing (kv_cache_thrashing)")}
	fr.Findings = []diagnose.Finding{sym, cause}
	for i := range fr.Endpoints {
		fr.Endpoints[i].Findings = nil
		if fr.Endpoints[i].Name == "replica-1" {
			fr.Endpoints[i].Findings = []diagnose.Finding{sym, cause}
		}
	}
	v := newTestModel(fr, 200, 60, Options{}).View()
	lines := strings.Split(v, "\n")
	ci, si := -1, -1
	for i, l := range lines {
		switch {
		case strings.Contains(l, "KV cache thrashing") && strings.Contains(l, "crit") && ci < 0:
			ci = i
		case strings.Contains(l, "↳") && strings.Contains(l, "Queue backlog"):
			si = i
		}
	}
	if ci < 0 || si < ci {
		t.Fatalf("symptom (line %d) not under its cause (line %d):\n%s", si, ci, v)
	}
	if row := rowOf(t, v, "replica-1"); !strings.Contains(row, "KV cache thrashing") {
		t.Errorf("the finding column names a symptom: %q", row)
	}
}

// The KV colour bands are the rules' thresholds: lowering kv_high in the
// rules config turns an 80 % cache from unmarked to ✖ on the table.
func TestKVBandFollowsConfiguredThreshold(t *testing.T) {
	fr := fleetFrame()
	fr.Endpoints[0].Stats.KVUsage = 0.80
	if line := rowOf(t, newTestModel(fr, 120, 40, Options{}).View(), "replica-0"); !strings.Contains(line, "80% ") {
		t.Fatalf("80%% under the default bands should be unmarked: %q", line)
	}
	d, err := detect.NewDetector(detect.RulesConfig{Rules: map[string]detect.RuleConfig{
		"kv_cache_saturated": {Params: map[string]float64{"kv_high": 0.75}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	d.Evaluate(fr)
	if line := rowOf(t, newTestModel(fr, 120, 40, Options{}).View(), "replica-0"); !strings.Contains(line, "80%"+symCrit) {
		t.Errorf("kv_high 0.75 should make 80%% critical: %q", line)
	}
}

// A rule that began holding within the last second reads "holding 0s", not
// in milliseconds: holds advance a poll at a time.
func TestPendingHeldUnderASecond(t *testing.T) {
	fr := brokenFrame()
	for i := range fr.Pending {
		fr.Pending[i].HeldFor = 400 * time.Millisecond
	}
	for i := range fr.Endpoints {
		for j := range fr.Endpoints[i].Pending {
			fr.Endpoints[i].Pending[j].HeldFor = 400 * time.Millisecond
		}
	}
	s := newTestModel(fr, 120, 40, Options{}).View()
	if strings.Contains(s, "holding 400ms") || !strings.Contains(s, "holding 0s of") {
		t.Errorf("a hold under a second:\n%s", s)
	}
}

// Settings are asked in key order from Update itself, not from commands
// that bubbletea runs on goroutines of their own (which reach the hub in
// any order): o o o and - - - end on the last key's choice.
func TestSettingsAskedInKeyOrder(t *testing.T) {
	h := newFrameHub()
	m := New(h, Options{Window: time.Minute, Tick: -1})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(frameMsg{fleetFrame()})
	for range 3 {
		updateKey(m, "o") // the commands returned are never run
		updateKey(m, "-")
	}
	if want := []string{"code", "batch", "rag"}; !slices.Equal(h.slos, want) {
		t.Errorf("SetSLO calls %v, want %v", h.slos, want)
	}
	if want := []time.Duration{30 * time.Second, 15 * time.Second}; !slices.Equal(h.windows, want) {
		t.Errorf("SetWindow calls %v, want %v", h.windows, want)
	}
	if !strings.Contains(m.header, "SLO rag") || !strings.Contains(m.header, "window 1m→15s") {
		t.Errorf("header before the hub answered: %s", m.header)
	}
}

// replayHub is a Player that plays nothing: enough for the replay's keys.
type replayHub struct{ *frameHub }

func (replayHub) ReplayState() ReplayState { return ReplayState{Speed: 1} }
func (replayHub) TogglePause()             {}
func (replayHub) Step()                    {}
func (replayHub) SeekBy(time.Duration)     {}
func (replayHub) SeekFraction(float64)     {}
func (replayHub) SeekFinding(bool)         {}
func (replayHub) Faster(bool)              {}

// A replay's help lists its own keys and none that only a live run has
// (p is the replay's pause; a recording is not polled).
func TestReplayHelpHasNoLiveKeys(t *testing.T) {
	m := New(replayHub{newFrameHub()}, Options{Tick: -1})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 60})
	m.Update(frameMsg{fleetFrame()})
	help := strings.Join(m.helpLines(120), "\n")
	for _, want := range []string{"replay: pause / play", "next SLO profile"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	for _, live := range []string{"poll every target now", "pause: freeze the screen"} {
		if strings.Contains(help, live) {
			t.Errorf("a replay's help lists %q", live)
		}
	}
}

// y hands the selected finding to the terminal's clipboard as Markdown
// (title, where, since, evidence, the flag change with its arithmetic) and
// says so; with no finding selected it hands the verdict with every one.
func TestCopyFindingAsMarkdown(t *testing.T) {
	var got []string
	m := newTestModel(fleetFrame(), 120, 40, Options{Copy: func(s string) error { got = append(got, s); return nil }})
	press(m, "tab") // the findings pane, on the worst finding
	if m.focus != paneFindings {
		t.Fatalf("focus %d", m.focus)
	}
	run(updateKey(m, "y"))
	if len(got) != 1 {
		t.Fatalf("copied %d times", len(got))
	}
	md := got[0]
	for _, want := range []string{"### CRITICAL: KV cache thrashing", "- **Where:** `replica-1", "- **Since:** ", "- **Evidence:**",
		"  - preemptions: 22/s (over 1m)", "- **Do:**", "`--max-num-seqs 256 → 96", "- **Rule:** `kv_cache_thrashing`"} {
		if !strings.Contains(md, want) {
			t.Errorf("the copy lacks %q:\n%s", want, md)
		}
	}
	if !strings.Contains(m.header, `copied "KV cache thrashing" as Markdown`) {
		t.Errorf("the header does not say it copied: %s", m.header)
	}
	press(m, "esc") // back to the table: the verdict
	run(updateKey(m, "y"))
	if len(got) != 2 || !strings.HasPrefix(got[1], "## vtop: CRITICAL") || strings.Count(got[1], "\n### ") != 3 {
		t.Errorf("the verdict:\n%s", got[len(got)-1])
	}
}

// The mouse: a click selects a table row, a second click on it opens the
// endpoint; the wheel moves the selection; a click on a finding selects
// it and gives the findings pane the keys, a double click opens it.
func TestMouse(t *testing.T) {
	m := newTestModel(fleetFrame(), 120, 40, Options{})
	click := func(y int) {
		m.Update(tea.MouseMsg{X: 10, Y: y, Button: tea.MouseButtonLeft, Action: tea.MouseActionPress})
		m.Update(tea.MouseMsg{X: 10, Y: y, Button: tea.MouseButtonLeft, Action: tea.MouseActionRelease})
	}
	// Header, summary, column titles: the table's third row is line 5.
	click(1 + fleetHeadLines + 2)
	if m.fleet.cursor != 2 || m.mode != modeFleet {
		t.Fatalf("click: cursor %d, mode %d", m.fleet.cursor, m.mode)
	}
	m.Update(tea.MouseMsg{Button: tea.MouseButtonWheelDown, Action: tea.MouseActionPress})
	if m.fleet.cursor != 3 {
		t.Errorf("wheel down: cursor %d", m.fleet.cursor)
	}
	want := m.fr.Endpoints[m.fleet.rows[3].ep].Name
	click(1 + fleetHeadLines + 3)
	click(1 + fleetHeadLines + 3)
	if m.mode != modeEndpoint || m.fr.Endpoints[m.ep].Name != want {
		t.Fatalf("double click did not open %s: mode %d ep %d", want, m.mode, m.ep)
	}
	press(m, "esc")
	// The findings pane: its lines follow the table's.
	findAt := 1 + fleetHeadLines + m.lay.fleetRows
	line := -1
	for y := 0; y < m.lay.fleetFind.h; y++ {
		if m.find.itemAt(y) == 1 {
			line = y
			break
		}
	}
	if line < 0 {
		t.Fatal("no line of the second finding")
	}
	click(findAt + line)
	if m.focus != paneFindings || m.find.sel != 1 {
		t.Fatalf("click on a finding: focus %d, sel %d", m.focus, m.find.sel)
	}
	click(findAt + line)
	if m.overlay != overlayFinding || m.detail.Title != m.find.items[1].x.Title {
		t.Errorf("double click on a finding: overlay %d %q", m.overlay, m.detail.Title)
	}
}

// F1 and h open the help as ? does.
func TestHelpKeys(t *testing.T) {
	for _, k := range []string{"?", "f1", "h"} {
		m := newTestModel(fleetFrame(), 120, 40, Options{})
		press(m, k)
		if m.overlay != overlayHelp {
			t.Errorf("%s: no help", k)
		}
	}
}

// A user's action runs on what is selected: the table's row, its host and
// port apart, its model; it is listed in the help.
func TestActionOnSelection(t *testing.T) {
	var got map[string]string
	acts := []Action{{Name: "logs", Key: "L", Run: func(v map[string]string) tea.Cmd { got = v; return nil }}}
	fr := fleetFrame()
	fr.Endpoints[1].Name = "gpu-node-1:8000"
	m := newTestModel(fr, 120, 40, Options{Actions: acts})
	for k, r := range m.fleet.rows {
		if m.fr.Endpoints[r.ep].Name == "gpu-node-1:8000" {
			m.fleet.cursor = k
		}
	}
	press(m, "L")
	if got["TARGET"] != "gpu-node-1:8000" || got["HOST"] != "gpu-node-1" || got["PORT"] != "8000" || got["MODEL"] != fr.Endpoints[1].Models[0] {
		t.Errorf("vars %v", got)
	}
	if got["POD"] != "" || got["NAMESPACE"] != "" {
		t.Errorf("no pod known, but POD %q NAMESPACE %q", got["POD"], got["NAMESPACE"])
	}
	// Where discovery named its pod: $POD and $NAMESPACE are its.
	fr.Endpoints[1].Pod, fr.Endpoints[1].Namespace = "vllm-7f9c-0", "llm"
	m.Update(frameMsg{fr})
	press(m, "L")
	if got["POD"] != "vllm-7f9c-0" || got["NAMESPACE"] != "llm" || got["TARGET"] != "gpu-node-1:8000" {
		t.Errorf("vars %v", got)
	}
	if !strings.Contains(m.header, "running logs on gpu-node-1:8000") {
		t.Errorf("header: %s", m.header)
	}
	if help := strings.Join(m.helpLines(120), "\n"); !strings.Contains(help, "Your actions") || !strings.Contains(help, "logs") {
		t.Error("the help does not list the action")
	}
}

// A note from the caller (the demo's "incidents begin about 1m0s in") is
// in the header from the first frame, for a minute.
func TestStartNote(t *testing.T) {
	fr := fleetFrame()
	m := newTestModel(fr, 200, 60, Options{Note: "demo: incidents begin about 1m0s in"})
	if !strings.Contains(m.header, "demo: incidents begin about 1m0s in") {
		t.Errorf("header: %s", m.header)
	}
	later := fleetFrame()
	later.Time = fr.Time.Add(2 * time.Minute)
	m.Update(frameMsg{later})
	if strings.Contains(m.header, "incidents begin") {
		t.Errorf("still there after 2 minutes: %s", m.header)
	}
}
