package diagnose

import (
	"fmt"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// A target that joins or leaves while vtop watches is in the frames'
// roster, newest first, for RosterShown: a departure with its last values,
// so its row can stay (dimmed) instead of silently vanishing.
func TestRosterJoinsAndDepartures(t *testing.T) {
	e := New(Config{Window: time.Minute, Interval: time.Second, RosterShown: 5 * time.Minute}, []TargetInfo{{Name: "a"}, {Name: "b"}})
	n := sources.NewNormalizer()
	s := scrape(t, n, t0, base)
	s.Target = "b"
	e.Ingest(1, s)
	if fr := e.Frame(t0); len(fr.Roster) != 0 || !fr.Newest.Equal(t0) {
		t.Fatalf("the fleet as opened is no news: %+v, newest %v", fr.Roster, fr.Newest)
	}
	// Each change is dated by the first frame that shows it (a recording
	// keeps frames' times, so a replay dates it the same).
	c := e.JoinTarget(TargetInfo{Name: "c"})
	e.Frame(t0.Add(10 * time.Second))
	e.LeaveTarget(1, t0.Add(19*time.Second))
	e.Frame(t0.Add(20 * time.Second))
	fr := e.Frame(t0.Add(30 * time.Second))
	if len(fr.Endpoints) != 2 || fr.Endpoints[0].Name != "a" || fr.Endpoints[c-1].Name != "c" {
		t.Fatalf("endpoints after the changes: %+v", fr.Endpoints)
	}
	if len(fr.Roster) != 2 {
		t.Fatalf("roster %+v", fr.Roster)
	}
	left, joined := fr.Roster[0], fr.Roster[1]
	if left.Name != "b" || left.Joined || !left.At.Equal(t0.Add(20*time.Second)) || left.Last == nil ||
		!left.Last.LastSuccess.Equal(t0) || left.Last.Stats.Running != 8 {
		t.Errorf("departure %+v (last %+v)", left, left.Last)
	}
	if joined.Name != "c" || !joined.Joined || !joined.At.Equal(t0.Add(10*time.Second)) || joined.Last != nil {
		t.Errorf("arrival %+v", joined)
	}
	// Back under the same name: its row is back, the "left" line goes.
	e.JoinTarget(TargetInfo{Name: "b"})
	fr = e.Frame(t0.Add(40 * time.Second))
	if len(fr.Roster) != 2 || fr.Roster[0].Name != "b" || !fr.Roster[0].Joined || fr.Roster[1].Name != "c" {
		t.Errorf("after b came back: %+v", fr.Roster)
	}
	// Gone from the frames after RosterShown.
	if fr := e.Frame(t0.Add(10*time.Second + 5*time.Minute)); len(fr.Roster) != 1 || fr.Roster[0].Name != "b" {
		t.Errorf("after 5m: %+v", fr.Roster)
	}
	if fr := e.Frame(t0.Add(time.Hour)); len(fr.Roster) != 0 {
		t.Errorf("after an hour: %+v", fr.Roster)
	}
}

// A fleet replacing thousands of pods keeps the newest events and counts
// the rest.
func TestRosterBounded(t *testing.T) {
	e := New(Config{}, nil)
	for i := range 1000 {
		e.JoinTarget(TargetInfo{Name: fmt.Sprint("pod-", i)})
	}
	fr := e.Frame(t0.Add(time.Second))
	if len(fr.Roster) != maxRoster || fr.RosterMore != 1000-maxRoster || fr.Roster[0].Name != "pod-999" {
		t.Errorf("%d events, %d more, newest %q", len(fr.Roster), fr.RosterMore, fr.Roster[0].Name)
	}
}
