// Package ui is vtop's terminal UI: a bubbletea model over the frames the
// hub publishes. Work happens when something changes (a frame, a key, a
// resize): rows, sparklines and panels are rendered into strings then, and
// View only joins them. The package does no I/O; it talks to the hub through
// the small Hub interface, from commands.
package ui

import (
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/themes"
	f "github.com/vtop-dev/vtop/ui/format"
	"github.com/vtop-dev/vtop/ui/report"
)

// Hub is what the UI needs from the live pipeline.
type Hub interface {
	Frames() <-chan *diagnose.Frame // newest frame wins; closed when the pipeline stops
	// SetWindow and SetSLO are settings: the UI asks them in key order,
	// from Update, so they must not block; the newest asked wins.
	SetWindow(time.Duration)
	SetSLO(diagnose.SLO) // the profile the latency rules judge by, as the latency row does
	PollNow()
}

// Options configure the model; the zero value is usable.
type Options struct {
	Theme    string             // dark (default), light, high-contrast, mono
	SLO      string             // SLO profile name (default chat)
	SLOs     []diagnose.SLO     // the profiles (default diagnose.SLOProfiles())
	Window   time.Duration      // the window the hub starts with
	Renderer *lipgloss.Renderer // decides the color profile; default lipgloss's
	Tick     time.Duration      // clock refresh (default 1 s); <0: none (tests)
	// Copy puts text on the clipboard of the terminal vtop runs in (an
	// OSC 52 sequence, which crosses SSH and tmux); nil: no terminal.
	Copy func(text string) error
	// Actions are the user's own commands on the selection (config file).
	Actions []Action
	// Note is said in the header for the first minute ("demo: incidents
	// begin about 1m in").
	Note string
}

type mode uint8

const (
	modeFleet mode = iota
	modeEndpoint
)

type pane uint8

const (
	paneMain pane = iota // the table, or the four rows
	paneGPU
	paneFindings
	numPanes
)

type overlay uint8

const (
	overlayNone overlay = iota
	overlayHelp
	overlayFinding
	overlayTimeline
)

// windows are the steps of + and -.
var windowSteps = []time.Duration{
	15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute,
	10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
}

// Model is the top-level model.
type Model struct {
	// What every panel reads (styles, keys, the frame shown, the clock,
	// the SLO profile, endpoint names): the panels hold a pointer to it.
	common

	hub    Hub
	replay *replayBar // vtop replay: the timeline and playback keys; nil when live
	opts   Options
	r      *lipgloss.Renderer

	theme themes.Theme
	slos  []diagnose.SLO
	slo   int

	w, h int
	lay  layout

	newest     *diagnose.Frame // newest received (differs while paused)
	skipped    int             // frames received while paused
	paused     bool
	closed     bool // the hub stopped publishing
	wantWindow time.Duration

	mode    mode
	chosen  bool // the first frame chose the view
	ep      int  // the endpoint view's endpoint; -1: the fleet aggregate
	focus   pane
	overlay overlay
	ovOff   int // overlay scroll
	detail  diagnose.Finding

	// The panels, and the same panels by view and pane: the table (fleet)
	// or the four rows (endpoint), the GPUs and the findings.
	fleet  fleetTable
	find   findingsPane
	gpu    gpuPane
	rows   rowsPanel
	feat   featuresPanel // the endpoint's speculative decoding, LoRA, KV transfer, sleep
	panels [2][numPanes]component

	// The last left click, for a double click: its line and when.
	clickY    int
	clickedAt time.Time

	// A short note after a key whose effect is not otherwise visible
	// ("theme light", "polling 8 targets"), shown until flashUntil.
	flash      string
	flashUntil time.Time

	// Frames applied off the UI goroutine (prepare.go).
	prep prepState

	// Prepared at every change; View joins them.
	header string
	body   []string
	footer string
}

