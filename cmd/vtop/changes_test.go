package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/app"
	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
)

// changesFleet: a prompt-length change, an output-length change (×4) and
// an arrival-rate change (×2.2) at 4 min, a crash loop from 2 min (a
// restart a minute from 3 min), and a steady replica.
func changesFleet() []sim.ReplicaConfig {
	return []sim.ReplicaConfig{
		{Name: "prompts", Scenarios: []sim.ScenarioSpec{{Name: "long-prompts", Delay: changeAt}}},
		{Name: "answers", Scenarios: []sim.ScenarioSpec{{Name: "long-answers", Delay: changeAt}}},
		{Name: "arrivals", Scenarios: []sim.ScenarioSpec{{Name: "busy", Delay: changeAt}}},
		{Name: "crash", Scenarios: []sim.ScenarioSpec{{Name: "crash-loop", Delay: 2 * time.Minute}}},
		{Name: "steady", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
	}
}

const (
	changeAt   = 4 * time.Minute
	changeSpan = 8 * time.Minute
)

// changed is what each changed replica of changesFleet must show: a
// workload change in one of these signals by this factor at least.
var changed = map[string]struct {
	signals []diagnose.Signal
	factor  float64
}{
	"prompts":  {[]diagnose.Signal{diagnose.SigPromptTok, diagnose.SigPromptLen}, 3},
	"answers":  {[]diagnose.Signal{diagnose.SigGenLen}, 2},
	"arrivals": {[]diagnose.Signal{diagnose.SigArrivals, diagnose.SigPromptTok}, 1.5},
}

// onsetSlack is how far from the change an onset may be dated: two
// scrape intervals, for every change and every path. The fleet of
// simHistory scraped every second held two exceptions before the onsets
// were dated from the mechanism: arrivals 4m7s (a burst before the change
// and the quiet stretch after it were one segment, a baseline the burst
// had lifted, and the new level cleared it late) and the prompt change by
// the prefix hit rate 3m57s (two long prompts that missed the shared
// prefix in the seconds before the change: a share as low as after it).
func onsetSlack(step time.Duration) time.Duration { return 2 * step }

// checkChanges checks a frame of changesFleet read through one path:
// the prompt change with its onset within two scrape intervals and its
// factor, the crash loop with its restarts, the steady replica quiet, and
// the fleet's timeline holding them in time order.
func checkChanges(t *testing.T, path string, fr *diagnose.Frame, epoch time.Time, step time.Duration) {
	t.Helper()
	for _, e := range fr.Endpoints {
		switch e.Name {
		case "prompts", "answers", "arrivals":
			want := changed[e.Name]
			var lead *diagnose.Shift
			grew := false
			for i, s := range e.Shifts {
				if s.Kind == diagnose.ShiftWorkload && (lead == nil || s.Onset.Before(lead.Onset)) {
					lead = &e.Shifts[i]
				}
				grew = grew || slices.Contains(want.signals, s.Signal) && s.Factor() >= want.factor
			}
			if lead == nil {
				t.Errorf("%s: no workload change on %s: %+v", path, e.Name, e.Shifts)
				continue
			}
			for _, s := range e.Shifts {
				if s.Kind == diagnose.ShiftWorkload {
					t.Logf("%s: %s: %s since %v (seen %v)", path, e.Name, format.Say(s.Words()), s.Onset.Sub(epoch), s.Detected.Sub(epoch))
				}
			}
			on := lead.Onset.Sub(epoch)
			if slack := onsetSlack(step); on < changeAt-slack || on > changeAt+slack || !grew {
				t.Errorf("%s: %s: %s since %v, the change came at %v", path, e.Name, format.Say(lead.Words()), on, changeAt)
			}
		case "crash":
			crash := false
			for _, fd := range e.Findings {
				crash = crash || fd.Rule == "crash_loop"
			}
			t.Logf("%s: crash: %d restarts", path, len(e.Restarts))
			if len(e.Restarts) < 4 || !crash {
				t.Errorf("%s: crash: %d restarts, crash_loop %v", path, len(e.Restarts), crash)
			}
		case "steady":
			for _, s := range e.Shifts {
				t.Errorf("%s: steady changed: %s at %v", path, format.Say(s.Words()), s.Onset.Sub(epoch))
			}
		}
	}
	tl := diagnose.Timeline(fr, "")
	kinds := map[string]bool{}
	for i, ev := range tl {
		if i > 0 && ev.Time.Before(tl[i-1].Time) {
			t.Errorf("%s: timeline out of order at %d", path, i)
		}
		kinds[ev.Target+" "+ev.Kind.String()] = true
	}
	for _, want := range []string{"prompts workload", "crash restart", "crash firing"} {
		if !kinds[want] {
			t.Errorf("%s: the fleet timeline has no %q: %v", path, want, kinds)
		}
	}
}

// The same changes are found, with the same onsets, whether vtop scrapes
// the fleet (the batches a poller would make), reads its history from a
// real Prometheus (--prometheus with backfill), or replays a recording
// (replay --once -o json, whose timeline and shifts are checked in the
// JSON).
func TestChangesAlikeThroughEveryPath(t *testing.T) {
	for _, step := range []time.Duration{historyStep, time.Second} {
		t.Run(step.String(), func(t *testing.T) { changesScrapedAndBackfilled(t, step, 1) })
	}
	// Other draws of the same fleet, their bursts elsewhere: the dating
	// and the detection were not fitted to seed 1's. Seeds 4 and 5 pass
	// at both intervals, seed 3 at 5 s and seed 6 (not looked at before
	// the start-up baseline was fixed) at 1 s; seed 2 at both since a
	// rise of traffic that came back and stayed back is forgotten as a
	// burst (its steady replica's ×2.6 for 50 s outlasted the 45 s hold:
	// TestShiftBurstOutlastingTheHoldForgotten); seed 6 at 5 s since an
	// arrivals change is dated again once it has held as long again (it
	// was dated at a burst on top of it, 15 s late:
	// TestShiftRiseUnderABurstDatedAgain). Seeds 7 and 8, not looked at
	// before both fixes were made, pass at 5 s, seed 7 at 1 s too; seeds
	// 9 to 12, not looked at before arrivals were also judged over blocks
	// of scrapes, pass at 5 s (as they did without the blocks), seed 9 at
	// 1 s too since the blocks' baseline learns a block only a hold after
	// it; seeds 13 to 17 and 19, looked at only after, at 1 s; seed 10
	// at 1 s since a lull of two seconds within a rise's segments is
	// passed over (it began with a burst on top of it, 13, 17 and 11/s,
	// then 2 and 0: dated after the lull, 4m8s). The misses, all at 1 s
	// scrapes:
	//   - seed 3's ×2.2 rise at 3.3/s: a second's count is noisier than
	//     the slack in baseline deviations allows, and the scrape CUSUM
	//     never found it; judged over blocks of 30 expected arrivals it
	//     is found (4m54s) but dated 4m4s, 4 s late: the arrivals read at
	//     4m1s..4m5s are 5, 4, 2, 6, 5/s, nearer the old level (3.3/s)
	//     than the new (7.1/s);
	//   - seed 11: the ×2.2 rise, never found before the blocks, is dated
	//     3m52s, 8 s early: a burst just before the change runs at the new
	//     level's rate, and the counts cannot tell where one ends and the
	//     other begins (reported 3.6 -> 6.2/s, x1.7: the blocks' level
	//     before it, the log of their rate, against the scrapes' mean of
	//     logs since, which reads below the rate at a few a second);
	//   - seed 18's arrivals dated 4m5s and seed 20's 4m3s, and seeds 3
	//     and 11 above: the likeliest single step is where they are dated
	//     (what the counts allow): seed 18 read 5, 4, 6, 1/s at 4m1s..4m4s
	//     between about 3/s before and 7/s after, seed 20 read 3 and 1 at
	//     4m1s and 4m2s, then 7, 4, 11. Taken as the onset, that step
	//     dated 4 to 6 seeds of 20 worse than the segmentation (windows of
	//     20 to 60 s; a burst in the window read as the change) and only
	//     seed 10 better: not used;
	//   - lengths and shares: seed 8's output mean, dated 3.2 s late, and
	//     seed 12's, 5.5 s early, are dated within a scrape since output
	//     means are placed in two parts by latency (seed 8 passes at 1 s
	//     since); seed 18's, 4.7 s late, now 2.9 s: the new answers that
	//     arrived in the change's first 3 s and finished first were 153 to
	//     336 tokens long (213 before, 801 after), the first long one is
	//     placed 2.9 s after it (what the data allow). Seed 12's prefix hit
	//     rate is dated 4 s early: the share read 0.06 to 0.18 in the 4 s
	//     before the change (0.29 before, 0.04 after) on as many tokens
	//     queried as before; only the volume moves at 4m1s. Seed 18's
	//     prompt tokens/s is 3 s early. Seed 20's prompts replica no
	//     longer keeps a rise of arrivals from 1m34s.
	for _, c := range []struct {
		seed uint64
		step time.Duration
	}{{4, historyStep}, {4, time.Second}, {5, historyStep}, {5, time.Second}, {3, historyStep}, {6, time.Second},
		{2, historyStep}, {2, time.Second}, {6, historyStep}, {7, historyStep}, {7, time.Second}, {8, historyStep},
		{9, historyStep}, {10, historyStep}, {11, historyStep}, {12, historyStep}, {9, time.Second},
		{13, time.Second}, {14, time.Second}, {15, time.Second}, {16, time.Second}, {17, time.Second}, {19, time.Second},
		{10, time.Second}, {8, time.Second}} {
		t.Run(fmt.Sprintf("%v-seed%d", c.step, c.seed), func(t *testing.T) { changesScrapedAndBackfilled(t, c.step, c.seed) })
	}

	t.Run("replay", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "changes.vtop")
		var last *diagnose.Frame
		simRun(t, path, changesFleet(), int(changeSpan/time.Second), func(fr *diagnose.Frame) { last = fr })
		// The recording's own clock: the fleet's epoch is its first frame
		// less one step.
		start := last.Time.Add(-changeSpan)
		checkChanges(t, "recorded live", last, start, time.Second)
		code, out, errOut := runArgs(t, nil, "replay", "--once", "-o", "json", path)
		if code == 3 || errOut != "" {
			t.Fatalf("replay: exit %d: %s", code, errOut)
		}
		var rep struct {
			Endpoints []struct {
				Name   string `json:"name"`
				Shifts []struct {
					Signal, Kind string
					Onset        time.Time
					Factor       *float64
				} `json:"shifts"`
				Restarts []json.RawMessage `json:"restarts"`
			} `json:"endpoints"`
			Timeline []struct {
				Target, Kind, Text string
				Time               time.Time
			} `json:"timeline"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v\n%.2000s", err, out)
		}
		found := map[string]bool{}
		for _, e := range rep.Endpoints {
			for _, s := range e.Shifts {
				if _, ok := changed[e.Name]; ok && s.Kind == "workload" {
					on := s.Onset.Sub(start)
					t.Logf("replay: %s %s since %v", e.Name, s.Signal, on)
					slack := onsetSlack(time.Second)
					if on >= changeAt-slack && on <= changeAt+slack && s.Factor != nil && *s.Factor >= changed[e.Name].factor {
						found[e.Name] = true
					}
				}
			}
			if e.Name == "crash" && len(e.Restarts) < 4 {
				t.Errorf("replay: crash has %d restarts", len(e.Restarts))
			}
		}
		for name := range changed {
			if !found[name] {
				t.Errorf("replay: no workload change on %s within %v of %v\n%.3000s", name, onsetSlack(time.Second), changeAt, out)
			}
		}
		tl := strings.Builder{}
		for _, ev := range rep.Timeline {
			tl.WriteString(ev.Time.Sub(start).String() + " " + ev.Target + " " + ev.Kind + " " + ev.Text + "\n")
		}
		if !strings.Contains(tl.String(), "prompts workload") || !strings.Contains(tl.String(), "crash restart") {
			t.Errorf("replay: JSON timeline:\n%s", tl.String())
		}
	})
}

// changesScrapedAndBackfilled checks changesFleet's history (the
// simulator's seed given) at one scrape step, as vtop scraping it
// directly would see it and as read back from a real Prometheus holding
// it (--prometheus with backfill).
func changesScrapedAndBackfilled(t *testing.T, step time.Duration, seed uint64) {
	epoch := time.Now().Add(-changeSpan).Truncate(historyStep)
	h := simHistorySeeded(t, sim.FleetConfig{Replicas: changesFleet()}, epoch, changeSpan, step, nil, seed)
	p := replayPipeline(t, h, step)
	checkChanges(t, "direct", runToEnd(t, p), epoch, step)

	checkChanges(t, "prometheus", runToEnd(t, backfilled(t, startPrometheus(t, h, ""), h, "10m")), epoch, step)
}

// backfilled is vtop --once over the Prometheus at url holding h, read
// back over backfill with a window of 60 s, at h's newest scrape.
func backfilled(t *testing.T, url string, h *history, backfill string) *app.Pipeline {
	t.Helper()
	o, _, err := resolve([]string{"--once", "--prometheus", url, "--backfill", backfill, "--window", "60s",
		"--at", h.end.Format(time.RFC3339Nano)}, envFor(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPipeline(o, quiet())
	if err != nil {
		t.Fatal(err)
	}
	return p
}
