package diagnose

import (
	"math"
	"slices"
	"time"
)

// The incident timeline: the onsets the engine and the detector found, in
// one time-ordered list per endpoint and for the fleet, so "what changed,
// and when" reads the same in the TUI, the text report and JSON, from
// live data, a Prometheus backfill or a replay alike (all go through the
// same frames).

// EventKind says what an event of the timeline is.
type EventKind uint8

const (
	EventWorkload  EventKind = iota // a workload signal changed (a traffic question)
	EventCapacity                   // a capacity signal changed (a fault)
	EventLatency                    // what users feel changed
	EventBack                       // a changed signal came back to its baseline, or became it
	EventRestart                    // the process restarted
	EventJoined                     // a target joined the fleet
	EventLeft                       // a target left it
	EventFiring                     // a finding fired
	EventResolving                  // a finding's premise stopped holding
)

func (k EventKind) String() string {
	return [...]string{"workload", "capacity", "latency", "back", "restart", "joined", "left", "firing", "resolving"}[k]
}

// Event is one moment of the timeline.
type Event struct {
	Time     time.Time
	Target   string // the endpoint, or a GPU for a node's finding
	Kind     EventKind
	Severity Severity // findings only
	Text     Text     // "prompt tokens/s 3.6k/s → 16k/s (×4.4)"
}

// TimelineMax bounds a timeline: the newest events are kept.
const TimelineMax = 64

// Timeline is the events of one endpoint (target its name), or of the
// whole fleet (target ""), oldest first, at most TimelineMax (the newest).
// Findings grouped under a cause are told by their cause.
func Timeline(f *Frame, target string) []Event {
	var out []Event
	for i := range f.Endpoints {
		e := &f.Endpoints[i]
		if target != "" && e.Name != target {
			continue
		}
		out = appendEndpointEvents(out, e)
	}
	for _, r := range f.Roster {
		if target != "" && r.Name != target {
			continue
		}
		k := EventLeft
		if r.Joined {
			k = EventJoined
		}
		out = append(out, Event{Time: r.At, Target: r.Name, Kind: k, Text: Plain(k.String())})
	}
	// An endpoint's findings are in its view; the fleet's list adds those
	// that are nobody's (a node's GPU).
	for i := range f.Findings {
		if fd := &f.Findings[i]; target == "" && fleetOnly(f, fd) {
			out = appendFinding(out, fd)
		}
	}
	slices.SortStableFunc(out, func(a, b Event) int { return a.Time.Compare(b.Time) })
	if len(out) > TimelineMax {
		out = out[len(out)-TimelineMax:]
	}
	return out
}

// Timelines is Timeline(f, e.Name) for each endpoint e of f, in
// f.Endpoints' order, made in one pass over the frame: asked endpoint by
// endpoint, each walked every endpoint and the roster for its name (4
// million name comparisons a report at 2,000 endpoints, a fortieth of
// the run's CPU). Endpoints that share a name share their slice.
func Timelines(f *Frame) [][]Event {
	byName := make(map[string][]Event, len(f.Endpoints))
	for i := range f.Endpoints {
		e := &f.Endpoints[i]
		byName[e.Name] = appendEndpointEvents(byName[e.Name], e)
	}
	for _, r := range f.Roster {
		evs, ok := byName[r.Name]
		if !ok {
			continue
		}
		k := EventLeft
		if r.Joined {
			k = EventJoined
		}
		byName[r.Name] = append(evs, Event{Time: r.At, Target: r.Name, Kind: k, Text: Plain(k.String())})
	}
	for name, evs := range byName {
		slices.SortStableFunc(evs, func(a, b Event) int { return a.Time.Compare(b.Time) })
		if len(evs) > TimelineMax {
			byName[name] = evs[len(evs)-TimelineMax:]
		}
	}
	out := make([][]Event, len(f.Endpoints))
	for i := range f.Endpoints {
		if name := f.Endpoints[i].Name; name == "" {
			out[i] = Timeline(f, "") // "" asks for the fleet's
		} else {
			out[i] = byName[name]
		}
	}
	return out
}

// fleetOnly says a finding is not any endpoint's (a GPU no endpoint holds,
// a fleet comparison).
func fleetOnly(f *Frame, fd *Finding) bool {
	for i := range f.Endpoints {
		if f.Endpoints[i].Name == fd.Target {
			return false
		}
	}
	return true
}

func appendEndpointEvents(out []Event, e *EndpointView) []Event {
	for i := range e.Shifts {
		s := &e.Shifts[i]
		k := EventWorkload
		switch s.Kind {
		case ShiftCapacity:
			k = EventCapacity
		case ShiftSymptom:
			k = EventLatency
		}
		out = append(out, Event{Time: s.Onset, Target: e.Name, Kind: k, Text: s.Words()})
		if !s.Ended.IsZero() {
			what := " back at its baseline"
			if s.Accepted {
				what = " is the new baseline"
			}
			out = append(out, Event{Time: s.Ended, Target: e.Name, Kind: EventBack, Text: Say("%s%s", s.Name, what)})
		}
	}
	for _, r := range e.Restarts {
		out = append(out, Event{Time: r.At, Target: e.Name, Kind: EventRestart, Text: r.Words()})
	}
	for i := range e.Findings {
		out = appendFinding(out, &e.Findings[i])
	}
	return out
}

