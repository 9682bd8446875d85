package diagnose

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// poisson draws a Poisson count of mean mu (Knuth's product of uniforms:
// the means here are a few).
func poisson(rng *rand.Rand, mu float64) float64 {
	l, k, p := math.Exp(-mu), 0.0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// A replica opened inside a start-up burst (×2.5 for its first 40 s,
// longer than the baseline's warm-up) learns the burst as its baseline;
// its end is no fall of the traffic, and the real ×2.2 rise at 4 min is
// reported against the level held since, not merely ending that "fall"
// (seed 2's arrivals replica of cmd/vtop's changesFleet at 1 s scrapes:
// "arrival rate 5.4/s → 2.8/s since 36s", and no rise). Arrivals are
// Poisson counts a second, drawn afresh for each seed.
func TestShiftBaselineLearnedInStartupBurst(t *testing.T) {
	const base, burst, rise = 3.0, 2.5, 2.2
	const change = 4 * time.Minute
	const seeds = 20
	found := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 19))
		s := newShiftState()
		t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		for el := time.Duration(0); el <= 6*time.Minute; el += time.Second {
			mu := base
			switch {
			case el < 40*time.Second:
				mu *= burst
			case el >= change:
				mu *= rise
			}
			observeArrivals(&s, t0.Add(el), poisson(rng, mu))
		}
		var up *Shift
		for i, sh := range s.shifts {
			if sh.Signal != SigArrivals {
				continue
			}
			if sh.After < sh.Before || sh.Onset.Before(t0.Add(change-30*time.Second)) {
				t.Errorf("seed %d: %s %.3g → %.3g since %v: the start-up burst's end taken for a change", seed, sh.Name, sh.Before, sh.After, sh.Onset.Sub(t0))
				continue
			}
			up = &s.shifts[i]
		}
		if up == nil {
			// The rise never found: a second's count at ~3/s is as noisy
			// as a ×2.2 change is large (2 of these 20 draws before
			// arrivals were also judged over blocks of scrapes, none
			// since).
			t.Logf("seed %d: the ×%g rise at %v not reported", seed, rise, change)
			continue
		}
		found++
		on := up.Onset.Sub(t0)
		t.Logf("seed %d: %.3g → %.3g (×%.2f) since %v (seen %v)", seed, up.Before, up.After, up.Factor(), on, up.Detected.Sub(t0))
		if b := up.Before / base; b > 1.3 || b < 1/1.3 {
			t.Errorf("seed %d: the rise is from %.3g/s, the level before it was %g/s", seed, up.Before, base)
		}
		if on < change-10*time.Second || on > change+10*time.Second {
			t.Errorf("seed %d: the rise dated %v, it came at %v", seed, on, change)
		}
	}
	if found < seeds*17/20 {
		t.Errorf("the rise reported on %d of %d draws, want 85 %%", found, seeds)
	}
}

// A burst of traffic that outlasts the hold (×2.6 for 50 s on 3
// requests/s: seed 2's steady replica of cmd/vtop's changesFleet) is
// reported while it lasts, and forgotten once its level has come back
// and stayed: a burst is no change of the workload. A rise that stays,
// found against a baseline that bursts had lifted and ended when the
// recent level dipped near it, is kept (TestShiftOnsets' seed 11 busy).
func TestShiftBurstOutlastingTheHoldForgotten(t *testing.T) {
	const base, burst = 3.0, 2.6
	const at, long = 3 * time.Minute, 50 * time.Second
	const seeds = 20
	seen := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 23))
		s := newShiftState()
		t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		during := false
		for el := time.Duration(0); el <= 7*time.Minute; el += time.Second {
			mu := base
			if el >= at && el < at+long {
				mu *= burst
			}
			observeArrivals(&s, t0.Add(el), poisson(rng, mu))
			for _, sh := range s.shifts {
				during = during || sh.Signal == SigArrivals && sh.After > sh.Before
			}
		}
		if during {
			seen++
		}
		for _, sh := range s.shifts {
			t.Errorf("seed %d: %s %.3g → %.3g since %v, ended %v: the burst kept as a change", seed, sh.Name, sh.Before, sh.After, sh.Onset.Sub(t0), sh.Ended.Sub(t0))
		}
	}
	// Without the bursts seen as changes while they last, this test
	// would not be testing their end.
	t.Logf("the burst reported while it lasted on %d of %d draws", seen, seeds)
	if seen < seeds/2 {
		t.Errorf("the burst reported on %d of %d draws while it lasted: not the case this test is about", seen, seeds)
	}
}

