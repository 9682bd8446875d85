package detect_test

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
	"github.com/vtop-dev/vtop/ui/report"
)

// The share a flag change adds is the share of the value shown beside it:
// while a --max-num-seqs value is held (the evidence moved within the
// hold's margin), "256 → 264 (+6.2%)" and "÷ 1.06" read computed from the
// unheld 272, which a reader checking the arithmetic could not reproduce.
func TestShownFlagGainMatchesItsValue(t *testing.T) {
	p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Profile: "latest", Scenarios: []sim.ScenarioSpec{{Name: "queue-backlog"}}})
	for p.fleet.Elapsed() < 3*time.Minute {
		p.fleet.Advance(time.Second)
	}
	action := regexp.MustCompile(`--max-num-seqs (\d+) → (\d+) \(\+([0-9.]+)%`)
	verdict := regexp.MustCompile(`--max-num-seqs (\d+) → (\d+) adds ([0-9.]+)%`)
	divided := regexp.MustCompile(`÷ ([0-9.]+) for the binding limit raised`)
	atof := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	checked := 0
	for k := 0; k < 120; k++ {
		f := p.step()
		ep := &f.Endpoints[0]
		line := report.VerdictLine(&ep.Verdict, false)
		if m := verdict.FindStringSubmatch(line); m != nil {
			want := (atof(m[2])/atof(m[1]) - 1) * 100
			if math.Abs(atof(m[3])-want) > 0.06 {
				t.Errorf("at %v the verdict says %s → %s adds %s%%: that value adds %.1f%%", p.fleet.Elapsed(), m[1], m[2], m[3], want)
			}
			checked++
		}
		for _, fd := range append(append([]diagnose.Finding{}, ep.Findings...), ep.Pending...) {
			m := action.FindStringSubmatch(format.Say(fd.Action))
			if m == nil {
				continue
			}
			checked++
			want := (atof(m[2])/atof(m[1]) - 1) * 100
			if math.Abs(atof(m[3])-want) > 0.06 {
				t.Errorf("at %v %s says %s → %s (+%s%%): that value adds %.1f%%", p.fleet.Elapsed(), fd.Rule, m[1], m[2], m[3], want)
			}
			if d := divided.FindStringSubmatch(format.Say(fd.Action)); d != nil && math.Abs(atof(d[1])-(1+want/100)) > 0.006 {
				t.Errorf("at %v %s divides by %s for a change that adds %.1f%%", p.fleet.Elapsed(), fd.Rule, d[1], want)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no --max-num-seqs change shown in two minutes of a queue backlog")
	}
}

// Clients that give up in a standing queue are not told to wait longer:
// with arrivals past what the engine serves, a longer timeout only
// lengthens the queue.
func TestGivingUpNotAdvisedLongerTimeouts(t *testing.T) {
	p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Profile: "latest", Scenarios: []sim.ScenarioSpec{{Name: "queue-backlog"}}})
	for p.fleet.Elapsed() < 8*time.Minute {
		p.fleet.Advance(time.Second)
	}
	seen := false
	for k := 0; k < 60; k++ {
		f := p.step()
		ep := &f.Endpoints[0]
		for _, fd := range append(append([]diagnose.Finding{}, ep.Findings...), ep.Pending...) {
			if fd.Rule != "high_abort_rate" || ep.Verdict.GaveUp == 0 {
				continue
			}
			seen = true
			if strings.Contains(format.Say(fd.Action), "timeouts longer") {
				t.Fatalf("at %v, clients giving up in the queue: %s", p.fleet.Elapsed(), format.Say(fd.Action))
			}
		}
	}
	if !seen {
		t.Fatal("no high_abort_rate finding under a giving-up verdict in a minute")
	}
}
