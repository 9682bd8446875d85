package diagnose_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// runScenarioSeed runs one replica with scenario sc starting at start,
// through the whole path (sim → normalizer → engine) for d, and returns
// the last frame and the fleet's start time.
func runScenarioSeed(t *testing.T, sc string, start, d time.Duration, seed uint64) (*diagnose.Frame, time.Time) {
	t.Helper()
	f, err := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{{Name: "r",
		Scenarios: []sim.ScenarioSpec{{Name: sc, Delay: start}}}}}, seed)
	if err != nil {
		t.Fatal(err)
	}
	t0 := f.Now()
	norm := sources.NewNormalizer()
	eng := diagnose.New(diagnose.Config{}, []diagnose.TargetInfo{{Name: "r"}})
	for f.Elapsed() < d {
		f.Advance(time.Second)
		eng.Ingest(0, f.Replicas()[0].Scrape(norm, sim.FormatOpenMetrics))
		eng.IngestGPU(f.GPUs().Sample(context.Background()))
	}
	return eng.Frame(f.Now()), t0
}

// Workload changes written from the mechanism (the simulator changes what
// clients send, nothing else) are found with their onset, the scrape they
// begin at, and before → after: prompt length ×8, answer length ×4,
// arrivals ×2.2 and ×10. A healthy replica's bursts are no change.
func TestShiftOnsets(t *testing.T) {
	const start = 3 * time.Minute
	cases := []struct {
		scenario string
		sig      diagnose.Signal
		factor   float64       // After/Before at least (below 1: at most)
		late     time.Duration // the onset at most this after the change
	}{
		{"long-prompts", diagnose.SigPromptTok, 3, 2 * time.Second},
		// Finished requests' means, dated at their requests' arrival
		// (8 s late when dated as they finished).
		{"long-prompts", diagnose.SigPromptLen, 4, 3 * time.Second},
		{"long-answers", diagnose.SigGenLen, 3, 3 * time.Second},
		// ×2.2, about the chat traffic's own bursts (×2.5 for ~10 s):
		// where it began within a burst's length.
		{"busy", diagnose.SigArrivals, 1.8, 45 * time.Second},
		{"queue-backlog", diagnose.SigArrivals, 5, 2 * time.Second},
		{"queue-backlog", diagnose.SigTTFT, 10, 5 * time.Second}, // as the queue builds
	}
	for _, seed := range []uint64{1, 7, 11} {
		for _, c := range cases {
			fr, t0 := runScenarioSeed(t, c.scenario, start, start+3*time.Minute, seed)
			var got *diagnose.Shift
			for i, s := range fr.Endpoints[0].Shifts {
				if s.Signal == c.sig && !s.Onset.Before(t0.Add(start-30*time.Second)) {
					got = &fr.Endpoints[0].Shifts[i]
					break
				}
			}
			if got == nil {
				t.Errorf("seed %d %s: no %s change: %+v", seed, c.scenario, diagnose.SignalName(c.sig), fr.Endpoints[0].Shifts)
				continue
			}
			on := got.Onset.Sub(t0)
			t.Logf("seed %d %s: %s %s since %v (seen %v): %.3g → %.3g (×%.2f)", seed, c.scenario, got.Kind, got.Name, on, got.Detected.Sub(t0), got.Before, got.After, got.Factor())
			// The change happens at start; the first scrape that sees it is
			// start + 1 s. Within two scrape intervals (a burst just
			// before it may draw the estimate earlier).
			if on < start-2*time.Second || on > start+c.late {
				t.Errorf("seed %d %s: %s onset %v, the change began at %v", seed, c.scenario, got.Name, on, start)
			}
			if f := got.Factor(); math.IsNaN(f) || f < c.factor {
				t.Errorf("seed %d %s: %s ×%.2f, want ≥ ×%g", seed, c.scenario, got.Name, f, c.factor)
			}
		}
		fr, _ := runScenarioSeed(t, "healthy", 0, 15*time.Minute, seed)
		for _, s := range fr.Endpoints[0].Shifts {
			t.Errorf("seed %d healthy: %s %s %.3g → %.3g at %v", seed, s.Kind, s.Name, s.Before, s.After, s.Onset)
		}
	}
}