// A rise of arrivals with a burst on top of it from its third scrape is
// found during the burst, whose level the change's first scrapes are not
// a third of the way to; dated again once it has held as long again, its
// level known better, it is dated within two scrapes of the change. The
// arrivals as vtop read them, every 5 s, from seed 6's busy replica of
// cmd/vtop's changesFleet (×2.2 at 4 min on 3.9/s: 6.8 and 4.6/s, then
// a burst at ×4 for 45 s; the first scrape has no increase to read, the
// second no running count before it); dated 4m15s, 15 s late, when not
// dated again.
func TestShiftRiseUnderABurstDatedAgain(t *testing.T) {
	const change, step = 4 * time.Minute, 5 * time.Second
	arrivals := []float64{
		math.NaN(), math.NaN(), 3.4, 2.4, 3.6, 4.6, 4.4, 2.6, 3.2, 3.6, 1.8, 3.2, 4,
		2.6, 3.6, 3.2, 3.8, 4.8, 2, 3.4, 3.6, 2.8, 6.8, 7, 7.2,
		8.2, 10.2, 4.8, 3.2, 3.6, 3.4, 3.4, 2.8, 3.2, 2.4, 3.2, 4.2,
		3.6, 7.4, 4.8, 3.4, 2, 3.4, 3.6, 3.2, 3.4, 2.8, 2.8, 6.8,
		4.6, 14.2, 15, 16.4, 18, 19.2, 15.6, 16.2, 17.4, 14.4, 6.6, 9.2,
		8.4, 7, 7.6, 6.2, 7, 9.8, 6.2, 7.2, 6.8, 5.4, 7.8, 8.2,
		5, 4.4, 6.2, 6.6, 6.4, 5.4, 8.4, 7.4, 6.4, 7.6, 6.6, 7.4,
		7, 8, 5.4, 8.6, 7.2, 7, 4.8, 8.4, 16.4, 16.8, 15,
	}
	s := newShiftState()
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i, v := range arrivals {
		observeArrivals(&s, t0.Add(time.Duration(i+1)*step), v)
	}
	var up *Shift
	for i, sh := range s.shifts {
		if sh.Signal == SigArrivals && sh.After > sh.Before && up == nil {
			up = &s.shifts[i]
		}
	}
	if up == nil {
		t.Fatalf("the rise not found: %+v", s.shifts)
	}
	on := up.Onset.Sub(t0)
	t.Logf("%.3g → %.3g since %v (seen %v)", up.Before, up.After, on, up.Detected.Sub(t0))
	if on < change-2*step || on > change+2*step {
		t.Errorf("the rise dated %v, it came at %v", on, change)
	}
}

// observeArrivals feeds one scrape whose only observation is n arrivals.
func observeArrivals(s *shiftState, t time.Time, n float64) {
	nan := math.NaN()
	var obs, den [NumSignals]float64
	for i := range obs {
		obs[i], den[i] = nan, nan
	}
	obs[SigArrivals] = n
	s.observe(t, &obs, &den, 0)
}

// A ×2.2 rise of arrivals at 1.5 requests/s, read every second: a
// second's count (1.5 on average, often none) has a Poisson spread in
// log space near the change's own size, and the scrape CUSUM, its slack
// one deviation of that noise, hardly gains on it while its baseline
// learns the new level (found on 11 of these 40 draws, 6 of them dated
// within 2 s). Over blocks of 30 expected arrivals the change is 4 of
// their deviations: found on 35, dated on the scrapes within 2 s of the
// change on 23 (a second holds one or two arrivals: the counts date it
// no closer on the others); on all 40, 25 within 2 s, since the blocks'
// baseline learns a block only a hold after it. Poisson arrivals, no
// bursts, drawn afresh for each seed.
func TestShiftRiseAtFewArrivalsAScrape(t *testing.T) {
	const base, rise = 1.5, 2.2
	const change = 4 * time.Minute
	const seeds = 40
	found, near := 0, 0
	for seed := uint64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 31))
		s := newShiftState()
		t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		for el := time.Second; el <= 6*time.Minute; el += time.Second {
			mu := base
			if el > change {
				mu *= rise
			}
			observeArrivals(&s, t0.Add(el), poisson(rng, mu))
		}
		for _, sh := range s.shifts {
			if sh.Signal != SigArrivals || !(sh.After > sh.Before) {
				continue
			}
			on := sh.Onset.Sub(t0)
			if on < change-30*time.Second {
				t.Errorf("seed %d: %s %.3g → %.3g since %v: before the change at %v", seed, sh.Name, sh.Before, sh.After, on, change)
				continue
			}
			found++
			if (on - change).Abs() <= 2*time.Second {
				near++
			}
			t.Logf("seed %d: %.3g → %.3g (×%.2f) since %v (seen %v)", seed, sh.Before, sh.After, sh.Factor(), on, sh.Detected.Sub(t0))
			break
		}
	}
	t.Logf("the rise found on %d of %d draws, %d dated within 2 s", found, seeds, near)
	if found < seeds*9/10 || near < seeds/2 {
		t.Errorf("the rise found on %d of %d draws, %d dated within 2 s: want %d and %d", found, seeds, near, seeds*9/10, seeds/2)
	}
}

