package ui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/vtop-dev/vtop/diagnose"
)

// common is what every panel is built with and reads: the styles, the key
// map, the frame shown, the clock, the SLO profile the screen judges by and
// the names the table gives endpoints. The Model owns it and keeps it
// current; panels hold a pointer to it and never see the Model (soft-serve's
// common.Common).
type common struct {
	st      *styles
	keys    keyMap
	fr      *diagnose.Frame // the frame shown; nil before the first
	now     time.Time
	profile diagnose.SLO      // the SLO profile chosen (o), which marks values
	short   map[string]string // endpoint name → what the table shows (shortNames)
}

// name is what the screen calls an endpoint: the table's short name.
func (c *common) name(full string) string {
	if s, ok := c.short[full]; ok {
		return s
	}
	return full
}

// component is a panel: it owns its size and its state, answers the keys
// routed to it while it has the focus, says which keys it has, and renders
// at its size. What a key asks of the screen around it comes back as an
// action, never as a call into the Model.
type component interface {
	SetSize(size)
	Update(tea.KeyMsg) action
	View() []string
	ShortHelp() []hint
}

// action is what a panel's key asks the Model to do.
type action struct {
	open     *diagnose.Finding // show this finding in full
	openRow  bool              // drill into the table's selected row
	relayout bool              // the panel's content changed size
}

// component returns the panel of pane p in the current view.
func (m *Model) component(p pane) component { return m.panels[m.mode][p] }

// Every panel is a component.
var (
	_ component = (*fleetTable)(nil)
	_ component = (*findingsPane)(nil)
	_ component = (*gpuPane)(nil)
	_ component = (*rowsPanel)(nil)
)