// New returns the model. It reads frames from hub.Frames().
func New(hub Hub, o Options) *Model {
	m := &Model{hub: hub, opts: o, r: o.Renderer, ep: -1, wantWindow: o.Window}
	c := &m.common
	c.keys = newKeyMap()
	m.fleet = newFleetTable(c)
	m.wire()
	m.replay = newReplayBar(hub)
	if m.r == nil {
		m.r = lipgloss.DefaultRenderer()
	}
	th, err := themes.ByName(o.Theme)
	if err != nil || o.Theme == "" {
		th, _ = themes.ByName("dark")
	}
	m.setTheme(th)
	m.slos = o.SLOs
	if len(m.slos) == 0 {
		m.slos = diagnose.SLOProfiles()
	}
	for i, p := range m.slos {
		if strings.EqualFold(p.Name, o.SLO) {
			m.slo = i
		}
	}
	m.profile = m.slos[m.slo]
	return m
}

func (m *Model) setTheme(th themes.Theme) {
	m.theme = th
	m.st = newStyles(th, m.r)
	clear(m.fleet.cache)
}

// Messages.
type (
	frameMsg      struct{ fr *diagnose.Frame }
	framesDoneMsg struct{}
	tickMsg       time.Time
)

// waitFrame reads the next frame; Update re-arms it after every frame.
func waitFrame(ch <-chan *diagnose.Frame) tea.Cmd {
	return func() tea.Msg {
		fr, ok := <-ch
		if !ok {
			return framesDoneMsg{}
		}
		return frameMsg{fr}
	}
}

func tick(d time.Duration) tea.Cmd {
	return tea.Tick(d, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m *Model) tickEvery() time.Duration {
	if m.opts.Tick == 0 {
		return time.Second
	}
	return m.opts.Tick
}

// Init starts reading frames and the clock. The program runs: from now
// on frames are applied off its goroutine (prepare.go).
func (m *Model) Init() tea.Cmd {
	m.prep.on = true
	cmds := []tea.Cmd{waitFrame(m.hub.Frames())}
	if m.tickEvery() > 0 {
		cmds = append(cmds, tick(m.tickEvery()))
	}
	return tea.Batch(cmds...)
}

// Update applies one message and prepares the screen.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.relayout()
	case frameMsg:
		// Read on at once: frames that come while one is prepared wait
		// in one slot, the newest winning.
		return m, tea.Batch(waitFrame(m.hub.Frames()), m.frame(msg.fr))
	case preparedMsg:
		return m, m.prepared(msg)
	case framesDoneMsg:
		m.closed = true
	case tickMsg:
		if t := time.Time(msg); t.After(m.now) {
			m.now = t
		}
		m.header = m.st.fill(m.renderHeader(), m.w)
		return m, tick(m.tickEvery())
	case tea.MouseMsg:
		cmd = m.mouse(msg)
	case ActionDone:
		if msg.Err != nil {
			m.note(msg.Name + ": " + msg.Err.Error())
		} else {
			m.note(msg.Name + " done")
		}
	case tea.KeyMsg:
		var cmds []tea.Cmd
		for _, k := range splitKeys(msg) {
			c, quit := m.key(k)
			if quit {
				return m, tea.Quit
			}
			cmds = append(cmds, c)
		}
		cmd = tea.Batch(cmds...)
	default:
		return m, nil
	}
	m.changed()
	m.refresh()
	return m, cmd
}

// receive takes a frame from the hub: shown now, or kept while paused.
func (m *Model) receive(fr *diagnose.Frame) {
	if fr == nil {
		return
	}
	m.newest = fr
	if fr.Time.After(m.now) || m.replay != nil { // a replay's clock is its frames', and seeks back
		m.now = fr.Time
	}
	if m.paused && m.fr != nil {
		m.skipped++
		return
	}
	m.apply(fr)
}

// apply shows a frame: the table's order, the layout's counts.
func (m *Model) apply(fr *diagnose.Frame) {
	m.fr = fr
	if !m.chosen {
		m.chosen = true
		if m.opts.Note != "" {
			m.flash, m.flashUntil = m.opts.Note, fr.Time.Add(time.Minute)
		}
		if len(fr.Endpoints) == 1 {
			m.mode, m.ep = modeEndpoint, 0
		}
	}
	if m.ep >= len(fr.Endpoints) {
		m.ep = -1
	}
	m.fleet.rebuild(fr)
	m.relayout()
}

