package detect_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
)

// TestRunawayAnswersNamed: an upgrade's chat template drops the model's
// end-of-turn token from the stop set, a minute after vtop opened on a
// busy replica: two answers in five never end on their own and run on to
// max_tokens. vtop said "workload changed: output mean 221 → 464 tokens
// (×2.1)", a traffic question, and a 14B's thrashing KV cache "after
// prompt tokens/s ×2.5", "lower --max-num-seqs 256 → 124". The clients
// asked for what they did: answers that end at the limit while answers
// grow longer are the model's doing. Named as such within a minute, dated
// near the change, never as traffic, and the KV advice says the answers
// first with no flag heading it. The clients capping answers at 128
// tokens (more cut, shorter) and asking for longer answers (fewer cut)
// are traffic: never named so.
func TestRunawayAnswersNamed(t *testing.T) {
	const onset = 4 * time.Minute
	qwen := sim.LookupModel("Qwen/Qwen2.5-14B-Instruct")
	for _, c := range []struct {
		name     string
		profile  string
		model    sim.Model
		dp       int
		scenario string
		want     bool
	}{
		{"latest 8B", "latest", sim.Model{}, 0, "runaway-answers", true},
		{"latest 8B, 2 engines", "latest", sim.Model{}, 2, "runaway-answers", true},
		{"0.11 14B", "v0.11", qwen, 0, "runaway-answers", true},
		{"V0 8B", "v0.6", sim.Model{}, 0, "runaway-answers", true},
		{"clients cap at 128", "latest", sim.Model{}, 0, "max-tokens-lowered", false},
		{"clients cap at 128, 14B", "v0.11", qwen, 0, "max-tokens-lowered", false},
		{"longer answers asked", "latest", sim.Model{}, 0, "long-answers", false},
		{"longer answers asked, 14B", "v0.11", qwen, 0, "long-answers", false},
	} {
		t.Run(c.name+"/"+c.scenario, func(t *testing.T) {
			p := busyThen(t, c.profile, c.model, c.dp, c.scenario, onset)
			at := p.fleet.Now().Add(onset - p.fleet.Elapsed())
			var named time.Duration = -1
			last, toldTraffic := "", false
			traffic, kv, answersFirst := 0, 0, 0
			for p.fleet.Elapsed() < onset+3*time.Minute {
				f := p.step()
				since := p.fleet.Elapsed() - onset
				for _, fd := range append(f.Findings, f.Pending...) {
					switch fd.Rule {
					case "runaway_answers":
						if !c.want {
							t.Fatalf("at %v: %s", since, format.Say(fd.Summary))
						}
						if named < 0 {
							named = since
							t.Logf("named at %v: %s → %s", since, format.Say(fd.Summary), format.Say(fd.Action))
						}
						last = format.Say(fd.Summary)
					case "workload_shift":
						s := format.Say(fd.Summary)
						toldTraffic = toldTraffic || strings.Contains(s, "output mean")
						if c.want && fd.State == diagnose.FindingFiring && (strings.Contains(s, "output mean") || strings.Contains(s, "answers cut off")) {
							traffic++
							if traffic == 1 {
								t.Errorf("at %v told as traffic: %s", since, s)
							}
						}
					case "kv_cache_thrashing", "kv_cache_saturated", "preemption":
						if since < time.Minute || fd.State == diagnose.FindingResolving {
							continue
						}
						kv++
						if strings.HasPrefix(format.Say(fd.Action), "first the answers") && len(fd.Flags) == 0 {
							answersFirst++
						} else if c.want {
							t.Logf("at %v %s: %s", since, fd.Rule, format.Say(fd.Action))
						}
					}
				}
			}
			t.Logf("named at %v; %d of %d KV findings a minute on say the answers first", named, answersFirst, kv)
			if c.want && (named < 0 || named > 75*time.Second) {
				t.Errorf("named at %v, want within 75 s", named)
			}
			// Dated at the arrival of the answers that ran away once
			// their longer mean is found (the cut share alone is seen as
			// they end, a max_tokens' decode after).
			if c.want {
				on, err := time.Parse("15:04:05", strings.TrimPrefix(strings.Fields(last)[1], ""))
				if err != nil {
					t.Fatalf("%q: %v", last, err)
				}
				want := at.UTC()
				off := time.Duration(on.Hour()-want.Hour())*time.Hour + time.Duration(on.Minute()-want.Minute())*time.Minute + time.Duration(on.Second()-want.Second())*time.Second
				t.Logf("last said %q: %v from the change", last, off)
				if off < -2*time.Second || off > 15*time.Second {
					t.Errorf("dated %v from the change", off)
				}
			}
			if !c.want && !toldTraffic {
				t.Error("the clients' change was never told as a change of traffic: the case tests nothing")
			}
			if c.want && answersFirst < kv {
				t.Errorf("%d of %d KV findings say the answers first, no flag heading them", answersFirst, kv)
			}
		})
	}
}

// TestRunawayOpenedAfterItBegan: vtop opened three minutes after the
// answers began running away has no baseline to say they changed; a
// share of answers cut at their limit that chat traffic never reads is
// said all the same, as info, within 30 s, with both readings of it. A
// healthy replica's few cut answers are not.
func TestRunawayOpenedAfterItBegan(t *testing.T) {
	for _, c := range []struct {
		scenario string
		want     bool
	}{{"runaway-answers", true}, {"healthy", false}, {"busy", false}} {
		t.Run(c.scenario, func(t *testing.T) {
			p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "replica-3", Scenarios: []sim.ScenarioSpec{{Name: c.scenario}}})
			for p.fleet.Elapsed() < 3*time.Minute {
				p.fleet.Advance(time.Second)
			}
			var named time.Duration = -1
			for k := 1; k <= 90; k++ {
				f := p.step()
				for _, fd := range f.Findings {
					if fd.Rule != "runaway_answers" {
						continue
					}
					if !c.want {
						t.Fatalf("at %ds: %s", k, format.Say(fd.Summary))
					}
					if named < 0 {
						named = time.Duration(k) * time.Second
						t.Logf("at %v: %s %s → %s", named, fd.Severity, format.Say(fd.Summary), format.Say(fd.Action))
						if fd.Severity != diagnose.SevInfo || !strings.Contains(format.Say(fd.Summary), "no baseline") {
							t.Errorf("%s: %s", fd.Severity, format.Say(fd.Summary))
						}
					}
				}
			}
			if c.want && (named < 0 || named > 30*time.Second) {
				t.Errorf("named at %v, want within 30 s", named)
			}
		})
	}
}
