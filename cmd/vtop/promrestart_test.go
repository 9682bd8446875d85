package main

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// Through a live Prometheus, a crash-looping replica (up 40 s, then its
// port refuses for 20 s while the model loads, again and again) is down
// while it refuses (Prometheus' up is 0, its series stale), then up again
// with the restart counted: never "left" and "joined" again, which is how
// it read before the refresh looked at up.
func TestPrometheusRestartIsNotDeparture(t *testing.T) {
	bin := vtopBinary(t)
	urls := simFleet(t, bin, "--replicas", "2", "--scenario", "healthy", "--scenario", "crash-loop")
	var scrape strings.Builder
	scrape.WriteString("scrape_configs:\n  - job_name: vllm\n    static_configs:\n")
	for i, u := range urls {
		tg, _ := sources.ParseTarget(u)
		scrape.WriteString("      - targets: ['" + tg.Name + "']\n        labels: {namespace: sim, pod: replica-" + string(rune('0'+i)) + "}\n")
	}
	srv := startPrometheus(t, nil, scrape.String())
	waitSeries(t, srv, 2)
	hb, _ := startHubEvery(t, time.Second, "--prometheus", srv, "--gpu", "none")
	const name = "sim/replica-1"
	var down, upAgain bool
	var trace []string // replica-1's states as the frames had them, for a failure
	last := ""
	deadline := time.Now().Add(2 * time.Minute)
	for fr := range hb.Frames() {
		for _, ev := range diagnose.Timeline(fr, name) {
			if ev.Kind == diagnose.EventLeft {
				t.Fatalf("%s left at %s: a restart read as a departure", name, ev.Time.Format(time.TimeOnly))
			}
		}
		for _, e := range fr.Endpoints {
			if e.Name != name {
				continue
			}
			if st := e.State.String() + " " + e.LastError; st != last {
				trace = append(trace, fr.Time.Format(time.TimeOnly)+" "+st)
				last = st
			}
			switch {
			case e.State == diagnose.StateDown:
				if !down {
					t.Logf("down at %s: %s", fr.Time.Format(time.TimeOnly), e.LastError)
				}
				down = true
			case down && e.State == diagnose.StateUp && len(e.Restarts) > 0:
				upAgain = true
			}
		}
		if upAgain || time.Now().After(deadline) {
			break
		}
	}
	if !down || !upAgain {
		t.Errorf("%s: down %v, up again with its restart %v (in 2 minutes); its states:\n%s", name, down, upAgain, strings.Join(trace, "\n"))
	}
}
