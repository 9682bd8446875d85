package ui

import (
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

const (
	symJoined = "+"
	symLeft   = "−"
)

// roster is the fleet table's recent arrivals and departures (the frame's
// Roster): a joined endpoint's row says so while no finding does, and a
// departed one keeps a dimmed row with its last values below the live
// rows, so a fleet changing under the operator never changes silently.
type roster struct {
	joined map[string]time.Time   // endpoint name → when it joined
	gone   []diagnose.RosterEvent // departures shown (filtered), newest first
	left   int                    // departures in the frame, filtered or not
	more   int                    // older events the engine did not keep
}

// rebuild takes a frame's roster; q is the table's filter (lower case).
func (r *roster) rebuild(fr *diagnose.Frame, q string) {
	clear(r.joined)
	r.gone, r.left, r.more = r.gone[:0], 0, fr.RosterMore
	for _, ev := range fr.Roster {
		switch {
		case ev.Joined:
			if r.joined == nil {
				r.joined = map[string]time.Time{}
			}
			if _, ok := r.joined[ev.Name]; !ok { // newest first: the latest join
				r.joined[ev.Name] = ev.At
			}
		case ev.Last != nil:
			r.left++
			if q == "" || strings.Contains(strings.ToLower(ev.Name), q) {
				r.gone = append(r.gone, ev)
			}
		}
	}
}

// goneRef is the table row of departure k; goneIndex undoes it.
func goneRef(k int) rowRef { return rowRef{ep: -1 - k, sub: -1} }

func goneIndex(r rowRef) (int, bool) { return -1 - r.ep, r.ep < 0 }

// note is what a joined endpoint's finding column says while it has no
// finding: "+ joined 14:02:11".
func (r *roster) note(name string) string {
	at, ok := r.joined[name]
	if !ok {
		return ""
	}
	return symJoined + " joined " + clock(at)
}

// summary counts the changes for the table's last line when the rows do
// not all fit: "+ 3 joined · − 2 left".
func (r *roster) summary() string {
	var parts []string
	if n := len(r.joined); n > 0 {
		parts = append(parts, symJoined+" "+itoa(n)+" joined")
	}
	if r.left > 0 {
		parts = append(parts, symLeft+" "+itoa(r.left)+" left")
	}
	if r.more > 0 {
		parts = append(parts, "+"+itoa(r.more)+" older changes")
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, " · ")
}
