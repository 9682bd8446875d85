package diagnose_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/ui/format"
)

// The fleet's timeline holds, in time order, a prompt-length change on one
// replica, the crash loop's restarts on another, and a third replica
// leaving the fleet (as discovery or a Prometheus refresh says it), each
// at its time; an endpoint's own timeline holds only its events.
func TestTimelineOrdersTheFleet(t *testing.T) {
	f, err := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{
		{Name: "prompts", Scenarios: []sim.ScenarioSpec{{Name: "long-prompts", Delay: 3 * time.Minute}}},
		{Name: "crash", Scenarios: []sim.ScenarioSpec{{Name: "crash-loop", Delay: time.Minute}}},
		{Name: "leaving", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
	}}, 7)
	if err != nil {
		t.Fatal(err)
	}
	t0 := f.Now()
	var infos []diagnose.TargetInfo
	var norms []*sources.Normalizer
	for _, r := range f.Replicas() {
		infos = append(infos, diagnose.TargetInfo{Name: r.Name()})
		norms = append(norms, sources.NewNormalizer())
	}
	eng := diagnose.New(diagnose.Config{}, infos)
	const leaveAt = 4 * time.Minute
	left := false
	for f.Elapsed() < 5*time.Minute {
		f.Advance(time.Second)
		if !left && f.Elapsed() >= leaveAt {
			eng.LeaveTarget(2, f.Now())
			eng.Frame(f.Now()) // a departure is dated by the first frame that shows it
			left = true
		}
		for i, r := range f.Replicas() {
			if left && i == 2 {
				continue
			}
			s := sources.Scrape{Target: r.Name(), Time: f.Now()}
			if !r.Reachable() {
				s.Err = errors.New("connection refused (is vLLM running on this port?)")
			} else {
				s.Data, s.Err = norms[i].Normalize(r.Exposition(sim.FormatText), sim.FormatText.ContentType())
			}
			eng.Ingest(i, s)
		}
	}
	fr := eng.Frame(f.Now())
	tl := diagnose.Timeline(fr, "")
	var kinds []string
	seen := map[string]time.Duration{}
	for i, ev := range tl {
		if i > 0 && ev.Time.Before(tl[i-1].Time) {
			t.Errorf("out of order at %d: %v after %v", i, ev.Time, tl[i-1].Time)
		}
		k := ev.Target + " " + ev.Kind.String()
		if _, ok := seen[k]; !ok {
			seen[k] = ev.Time.Sub(t0)
		}
		kinds = append(kinds, ev.Time.Sub(t0).String()+" "+k+" "+format.Say(ev.Text))
	}
	t.Logf("timeline:\n%s", strings.Join(kinds, "\n"))
	for _, c := range []struct {
		key      string
		from, to time.Duration
	}{
		{"crash restart", time.Minute + 59*time.Second, 2*time.Minute + 2*time.Second}, // killed at 1m40s, serving again at 2m
		{"prompts workload", 3*time.Minute - 2*time.Second, 3*time.Minute + 2*time.Second},
		{"leaving left", leaveAt, leaveAt + time.Second},
	} {
		at, ok := seen[c.key]
		if !ok || at < c.from || at > c.to {
			t.Errorf("%q at %v (found %v), want within [%v, %v]", c.key, at, ok, c.from, c.to)
		}
	}
	sameTimelines(t, fr)
	for _, ev := range diagnose.Timeline(fr, "prompts") {
		if ev.Target != "prompts" {
			t.Errorf("prompts' timeline holds %s's %s", ev.Target, ev.Kind)
		}
	}
}

// sameTimelines checks Timelines against Timeline asked endpoint by
// endpoint, the way the JSON report asked before.
func sameTimelines(t *testing.T, fr *diagnose.Frame) {
	t.Helper()
	got := diagnose.Timelines(fr)
	if len(got) != len(fr.Endpoints) {
		t.Fatalf("%d timelines for %d endpoints", len(got), len(fr.Endpoints))
	}
	for i := range fr.Endpoints {
		if want := diagnose.Timeline(fr, fr.Endpoints[i].Name); !reflect.DeepEqual(got[i], want) {
			t.Errorf("endpoint %d (%q): Timelines gives %v, Timeline %v", i, fr.Endpoints[i].Name, got[i], want)
		}
	}
}

// Timelines agrees with Timeline on what the simulated fleet seldom
// makes: a name held by two endpoints, roster events of names no endpoint
// has, more events than TimelineMax, equal times (the stable order), an
// endpoint named "" (Timeline's word for the fleet).
func TestTimelinesMatchTimeline(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	restarts := func(n int, step time.Duration) []diagnose.Restart {
		var out []diagnose.Restart
		for i := range n {
			out = append(out, diagnose.Restart{At: t0.Add(time.Duration(n-i) * step), RSSBefore: math.NaN(), RSSAfter: math.NaN(),
				GPUMemBefore: math.NaN(), GPUMemAfter: math.NaN()})
		}
		return out
	}
	fr := &diagnose.Frame{
		Endpoints: []diagnose.EndpointView{
			{Name: "a", Restarts: restarts(3, time.Minute)},
			{Name: "b", Restarts: restarts(50, time.Second)},
			{Name: "a", Restarts: restarts(40, 2*time.Second)},
			{Name: "c"},
			{Name: "", Restarts: restarts(2, time.Second)},
		},
		Roster: []diagnose.RosterEvent{
			{Name: "b", Joined: true, At: t0.Add(10 * time.Second)},
			{Name: "gone", At: t0.Add(5 * time.Second)},
			{Name: "c", Joined: true, At: t0},
			{Name: "a", At: t0.Add(time.Minute)},
			{Name: "b", At: t0.Add(20 * time.Second)},
		},
	}
	sameTimelines(t, fr)
}
