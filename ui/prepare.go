package ui

import (
	"maps"
	"slices"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/vtop-dev/vtop/diagnose"
)

// A frame is applied off the UI goroutine: with 1,000 endpoints building
// its rows, findings and sparklines took ~7 ms of CPU, tens to hundreds of
// ms of wall time on a loaded machine, and a key pressed meanwhile waited
// behind it (key-to-screen p99 186 ms). Update copies the screen's state,
// a command applies the frame to the copy and renders it (receive, then
// refresh, the same code as before), and Update adopts the copy when it
// comes back, unless a key, a click or a resize changed the state the copy
// was taken from: then the newest frame is prepared again from the state
// as it is now. One preparation is in flight at a time; frames that arrive
// meanwhile wait in one slot, the newest replacing the older.

// maxMissed is how many preparations in a row keys may overtake before a
// frame is applied on the UI goroutine instead: a user holding a key down
// on a loaded machine still sees new data.
const maxMissed = 3

// prepState is the bookkeeping of the preparation aside; it stays with the
// Model across adopt.
type prepState struct {
	on     bool            // the program runs: frames are prepared aside (Init)
	ver    uint64          // bumps at every change of the screen's state but a frame's
	busy   bool            // a preparation is in flight
	next   *diagnose.Frame // the newest frame not yet applied or being prepared
	missed int             // preparations in a row thrown away for a newer state
	pad    *sparkPad       // the preparing side's sparklines (the screen keeps its own)
}

// preparedMsg is a frame applied and rendered aside: the model it was
// applied to and the state version that model was copied at.
type preparedMsg struct {
	m   *Model
	fr  *diagnose.Frame
	ver uint64
}

// frame takes a frame from the hub: applied here when nothing prepares
// frames aside (tests drive Update directly), else queued for preparation.
func (m *Model) frame(fr *diagnose.Frame) tea.Cmd {
	if !m.prep.on {
		m.receive(fr)
		m.refresh()
		return nil
	}
	if fr != nil {
		m.prep.next = fr
	}
	return m.prepare()
}

// prepare starts preparing the newest waiting frame, unless one is being
// prepared. A paused screen only counts the frame, which is cheap; after
// maxMissed preparations lost to keys the frame is applied here.
func (m *Model) prepare() tea.Cmd {
	fr := m.prep.next
	if m.prep.busy || fr == nil {
		return nil
	}
	m.prep.next = nil
	if (m.paused && m.fr != nil) || m.prep.missed >= maxMissed {
		m.prep.missed = 0
		m.receive(fr)
		m.refresh()
		return nil
	}
	if m.prep.pad == nil {
		m.prep.pad = newSparkPad()
	}
	c := m.clone(m.prep.pad)
	ver := m.prep.ver
	m.prep.busy = true
	return func() tea.Msg {
		c.receive(fr)
		c.refresh()
		return preparedMsg{m: c, fr: fr, ver: ver}
	}
}

// prepared takes a preparation back: adopted when the screen's state is
// still the one it was copied from, else its frame is prepared again.
func (m *Model) prepared(msg preparedMsg) tea.Cmd {
	m.prep.busy = false
	if msg.ver != m.prep.ver {
		m.prep.missed++
		if m.prep.next == nil {
			m.prep.next = msg.fr
		}
		return m.prepare()
	}
	m.prep.missed = 0
	m.adopt(msg.m)
	return m.prepare()
}

// changed marks the screen's state as changed by something other than a
// frame: a preparation copied before it is stale.
func (m *Model) changed() { m.prep.ver++ }

// clone copies the model for a preparation: what applying a frame and
// rendering write (the row order and cache, the roster, the findings'
// hit lines, the body, the sparklines' scratch) is the copy's own, and
// what the keys write (the opened groups and rows) is copied, so the two
// goroutines share only what neither writes (the frames, the styles).
func (m *Model) clone(pad *sparkPad) *Model {
	c := *m
	st := *m.st
	st.pad = pad
	c.st = &st
	c.fleet.rows = slices.Clone(m.fleet.rows)
	c.fleet.cache = make(map[rowRef]string, len(m.fleet.cache))
	c.fleet.expanded = maps.Clone(m.fleet.expanded)
	c.fleet.roster.joined = maps.Clone(m.fleet.roster.joined)
	c.fleet.roster.gone = slices.Clone(m.fleet.roster.gone)
	c.find.expanded = maps.Clone(m.find.expanded)
	c.find.hit = nil
	c.body = nil
	c.wire()
	return &c
}

// adopt takes a prepared model as the screen's: a swap of what the
// preparation built, the screen keeping its bookkeeping, its sparklines'
// scratch and the later clock (a tick may have come meanwhile).
func (m *Model) adopt(next *Model) {
	prep, pad, now := m.prep, m.st.pad, m.now
	*m = *next
	m.prep = prep
	m.st.pad = pad // next's styles are a copy of its own (clone)
	m.wire()
	if m.replay == nil && now.After(m.now) {
		m.now = now
		if !m.lay.tooSmall && m.w > 0 {
			m.header = m.st.fill(m.renderHeader(), m.w)
		}
	}
}

// wire points the panels at this model's common and lists them by view.
func (m *Model) wire() {
	c := &m.common
	m.fleet.c, m.find.c, m.gpu.c, m.rows.c, m.feat.c = c, c, c, c, c
	m.panels[modeFleet] = [numPanes]component{paneMain: &m.fleet, paneGPU: &m.gpu, paneFindings: &m.find}
	m.panels[modeEndpoint] = [numPanes]component{paneMain: &m.rows, paneGPU: &m.gpu, paneFindings: &m.find}
}