// Onsets are dated from the mechanism, within two scrape intervals (2 s
// at these 1 s scrapes) of the change, rise and fall alike, over 30 seeds:
// arrivals as counts split where the level changed (a burst before or
// after the change is a segment of its own), lengths at their requests'
// arrival (finish less e2e), not when the longer answers finished, shares
// weighed by the counts behind them. The shares are what the data allow:
// a ×2.2 rate at ~3 requests/s amid ×2.5 bursts is ambiguous by a few
// seconds on some seeds. Output means are placed in two parts, the
// quicker requests and the slower, each at its own arrival (a ÷4 answer
// length's first finished means mix new short answers with old long ones
// still draining: placed whole at their mean arrival, short-answers was
// dated within 2 s on 14 of 30, long-answers on 24). Dated as before (a step from the
// baseline near the CUSUM's start, means as they finished): busy 13 of 24
// within 2 s, traffic-drop 2 of 5, long-answers 8 of 30, short-answers 10
// of 30, prompt mean 6 of 30. Prompt tokens/s is dated as before (22 of
// 29): a bound against regression, not a gain. Shares as equal ratios:
// prefix hit rate 19 of 20 (long prompts; 7 of them at or before the
// change, where no longer prompt had been prefilled) and 28 of 30 (prefix
// made unique), aborts 24 of 30.
func TestShiftOnsetsWithinTwoScrapes(t *testing.T) {
	const start, seeds = 3 * time.Minute, 30
	cases := []struct {
		scenario string
		sig      diagnose.Signal
		share    float64 // of the changes found, within 2 s at least
		// after is when the data can first move: the change's first
		// effect on the signal (abort-storm's clients give up after 4 s).
		after time.Duration
	}{
		{"busy", diagnose.SigArrivals, 0.65, 0},
		{"traffic-drop", diagnose.SigArrivals, 1, 0},
		{"long-answers", diagnose.SigGenLen, 0.85, 0},
		{"short-answers", diagnose.SigGenLen, 0.9, 0},
		{"long-prompts", diagnose.SigPromptLen, 0.9, 0},
		{"long-prompts", diagnose.SigPromptTok, 0.75, 0},
		{"long-prompts", diagnose.SigPrefixHit, 0.9, 0},
		{"prefix-cache-miss", diagnose.SigPrefixHit, 0.9, 0},
		{"abort-storm", diagnose.SigAbort, 0.9, 4 * time.Second},
	}
	for _, c := range cases {
		var found, near int
		var offs []string
		for seed := uint64(1); seed <= seeds; seed++ {
			fr, t0 := runScenarioSeed(t, c.scenario, start, start+90*time.Second, seed)
			for _, s := range fr.Endpoints[0].Shifts {
				if s.Signal != c.sig || s.Detected.Before(t0.Add(start)) {
					continue
				}
				found++
				off := s.Onset.Sub(t0.Add(start + c.after))
				offs = append(offs, fmt.Sprintf("%.1f", off.Seconds()))
				if off.Abs() <= 2*time.Second {
					near++
				}
				if s.Onset.After(s.Detected) {
					t.Errorf("%s seed %d: %s dated %v, after its detection %v", c.scenario, seed, s.Name, off, s.Detected.Sub(t0.Add(start)))
				}
				break
			}
		}
		t.Logf("%s %s: %d of %d found within 2 s; onsets less the change (plus after), s: %s", c.scenario, diagnose.SignalName(c.sig), near, found, strings.Join(offs, " "))
		if found == 0 || float64(near) < c.share*float64(found) {
			t.Errorf("%s %s: %d of %d within 2 s of the change, want %.0f %%", c.scenario, diagnose.SignalName(c.sig), near, found, 100*c.share)
		}
	}
}