// countsNow are the sizes the layout depends on, for the shown frame.
func (m *Model) countsNow() counts {
	c := counts{focus: m.focus, rows: m.fleet.shown()}
	if m.fr == nil {
		return c
	}
	for _, r := range m.fleet.rows {
		if e := &m.fr.Endpoints[r.ep]; r.sub >= 0 && r.sub < len(e.Subs) {
			c.nameLen = max(c.nameLen, width(symSub+" "+subLabel(e, r.sub))) // engines shown
		}
	}
	for i := range m.fr.Endpoints {
		e := &m.fr.Endpoints[i]
		c.nameLen = max(c.nameLen, width(m.name(e.Name)))
		c.engineCol = c.engineCol || e.Version.Server != sources.ServerVLLM
		for _, x := range e.Models {
			c.modelLen = max(c.modelLen, width(shortModel(x)))
		}
	}
	g := &m.fr.GPU
	c.gpus = len(g.GPUs)
	c.gpuNone = gpuUnavailable(g) != ""
	c.gpuEvents = min(len(m.fr.GPUEvents), maxGPUEvents)
	for i := range g.GPUs {
		if len(g.GPUs[i].Processes) > 0 {
			c.gpuProcs = true
		}
	}
	if m.mode == modeEndpoint && m.ep >= 0 {
		e := &m.fr.Endpoints[m.ep]
		c.subs = len(e.Subs)
		c.endpointGPU = len(e.GPU.GPUs) > 0 || e.GPU.Note != ""
		c.features = len(featureLines(e))
	} else if m.mode == modeEndpoint {
		c.subs = len(m.fr.Fleet.Models)
	}
	// The findings pane is full width in every view.
	c.findDetail, c.findAll, c.findLeast, c.findLens = m.findingsWant(m.find.items, m.findWithTarget(), m.w)
	c.findHead = 1 + len(m.sourceLines())
	if m.find.pools != "" { // the pools' line under the verdict
		c.findHead++
		c.findDetail, c.findAll, c.findLeast = c.findDetail+1, c.findAll+1, c.findLeast+1
	}
	return c
}

// relayout is the one resize handler: every region comes from plan.
func (m *Model) relayout() {
	scope := -1
	if m.mode == modeEndpoint {
		scope = m.ep
	}
	m.find.set(m.collectFindings(), m.findWithTarget(), scope)
	m.fleet.finds = m.find.fs
	m.find.verdict = m.verdictLine()
	m.find.pools = m.poolsLine()
	m.lay = plan(m.w, m.h, m.countsNow())
	clear(m.fleet.cache)
	m.fleet.cols = tableCols(m.lay.cols)
	m.fleet.focused = m.focus == paneMain
	m.find.focused = m.focus == paneFindings
	m.gpu.focused = m.focus == paneGPU
	m.gpu.mine = nil
	if m.mode == modeFleet {
		m.fleet.SetSize(size{m.lay.w, fleetHeadLines + m.lay.fleetRows})
		m.find.SetSize(m.lay.fleetFind)
		m.gpu.SetSize(m.lay.fleetGPU)
	} else {
		m.find.SetSize(m.lay.find)
		m.gpu.SetSize(m.lay.gpu)
		m.rows.SetSize(m.lay.rows)
		m.rows.setForm(m.lay.roomy, m.lay.sparkH)
		if m.fr != nil && !m.lay.wide {
			// The rows' lines are known once rendered (a metric without a
			// sparkline, an engine without swap): what they leave goes to
			// the GPU panel below them, not blank.
			e, sj, _ := m.endpointSubject()
			m.rows.show(e, sj)
			rows := m.rows.View()
			n := len(rows)
			for n > 0 && strings.TrimSpace(ansi.Strip(rows[n-1])) == "" {
				n--
			}
			if n < m.lay.rows.h {
				m.lay.gpu.h += m.lay.rows.h - n
				m.lay.rows.h = n
				m.rows.SetSize(m.lay.rows)
				m.gpu.SetSize(m.lay.gpu)
			}
		}
		m.feat.SetSize(m.lay.feat)
	}
}

// fleetBody is the fleet view: the table, the findings, the GPUs.
func (m *Model) fleetBody() []string {
	out := append(m.fleet.View(), m.find.View()...)
	return append(out, m.gpu.View()...)
}