// batchArrivals draws a second's arrivals of chat traffic at base
// requests/s with a periodic batch job on top (sim's batch-job-bursts:
// 8x the rate for about 4 s, about every 40 s, both exponential), the
// rate times rise from change on.
type batchArrivals struct {
	rng       *rand.Rand
	inBurst   bool
	switchAt  float64 // s
	base, mul float64
}

func newBatchArrivals(rng *rand.Rand, base float64) *batchArrivals {
	return &batchArrivals{rng: rng, switchAt: rng.ExpFloat64() * 40, base: base, mul: 1}
}

// count is the arrivals over the dt seconds ending at el, s.
func (b *batchArrivals) count(el, dt float64) float64 {
	n := 0.0
	for t := el - dt; t < el; {
		end := math.Min(el, b.switchAt)
		mu := b.base * b.mul
		if b.inBurst {
			mu *= 8
		}
		n += poisson(b.rng, mu*(end-t))
		t = end
		if end == b.switchAt {
			b.inBurst = !b.inBurst
			mean := 40.0
			if b.inBurst {
				mean = 4
			}
			b.switchAt += b.rng.ExpFloat64() * mean
		}
	}
	return n
}

// A periodic batch job's bursts on top of chat traffic (8x for about
// 4 s, about every 40 s) are no change of the workload, whatever the
// scrape interval: a burst comes back to the level around it, and the
// level between the bursts has not moved. Before, two or three bursts
// close together held the sum past the threshold for a hold with the mean
// since its start a clear rise, and lifted the mean of the 30 s after it
// ended (the test of a burst) as much: the rise was kept. Arrivals
// alone, Poisson counts drawn afresh for each seed, read after 15
// minutes. A x2.2 rise of the chat traffic under the same bursts is found,
// judged by the level between them.
func TestShiftRecurringBurstsAreNotAChange(t *testing.T) {
	const base, rise = 3.0, 2.2
	const change = 4 * time.Minute
	const seeds = 10
	for _, step := range []time.Duration{time.Second, 5 * time.Second} {
		kept, found, near := 0, 0, 0
		for seed := uint64(1); seed <= seeds; seed++ {
			t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
			// Quiet: 15 minutes of bursts, nothing else.
			b := newBatchArrivals(rand.New(rand.NewPCG(seed, 41)), base)
			s := newShiftState()
			for el := step; el <= 15*time.Minute; el += step {
				observeArrivals(&s, t0.Add(el), b.count(el.Seconds(), step.Seconds())/step.Seconds())
			}
			for _, sh := range s.shifts {
				kept++
				t.Errorf("%v seed %d: %s %.3g → %.3g since %v, ended %v: bursts kept as a change", step, seed, sh.Name, sh.Before, sh.After, sh.Onset.Sub(t0), sh.Ended.Sub(t0))
			}
			// The same bursts, and the chat traffic x2.2 from change on.
			b = newBatchArrivals(rand.New(rand.NewPCG(seed, 43)), base)
			s = newShiftState()
			for el := step; el <= 8*time.Minute; el += step {
				if el > change {
					b.mul = rise
				}
				observeArrivals(&s, t0.Add(el), b.count(el.Seconds(), step.Seconds())/step.Seconds())
			}
			for _, sh := range s.shifts {
				on := sh.Onset.Sub(t0)
				if !(sh.After > sh.Before) || on < change-30*time.Second {
					continue
				}
				found++
				if (on - change).Abs() <= 2*step {
					near++
				}
				t.Logf("%v seed %d: the rise %.3g → %.3g since %v (seen %v)", step, seed, sh.Before, sh.After, on, sh.Detected.Sub(t0))
				break
			}
		}
		t.Logf("%v: %d changes kept over %d quiet draws; the rise found on %d, %d dated within two scrapes", step, kept, seeds, found, near)
		// Before: 2 kept at 1 s, 3 at 5 s.
		if kept > 0 {
			t.Errorf("%v: %d changes kept over %d quiet draws, want none", step, kept, seeds)
		}
		// Found on 10 (1 s) and 9 (5 s), 8 of them within two scrapes at
		// each, since the blocks leave the bursts out (8 and 8, 5 and 6
		// before: a burst at the change, or just before it at the new
		// level's rate, dates it so much later or earlier).
		if found < seeds*9/10 || near < 7 {
			t.Errorf("%v: the x%g rise under the bursts found on %d of %d draws, %d dated within two scrapes", step, rise, found, seeds, near)
		}
	}
}