func appendFinding(out []Event, fd *Finding) []Event {
	if fd.Cause != "" || fd.State == FindingPending {
		return out
	}
	out = append(out, Event{Time: fd.FirstSeen, Target: fd.Target, Kind: EventFiring, Severity: fd.Severity, Text: Say("%s", fd.Title)})
	if !fd.ResolvingSince.IsZero() {
		out = append(out, Event{Time: fd.ResolvingSince, Target: fd.Target, Kind: EventResolving, Severity: fd.Severity, Text: Say("%s", fd.Title)})
	}
	return out
}

// Words is the change in a line: "prompt mean 1.1k tokens → 5.8k tokens (×5.4)".
func (s Shift) Words() Text {
	return Say("%s %s → %s%s", s.Name, shiftValue(s.Before, s.Unit), shiftValue(s.After, s.Unit), s.FactorWords())
}

// FactorWords is " (×5.4)" or " (÷2.6)", empty for a share.
func (s Shift) FactorWords() Text { return s.factor(" (×%s)", " (÷%s)") }

// FactorBare is the factor without parentheses (" ×4.2"), for a sentence
// that already holds the shift in parentheses; empty where unknown.
func (s Shift) FactorBare() Text { return s.factor(" ×%s", " ÷%s") }

func (s Shift) factor(up, down string) Text {
	f := s.Factor()
	switch {
	case math.IsNaN(f):
		return Text{}
	case f >= 1:
		return Say(up, Value{Kind: KindDec, Num: f, Prec: 1})
	}
	return Say(down, Value{Kind: KindDec, Num: 1 / f, Prec: 1})
}

func shiftValue(v float64, u Unit) Text {
	switch u {
	case UnitSeconds:
		return Say("%s", Value{Kind: KindSeconds, Num: v})
	case UnitRatio:
		return Say("%s", Value{Kind: KindPercent, Num: v})
	case UnitTokens:
		return Say("%s tokens", Value{Kind: KindSI, Num: v})
	case UnitPerSec:
		return Say("%s/s", Value{Kind: KindSI, Num: v})
	case UnitMHz:
		return Say("%s MHz", Value{Kind: KindDec, Num: v})
	}
	return Say("%s", Value{Kind: KindSI, Num: v})
}

// Words is the restart in a line: "restarted after 21s down; resident
// memory 4 GiB before, 1.1 GiB after".
func (r Restart) Words() Text {
	s := Plain("restarted")
	if d := r.Down(); d > 0 {
		s = s.Add(" after %s down", Value{Kind: KindDur, Num: float64(d)})
	}
	if !math.IsNaN(r.RSSBefore) && !math.IsNaN(r.RSSAfter) {
		s = s.Add("; resident memory %s before, %s after", Value{Kind: KindMem, Num: r.RSSBefore}, Value{Kind: KindMem, Num: r.RSSAfter})
	}
	if !math.IsNaN(r.GPUMemBefore) && !math.IsNaN(r.GPUMemAfter) {
		s = s.Add("; GPU memory %s before, %s after", Value{Kind: KindMem, Num: r.GPUMemBefore}, Value{Kind: KindMem, Num: r.GPUMemAfter})
	}
	if r.CacheChanged() {
		s = s.Add("; came back with %s", r.CacheWords())
	}
	return s
}

// CacheWords says the KV cache the restart changed: "a KV cache of 20k
// tokens, 432k before (--gpu-memory-utilization 0.90 → 0.27)".
func (r Restart) CacheWords() Text {
	s := Plain("another KV cache")
	if r.KVBefore > 0 && r.KVAfter > 0 {
		s = Say("a KV cache of %s tokens, %s before", Value{Kind: KindSI, Num: r.KVAfter}, Value{Kind: KindSI, Num: r.KVBefore})
	}
	var why []Text
	if !math.IsNaN(r.MemUtilBefore) && !math.IsNaN(r.MemUtilAfter) && math.Abs(r.MemUtilBefore-r.MemUtilAfter) >= 0.005 {
		why = append(why, Say("--gpu-memory-utilization %s → %s", Value{Kind: KindFixed, Num: r.MemUtilBefore, Prec: 2}, Value{Kind: KindFixed, Num: r.MemUtilAfter, Prec: 2}))
	}
	if r.DtypeBefore != "" && r.DtypeAfter != "" && r.DtypeBefore != r.DtypeAfter {
		why = append(why, Say("--kv-cache-dtype %s → %s", Str(r.DtypeBefore), Str(r.DtypeAfter)))
	}
	if len(why) > 0 {
		s = s.Cat(Plain(" (")).Cat(Join(why, "; ")).Cat(Plain(")"))
	}
	return s
}
