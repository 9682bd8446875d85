package diagnose

import (
	"slices"
	"time"
)

// RosterEvent is a target that joined or left the fleet while vtop
// watched (discovery, or series appearing in a TSDB). Frames carry the
// recent ones so a fleet that changes under the operator says so.
type RosterEvent struct {
	Name   string
	Joined bool // false: it left
	At     time.Time
	// Last is a departed target's view when it left (its last values,
	// shown dimmed); nil for a join.
	Last *EndpointView
}

// maxRoster bounds the events kept: a fleet replacing thousands of pods
// at once shows the newest and counts the rest.
const maxRoster = 64

// roster is the engine's recent joins and departures, oldest first.
type roster struct {
	events  []RosterEvent
	dropped int // events pushed out by maxRoster, for the count
}

func (r *roster) add(ev RosterEvent) {
	// A target back under the same name has its row again: the "left"
	// line goes.
	if ev.Joined {
		r.events = slices.DeleteFunc(r.events, func(x RosterEvent) bool { return !x.Joined && x.Name == ev.Name })
	}
	r.events = append(r.events, ev)
	if n := len(r.events) - maxRoster; n > 0 {
		r.events = slices.Delete(r.events, 0, n)
		r.dropped += n
	}
}

// recent is the events within shown of now, newest first. An event is
// stamped with the first frame that shows it, not the batch that brought
// it: a recording keeps frames' times, not batches', so a replay then
// dates a join or a departure exactly as it was seen live.
func (r *roster) recent(now time.Time, shown time.Duration) []RosterEvent {
	for j := len(r.events) - 1; j >= 0 && r.events[j].At.IsZero(); j-- {
		r.events[j].At = now
	}
	i := 0
	for i < len(r.events) && now.Sub(r.events[i].At) >= shown {
		i++
	}
	r.events = r.events[i:]
	if len(r.events) == 0 {
		r.dropped = 0
		return nil
	}
	out := slices.Clone(r.events)
	slices.Reverse(out)
	return out
}

// JoinTarget adds a target that appeared while running (not one known at
// the start) and notes when, for the frames' roster.
func (e *Engine) JoinTarget(t TargetInfo) int {
	i := e.AddTarget(t)
	e.roster.add(RosterEvent{Name: t.Name, Joined: true})
	return i
}

// LeaveTarget forgets target i, gone at at (the targets after it move
// down one index); its last view stays in the frames' roster for
// Config.RosterShown.
func (e *Engine) LeaveTarget(i int, at time.Time) {
	if i < 0 || i >= len(e.eps) {
		return
	}
	ep := e.eps[i]
	if ep.dirty {
		e.derive(ep, ep.lastSuccess)
	}
	v := e.view(i, ep, at)
	v.Index = -1
	e.roster.add(RosterEvent{Name: ep.name, Last: &v})
	e.eps = append(e.eps[:i], e.eps[i+1:]...)
}