// runReplica runs one replica with the scenarios specs, scraped every
// step through the whole path (sim → normalizer → engine) for d, and
// returns the last frame and the fleet's start time.
func runReplica(t *testing.T, specs []sim.ScenarioSpec, step, d time.Duration, seed uint64) (*diagnose.Frame, time.Time) {
	t.Helper()
	f, err := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{{Name: "r", Scenarios: specs}}}, seed)
	if err != nil {
		t.Fatal(err)
	}
	t0 := f.Now()
	norm := sources.NewNormalizer()
	eng := diagnose.New(diagnose.Config{}, []diagnose.TargetInfo{{Name: "r"}})
	for f.Elapsed() < d {
		f.Advance(step)
		eng.Ingest(0, f.Replicas()[0].Scrape(norm, sim.FormatOpenMetrics))
		eng.IngestGPU(f.GPUs().Sample(context.Background()))
	}
	return eng.Frame(f.Now()), t0
}

// Scenarios where the workload does not change keep no change of the
// workload at the end of 15 minutes, over 10 seeds at 1 s and 5 s
// scrapes: chat traffic's bursts (healthy), a request every ten seconds
// and a few bad requests; a periodic batch job's bursts over longer
// (TestShiftBatchJobStaysQuiet).
func TestShiftQuietScenariosStayQuiet(t *testing.T) {
	for _, sc := range []string{"healthy", "night-trickle", "stray-bad-requests"} {
		quietScenario(t, sc, 15*time.Minute, 10, 10)
	}
}

// A periodic batch job on top of chat traffic (batch-job-bursts: 8x for
// about 4 s, about every 40 s, now and then for 20 s; a healthy fleet)
// keeps no change of the workload over 30 min, on 20 seeds at 1 s
// scrapes and 60 at 5 s: what an on-call engineer sees every night.
// Before (09f4396), 6 were kept at 1 s and 5 at 5 s on seeds 1-20, and
// 37 at 5 s on seeds 21-60: the abort share of the few requests finished
// while a burst queued (those stopped by their users finish first: one
// of one a scrape), bursts close together read as a level since a rise
// ended (30 s is a handful of levels between bursts), a burst at the end
// of that span read as the level, prompt tokens/s judged on its own
// lumpy level, and the output mean of the one request finished in a
// scrape a burst drained. At 1 s, seeds 21-60 kept 12 (38 before):
// output means of a drain, and rises whose level before read low
// (TestShiftBatchJobTrafficJudgedBetweenBursts); now 2, both seed 53's
// output means, the replica opened inside a start-up burst.
// Under the race detector, 10 and 20 seeds (20 at each took 92 s).
func TestShiftBatchJobStaysQuiet(t *testing.T) {
	at1s, at5s := uint64(20), uint64(60)
	if raceOn {
		at1s, at5s = 10, 20
	}
	quietScenario(t, "batch-job-bursts", 30*time.Minute, at1s, at5s)
}

