package detect_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
)

// Clients that give up in a queue did not change what they send: once the
// queue time reaches their timeout, the abort share climbs and the output
// mean of finished requests falls (aborted requests end early; of the
// rest only answers short enough to end before the timeout complete).
// That is the queue's doing, said by the queue backlog and abort
// findings; "Workload changed … a traffic question" named it a change of
// traffic. Watched from the start (the failover that builds the queue is
// before any baseline), on the 8B and 14B models and on V0, no workload
// change names the abort share or the output mean. Clients that abort
// without a queue (abort-storm, from 3 minutes) are still a change of
// what the traffic does.
func TestAbortsFromTheQueueAreNotAWorkloadChange(t *testing.T) {
	cases := []struct {
		name string
		rc   sim.ReplicaConfig
	}{
		{"8B", sim.ReplicaConfig{Scenarios: []sim.ScenarioSpec{{Name: "queue-backlog"}}}},
		{"14B", sim.ReplicaConfig{Model: sim.LookupModel("Qwen/Qwen2.5-14B-Instruct"), Scenarios: []sim.ScenarioSpec{{Name: "queue-backlog"}}}},
		{"V0", sim.ReplicaConfig{Profile: "v0.6", Scenarios: []sim.ScenarioSpec{{Name: "queue-backlog"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.rc.Name = "replica-3"
			p := newScenarioPipeline(t, c.rc)
			gaveUp := false
			for p.fleet.Elapsed() < 9*time.Minute {
				f := p.step()
				for i := range f.Findings {
					fd := &f.Findings[i]
					if fd.Rule == "high_abort_rate" {
						gaveUp = true
					}
					if fd.Rule != "workload_shift" {
						continue
					}
					if s := format.Say(fd.Summary); strings.Contains(s, "abort share") || strings.Contains(s, "output mean") {
						t.Fatalf("%s: clients giving up in the queue named a change of traffic: %s", p.fleet.Elapsed(), s)
					}
				}
			}
			if !gaveUp {
				t.Fatal("the clients never gave up: the case tests nothing")
			}
		})
	}
	t.Run("abort-storm", func(t *testing.T) {
		t.Parallel()
		p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Scenarios: []sim.ScenarioSpec{{Name: "abort-storm", Delay: 3 * time.Minute}}})
		for p.fleet.Elapsed() < 7*time.Minute {
			f := p.step()
			for i := range f.Findings {
				if fd := &f.Findings[i]; fd.Rule == "workload_shift" && strings.Contains(format.Say(fd.Summary), "abort share") {
					t.Logf("%s: %s", p.fleet.Elapsed(), format.Say(fd.Summary))
					return
				}
			}
		}
		t.Fatal("abort-storm: no workload change names the abort share")
	})
}

// TestRetriesNamedInTheRise: a client with a 4 s timeout that sends again
// half of what times out (abort-storm: its own rate ×1.5, longer answers)
// raised arrivals ×3.2, 5.7/s → 18/s, with 96 % of finished requests
// aborted: "a traffic question: find the client". Two thirds of the rise
// were its retries, more as latency grew. The change now says how much of
// the rise the aborted requests can account for, and the client's
// timeout and retries as what to find. A rise with no aborts (busy) and
// one of prompts (long-prompts) say nothing of retries.
func TestRetriesNamedInTheRise(t *testing.T) {
	qwen := sim.LookupModel("Qwen/Qwen2.5-14B-Instruct")
	// The 14B's chat traffic is a few requests a second: busy below it
	// (a rise at fewer is found later, TestShiftRiseAtFewArrivalsAScrape).
	for _, c := range []struct {
		base, scenario string
		model          sim.Model
		want           bool
	}{{"healthy", "abort-storm", sim.Model{}, true}, {"busy", "abort-storm", qwen, true}, {"healthy", "abort-storm-llmd", sim.Model{}, true},
		{"healthy", "busy", sim.Model{}, false}, {"healthy", "long-prompts", sim.Model{}, false}, {"busy", "long-prompts", qwen, false}} {
		t.Run(c.scenario+"/"+c.model.Name, func(t *testing.T) {
			p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Model: c.model,
				Scenarios: []sim.ScenarioSpec{{Name: c.base}, {Name: c.scenario, Delay: 4 * time.Minute}}})
			for p.fleet.Elapsed() < 3*time.Minute {
				p.fleet.Advance(time.Second)
			}
			named, retries := 0, 0
			last := ""
			for p.fleet.Elapsed() < 7*time.Minute {
				f := p.step()
				for _, fd := range f.Findings {
					if fd.Rule != "workload_shift" || fd.Target != "replica-3" {
						continue
					}
					named++
					last = format.Say(fd.Summary) + " → " + format.Say(fd.Action)
					if strings.Contains(last, "may be retries") && strings.Contains(last, "retry policy") {
						retries++
					}
				}
			}
			t.Logf("%d of %d readings name retries: %s", retries, named, last)
			switch {
			case named == 0:
				t.Fatal("no workload change: the case tests nothing")
			case c.want && retries < named*2/3, !c.want && retries > 0:
				t.Errorf("retries named in %d of %d readings", retries, named)
			}
		})
	}
}
