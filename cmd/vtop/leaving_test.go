package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
)

// leavingFleet: a replica that leaves the fleet at leaveAt, one in a crash
// loop from a minute in (down 20 s at each restart, never gone), and a
// steady one.
func leavingFleet() []sim.ReplicaConfig {
	return []sim.ReplicaConfig{
		{Name: "leaving", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "crash", Scenarios: []sim.ScenarioSpec{{Name: "crash-loop", Delay: time.Minute}}},
		{Name: "steady", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
	}
}

const (
	leaveAt   = 4 * time.Minute
	leaveSpan = 6 * time.Minute
)

// timelineEvent is a fleet timeline's event as the JSON report writes it.
type timelineEvent struct {
	Target, Kind, Text string
	Time               time.Time
}

// checkLeft checks a fleet timeline: "leaving left" once, within two
// scrape intervals after it stopped being scraped, and nobody else left
// (the crash-looping replica is down while it restarts, not gone). It
// returns when it left.
func checkLeft(t *testing.T, path string, tl []timelineEvent, epoch time.Time) time.Time {
	t.Helper()
	var at time.Time
	for _, ev := range tl {
		switch {
		case ev.Kind == "left" && ev.Target == "leaving" && at.IsZero():
			at = ev.Time
		case ev.Kind == "left" || ev.Kind == "joined":
			t.Errorf("%s: %s %s at %v", path, ev.Target, ev.Kind, ev.Time.Sub(epoch))
		}
	}
	if at.IsZero() {
		t.Errorf("%s: the timeline has no departure: %+v", path, tl)
		return at
	}
	t.Logf("%s: leaving left at %v", path, at.Sub(epoch))
	if on := at.Sub(epoch); on < leaveAt || on > leaveAt+2*historyStep {
		t.Errorf("%s: left at %v, it stopped being scraped at %v", path, on, leaveAt)
	}
	return at
}

// A replica that leaves the fleet is dated alike when vtop watches the
// fleet (the batches a poller with discovery makes), when it reads the
// fleet's history from a real Prometheus (--prometheus --backfill: the
// replica was there in history and is gone now), and when it replays the
// recording of that run. Prometheus tells leaving from restarting by up,
// which it writes for a configured target whether its scrape succeeds or
// not.
func TestLeavingAlikeThroughEveryPath(t *testing.T) {
	epoch := time.Now().Add(-leaveSpan).Truncate(historyStep)
	h := simHistoryLeaving(t, sim.FleetConfig{Replicas: leavingFleet()}, epoch, leaveSpan, historyStep, map[string]time.Duration{"leaving": leaveAt})

	p := replayPipeline(t, h, historyStep)
	var direct []timelineEvent
	for _, ev := range diagnose.Timeline(runToEnd(t, p), "") {
		direct = append(direct, timelineEvent{ev.Target, ev.Kind.String(), format.Say(ev.Text), ev.Time})
	}
	checkLeft(t, "direct", direct, epoch)

	url := startPrometheus(t, h, "")
	rec := filepath.Join(t.TempDir(), "leaving.vtop")
	report := func(path string, code int, out, errOut string) []timelineEvent {
		t.Helper()
		if code == 3 || errOut != "" {
			t.Fatalf("%s: exit %d: %s", path, code, errOut)
		}
		var rep struct {
			Endpoints []struct {
				Name string `json:"name"`
			} `json:"endpoints"`
			Timeline []timelineEvent `json:"timeline"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: %v\n%.2000s", path, err, out)
		}
		var names []string
		for _, e := range rep.Endpoints {
			names = append(names, e.Name)
		}
		// Gone now: not among the endpoints; the others all are.
		if slices.Sort(names); strings.Join(names, " ") != "crash steady" {
			t.Errorf("%s: endpoints %v, want crash and steady", path, names)
		}
		return rep.Timeline
	}
	code, out, errOut := runArgs(t, nil, "--once", "--prometheus", url, "--backfill", "10m", "--window", "60s",
		"--at", h.end.Format(time.RFC3339Nano), "-o", "json", "--record", rec)
	live := checkLeft(t, "prometheus", report("prometheus", code, out, errOut), epoch)

	// History that stops for every replica at once (here: where the
	// server's history ends, 15 s before the report) is not the fleet
	// leaving: the others are still there.
	tail := h.end.Add(15 * time.Second)
	time.Sleep(time.Until(tail))
	code, out, errOut = runArgs(t, nil, "--once", "--prometheus", url, "--backfill", "10m", "--window", "60s",
		"--at", tail.Format(time.RFC3339Nano), "-o", "json")
	checkLeft(t, "prometheus, 15 s past the history", report("prometheus, 15 s past the history", code, out, errOut), epoch)

	// The TUI's pipeline, backfill then live refresh, dates it alike: by
	// the first frame that shows it, and the TUI evaluates history every
	// interval and a half of it (--once every interval).
	hb, _ := startHub(t, "--prometheus", url, "--backfill", "10m", "--window", "60s", "--gpu", "none")
	deadline := time.After(time.Minute)
	var tui time.Time
	for tui.IsZero() {
		select {
		case fr := <-hb.Frames():
			for _, ev := range diagnose.Timeline(fr, "leaving") {
				if ev.Kind == diagnose.EventLeft {
					tui = ev.Time
				}
			}
		case <-deadline:
			t.Fatal("the TUI's frames showed no departure within a minute")
		}
	}
	t.Logf("tui: leaving left at %v", tui.Sub(epoch))
	if d := tui.Sub(live); d < 0 || d > historyStep*3/2 {
		t.Errorf("the TUI dates the departure %v, --once %v", tui.Sub(epoch), live.Sub(epoch))
	}

	code, out, errOut = runArgs(t, nil, "replay", "--once", "-o", "json", rec)
	if replayed := checkLeft(t, "replay", report("replay", code, out, errOut), epoch); !replayed.Equal(live) {
		t.Errorf("the replay dates the departure %v, the run it recorded %v", replayed.Sub(epoch), live.Sub(epoch))
	}
}
