package diagnose

import (
	"math"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// What changed, and when: every scrape adds one observation per workload
// and capacity signal (the increase since the previous scrape, not a
// window's smoothing, so a step is seen at the scrape it happens); each
// signal keeps a slow baseline and a two-sided CUSUM against it. The
// CUSUM's last departure from zero is the onset: the scrape the change
// began, which a threshold on a moving average would place a window late.
// A change is reported once it has held (bursts of traffic come and go)
// and moved the level by a clear factor; it ends when the level comes
// back, or becomes the baseline after shiftAccept.

// ShiftKind says what a change is a question for.
type ShiftKind uint8

const (
	// ShiftWorkload is the traffic: what clients send (a question for
	// whoever owns the traffic, not a fault).
	ShiftWorkload ShiftKind = iota
	// ShiftCapacity is what the server can do with it (a fault: a slower
	// GPU, a restart, a smaller cache).
	ShiftCapacity
	// ShiftSymptom is what users feel (latency): moved by one of the others.
	ShiftSymptom
)

func (k ShiftKind) String() string { return [...]string{"workload", "capacity", "symptom"}[k] }

// Signal names one watched signal.
type Signal uint8

const (
	SigArrivals  Signal = iota // requests arriving per second (finished + the change in running and waiting)
	SigPromptTok               // prompt tokens prefilled per second
	SigPromptLen               // mean prompt length of finished requests, tokens
	SigGenLen                  // mean output length of finished requests, tokens
	SigPrefixHit               // prefix-cache hit ratio
	SigAbort                   // share of finished requests aborted
	SigDecode                  // generated tokens/s per running request: the speed a request gets
	SigGPUClock                // the slowest SM clock of the endpoint's own busy GPUs, MHz
	SigTTFT                    // TTFT p95 of the requests of one scrape, s
	SigITL                     // inter-token p95, s
	NumSignals
)

// signalInfo is a signal's meaning and how a change in it is judged.
type signalInfo struct {
	Name string
	Kind ShiftKind
	Unit Unit
	// ratio: the signal is positive and changes by factors (judged in
	// log space); otherwise it is a share, judged by its difference.
	ratio bool
	// effect is the least change reported: a factor (ratio) or a
	// difference (share).
	effect float64
	// hold is how long a change must last before it is reported.
	hold time.Duration
}

var signals = [NumSignals]signalInfo{
	// Traffic comes in bursts (a few times the rate for tens of seconds):
	// arrivals need a larger, longer change than a length does.
	SigArrivals:  {"arrival rate", ShiftWorkload, UnitPerSec, true, 1.8, 45 * time.Second},
	SigPromptTok: {"prompt tokens/s", ShiftWorkload, UnitPerSec, true, 1.8, 45 * time.Second},
	SigPromptLen: {"prompt mean", ShiftWorkload, UnitTokens, true, 1.6, 20 * time.Second},
	SigGenLen:    {"output mean", ShiftWorkload, UnitTokens, true, 1.6, 20 * time.Second},
	SigPrefixHit: {"prefix hit rate", ShiftWorkload, UnitRatio, false, 0.2, 30 * time.Second},
	SigAbort:     {"abort share", ShiftWorkload, UnitRatio, false, 0.15, 30 * time.Second},
	// A request's decode speed falls with a larger batch as much as with
	// a slower GPU: what users feel, not a capacity measure.
	SigDecode: {"decode speed per request", ShiftSymptom, UnitPerSec, true, 2, 30 * time.Second},
	// A busy GPU's clock is the engine's capacity: it falls when the GPU
	// throttles, not when the traffic changes.
	SigGPUClock: {"GPU SM clock", ShiftCapacity, UnitMHz, true, 1.25, 20 * time.Second},
	// Latency moves with every burst: only a change users notice.
	SigTTFT: {"TTFT p95", ShiftSymptom, UnitSeconds, true, 3, 20 * time.Second},
	SigITL:  {"inter-token p95", ShiftSymptom, UnitSeconds, true, 2, 30 * time.Second},
}

// Shift is one change of a signal against its baseline.
type Shift struct {
	Signal   Signal
	Name     string
	Kind     ShiftKind
	Unit     Unit
	Onset    time.Time // the scrape the change began (the CUSUM's last departure from zero)
	Detected time.Time // when it had held long enough to report
	Before   float64   // the baseline level
	After    float64   // the level since the onset (updated while it lasts)
	Ended    time.Time // zero while it lasts: the level came back, or became the baseline
	Accepted bool      // ended by becoming the baseline (the new normal)
}

// Factor is After over Before (ratio signals), NaN when not meaningful.
func (s Shift) Factor() float64 {
	if !signals[s.Signal].ratio || !(s.Before > 0) {
		return math.NaN()
	}
	return s.After / s.Before
}

const (
	// shiftTau is the baseline's time constant: slow against a change,
	// quick enough that an hour-old normal is not the reference.
	shiftTau = 3 * time.Minute
	// shiftWarm is the observations a baseline needs before it judges.
	shiftWarm = 30
	// shiftK and shiftH: the CUSUM's slack and decision threshold, in
	// baseline deviations.
	shiftK, shiftH = 1.0, 6.0
	// shiftAccept: a change lasting this long is the new baseline.
	shiftAccept = 10 * time.Minute
	// shiftFastTau is the recent level's time constant.
	shiftFastTau = 15 * time.Second
	// shiftKeep bounds the shifts an endpoint remembers, shiftRetain
	// how long.
	shiftKeep   = 48
	shiftRetain = time.Hour
	// shiftFloor is the least deviation a baseline assumes (log space for
	// ratio signals, a share otherwise): a very steady signal must not
	// call its first wobble a change.
	shiftFloorLog, shiftFloorShare = 0.08, 0.02
)

// cusum follows one signal.
type cusum struct {
	n        int
	mean, m2 float64 // the baseline: EWMA of the level and of its squared deviation
	hi, lo   float64 // the upward and downward sums
	hiStart  int64   // Unix ns of the scrape each sum last left zero
	loStart  int64
	// post: the level since the onset of the change being followed.
	postSum float64
	postN   int
	fast    float64 // the recent level (shiftFastTau): whether an open change is over
	active  int     // index+1 in the endpoint's shifts of the open change, 0 none
	// recent are the newest observations (NaN: none that scrape), in
	// the ring the state's times index: the onset is refined on them.
	recent [shiftRecent]float32
}

// shiftRecent is the scrapes an onset is refined over: more than the
// longest hold, so the change's first scrapes are still there.
const shiftRecent = 64

// shiftState is an endpoint's change detection.
type shiftState struct {
	sig      [NumSignals]cusum
	times    [shiftRecent]int64 // Unix ns of the scrapes in the rings
	pos      int                // the newest scrape's slot
	seen     int                // scrapes observed, up to shiftRecent
	last     time.Time
	prevInFl float64 // running + waiting at the previous scrape
	shifts   []Shift // oldest first
}

func newShiftState() shiftState { return shiftState{prevInFl: math.NaN()} }

// observeShifts takes one scrape's observations from the endpoint's
// history: the increase between its two newest frames, over every
// sub-series.
func (e *Engine) observeShifts(ep *endpoint, t time.Time) {
	x := newAcc()
	for _, sub := range ep.refs {
		h := ep.subs[sub.key]
		if h == nil || h.n < 2 {
			continue
		}
		x.addSub(h, h.n-2, h.n-1, sub.cache, shiftHists)
	}
	nan := math.NaN()
	var obs [NumSignals]float64
	for i := range obs {
		obs[i] = nan
	}
	obs[SigGPUClock] = e.busyClock(ep)
	if x.engines == 0 || x.span <= 0 {
		ep.shift.prevInFl = nan
		ep.shift.observe(t, &obs)
		return
	}
	req, abort, _ := x.requestRates()
	inFl := nanAdd(x.running, x.waiting)
	if !math.IsNaN(req) && !math.IsNaN(inFl) && !math.IsNaN(ep.shift.prevInFl) {
		// Every request that arrived either finished or is still held.
		obs[SigArrivals] = math.Max(0, req+(inFl-ep.shift.prevInFl)/x.span.Seconds())
	}
	ep.shift.prevInFl = inFl
	obs[SigPromptTok] = x.rates[sources.CPromptTokens]
	obs[SigPromptLen] = x.hists[tPromptLen].mean()
	obs[SigGenLen] = x.hists[tGenLen].mean()
	if x.rates[sources.CPrefixQueries] > 0 {
		obs[SigPrefixHit] = x.prefixHitRatio()
	}
	obs[SigAbort] = abort
	if x.running >= 1 {
		obs[SigDecode] = x.rates[sources.CGenTokens] / x.running
	}
	obs[SigTTFT] = x.hists[tTTFT].p95().P95
	obs[SigITL] = x.hists[tITL].p95().P95
	ep.shift.observe(t, &obs)
}

// busyClock is the slowest SM clock of the GPUs attributed to the
// endpoint that are busy (an idle GPU lowers its clocks by design) and
// not merely at their power limit, NaN when none.
func (e *Engine) busyClock(ep *endpoint) float64 {
	c := math.NaN()
	for _, gi := range ep.gpu.joined.GPUs {
		if gi < 0 || gi >= len(e.gpu.snap.GPUs) {
			continue
		}
		g := &e.gpu.snap.GPUs[gi]
		// A busy GPU at its power limit trades clock for watts as the
		// load asks: the clock says the load, not what the GPU can do.
		capOnly := g.ClockEventBits&sources.ClockSWPowerCap != 0 && g.ClockEventBits&(sources.ClockThrottle&^sources.ClockSWPowerCap) == 0
		// A reading between kernels is at idle clocks whatever the
		// utilization averaged over the last second says.
		idle := g.ClockEventBits&sources.ClockIdle != 0
		if g.UtilGPU >= busyUtil && g.SMClockMHz > 0 && !capOnly && !idle {
			c = NaNMin(c, g.SMClockMHz)
		}
	}
	return c
}

// busyUtil is the utilization, percent, above which a GPU's clock says
// what it can do.
const busyUtil = 20

// shiftHists are the histograms a scrape's observations read.
const shiftHists = 1<<tTTFT | 1<<tITL | 1<<tPromptLen | 1<<tGenLen

// observe adds one scrape's observations (NaN: none this scrape).
func (s *shiftState) observe(t time.Time, obs *[NumSignals]float64) {
	var dt time.Duration
	if !s.last.IsZero() {
		dt = t.Sub(s.last)
	}
	s.last = t
	if dt <= 0 {
		return
	}
	alpha := 1 - math.Exp(-dt.Seconds()/shiftTau.Seconds())
	fast := 1 - math.Exp(-dt.Seconds()/shiftFastTau.Seconds())
	s.pos = (s.pos + 1) % shiftRecent
	s.seen = min(s.seen+1, shiftRecent)
	s.times[s.pos] = t.UnixNano()
	n := len(s.shifts)
	for i := range s.sig {
		s.step(Signal(i), t, obs[i], alpha, fast)
	}
	if len(s.shifts) > n {
		s.comoving(t)
	}
}

// comoving opens, once one change is found, every other signal whose sum
// is past the threshold with a clear change of level, without waiting for
// its own hold: anomalies that start together are one change, and what
// moved first is only told among them (a prompt-length change is seen in
// prompt tokens/s at once, in finished requests' means seconds later).
func (s *shiftState) comoving(t time.Time) {
	for i := range s.sig {
		c := &s.sig[i]
		info := &signals[i]
		if c.active > 0 || c.n <= shiftWarm || c.postN == 0 || math.Max(c.hi, c.lo) < shiftH {
			continue
		}
		post := c.postSum / float64(c.postN)
		if !clearChange(info, c.mean, post, 1) {
			continue
		}
		start := c.hiStart
		if c.lo > c.hi {
			start = c.loStart
		}
		s.open(Shift{Signal: Signal(i), Name: info.Name, Kind: info.Kind, Unit: info.Unit,
			Onset: s.onset(c, start), Detected: t, Before: level(info, c.mean), After: level(info, post)})
		c.active = len(s.shifts)
	}
}

func (s *shiftState) step(sig Signal, t time.Time, v float64, alpha, fast float64) {
	info := &signals[sig]
	c := &s.sig[sig]
	c.recent[s.pos] = float32(math.NaN())
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	x := v
	if info.ratio {
		if v <= 0 {
			return
		}
		x = math.Log(v)
	}
	c.recent[s.pos] = float32(x)
	if c.n == 0 {
		c.mean, c.fast = x, x
	}
	c.n++
	c.fast += fast * (x - c.fast)
	floor := shiftFloorShare
	if info.ratio {
		floor = shiftFloorLog
	}
	sd := math.Max(math.Sqrt(c.m2), floor)
	z := (x - c.mean) / sd
	if c.n <= shiftWarm {
		a := max(alpha, 1/float64(c.n))
		c.learn(x, a, a)
		return
	}
	ns := t.UnixNano()
	if c.hi == 0 {
		c.hiStart = ns
	}
	if c.lo == 0 {
		c.loStart = ns
	}
	c.hi = math.Max(0, c.hi+z-shiftK)
	c.lo = math.Max(0, c.lo-z-shiftK)
	if c.hi == 0 && c.lo == 0 && c.active == 0 {
		c.postSum, c.postN = 0, 0
	} else {
		c.postSum += x
		c.postN++
	}
	if c.active > 0 {
		s.follow(sig, c, t)
		return
	}
	// The baseline learns from what is not part of a change: a sum
	// past half the threshold is one developing.
	if math.Max(c.hi, c.lo) < shiftH/2 {
		c.learn(x, alpha, alpha)
	}
	start := c.hiStart
	if c.lo > c.hi {
		start = c.loStart
	}
	if math.Max(c.hi, c.lo) < shiftH || c.postN == 0 || t.Sub(time.Unix(0, start)) < info.hold {
		return
	}
	post := c.postSum / float64(c.postN)
	if !clearChange(info, c.mean, post, 1) {
		// Past the threshold but not a clear change of level (a drift,
		// a baseline learned on a start-up): start again from here.
		c.hi, c.lo, c.postSum, c.postN = 0, 0, 0, 0
		return
	}
	s.open(Shift{Signal: sig, Name: info.Name, Kind: info.Kind, Unit: info.Unit,
		Onset: s.onset(c, start), Detected: t, Before: level(info, c.mean), After: level(info, post)})
	c.active = len(s.shifts)
}

// onset refines where a change began: of the recent scrapes, the one
// after which the observations' departure from the baseline is largest
// for its length (the likelihood of a step from a known level; the
// CUSUM's last departure from zero starts early when noise had already
// lifted it). start, the CUSUM's, is kept when the rings do not reach it.
func (s *shiftState) onset(c *cusum, start int64) time.Time {
	if oldest := s.times[(s.pos-s.seen+1+shiftRecent)%shiftRecent]; start < oldest {
		return time.Unix(0, start)
	}
	best, bestAt := -1.0, start
	sum, n, lead := 0.0, 0, 0
	for k := range s.seen {
		i := (s.pos - k + shiftRecent) % shiftRecent
		if s.times[i] < start {
			if lead++; lead > shiftLead {
				break
			}
		}
		v := float64(c.recent[i])
		if math.IsNaN(v) {
			continue
		}
		sum += v - c.mean
		n++
		if score := sum * sum / float64(n); score > best {
			best, bestAt = score, s.times[i]
		}
	}
	return time.Unix(0, bestAt)
}

// shiftLead is how many scrapes before the CUSUM's start an onset may be
// placed: its sum can leave zero late on a change smaller than its noise.
const shiftLead = 4

// follow updates an open change and ends it when the level is back at
// the baseline, or makes it the baseline after shiftAccept.
func (s *shiftState) follow(sig Signal, c *cusum, t time.Time) {
	info := &signals[sig]
	sh := &s.shifts[c.active-1]
	post := c.postSum / float64(c.postN)
	sh.After = level(info, post)
	switch {
	case !clearChange(info, c.mean, c.fast, 0.5):
		// The recent level is back near the baseline.
		sh.Ended = t
	case t.Sub(sh.Onset) >= shiftAccept:
		sh.Ended, sh.Accepted = t, true
		c.mean = post
	default:
		return
	}
	c.active, c.hi, c.lo, c.postSum, c.postN = 0, 0, 0, 0, 0
}

// learn moves the baseline toward x (aMean for the level, aVar for its spread).
func (c *cusum) learn(x, aVar, aMean float64) {
	d := x - c.mean
	c.mean += aMean * d
	c.m2 = (1-aVar)*c.m2 + aVar*d*d
}

// clearChange says post is at least part of the signal's least change
// away from base (part below 1: the hysteresis a change needs to end).
func clearChange(info *signalInfo, base, post, part float64) bool {
	if info.ratio {
		return math.Abs(post-base) >= part*math.Log(info.effect)
	}
	return math.Abs(post-base) >= part*info.effect
}

func level(info *signalInfo, x float64) float64 {
	if info.ratio {
		return math.Exp(x)
	}
	return x
}

// open appends a change; a full log starts a fresh array (readers hold the
// old one) and forgets the oldest ended ones.
func (s *shiftState) open(sh Shift) {
	keep := s.shifts
	cut := 0
	for cut < len(keep) && !keep[cut].Ended.IsZero() &&
		(sh.Detected.Sub(keep[cut].Ended) > shiftRetain || len(keep)-cut >= shiftKeep) {
		cut++
	}
	if cut > 0 || len(keep) == cap(keep) {
		keep = append(make([]Shift, 0, min(len(keep)-cut+8, shiftKeep)), keep[cut:]...)
		// Open changes' indexes move with the cut.
		for i := range s.sig {
			if s.sig[i].active > 0 {
				s.sig[i].active -= cut
			}
		}
	}
	s.shifts = append(keep, sh)
}

// view is the shifts within shiftRetain of now, copied: open ones change
// in place as the level is followed.
func (s *shiftState) view(now time.Time) []Shift {
	var out []Shift
	for _, sh := range s.shifts {
		if sh.Ended.IsZero() || now.Sub(sh.Ended) <= shiftRetain {
			out = append(out, sh)
		}
	}
	return out
}