// A batch job's bursts keep no change of the traffic where the level
// between them has not moved (batch-job-bursts at 1 s scrapes). Seeds 25
// and 49: a rise of 30 s, opened with the latency a burst lifted and
// ended, was kept: the level between bursts before it read 2.2 and 2.4/s
// on 3.0/s (the segments' level below which half their time was spent,
// a few lulls cut out), and the level after it, 3.0 and 3.3/s, a clear
// rise on that; judged against the blocks' baseline too (the traffic
// between bursts), it is forgotten. Seed 53: the replica opened inside a
// burst of 34 s, and its end, a fall of arrivals from 22.5 to 3.5/s, was
// opened with the output mean 22 s after, short of its hold, and kept:
// at its hold, the baseline learned for less time before the fall than
// the fall had lasted, it would have been taken as the baseline
// (rebase), so it is not opened before. (Seed 53's output means are a
// matter of lengths, not judged here.)
func TestShiftBatchJobTrafficJudgedBetweenBursts(t *testing.T) {
	for _, seed := range []uint64{25, 49, 53} {
		fr, t0 := runReplica(t, []sim.ScenarioSpec{{Name: "batch-job-bursts"}}, time.Second, 12*time.Minute, seed)
		for _, s := range fr.Endpoints[0].Shifts {
			if s.Signal != diagnose.SigArrivals && s.Signal != diagnose.SigPromptTok {
				continue
			}
			what := fmt.Sprintf("seed %d: %s %.3g → %.3g since %v, seen %v, ended %v", seed, s.Name, s.Before, s.After, s.Onset.Sub(t0), s.Detected.Sub(t0), s.Ended.Sub(t0))
			if s.After > s.Before && (s.Ended.IsZero() || fr.Time.Sub(s.Ended) <= time.Minute) {
				t.Logf("%s: reported while it lasts", what)
				continue
			}
			t.Errorf("%s: kept as a change of the traffic", what)
		}
	}
}

// quietScenario runs scenario sc for d over seeds 1 to at1s at 1 s
// scrapes and 1 to at5s at 5 s, and fails on every change of the
// workload kept at the end. A
// rise of traffic is reported while it lasts (TestShiftBurstOutlasting-
// TheHoldForgotten): one open, or ended and not yet judged (twice
// shiftSettle after its end), is logged, not counted.
func quietScenario(t *testing.T, sc string, d time.Duration, at1s, at5s uint64) {
	t.Helper()
	for _, step := range []time.Duration{time.Second, 5 * time.Second} {
		seeds := at1s
		if step > time.Second {
			seeds = at5s
		}
		kept, pending := 0, 0
		for seed := uint64(1); seed <= seeds; seed++ {
			fr, t0 := runReplica(t, []sim.ScenarioSpec{{Name: sc}}, step, d, seed)
			for _, s := range fr.Endpoints[0].Shifts {
				if s.Kind != diagnose.ShiftWorkload {
					continue
				}
				what := fmt.Sprintf("%s %v seed %d: %s %.3g → %.3g since %v, ended %v", sc, step, seed, s.Name, s.Before, s.After, s.Onset.Sub(t0), s.Ended.Sub(t0))
				if rise := (s.Signal == diagnose.SigArrivals || s.Signal == diagnose.SigPromptTok) && s.After > s.Before; rise &&
					(s.Ended.IsZero() || fr.Time.Sub(s.Ended) <= time.Minute) {
					pending++
					t.Logf("%s: reported while it lasts", what)
					continue
				}
				kept++
				t.Errorf("%s: kept as a change of the workload", what)
			}
		}
		t.Logf("%s at %v: %d workload changes kept over %d seeds x %v, %d rises not yet judged", sc, step, kept, seeds, d, pending)
	}
}