// findWithTarget: the fleet's findings name their endpoint.
func (m *Model) findWithTarget() bool { return m.mode == modeFleet || m.ep < 0 }

// refresh prepares header, body and footer for View.
func (m *Model) refresh() {
	if m.lay.tooSmall || m.w == 0 {
		return
	}
	m.header = m.st.fill(m.renderHeader(), m.w)
	m.footer = m.st.fill(m.renderFooter(), m.w)
	if m.replay != nil && !m.fleet.filtering {
		m.footer = m.st.fill(m.replay.render(m.w, m.st), m.w)
	}
	defer func() {
		for i, l := range m.body {
			m.body[i] = m.st.fill(l, m.w)
		}
	}()
	switch {
	case m.overlay == overlayHelp:
		m.body = m.overlayBody("Help: keys and symbols", m.helpLines(m.w), &m.ovOff)
	case m.fr == nil:
		msg := "waiting for the first poll…"
		if m.closed {
			msg = "the pipeline stopped; press q to quit"
		}
		m.body = block([]string{"", "  " + m.st.muted.s(msg)}, m.w, m.lay.body)
	case m.overlay == overlayFinding:
		m.body = m.overlayBody("Finding", m.detailLines(&m.detail, m.w), &m.ovOff)
	case m.overlay == overlayTimeline:
		title, target := "What changed and when: the fleet", ""
		if m.mode != modeFleet && m.ep >= 0 && m.ep < len(m.fr.Endpoints) {
			target = m.fr.Endpoints[m.ep].Name
			title = "What changed and when: " + target
		}
		m.body = m.overlayBody(title, m.timelineLines(target), &m.ovOff)
	case m.mode == modeFleet:
		m.body = block(m.fleetBody(), m.w, m.lay.body)
	default:
		m.body = block(m.endpointBody(), m.w, m.lay.body)
	}
}

// View joins what refresh prepared.
func (m *Model) View() string {
	if m.w == 0 {
		return ""
	}
	if m.lay.tooSmall {
		return cut("terminal too small ("+itoa(m.w)+"×"+itoa(m.h)+", need "+itoa(minWidth)+"×"+itoa(minHeight)+")", m.w)
	}
	var b strings.Builder
	b.Grow((m.w + 16) * m.h)
	b.WriteString(m.header)
	for _, l := range m.body {
		b.WriteByte('\n')
		b.WriteString(l)
	}
	b.WriteByte('\n')
	b.WriteString(m.footer)
	return b.String()
}

// key handles one key press; it returns a command for the hub, or quit.
func (m *Model) key(k tea.KeyMsg) (tea.Cmd, bool) {
	if m.fleet.filtering {
		return m.filterKey(k), false
	}
	if m.replay.key(k) {
		return nil, false
	}
	km := &m.keys
	switch {
	case km.Quit.matches(k):
		return nil, true
	case km.Help.matches(k):
		if m.overlay == overlayHelp {
			m.overlay = overlayNone
		} else {
			m.overlay, m.ovOff = overlayHelp, 0
		}
		return nil, false
	case km.Changes.matches(k) && m.fr != nil:
		if m.overlay == overlayTimeline {
			m.overlay = overlayNone
		} else {
			m.overlay, m.ovOff = overlayTimeline, 0
		}
		return nil, false
	case km.Back.matches(k):
		m.back()
		return nil, false
	case km.Home.matches(k):
		m.home()
		return nil, false
	case km.Pause.matches(k):
		m.paused = !m.paused
		if !m.paused {
			m.note("resumed: showing the newest frame")
			m.skipped = 0
			if m.newest != nil && m.newest != m.fr {
				m.apply(m.newest)
			}
		}
		return nil, false
	case km.PollNow.matches(k):
		n := 0
		if m.fr != nil {
			n = len(m.fr.Endpoints)
		}
		m.note("polling " + plural(n, "target") + " now")
		h := m.hub
		return func() tea.Msg { h.PollNow(); return nil }, false
	case km.WindowUp.matches(k), km.WindowDown.matches(k):
		return m.stepWindow(km.WindowUp.matches(k)), false
	case km.Theme.matches(k):
		m.setTheme(themes.Next(m.theme.Name))
		m.note("theme " + m.theme.Name)
		return nil, false
	case km.Copy.matches(k):
		return m.copy(), false
	case m.actionKey(k) != nil && m.overlay == overlayNone:
		return m.runAction(m.actionKey(k)), false
	case km.SLO.matches(k):
		m.slo = (m.slo + 1) % len(m.slos)
		m.profile = m.slos[m.slo]
		clear(m.fleet.cache)
		// Asked here, in key order, not from a command's goroutine: keys
		// pressed quickly must end on the last one (the hub keeps the
		// newest setting).
		m.hub.SetSLO(m.profile)
		return nil, false
	}
	if m.overlay != overlayNone {
		m.scrollOverlay(k)
		return nil, false
	}
	if m.fr == nil {
		return nil, false
	}
	switch {
	case km.NextPane.matches(k):
		m.cyclePane(1)
	case km.PrevPane.matches(k):
		m.cyclePane(-1)
	default:
		m.act(m.component(m.focus).Update(k))
	}
	return nil, false
}