// A change of a share rests on a few counted events, not on one: at a
// request every ten seconds (night-trickle), one request stopped by its
// user among the few finished in the abort share's hold is a share of a
// quarter, and was opened as a change (seed 13 at 1 s and 5 s scrapes);
// three aborts among as few requests are one. Each finished request is a
// scrape of its own: aborted (a share of 1) or not.
func TestShiftOneAbortIsNoChange(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	const at = 20 * time.Minute
	for _, aborts := range []int{1, 3} {
		s := newShiftState()
		nan := math.NaN()
		finished := 0
		for el := time.Second; el <= 30*time.Minute; el += time.Second {
			var obs, den [NumSignals]float64
			for i := range obs {
				obs[i], den[i] = nan, nan
			}
			if el%(10*time.Second) == 0 {
				obs[SigAbort], den[SigAbort] = 0, 1
				if el >= at && finished < aborts {
					obs[SigAbort] = 1
					finished++
				}
			}
			s.observe(t0.Add(el), &obs, &den, 0)
		}
		var found []string
		for _, sh := range s.shifts {
			found = append(found, fmt.Sprintf("%s %.3g → %.3g since %v", sh.Name, sh.Before, sh.After, sh.Onset.Sub(t0)))
		}
		t.Logf("%d aborts from %v, one request every 10 s: %v", aborts, at, found)
		if got := len(found) > 0; got != (aborts >= shiftMinEvents) {
			t.Errorf("%d aborts among requests every 10 s: changes %v", aborts, found)
		}
	}
}

// A scrape's finished requests split by their e2e latency: one answer of
// 0.4 s and one of 7 s (a new short answer and an old long one still
// draining, just after a fall of the answers' length) are two parts, each
// at its own latency, not one at their mean 3.7 s; one latency bucket is
// one part at the exact mean.
func TestSplitLatencyParts(t *testing.T) {
	bounds := []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, math.Inf(1)}
	hist := func(lat ...float64) histRate {
		r := histRate{bounds: bounds, rates: make([]float64, len(bounds))}
		for _, l := range lat {
			for j, b := range bounds {
				if l <= b {
					r.rates[j]++
				}
			}
			r.sum += l
			r.count++
		}
		return r
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 0.01*b }
	// Shares are kept in 31sts, and the mean latency with them.
	nearShare := func(a, b float64) bool { return math.Abs(a-b) <= 1.0/62 }
	nearMean := func(a, b float64) bool { return math.Abs(a-b) <= 0.05*b }

	mixed := hist(0.4, 7)
	lo, hi, f, g := splitLatency(&mixed, 0.1, 1).parts()
	// Each within its bucket, their mean the histogram's; the quicker
	// part's share of the tokens that of its decode time (0.3 s of 7.2 s
	// decoding, with a TTFT of 0.1 s).
	if !(lo > 0.3 && lo <= 0.5) || !(hi > 5 && hi <= 10) || !nearShare(f, 0.5) || !nearMean(f*lo+(1-f)*hi, 3.7) || !nearShare(g, 0.04) {
		t.Errorf("0.4 s and 7 s: parts %.3g s and %.3g s, the quicker %.3g of the requests and %.3g of the tokens", lo, hi, f, g)
	}
	// Three quick, one slow: the split falls at the widest gap.
	m := hist(0.25, 0.4, 0.45, 6)
	lo, hi, f, _ = splitLatency(&m, 0.1, 1).parts()
	if !(lo < 0.5) || !(hi > 5) || !nearShare(f, 0.75) || !nearMean(f*lo+(1-f)*hi, 7.1/4) {
		t.Errorf("0.25, 0.4, 0.45 and 6 s: parts %.3g s and %.3g s, the quicker %.3g", lo, hi, f)
	}
	one := hist(1.1, 1.3, 1.2)
	lo, hi, f, _ = splitLatency(&one, 0.1, 1).parts()
	if !near(lo, 1.2) || !near(hi, 1.2) || f != 1 {
		t.Errorf("one bucket: parts %.3g s and %.3g s, the quicker %.3g; want one part at 1.2 s", lo, hi, f)
	}
	var none histRate
	if lo, _, _, _ := splitLatency(&none, 0.1, 1).parts(); !math.IsNaN(lo) {
		t.Errorf("none finished: a latency of %.3g s", lo)
	}
}
