package ui

import (
	"os"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/vtop-dev/vtop/diagnose"
)

// TestMain fixes the color profile: goldens are plain text unless a test
// asks for a colored renderer.
func TestMain(m *testing.M) {
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Exit(m.Run())
}

// frameHub is the UI's side of the hub for tests: frames go in through a
// channel like the real hub's, and the model's requests are recorded.
type frameHub struct {
	ch chan *diagnose.Frame

	mu      sync.Mutex
	windows []time.Duration
	slos    []string
	polls   int
}

func newFrameHub() *frameHub { return &frameHub{ch: make(chan *diagnose.Frame, 1)} }

func (h *frameHub) Frames() <-chan *diagnose.Frame { return h.ch }
func (h *frameHub) SetWindow(w time.Duration) {
	h.mu.Lock()
	h.windows = append(h.windows, w)
	h.mu.Unlock()
}
func (h *frameHub) SetSLO(s diagnose.SLO) {
	h.mu.Lock()
	h.slos = append(h.slos, s.Name)
	h.mu.Unlock()
}
func (h *frameHub) PollNow() {
	h.mu.Lock()
	h.polls++
	h.mu.Unlock()
}

// newTestModel is a model at w×h that has shown fr, at the frame's time.
func newTestModel(fr *diagnose.Frame, w, h int, o Options) *Model {
	o.Tick = -1
	if o.Window == 0 {
		o.Window = fr.Window
	}
	m := New(newFrameHub(), o)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Update(frameMsg{fr})
	m.Update(tickMsg(fr.Time))
	return m
}

// keys sends key presses: "j", "enter", "tab", "esc", "?", "/"…
func press(m *Model, keys ...string) {
	for _, k := range keys {
		m.Update(keyMsg(k))
	}
}

func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "f1":
		return tea.KeyMsg{Type: tea.KeyF1}
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "shift+tab":
		return tea.KeyMsg{Type: tea.KeyShiftTab}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "space":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	case "backspace":
		return tea.KeyMsg{Type: tea.KeyBackspace}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// selectEndpoint moves the fleet table's cursor to the named endpoint's
// row with the keys a user would press.
func selectEndpoint(t *testing.T, m *Model, name string) {
	t.Helper()
	press(m, "g", "j")
	for range m.fleet.rows {
		if r, ok := m.fleet.selected(); ok && r.sub < 0 && m.fr.Endpoints[r.ep].Name == name {
			return
		}
		press(m, "j")
	}
	t.Fatalf("no row %s", name)
}