// act does what a panel's key asked of the screen around it.
func (m *Model) act(a action) {
	switch {
	case a.openRow:
		m.open()
	case a.open != nil:
		m.detail = *a.open
		m.overlay, m.ovOff = overlayFinding, 0
	case a.relayout:
		m.relayout()
	}
}

// splitKeys undoes what a slow link does to keys: bubbletea delivers runes
// that arrive in one read as one message ("jj"), and Esc followed quickly
// by a key as alt+key. Each becomes its own key press; a paste stays whole.
func splitKeys(k tea.KeyMsg) []tea.KeyMsg {
	if k.Type != tea.KeyRunes || k.Paste || (len(k.Runes) <= 1 && !k.Alt) {
		return []tea.KeyMsg{k}
	}
	var out []tea.KeyMsg
	if k.Alt {
		out = append(out, tea.KeyMsg{Type: tea.KeyEsc})
	}
	for _, r := range k.Runes {
		out = append(out, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	return out
}

// back closes what is open, innermost first; from an endpoint it goes
// straight to the fleet, whichever pane had the keys.
func (m *Model) back() {
	switch {
	case m.overlay != overlayNone:
		m.overlay = overlayNone
	case m.mode == modeEndpoint && m.fr != nil && len(m.fr.Endpoints) > 0:
		m.home()
	case m.focus != paneMain:
		m.focus = paneMain
		m.relayout()
	case m.fleet.filter != "":
		m.fleet.filter = ""
		if m.fr != nil {
			m.fleet.rebuild(m.fr)
			m.relayout()
		}
	}
}

// home is the fleet view, nothing open, the table with the keys.
func (m *Model) home() {
	m.overlay = overlayNone
	if m.fr != nil && len(m.fr.Endpoints) > 0 {
		m.mode = modeFleet
	}
	m.focus = paneMain
	m.find.reset()
	m.relayout()
}

func (m *Model) stepWindow(up bool) tea.Cmd {
	cur := m.wantWindow
	if m.fr != nil && cur == 0 {
		cur = m.fr.Window
	}
	var interval time.Duration
	if m.fr != nil {
		interval = m.fr.Interval
	}
	next := cur
	if up {
		for _, w := range windowSteps {
			if w > cur {
				next = w
				break
			}
		}
	} else {
		for i := len(windowSteps) - 1; i >= 0; i-- {
			if w := windowSteps[i]; w < cur && w >= 2*interval {
				next = w
				break
			}
		}
	}
	if next == cur {
		return nil
	}
	m.wantWindow = next
	m.hub.SetWindow(next) // in key order, as SetSLO
	return nil
}

// panes lists the panes the current view shows, in Tab order: the
// findings before the GPUs, as on screen.
func (m *Model) panes() []pane {
	ps := []pane{paneMain}
	if m.lay.tooSmall || m.fr == nil {
		return ps
	}
	ps = append(ps, paneFindings)
	if gpuUnavailable(&m.fr.GPU) == "" && (m.mode == modeEndpoint && m.lay.gpu.h > 1 || m.mode == modeFleet && m.lay.fleetGPU.h > 1) {
		ps = append(ps, paneGPU)
	}
	return ps
}

func (m *Model) cyclePane(d int) {
	ps := m.panes()
	i := 0
	for k, p := range ps {
		if p == m.focus {
			i = k
		}
	}
	m.focus = ps[(i+d+len(ps))%len(ps)]
	m.relayout()
}

// listMove maps navigation keys to a new index in a list of n.
func (km *keyMap) listMove(k tea.KeyMsg, cur, n, page int) (int, bool) {
	switch {
	case km.Up.matches(k):
		cur--
	case km.Down.matches(k):
		cur++
	case km.PageUp.matches(k):
		cur -= max(1, page)
	case km.PageDown.matches(k):
		cur += max(1, page)
	case km.Top.matches(k):
		cur = 0
	case km.Bottom.matches(k):
		cur = n - 1
	default:
		return cur, false
	}
	return max(0, min(cur, n-1)), true
}

// collectFindings is what the findings pane lists in the current view:
// firing and resolving findings, then pending ones (not fired yet).
func (m *Model) collectFindings() []diagnose.Finding {
	if m.fr == nil {
		return nil
	}
	firing, pending := m.fr.Findings, m.fr.Pending
	if m.mode == modeEndpoint && m.ep >= 0 {
		firing, pending = m.fr.Endpoints[m.ep].Findings, m.fr.Endpoints[m.ep].Pending
	}
	out := make([]diagnose.Finding, 0, len(firing)+len(pending))
	out = append(append(out, firing...), pending...)
	q := strings.ToLower(m.fleet.filter)
	if q == "" || m.mode == modeEndpoint && m.ep >= 0 {
		return underCauses(out)
	}
	// The filter narrows the findings too: a finding that matches, or one
	// about an endpoint that does.
	kept := out[:0]
	for i := range out {
		x := &out[i]
		if matchesFinding(x, q) || m.endpointMatches(x.Target, q) {
			kept = append(kept, *x)
		}
	}
	return underCauses(kept)
}

// underCauses moves each symptom (a finding diagnose grouped under a cause
// on its endpoint) to just after its cause, when the cause is listed.
func underCauses(fs []diagnose.Finding) []diagnose.Finding {
	ids := make(map[string]bool, len(fs))
	for i := range fs {
		ids[fs[i].ID()] = true
	}
	var syms map[string][]diagnose.Finding
	out := make([]diagnose.Finding, 0, len(fs))
	for _, x := range fs {
		if x.Cause != "" && ids[x.Cause] {
			if syms == nil {
				syms = map[string][]diagnose.Finding{}
			}
			syms[x.Cause] = append(syms[x.Cause], x)
			continue
		}
		out = append(out, x)
	}
	if syms == nil {
		return fs
	}
	res := make([]diagnose.Finding, 0, len(fs))
	for _, x := range out {
		res = append(res, x)
		res = append(res, syms[x.ID()]...)
	}
	return res
}

func (m *Model) endpointMatches(name, q string) bool {
	for i := range m.fr.Endpoints {
		if m.fr.Endpoints[i].Name == name {
			return matchesEndpoint(&m.fr.Endpoints[i], q)
		}
	}
	return false
}

func (m *Model) scrollOverlay(k tea.KeyMsg) {
	if i, ok := m.keys.listMove(k, m.ovOff, 1<<20, m.lay.body-2); ok {
		m.ovOff = i
	}
}

// open drills down into the selected row (or the fleet aggregate).
func (m *Model) open() {
	m.mode = modeEndpoint
	m.ep = -1
	if r, ok := m.fleet.selected(); ok {
		m.ep = r.ep
	}
	m.find.reset()
	m.gpu.reset()
	m.relayout()
}

func (m *Model) filterKey(k tea.KeyMsg) tea.Cmd {
	t := &m.fleet
	switch k.Type {
	case tea.KeyEnter:
		t.filtering = false
	case tea.KeyEsc:
		t.filtering = false
		t.filter = ""
	case tea.KeyBackspace:
		if r := []rune(t.filter); len(r) > 0 {
			t.filter = string(r[:len(r)-1])
		}
	case tea.KeyCtrlC:
		return tea.Quit
	case tea.KeyRunes, tea.KeySpace:
		t.filter += string(k.Runes)
	default:
		return nil
	}
	t.cursor = max(t.cursor, 0)
	t.rebuild(m.fr)
	m.relayout()
	return nil
}

// flashFor is how long a note stays in the header.
const flashFor = 3 * time.Second

// note shows a short confirmation in the header for flashFor.
func (m *Model) note(s string) {
	m.flash, m.flashUntil = s, m.now.Add(flashFor)
}

// plural: "1 target", "8 targets".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return itoa(n) + " " + noun + "s"
}

func itoa(n int) string { return strconv.Itoa(n) }

func secs(d time.Duration) string { return f.Seconds(d.Seconds()) }

// copy hands the selected finding, or the verdict with every finding and
// its cause, to the terminal's clipboard as Markdown, and says so.
func (m *Model) copy() tea.Cmd {
	if m.fr == nil {
		m.note("nothing to copy yet")
		return nil
	}
	text, what := "", "the verdict"
	var x *diagnose.Finding
	switch {
	case m.overlay == overlayFinding:
		x = &m.detail
	case m.focus == paneFindings && m.find.sel < len(m.find.items):
		x = m.find.items[m.find.sel].x
	}
	if x != nil {
		text, what = report.FindingMarkdown(m.fr, x), quote(x.Title)
	} else {
		text = report.VerdictMarkdown(m.fr, report.FrameStatus(m.fr))
	}
	cp := m.opts.Copy
	if cp == nil {
		m.note("cannot copy: no terminal to send it to")
		return nil
	}
	m.note("copied " + what + " as Markdown (" + plural(strings.Count(text, "\n"), "line") + ", OSC 52)")
	return func() tea.Msg {
		_ = cp(text) // a terminal without OSC 52 ignores it; nothing to report back
		return nil
	}
}

// doubleClick is the most time between the clicks of a double click.
const doubleClick = 400 * time.Millisecond

// mouse: the wheel moves the focused list (or scrolls an overlay); a click
// selects the table row or the finding under it, and a second click on
// the same line opens it, as Enter would.
func (m *Model) mouse(msg tea.MouseMsg) tea.Cmd {
	switch msg.Button {
	case tea.MouseButtonWheelUp, tea.MouseButtonWheelDown:
		if msg.Action != tea.MouseActionPress {
			return nil
		}
		k := tea.KeyMsg{Type: tea.KeyDown}
		if msg.Button == tea.MouseButtonWheelUp {
			k = tea.KeyMsg{Type: tea.KeyUp}
		}
		c, _ := m.key(k)
		return c
	case tea.MouseButtonLeft:
	default:
		return nil
	}
	if msg.Action != tea.MouseActionPress || m.fr == nil || m.overlay != overlayNone || m.lay.tooSmall {
		return nil
	}
	now := time.Now()
	double := msg.Y == m.clickY && now.Sub(m.clickedAt) <= doubleClick
	m.clickY, m.clickedAt = msg.Y, now
	if double {
		m.clickedAt = time.Time{} // a third click starts over
	}
	y := msg.Y - headerLines // the body's line
	findAt := titleLines     // the endpoint view: the title, then the findings
	if m.mode == modeFleet {
		findAt = fleetHeadLines + m.lay.fleetRows
		t := &m.fleet
		switch {
		case y == 0:
			t.cursor = cursorFleet
		case y >= fleetHeadLines && y < findAt:
			k := t.offset + y - fleetHeadLines
			if k >= len(t.rows) {
				return nil
			}
			t.cursor = k
		default:
			return m.clickFinding(y-findAt, double)
		}
		if m.focus != paneMain {
			m.focus = paneMain
			m.relayout()
		}
		if double {
			m.act(action{openRow: true})
		}
		return nil
	}
	return m.clickFinding(y-findAt, double)
}

// clickFinding selects the finding on line y of the findings pane (and
// gives the pane the keys); double opens it, or its group.
func (m *Model) clickFinding(y int, double bool) tea.Cmd {
	i := m.find.itemAt(y)
	if i < 0 {
		return nil
	}
	m.find.sel = i
	if m.focus != paneFindings {
		m.focus = paneFindings
		m.relayout()
	}
	if double {
		m.act(m.find.Update(tea.KeyMsg{Type: tea.KeyEnter}))
	}
	return nil
}
