package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// withRoster changes fr under the operator: its last endpoint joined 40 s
// ago, two replicas left (one 25 s ago, with its last values), and the
// newest sample is 12 s old (a TSDB's scrape lag).
func withRoster(fr *diagnose.Frame) *diagnose.Frame {
	last := &fr.Endpoints[len(fr.Endpoints)-1]
	gone := fr.Endpoints[0] // its values as they were when it left
	gone.Name, gone.Findings, gone.Pending = "replica-9", nil, nil
	gone.LastSuccess = t0.Add(-31 * time.Second)
	gone2 := gone
	gone2.Name, gone2.LastSuccess = "replica-10", t0.Add(-3*time.Minute-4*time.Second)
	fr.Roster = []diagnose.RosterEvent{
		{Name: gone.Name, At: t0.Add(-25 * time.Second), Last: &gone},
		{Name: last.Name, Joined: true, At: t0.Add(-40 * time.Second)},
		{Name: gone2.Name, At: t0.Add(-3 * time.Minute), Last: &gone2},
	}
	fr.Newest = t0.Add(-12 * time.Second)
	return fr
}

// Arrivals and departures are on screen: the joined endpoint's row says
// when, the departed ones keep a dimmed row with their last values, and
// the header gives the data's age, not the frame's.
func TestGoldenFleetRoster(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		return newTestModel(withRoster(fixtureFrame(fixtureOpts{endpoints: 8, gpus: 8})), w, h, Options{})
	})
}

// A fleet too large for the table: the last line counts the changes, and
// the departed rows follow the live ones at the bottom.
func TestGoldenFleet40Roster(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		return newTestModel(withRoster(fleet40Frame()), w, h, Options{})
	})
	m := newTestModel(withRoster(fleet40Frame()), 80, 24, Options{})
	press(m, "G")
	if v := m.View(); !strings.Contains(v, "− left") || !strings.Contains(v, "replica-10") {
		t.Errorf("at the bottom, the departed rows are not shown:\n%s", v)
	}
}