// A x2.2 rise of the chat traffic under a periodic batch job's bursts
// (batch-job-bursts, then busy at 4 min) is found, the level between the
// bursts judged against its own spread: the bursts are a second process
// on top of the chat traffic, and the blocks of arrivals leave them out.
// Before, the baseline learned over 8x bursts had a spread (about 0.85
// in log space at 1 s scrapes, 0.5 over blocks) near or above the change
// itself (0.79), and the blocks' baseline, lifted by the bursts to
// 4.2/s, was within the least change (x1.8) of the new 6.6/s: found on 5
// of these 10 seeds at each interval, 1 within two scrapes, the others a
// minute or more late (seeds 1-60: 43 and 36 found, 21 and 24 within two
// scrapes; now 54 and 59, 32 and 50). At 1 s scrapes the rise is dated
// as the counts allow (a burst just before it at the new level's rate).
func TestShiftRiseUnderRecurringBursts(t *testing.T) {
	const change, seeds = 4 * time.Minute, 10
	for _, c := range []struct {
		step                time.Duration
		wantFound, wantNear int
	}{{time.Second, 9, 2}, {5 * time.Second, 9, 8}} {
		step := c.step
		found, near := 0, 0
		var offs []string
		for seed := uint64(1); seed <= seeds; seed++ {
			fr, t0 := runReplica(t, []sim.ScenarioSpec{{Name: "batch-job-bursts"}, {Name: "busy", Delay: change}}, step, change+3*time.Minute, seed)
			for _, s := range fr.Endpoints[0].Shifts {
				if s.Signal != diagnose.SigArrivals || !(s.After > s.Before) || s.Detected.Before(t0.Add(change)) {
					continue
				}
				found++
				off := s.Onset.Sub(t0.Add(change))
				offs = append(offs, fmt.Sprintf("%.0f", off.Seconds()))
				if off.Abs() <= 2*step {
					near++
				}
				break
			}
		}
		t.Logf("%v: the rise found on %d of %d seeds, %d within two scrapes; onsets less the change, s: %s", step, found, seeds, near, strings.Join(offs, " "))
		// Now 10 found at each interval, 3 (1 s) and 10 (5 s) within two
		// scrapes.
		if found < c.wantFound || near < c.wantNear {
			t.Errorf("%v: the x2.2 rise under the bursts found on %d of %d seeds, %d within two scrapes: want %d and %d", step, found, seeds, near, c.wantFound, c.wantNear)
		}
	}
}

// The finished requests' means while a batch job's burst drains are no
// change of lengths: its first requests to finish are its short ones, a
// few a second, while the rest wait (batch-job-bursts at 1 s scrapes:
// output means of 3 to 77 tokens on a baseline of 204, seed 56 at
// 24m42s, and on seeds 36, 42 and 59, each opened with the TTFT the burst
// lifted and kept as a fall of the output mean; its arrivals' recent
// level short of draining's gate).
func TestShiftBurstDrainIsNoChangeOfLengths(t *testing.T) {
	for _, seed := range []uint64{36, 42, 56, 59} {
		fr, t0 := runReplica(t, []sim.ScenarioSpec{{Name: "batch-job-bursts"}}, time.Second, 26*time.Minute, seed)
		for _, s := range fr.Endpoints[0].Shifts {
			if s.Signal == diagnose.SigGenLen || s.Signal == diagnose.SigPromptLen {
				t.Errorf("seed %d: %s %.3g → %.3g since %v (seen %v, ended %v)", seed, s.Name, s.Before, s.After, s.Onset.Sub(t0), s.Detected.Sub(t0), s.Ended.Sub(t0))
			}
		}
	}
}

// At a request every ten seconds (night-trickle) a share rests on a
// handful of prompts: a run of a few short prompts whose shared prefix was
// cached is no change of the prefix hit rate (seeds 34, 45 and 58 at 1 s
// and 34 at 5 s, 15 min, each kept one before a share's change had to
// clear the spread of a share of as many whole prompts: seed 45, 0.149 ->
// 0.59 over 7 prompts, kept at 0.33 and never ended).
func TestShiftNightTricklePrefixIsNoChange(t *testing.T) {
	for _, c := range []struct {
		seed uint64
		step time.Duration
	}{{34, time.Second}, {45, time.Second}, {58, time.Second}, {34, 5 * time.Second}} {
		fr, t0 := runReplica(t, []sim.ScenarioSpec{{Name: "night-trickle"}}, c.step, 15*time.Minute, c.seed)
		for _, s := range fr.Endpoints[0].Shifts {
			if s.Signal == diagnose.SigPrefixHit {
				t.Errorf("seed %d at %v: %s %.3g → %.3g since %v", c.seed, c.step, s.Name, s.Before, s.After, s.Onset.Sub(t0))
			}
		}
	}
}
